// A response checked against what /openapi.json says of it: the JSON Schema subset the document uses
// ($ref into components, type — `integer` a whole number —, properties, required, items, anyOf/oneOf/
// allOf, enum, const, additionalProperties). Returns the problems, each with where it is.

type Schema = Record<string, any>

export interface OpenApiDoc {
  paths: Record<string, Record<string, any>>
  components?: { schemas?: Record<string, Schema> }
}

/** The operation a concrete path and method reach: a path without parameters first, then templates. */
export function operationOf(doc: OpenApiDoc, method: string, path: string): { template: string; op: any } | null {
  const bare = path.split('?')[0]!
  const m = method.toLowerCase()
  if (doc.paths[bare]?.[m]) return { template: bare, op: doc.paths[bare][m] }
  for (const [template, ops] of Object.entries(doc.paths)) {
    if (!template.includes('{') || !ops[m]) continue
    const pattern = new RegExp('^' + template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+') + '$')
    if (pattern.test(bare)) return { template, op: ops[m] }
  }
  return null
}

/** The documented JSON schema of an answer, or null when the document gives none for that status. */
export function responseSchema(op: any, status: number): Schema | null {
  const response = op.responses?.[String(status)] ?? op.responses?.default
  return response?.content?.['application/json']?.schema ?? null
}

const typeOf = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v)

function matchesType(type: string, v: unknown): boolean {
  switch (type) {
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v)
    case 'number':
      return typeof v === 'number' && Number.isFinite(v)
    default:
      return typeOf(v) === type
  }
}

export function schemaProblems(doc: OpenApiDoc, schema: Schema, value: unknown, at = '$'): string[] {
  if (schema.$ref) {
    const name = String(schema.$ref).replace('#/components/schemas/', '')
    const target = doc.components?.schemas?.[name]
    return target ? schemaProblems(doc, target, value, at) : [`${at}: unresolved ${schema.$ref}`]
  }
  const problems: string[] = []
  for (const key of ['anyOf', 'oneOf'] as const) {
    if (!schema[key]) continue
    const branches = (schema[key] as Schema[]).map((b) => schemaProblems(doc, b, value, at))
    if (!branches.some((b) => b.length === 0)) problems.push(`${at}: ${JSON.stringify(value)?.slice(0, 80)} matches none of ${key} (${branches.map((b) => b[0]).join(' | ')})`)
  }
  for (const branch of (schema.allOf ?? []) as Schema[]) problems.push(...schemaProblems(doc, branch, value, at))
  if (schema.enum && !schema.enum.some((e: unknown) => e === value)) problems.push(`${at}: ${JSON.stringify(value)} not in ${JSON.stringify(schema.enum)}`)
  if ('const' in schema && schema.const !== value) problems.push(`${at}: ${JSON.stringify(value)} is not ${JSON.stringify(schema.const)}`)
  if (schema.type !== undefined) {
    const types: string[] = Array.isArray(schema.type) ? schema.type : [schema.type]
    if (!types.some((t) => matchesType(t, value))) return [...problems, `${at}: ${JSON.stringify(value)?.slice(0, 80)} is not ${types.join(' or ')}`]
  }
  if (typeOf(value) === 'object' && (schema.properties || schema.required || schema.additionalProperties !== undefined)) {
    const object = value as Record<string, unknown>
    for (const key of schema.required ?? []) if (!(key in object)) problems.push(`${at}.${key}: missing (required)`)
    for (const [key, v] of Object.entries(object)) {
      const property = schema.properties?.[key]
      if (property) problems.push(...schemaProblems(doc, property, v, `${at}.${key}`))
      else if (schema.additionalProperties === false) problems.push(`${at}.${key}: not in the schema`)
      else if (schema.additionalProperties && typeof schema.additionalProperties === 'object') problems.push(...schemaProblems(doc, schema.additionalProperties, v, `${at}.${key}`))
    }
  }
  if (Array.isArray(value) && schema.items) value.forEach((item, i) => problems.push(...schemaProblems(doc, schema.items, item, `${at}[${i}]`)))
  return problems
}
