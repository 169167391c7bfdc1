// Request validation with pydantic v2's semantics and wording, driven by the TypeBox schemas of
// core/schemas.ts: the UI written against the FastAPI anchor reads these 422s, so they must match it
// (lax coercion such as "5" → 5, error types, messages, `loc` paths, `ctx` only where pydantic has one).
// Elysia's own validator is not used for bodies or queries: it disagrees with pydantic in both directions.
import { Kind, OptionalKind, type Static, type TSchema } from '@sinclair/typebox'
import type { Context } from 'elysia'
import { HttpError, RequestValidationError, type PydanticError } from './errors'
import { parsePythonJson, PyJsonError } from './pyjson'

type Loc = (string | number)[]

interface Outcome {
  value: unknown
  errors: PydanticError[]
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** pydantic's "'A', 'B' or 'C'". */
export function expectedList(values: readonly unknown[]): string {
  const quoted = values.map((v) => (typeof v === 'string' ? `'${v}'` : String(v)))
  return quoted.length <= 1 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`
}

/** The literal values of an enum-like union (t.Union of t.Literal), or null. */
function enumValues(schema: TSchema): unknown[] | null {
  if (schema[Kind] !== 'Union') return null
  const members = schema.anyOf as TSchema[]
  return members.every((m) => m[Kind] === 'Literal') ? members.map((m) => m.const) : null
}

const err = (type: string, loc: Loc, msg: string, input: unknown, ctx?: Record<string, unknown>): PydanticError =>
  ctx ? { type, loc, msg, input, ctx } : { type, loc, msg, input }

// pydantic-core trims the string, drops a decimal tail of zeros ("5.00" → 5), then reads digits with
// Python's underscores between them ("1_000"; not "_1", "1_" or "1__0").
const INT_STRING = /^[+-]?\d+(?:_\d+)*$/
const FLOAT_STRING = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/
const FLOAT_SPECIAL: Record<string, number> = { inf: Infinity, '+inf': Infinity, '-inf': -Infinity, infinity: Infinity, '+infinity': Infinity, '-infinity': -Infinity, nan: NaN, '+nan': NaN, '-nan': NaN }
/** Rust's f64 grammar, as pydantic-core reads a float from a string; null when it is not one. */
function parseFloatString(s: string): number | null {
  const lower = s.toLowerCase()
  if (lower in FLOAT_SPECIAL) return FLOAT_SPECIAL[lower]!
  return FLOAT_STRING.test(lower) ? Number(lower) : null
}
/** pydantic-core's second try: the untrimmed string without underscores, if none leads, trails or doubles. */
const withoutUnderscores = (s: string): string | null => (s.includes('_') && !/^_|_$|__/.test(s) ? s.replaceAll('_', '') : null)

/**
 * From here on JSON.stringify writes a number with an exponent (1e+21), which Python's json reads as a
 * float, and pydantic refuses a float beyond a 64-bit integer as `int_parsing_size`. Below it a client
 * writes digits, which Python reads as an int of any size and pydantic takes. (JSON.parse keeps no trace
 * of which form a body used: a hand-written 1e19 is taken here, refused by pydantic.)
 */
const EXPONENT_FORM = 1e21

function validateInteger(schema: TSchema, input: unknown, loc: Loc): Outcome {
  let n: number
  if (typeof input === 'boolean') n = input ? 1 : 0
  else if (typeof input === 'number') {
    if (!Number.isFinite(input)) return { value: input, errors: [err('finite_number', loc, 'Input should be a finite number', input)] }
    if (!Number.isInteger(input)) return { value: input, errors: [err('int_from_float', loc, 'Input should be a valid integer, got a number with a fractional part', input)] }
    if (Math.abs(input) >= EXPONENT_FORM) return { value: input, errors: [err('int_parsing_size', loc, 'Unable to parse input string as an integer, exceeded maximum size', input)] }
    n = input
  } else if (typeof input === 'string') {
    const s = input.trim().replace(/\.0*$/, '')
    if (!INT_STRING.test(s)) return { value: input, errors: [err('int_parsing', loc, 'Input should be a valid integer, unable to parse string as an integer', input)] }
    n = Number.parseInt(s.replaceAll('_', ''), 10)
  } else return { value: input, errors: [err('int_type', loc, 'Input should be a valid integer', input)] }
  return bounds(schema, n, input, loc)
}

function validateNumber(schema: TSchema, input: unknown, loc: Loc): Outcome {
  let n: number
  if (typeof input === 'boolean') n = input ? 1 : 0
  else if (typeof input === 'number') n = input
  else if (typeof input === 'string') {
    const bare = withoutUnderscores(input)
    const parsed = parseFloatString(input.trim()) ?? (bare === null ? null : parseFloatString(bare))
    if (parsed === null) return { value: input, errors: [err('float_parsing', loc, 'Input should be a valid number, unable to parse string as a number', input)] }
    n = parsed
  } else return { value: input, errors: [err('float_type', loc, 'Input should be a valid number', input)] }
  return bounds(schema, n, input, loc)
}

// pydantic-core checks le before ge: only NaN fails both, and it is then told of le.
function bounds(schema: TSchema, n: number, input: unknown, loc: Loc): Outcome {
  if (schema.maximum !== undefined && !(n <= schema.maximum))
    return { value: n, errors: [err('less_than_equal', loc, `Input should be less than or equal to ${schema.maximum}`, input, { le: schema.maximum })] }
  if (schema.minimum !== undefined && !(n >= schema.minimum))
    return { value: n, errors: [err('greater_than_equal', loc, `Input should be greater than or equal to ${schema.minimum}`, input, { ge: schema.minimum })] }
  return { value: n, errors: [] }
}

const TRUE_STRINGS = new Set(['1', 'on', 't', 'true', 'y', 'yes'])
const FALSE_STRINGS = new Set(['0', 'off', 'f', 'false', 'n', 'no'])

function validateBoolean(input: unknown, loc: Loc): Outcome {
  if (typeof input === 'boolean') return { value: input, errors: [] }
  if (typeof input === 'number' && (input === 0 || input === 1)) return { value: input === 1, errors: [] }
  if (typeof input === 'string') {
    // Case-insensitive, but not trimmed: " t" is refused.
    const s = input.toLowerCase()
    if (TRUE_STRINGS.has(s)) return { value: true, errors: [] }
    if (FALSE_STRINGS.has(s)) return { value: false, errors: [] }
  }
  // Another whole number is a failed parse; a fraction is not a boolean at all.
  if ((typeof input === 'number' && Number.isInteger(input)) || typeof input === 'string')
    return { value: input, errors: [err('bool_parsing', loc, 'Input should be a valid boolean, unable to interpret input', input)] }
  return { value: input, errors: [err('bool_type', loc, 'Input should be a valid boolean', input)] }
}

const patterns = new Map<string, RegExp>()
/** Patterns are written to mean the same in JavaScript (u flag) and in pydantic's Rust regex: anchored, no look-around. */
function compiled(pattern: string): RegExp {
  let re = patterns.get(pattern)
  if (!re) patterns.set(pattern, (re = new RegExp(pattern, 'u')))
  return re
}

function validateString(schema: TSchema, input: unknown, loc: Loc): Outcome {
  if (typeof input !== 'string') return { value: input, errors: [err('string_type', loc, 'Input should be a valid string', input)] }
  const length = [...input].length
  if (schema.minLength !== undefined && length < schema.minLength) {
    const unit = schema.minLength === 1 ? 'character' : 'characters'
    return { value: input, errors: [err('string_too_short', loc, `String should have at least ${schema.minLength} ${unit}`, input, { min_length: schema.minLength })] }
  }
  if (schema.maxLength !== undefined && length > schema.maxLength) {
    const unit = schema.maxLength === 1 ? 'character' : 'characters'
    return { value: input, errors: [err('string_too_long', loc, `String should have at most ${schema.maxLength} ${unit}`, input, { max_length: schema.maxLength })] }
  }
  if (schema.pattern !== undefined && !compiled(schema.pattern).test(input))
    return { value: input, errors: [err('string_pattern_mismatch', loc, `String should match pattern '${schema.pattern}'`, input, { pattern: schema.pattern })] }
  return { value: input, errors: [] }
}

function validateObject(schema: TSchema, input: unknown, loc: Loc): Outcome {
  if (!isPlainObject(input))
    return { value: input, errors: [err('model_attributes_type', loc, 'Input should be a valid dictionary or object to extract fields from', input)] }
  const out: Record<string, unknown> = {}
  const errors: PydanticError[] = []
  const required = new Set<string>(schema.required ?? [])
  for (const [key, prop] of Object.entries(schema.properties as Record<string, TSchema>)) {
    if (!(key in input)) {
      // As in pydantic, a field with a default is optional.
      if (prop.default !== undefined) out[key] = structuredClone(prop.default)
      else if (required.has(key) && prop[OptionalKind] !== 'Optional') errors.push(err('missing', [...loc, key], 'Field required', input))
      continue
    }
    const r = validateValue(prop, input[key], [...loc, key])
    out[key] = r.value
    errors.push(...r.errors)
  }
  return { value: out, errors }
}

function validateArray(schema: TSchema, input: unknown, loc: Loc): Outcome {
  if (!Array.isArray(input)) return { value: input, errors: [err('list_type', loc, 'Input should be a valid list', input)] }
  const out: unknown[] = []
  const errors: PydanticError[] = []
  input.forEach((item, i) => {
    const r = validateValue(schema.items as TSchema, item, [...loc, i])
    out.push(r.value)
    errors.push(...r.errors)
  })
  if (errors.length === 0 && schema.minItems !== undefined && input.length < schema.minItems) {
    const unit = schema.minItems === 1 ? 'item' : 'items'
    errors.push(err('too_short', loc, `List should have at least ${schema.minItems} ${unit} after validation, not ${input.length}`, input, { field_type: 'List', min_length: schema.minItems, actual_length: input.length }))
  }
  return { value: out, errors }
}

function validateRecord(schema: TSchema, input: unknown, loc: Loc): Outcome {
  if (!isPlainObject(input)) return { value: input, errors: [err('dict_type', loc, 'Input should be a valid dictionary', input)] }
  const valueSchema = Object.values(schema.patternProperties as Record<string, TSchema>)[0]!
  const out: Record<string, unknown> = {}
  const errors: PydanticError[] = []
  for (const [k, v] of Object.entries(input)) {
    const r = validateValue(valueSchema, v, [...loc, k])
    out[k] = r.value
    errors.push(...r.errors)
  }
  return { value: out, errors }
}

function validateUnion(schema: TSchema, input: unknown, loc: Loc): Outcome {
  const members = schema.anyOf as TSchema[]
  const literals = enumValues(schema)
  if (literals) {
    if (literals.includes(input)) return { value: input, errors: [] }
    const expected = expectedList(literals)
    return { value: input, errors: [err('enum', loc, `Input should be ${expected}`, input, { expected })] }
  }
  // Optional[X] is pydantic's "nullable": null passes, anything else is X's business.
  const nonNull = members.filter((m) => m[Kind] !== 'Null')
  if (nonNull.length < members.length && input === null) return { value: null, errors: [] }
  if (nonNull.length === 1) return validateValue(nonNull[0]!, input, loc)
  // A smart-mode union: the first member that accepts the input wins; otherwise every member's errors.
  const errors: PydanticError[] = []
  for (const m of nonNull) {
    const r = validateValue(m, input, loc)
    if (r.errors.length === 0) return r
    errors.push(...r.errors.map((e) => ({ ...e, loc: [...loc, unionTag(m), ...e.loc.slice(loc.length)] })))
  }
  return { value: input, errors }
}

const unionTag = (m: TSchema): string =>
  ({ Integer: 'int', Number: 'float', String: 'str', Boolean: 'bool', Array: 'list[any]', Object: 'dict' })[m[Kind] as string] ?? String(m[Kind]).toLowerCase()

/**
 * Elysia's `t.Integer()`/`t.Numeric()` are unions of the number with a numeric string (for query
 * strings); pydantic's int already parses strings, so they mean the plain number here.
 */
export function unwrapElysiaNumeric(schema: TSchema): TSchema {
  if (schema[Kind] !== 'Union' || (schema.anyOf as TSchema[]).length !== 2) return schema
  const [a, b] = schema.anyOf as TSchema[]
  const numeric = (x: TSchema) => x[Kind] === 'Integer' || x[Kind] === 'Number'
  const numericString = (x: TSchema) => x[Kind] === 'String' && (x.format === 'integer' || x.format === 'numeric')
  if (numericString(a!) && numeric(b!)) return b!
  if (numericString(b!) && numeric(a!)) return a!
  return schema
}

export function validateValue(schema: TSchema, input: unknown, loc: Loc): Outcome {
  schema = unwrapElysiaNumeric(schema)
  switch (schema[Kind]) {
    case 'Integer':
      return validateInteger(schema, input, loc)
    case 'Number':
      return validateNumber(schema, input, loc)
    case 'Boolean':
      return validateBoolean(input, loc)
    case 'String':
      return validateString(schema, input, loc)
    case 'Object':
      return validateObject(schema, input, loc)
    case 'Array':
      return validateArray(schema, input, loc)
    case 'Record':
      return validateRecord(schema, input, loc)
    case 'Union':
      return validateUnion(schema, input, loc)
    case 'UnionEnum': // Elysia's t.UnionEnum
      return validateUnion({ [Kind]: 'Union', anyOf: (schema.enum as unknown[]).map((v) => ({ [Kind]: 'Literal', const: v })) } as unknown as TSchema, input, loc)
    case 'Literal':
      return validateUnion({ [Kind]: 'Union', anyOf: [schema] } as unknown as TSchema, input, loc)
    case 'Null':
      return input === null ? { value: null, errors: [] } : { value: input, errors: [err('none_required', loc, 'Input should be None', input)] }
    case 'Any':
    case 'Unknown':
      return { value: input, errors: [] }
    default:
      throw new Error(`validation: schema kind ${String(schema[Kind])} is not supported`)
  }
}

/** Validates and coerces, or throws RequestValidationError with every error found. */
export function check<T = unknown>(schema: TSchema, input: unknown, loc: Loc): T {
  const { value, errors } = validateValue(schema, input, loc)
  if (errors.length) throw new RequestValidationError(errors)
  return value as T
}

/** Reads a body up to `limit` bytes, answering 413 past it even when no Content-Length was sent. */
export async function readBodyText(request: Request, limit: number): Promise<string> {
  const declared = Number(request.headers.get('content-length') ?? NaN)
  if (declared > limit) throw tooLarge(limit)
  if (!request.body) return ''
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > limit) throw tooLarge(limit)
    chunks.push(chunk)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

const tooLarge = (limit: number) => new HttpError(413, `Request body is larger than the limit of ${limit} bytes`)

/** Each app instance tags its requests with its own limit (config.bodyLimit) as they arrive. */
export const bodyLimitOf = new WeakMap<Request, number>()
const DEFAULT_BODY_LIMIT = 1 << 20

/** The raw body of a request whose route reads a non-JSON body itself (an SDP offer), within this app's limit. */
export const readRawBody = (request: Request): Promise<string> => readBodyText(request, bodyLimitOf.get(request) ?? DEFAULT_BODY_LIMIT)

/** FastAPI's reading of a body: JSON when the content type is JSON, raw text otherwise. */
export async function parseBody(request: Request): Promise<unknown> {
  const text = await readBodyText(request, bodyLimitOf.get(request) ?? DEFAULT_BODY_LIMIT)
  if (text.length === 0) return undefined
  // FastAPI (0.142.2, the version the parity test pins) reads JSON only when the content type says so;
  // anything else, no content type included, is raw text.
  const type = request.headers.get('content-type')
  const isJson = !!type && /^application\/([\w.+-]*\+)?json\b/i.test(type.trim())
  if (!isJson) return text
  try {
    return parsePythonJson(text)
  } catch (e) {
    if (!(e instanceof PyJsonError)) throw e
    throw new RequestValidationError([{ type: 'json_invalid', loc: ['body', e.pos], msg: 'JSON decode error', input: {}, ctx: { error: e.pyMessage } }])
  }
}

export interface ValidatedSchemas {
  body?: TSchema
  query?: TSchema
}

/** The schemas each request's input was validated against (by the hooks below), for typed() to check. */
const validatedWith = new WeakMap<Request, ValidatedSchemas>()

/**
 * Route hooks that validate the body and/or query the way FastAPI does, before the handler runs; the
 * handler then sees the coerced values in `body` and `query`. Spread into Elysia's route options.
 */
export function validated(schemas: ValidatedSchemas) {
  return {
    // `parse` replaces Elysia's body parser (which would answer malformed JSON with its own 400).
    async parse({ request }: Context) {
      if (!schemas.body) return {}
      const raw = await parseBody(request)
      const errors: PydanticError[] = []
      let body: unknown = raw
      // A JSON null is no body at all to FastAPI.
      if (raw === undefined || raw === null) errors.push({ type: 'missing', loc: ['body'], msg: 'Field required', input: null })
      else {
        const r = validateValue(schemas.body, raw, ['body'])
        body = r.value
        errors.push(...r.errors)
      }
      // FastAPI validates parameters before the body and reports their errors first.
      const all = [...(schemas.query ? queryOutcome(schemas.query, request).errors : []), ...errors]
      if (all.length) throw new RequestValidationError(all)
      validatedWith.set(request, schemas)
      return body
    },
    transform(ctx: Context) {
      if (!schemas.query) return
      // Query parameters arrive as strings (repeated keys: the last one, as Starlette does for scalars).
      const { value, errors } = queryOutcome(schemas.query, ctx.request)
      if (errors.length) throw new RequestValidationError(errors)
      ctx.query = value as Record<string, string>
      validatedWith.set(ctx.request, schemas)
    },
  }
}

/** What a typed() handler sees in `body` and `query`: the static types of the schemas it names. */
export type ValidatedInput<S extends ValidatedSchemas> = (S extends { body: infer B extends TSchema } ? { body: Static<B> } : {}) &
  (S extends { query: infer Q extends TSchema } ? { query: Static<Q> } : {})

/** Elysia's context with `body`/`query` exactly as validated (the query holds only the schema's keys). */
type TypedContext<S extends ValidatedSchemas> = Omit<Context, keyof ValidatedInput<S>> & ValidatedInput<S>

/**
 * A route handler whose `body`/`query` have the types of the schemas its docs() validates them with:
 * `.post(path, typed({ body: X }, ({ body }) => …), { ...docs({ …, body: X }) })`. Elysia cannot type
 * them itself (its validator is not used), so the claim is checked on every request instead: a schema
 * here that docs() did not validate this request with is a bug, and fails loudly (500) before the handler.
 */
export function typed<const S extends ValidatedSchemas, R>(schemas: S, handler: (ctx: TypedContext<S>) => R): (ctx: Context) => R {
  return (ctx) => {
    const seen = validatedWith.get(ctx.request)
    for (const part of ['body', 'query'] as const) {
      if (schemas[part] && seen?.[part] !== schemas[part])
        throw new Error(`typed(): the handler of ${new URL(ctx.request.url).pathname} names a ${part} schema that its docs() did not validate the request with`)
    }
    return handler(ctx as unknown as TypedContext<S>) // proven just above: validated() put these values there
  }
}

function queryOutcome(schema: TSchema, request: Request): Outcome {
  const r = validateValue(schema, requestQuery(request), ['query'])
  // A missing parameter's input is None in FastAPI, not the whole query.
  return { value: r.value, errors: r.errors.map((e) => (e.type === 'missing' ? { ...e, input: null } : e)) }
}

function requestQuery(request: Request): Record<string, string> {
  const params = new URL(request.url).searchParams
  const out: Record<string, string> = {}
  for (const [k, v] of params) out[k] = v
  return out
}
