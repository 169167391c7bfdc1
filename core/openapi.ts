// OpenAPI documentation of each route: `docs()` builds the operation object (tags, request body,
// parameters, every success and error response) from the same TypeBox schemas that validate requests,
// and names nested models as components (`#/components/schemas/DeviceModel`, …) as the spec does.
import { Kind, type TSchema } from '@sinclair/typebox'
import { COMPONENTS } from './schemas'
import { unwrapElysiaNumeric, validated, type ValidatedSchemas } from './validation'

const NAME_OF = new Map<TSchema, string>(Object.entries(COMPONENTS).map(([name, schema]) => [schema, name]))

/** JSON Schema for the document: known models by $ref, literal unions as `enum`. */
export function toJsonSchema(schema: TSchema, root = true): Record<string, unknown> {
  schema = unwrapElysiaNumeric(schema)
  const name = NAME_OF.get(schema)
  if (name && !root) return { $ref: `#/components/schemas/${name}` }
  if (schema[Kind] === 'Union' && (schema.anyOf as TSchema[]).every((m) => m[Kind] === 'Literal')) {
    const values = (schema.anyOf as TSchema[]).map((m) => m.const)
    const kept = Object.fromEntries(['description', 'default', 'examples'].filter((k) => schema[k] !== undefined).map((k) => [k, schema[k]]))
    return { type: typeof values[0] === 'number' ? 'integer' : 'string', enum: values, ...kept }
  }
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(schema)) {
    if (key === 'properties' || key === 'patternProperties') {
      out[key] = Object.fromEntries(Object.entries(value as Record<string, TSchema>).map(([k, v]) => [k, toJsonSchema(v, false)]))
    } else if (key === 'required' && schema.properties) {
      // A field with a default may be left out (it is filled in), as pydantic documents it: not required.
      const properties = schema.properties as Record<string, TSchema>
      const required = (value as string[]).filter((k) => unwrapElysiaNumeric(properties[k]!)?.default === undefined)
      if (required.length) out[key] = required
    } else if (key === 'items' && typeof value === 'object') out[key] = toJsonSchema(value as TSchema, false)
    else if (key === 'anyOf') out[key] = (value as TSchema[]).map((v) => toJsonSchema(v, false))
    else out[key] = value
  }
  if (name) out.title = name
  return out
}

export function componentSchemas(): Record<string, unknown> {
  return Object.fromEntries(Object.entries(COMPONENTS).map(([name, schema]) => [name, toJsonSchema(schema)]))
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const json = (schema: unknown) => ({ 'application/json': { schema } })

const ERROR_TEXT: Record<number, string> = {
  400: 'The request body is malformed: `detail` says how',
  401: 'A bearer token is configured (--token; for reads, --token-scope all) and the request did not carry it, or carried a wrong one',
  403: 'A browser page on an origin that is not allowed sent it (docs/security.md)',
  429: 'Too many of these from this client: `Retry-After` says when to try again (docs/security.md)',
  404: 'Not found: the device, profile, recording or token does not exist',
  409: 'Refused by a rule: the reason is in `detail`',
  413: 'The request body is larger than the configured limit',
  415: 'The request body is not of the media type the operation reads',
  502: 'The device or a daemon refused or failed: the errno is in `detail`',
  503: 'A backend is absent (no streamer, no NetworkManager): `detail` says which',
  504: 'The device did not answer in time',
  507: 'The disk is full or read-only: a setting not saved, or a recording or still not started (`detail` says which and what to do)',
}

/**
 * The front's own refusals, in every operation they can answer (core/http/cors.ts, token.ts): 403 for
 * a page on an origin not allowed, 401 where a token can be asked for (every change; with
 * --token-scope all, every read but /api/health).
 */
export function addFrontRefusals(paths: Record<string, Record<string, { responses?: Record<string, unknown> }>>): void {
  for (const [path, operations] of Object.entries(paths)) {
    if (!path.startsWith('/api/')) continue
    for (const operation of Object.values(operations)) {
      const responses = (operation.responses ??= {})
      if (path !== '/api/health') responses['401'] ??= { description: ERROR_TEXT[401], content: json(ref('ErrorModel')) }
      responses['403'] ??= { description: ERROR_TEXT[403], content: json(ref('ErrorModel')) }
    }
  }
}

/** Where an operation keeps the query parameters docs() declared (a symbol: copied with the operation, never serialised). */
export const DECLARED_PARAMETERS = Symbol('declared parameters')

export interface DocsOptions extends ValidatedSchemas {
  tag: 'cameras' | 'network' | 'preferences' | 'recordings' | 'system' | 'simulation' | (string & {})
  summary: string
  description?: string
  /** The success body: a schema, or a ready OpenAPI content object (and headers) for non-JSON answers (none for a 204). */
  ok?: TSchema | { content?: Record<string, unknown>; description?: string; headers?: Record<string, unknown> }
  /** The success status when it is not 200 (201 Created). */
  okStatus?: number
  /** A non-JSON request body the handler reads itself (an OpenAPI content object: `{'application/sdp': …}`). */
  requestContent?: Record<string, unknown>
  /** Failure statuses besides 422 (added whenever the route validates input or has path parameters). */
  errors?: number[]
  /** Path parameters validated by the handler itself, with the schema that says what it accepts (a name alone: any string). */
  pathParams?: string[] | Record<string, TSchema>
  /** Mutating operations need the bearer token when one is configured. */
  mutating?: boolean
}

/**
 * Route options: the OpenAPI operation, and FastAPI-style validation of `body`/`query` when given.
 * Spread into Elysia's route options: `{ ...docs({ tag: 'cameras', summary: '…', body: X, ok: Y, errors: [404] }) }`.
 */
export function docs(options: DocsOptions) {
  const responses: Record<string, unknown> = {}
  const success = String(options.okStatus ?? 200)
  if (options.ok && !(Kind in options.ok)) {
    const { description, content, headers } = options.ok as { content?: Record<string, unknown>; description?: string; headers?: Record<string, unknown> }
    responses[success] = { description: description ?? 'Successful Response', ...(content ? { content } : {}), ...(headers ? { headers } : {}) }
  } else {
    responses[success] = { description: 'Successful Response', ...(options.ok ? { content: json(toJsonSchema(options.ok as TSchema, false)) } : {}) }
  }
  for (const status of options.errors ?? []) responses[String(status)] = { description: ERROR_TEXT[status] ?? 'Error', content: json(ref('ErrorModel')) }
  const pathParams: [string, TSchema | null][] = Array.isArray(options.pathParams) ? options.pathParams.map((n) => [n, null]) : Object.entries(options.pathParams ?? {})
  if (options.body || options.query || pathParams.length) {
    responses['422'] = { description: 'Validation Error', content: json(ref('HTTPValidationError')) }
  }
  if (options.mutating !== false && options.body) responses['401'] ??= { description: ERROR_TEXT[401], content: json(ref('ErrorModel')) }
  // Every body is read against the limit (config.bodyLimit) before it is parsed.
  if (options.body || options.requestContent) responses['413'] ??= { description: ERROR_TEXT[413], content: json(ref('ErrorModel')) }

  const parameters: Record<string, unknown>[] = []
  for (const [name, schema] of pathParams) parameters.push({ name, in: 'path', required: true, schema: schema ? toJsonSchema(schema, false) : { type: 'string' } })
  if (options.query) {
    const required = new Set<string>(options.query.required ?? [])
    for (const [name, schema] of Object.entries(options.query.properties as Record<string, TSchema>)) {
      parameters.push({ name, in: 'query', required: required.has(name), schema: toJsonSchema(schema, false) })
    }
  }
  const detail: Record<string | symbol, unknown> = {
    tags: [options.tag],
    summary: options.summary,
    ...(options.description ? { description: options.description } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(options.body ? { requestBody: { required: true, content: json(toJsonSchema(options.body, false)) } } : {}),
    ...(options.requestContent ? { requestBody: { required: true, content: options.requestContent } } : {}),
    responses,
    // The generator replaces `parameters` with bare strings when the path has any: ours are put back (core/http/docs.ts).
    ...(pathParams.length ? { [DECLARED_PARAMETERS]: parameters } : {}),
  }
  const hooks = options.body || options.query ? validated({ body: options.body, query: options.query }) : {}
  return { ...hooks, detail }
}
