// Requests generated from an OpenAPI document alone, as an outside client or fuzzer builds them: the
// operations that take a body or query, a VALID value for any schema (from its type, enum, bounds,
// lengths and `examples`), and the places inside a body where a value can be replaced.
type Schema = Record<string, any>

export interface Operation {
  method: string
  path: string
  operationId: string
  body?: Schema
  query: { name: string; required: boolean; schema: Schema }[]
  pathParams: { name: string; schema: Schema }[]
  responses: string[]
}

/** Inlines every `#/components/schemas/…` reference (the document has no recursive models). */
export function resolve(doc: any, schema: Schema): Schema {
  if (schema && typeof schema === 'object' && !Array.isArray(schema)) {
    if (typeof schema.$ref === 'string') return resolve(doc, doc.components.schemas[schema.$ref.split('/').pop()!])
    return Object.fromEntries(Object.entries(schema).map(([k, v]) => [k, typeof v === 'object' && v !== null ? (Array.isArray(v) ? v.map((x) => resolve(doc, x)) : resolve(doc, v)) : v]))
  }
  return schema
}

export function operations(doc: any): Operation[] {
  const out: Operation[] = []
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      const params: any[] = op.parameters ?? []
      out.push({
        method: method.toUpperCase(),
        path,
        operationId: `${method.toUpperCase()} ${path}`,
        body: op.requestBody ? resolve(doc, op.requestBody.content['application/json'].schema) : undefined,
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, required: !!p.required, schema: resolve(doc, p.schema) })),
        pathParams: params.filter((p) => p.in === 'path').map((p) => ({ name: p.name, schema: resolve(doc, p.schema) })),
        responses: Object.keys(op.responses ?? {}),
      })
    }
  }
  return out
}

/**
 * A value the schema allows, using only what the document says. `variant` picks other valid values
 * (other enum members, the bounds, the longest allowed string, two list items) so a caller can try several.
 */
export function validValue(schema: Schema, variant = 0): unknown {
  if (schema.examples?.length) return schema.examples[variant % schema.examples.length]
  if (schema.enum) return schema.enum[variant % schema.enum.length]
  if (schema.const !== undefined) return schema.const
  if (schema.anyOf) {
    const members = (schema.anyOf as Schema[]).filter((m) => m.type !== 'null')
    return validValue(members[variant % members.length]!, variant)
  }
  switch (schema.type) {
    case 'string': {
      const min = schema.minLength ?? 0
      const max = schema.maxLength ?? Math.max(min, 8)
      if (schema.pattern) throw new Error(`a string with pattern ${schema.pattern} needs examples in the document`)
      const length = variant % 2 ? max : Math.max(min, Math.min(max, 5))
      return 'abcdefgh'.repeat(Math.ceil(length / 8) + 1).slice(0, length)
    }
    case 'integer':
    case 'number': {
      const lo = schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : undefined)
      const hi = schema.maximum ?? (schema.exclusiveMaximum !== undefined ? schema.exclusiveMaximum - 1 : undefined)
      const candidates = [lo ?? (hi !== undefined ? Math.min(hi, 1) : 1), hi ?? (lo ?? 0) + 7]
      return candidates[variant % 2]
    }
    case 'boolean':
      return variant % 2 === 0
    case 'null':
      return null
    case 'array': {
      const n = Math.max(schema.minItems ?? 0, variant % 2 ? 2 : 1)
      return Array.from({ length: Math.min(n, schema.maxItems ?? n) }, (_, i) => validValue(schema.items ?? {}, variant + i))
    }
    case 'object': {
      const out: Record<string, unknown> = {}
      const required = new Set<string>(schema.required ?? [])
      for (const [k, v] of Object.entries<Schema>(schema.properties ?? {})) if (required.has(k) || variant % 2) out[k] = validValue(v, variant)
      return out
    }
    default:
      return 'x' // no type: anything goes
  }
}

export type Loc = (string | number)[]

/** Every place inside `value` (valid for `schema`) where a field or list item sits, with its schema. */
export function places(schema: Schema, value: unknown, loc: Loc = []): { loc: Loc; schema: Schema; required: boolean }[] {
  const out: { loc: Loc; schema: Schema; required: boolean }[] = []
  if (schema.anyOf) {
    const member = (schema.anyOf as Schema[]).find((m) => m.type !== 'null')
    return member && value !== null ? places(member, value, loc) : out
  }
  if (schema.type === 'object' && value && typeof value === 'object') {
    const required = new Set<string>(schema.required ?? [])
    for (const [k, v] of Object.entries<Schema>(schema.properties ?? {})) {
      out.push({ loc: [...loc, k], schema: v, required: required.has(k) })
      if (k in (value as object)) out.push(...places(v, (value as any)[k], [...loc, k]))
    }
  } else if (schema.type === 'array' && Array.isArray(value) && value.length) {
    // The last item: a nested list error must name its index (endpoints[1].port).
    const i = value.length - 1
    out.push({ loc: [...loc, i], schema: schema.items, required: true })
    out.push(...places(schema.items, value[i], [...loc, i]))
  }
  return out
}

/** A copy of `value` with the thing at `loc` replaced (or removed when `replacement` is REMOVE). */
export const REMOVE = Symbol('remove')
export function withAt(value: unknown, loc: Loc, replacement: unknown): unknown {
  if (loc.length === 0) return replacement
  const copy: any = structuredClone(value)
  let at = copy
  for (const k of loc.slice(0, -1)) at = at[k]
  const last = loc.at(-1)!
  if (replacement === REMOVE) {
    if (Array.isArray(at)) at.splice(last as number, 1)
    else delete at[last]
  } else at[last] = replacement
  return copy
}
