// The document says everything the service enforces, and nothing it does not: a client built from
// /openapi.json alone (as a schema-driven fuzzer builds one) sends only requests the service accepts, and
// each documented constraint, broken, is a 422 naming the broken place. Also: 413 on every body.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { NFKC_LOOKALIKES } from '../../core/naming'
import type { TestServer } from '../helpers'
import { operations, places, validValue, withAt, type Loc, type Operation } from './openapi-gen'
import { startContractServer } from './setup'

const BODY_LIMIT = 4096
let s: TestServer
let ops: Operation[]
beforeAll(async () => {
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'recordings', 'network'], config: { bodyLimit: BODY_LIMIT } })
  ops = operations((await s.call('GET', '/openapi.json')).body)
})
afterAll(async () => {
  await s.stop()
})

const pathOf = (op: Operation, params: Record<string, unknown>) => op.path.replace(/\{(\w+)\}/g, (_, n) => encodeURIComponent(String(params[n])))
const queryOf = (values: Record<string, unknown>) => {
  const q = new URLSearchParams(Object.entries(values).map(([k, v]): [string, string] => [k, String(v)])).toString()
  return q ? `?${q}` : ''
}

async function send(op: Operation, body: unknown, params: Record<string, unknown>, query: Record<string, unknown>) {
  const r = await fetch(s.url + pathOf(op, params) + queryOf(query), {
    method: op.method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
  const text = await r.text()
  return { status: r.status, body: text.startsWith('{') ? JSON.parse(text) : text }
}

const validParams = (op: Operation, variant: number) => Object.fromEntries(op.pathParams.map((p) => [p.name, validValue(p.schema, variant)]))
const validQuery = (op: Operation, variant: number) => Object.fromEntries(op.query.filter((q) => q.required || variant % 2).map((q) => [q.name, validValue(q.schema, variant)]))

// Strings that break a pattern somewhere in the document: each case picks those its pattern refuses.
const PATTERN_BREAKERS = ['..', '../x.mkv', '/etc/passwd', 'a\\b.mkv', '.hidden.mkv', 'a\u0001b.mkv', '\uff0e\uff0e\uff0fx.mkv', 'a\u202eb.mkv', 'a:b.mkv', ' x.mkv', 'noextension', '999.1.1.1', '10.0.0.01', 'not an address']

/** Values that break one documented constraint of `schema` (and only that one, as far as the document says). */
function breakers(schema: Record<string, any>): unknown[] {
  const out: unknown[] = []
  if (schema.enum) out.push('NOT_A_MEMBER')
  if (schema.minimum !== undefined) out.push(schema.minimum - 1)
  if (schema.maximum !== undefined) out.push(schema.maximum + 1)
  if (schema.minLength !== undefined && schema.minLength > 0) out.push('')
  if (schema.maxLength !== undefined) out.push('x'.repeat(schema.maxLength + 1))
  if (schema.pattern) {
    const re = new RegExp(schema.pattern, 'u')
    const fitting = PATTERN_BREAKERS.filter((v) => !re.test(v) && (schema.maxLength === undefined || v.length <= schema.maxLength))
    if (!fitting.length) throw new Error(`no string in PATTERN_BREAKERS breaks ${schema.pattern}`)
    out.push(...fitting)
  }
  if (schema.minItems !== undefined && schema.minItems > 0) out.push([])
  return out
}

describe('a client built from the document', () => {
  test('sends only requests the service accepts: valid requests generated from /openapi.json are never a 422', async () => {
    const refused: unknown[] = []
    let sent = 0
    for (const op of ops.filter((o) => o.body || o.query.length || o.pathParams.length)) {
      for (let variant = 0; variant < 4; variant++) {
        const body = op.body ? validValue(op.body, variant) : undefined
        const r = await send(op, body, validParams(op, variant), validQuery(op, variant))
        sent++
        if (r.status === 422 || r.status >= 500 && r.status !== 503) refused.push({ op: op.operationId, variant, body, params: validParams(op, variant), answer: r })
      }
    }
    expect(refused).toEqual([])
    expect(sent).toBeGreaterThan(80)
  })

  test('each documented constraint, broken, is a 422 at the place broken', async () => {
    const wrong: unknown[] = []
    let tried = 0
    for (const op of ops) {
      const body = op.body ? validValue(op.body, 1) : undefined
      const params = validParams(op, 0)
      const query = validQuery(op, 1)
      const check = async (where: Loc, sent: { body?: unknown; params?: Record<string, unknown>; query?: Record<string, unknown> }, value: unknown) => {
        tried++
        const r = await send(op, sent.body ?? body, sent.params ?? params, sent.query ?? query)
        const locs = Array.isArray(r.body?.detail) ? r.body.detail.map((d: any) => JSON.stringify(d.loc)) : []
        if (r.status !== 422 || !locs.includes(JSON.stringify(where))) wrong.push({ op: op.operationId, where, value, answer: r })
      }
      if (op.body) {
        const spots = [{ loc: [] as Loc, schema: op.body }, ...places(op.body, body)]
        for (const spot of spots) {
          const schema = spot.schema.anyOf?.find((m: any) => m.type !== 'null') ?? spot.schema
          for (const v of breakers(schema)) await check(['body', ...spot.loc], { body: withAt(body, spot.loc, v) }, v)
        }
      }
      for (const p of op.pathParams)
        // '', '.' and '..' never reach a path parameter: URLs resolve them away (RFC 3986 dot segments).
        for (const v of breakers(p.schema).filter((v) => !['', '.', '..'].includes(v as string))) await check(['path', p.name], { params: { ...params, [p.name]: v } }, v)
      for (const q of op.query) for (const v of breakers(q.schema)) await check(['query', q.name], { query: { ...query, [q.name]: v } }, v)
    }
    expect(wrong).toEqual([])
    expect(tried).toBeGreaterThan(50)
  })
})

test('every operation that takes a body documents 413, and answers it past the limit', async () => {
  const withBody = ops.filter((o) => o.body)
  expect(withBody.length).toBeGreaterThan(15)
  expect(withBody.filter((o) => !o.responses.includes('413') || !o.responses.includes('422')).map((o) => o.operationId)).toEqual([])
  for (const op of withBody) {
    const r = await fetch(s.url + pathOf(op, validParams(op, 0)) + queryOf(validQuery(op, 0)), {
      method: op.method,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ padding: 'x'.repeat(BODY_LIMIT) }),
    })
    expect({ op: op.operationId, status: r.status }).toEqual({ op: op.operationId, status: 413 })
    expect(((await r.json()) as any).detail).toContain(`${BODY_LIMIT} bytes`)
  }
})

test("the recording-name pattern's list of NFKC look-alikes of '.', '/' and '\\' is complete", () => {
  const found: number[] = []
  for (let cp = 0x80; cp <= 0x10ffff; cp++) {
    if (cp >= 0xd800 && cp <= 0xdfff) continue
    if (/[./\\]/.test(String.fromCodePoint(cp).normalize('NFKC'))) found.push(cp)
  }
  const listed = new RegExp(`[${NFKC_LOOKALIKES}]`, 'u')
  expect(found.filter((cp) => !listed.test(String.fromCodePoint(cp))).map((cp) => cp.toString(16))).toEqual([])
})
