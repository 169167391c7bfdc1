// 422 parity, measured against the real thing: a reference FastAPI + pydantic v2 app with the same request
// models (tests/contract/fastapi/reference_app.py, installed by scripts/setup/fastapi.sh) and Periscope are
// sent the same generated corpus of invalid and borderline requests. Wherever FastAPI answers 422, Periscope
// must answer the identical body. Wherever Periscope answers 422 and FastAPI does not, the case must be
// one of STRICTER below (a rule only Periscope knows), with its reason, and must still differ that way.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { IPV4_PATTERN, MAX_FRAME_SIDE, MAX_INTERVAL_TERM, NICKNAME_PATTERN } from '../../core/schemas'
import { RECORDING_NAME_PATTERN } from '../../core/naming'
import type { TestServer } from '../helpers'
import { operations, places, REMOVE, validValue, withAt, type Loc, type Operation } from './openapi-gen'
import { BRIGHTNESS, EHD, startContractServer } from './setup'

const ROOT = join(import.meta.dir, '..', '..')
const PYTHON = join(ROOT, '.tmp', 'fastapi-venv', 'bin', 'python')
const REFERENCE_APP = join(import.meta.dir, 'fastapi', 'reference_app.py')

let s: TestServer
let reference: Subprocess<'ignore', 'pipe', 'pipe'>
let referenceUrl = ''

beforeAll(async () => {
  if (!existsSync(PYTHON)) throw new Error(`${PYTHON} is missing: run scripts/setup/fastapi.sh (npm test runs it as the contract tier's setup)`)
  // Every plugin with request models; the network plugin finds no NetworkManager here (valid requests: 503).
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'recordings', 'network'] })
  const patterns = JSON.stringify({ ipv4: IPV4_PATTERN, recording_name: RECORDING_NAME_PATTERN, nickname: NICKNAME_PATTERN, max_frame_side: MAX_FRAME_SIDE, max_interval_term: MAX_INTERVAL_TERM })
  reference = Bun.spawn([PYTHON, REFERENCE_APP], { cwd: ROOT, env: { ...process.env, PERISCOPE_PATTERNS: patterns }, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  // Its first line is the port it bound; then wait until it accepts connections.
  const reader = reference.stdout.getReader()
  let first = ''
  while (!first.includes('\n')) {
    const { value, done } = await reader.read()
    if (done) throw new Error(`the reference app exited before listening: ${await new Response(reference.stderr).text()}`)
    first += new TextDecoder().decode(value)
  }
  reader.releaseLock()
  referenceUrl = `http://127.0.0.1:${Number(first.trim())}`
  const deadline = Date.now() + 30_000
  for (;;) {
    const up = await fetch(referenceUrl + '/openapi.json').then((r) => r.ok, () => false)
    if (up) break
    if (Date.now() > deadline || reference.exitCode !== null) throw new Error(`the reference app never answered on ${referenceUrl}`)
    await Bun.sleep(50)
  }
}, 60_000)

afterAll(async () => {
  if (reference) {
    reference.kill()
    await reference.exited
  }
  await s?.stop()
})

interface Case {
  name: string
  method: string
  path: string
  query: string
  /** Sent verbatim. */
  body: string
  contentType: string | null
}

interface Answer {
  status: number
  body: any
}

async function send(base: string, c: Case): Promise<Answer> {
  const headers: Record<string, string> = {}
  if (c.contentType !== null) headers['content-type'] = c.contentType
  const res = await fetch(base + c.path + c.query, { method: c.method, headers, body: c.method === 'GET' ? undefined : c.body })
  const text = await res.text()
  let body: unknown = text
  try {
    body = JSON.parse(text)
  } catch {}
  return { status: res.status, body }
}

// Wrong values tried at every field: every JSON type, plus the strings and numbers pydantic coerces or refuses.
const WRONG_ANY: unknown[] = ['abc', '', 7, -1, 0, 1.5, true, false, null, [1], [], { a: 1 }, {}]
const WRONG_BY_TYPE: Record<string, unknown[]> = {
  integer: ['5', ' 7 ', '1.0', '5.00', '1.5', '1_000', '0x10', '1e3', '-', '+3', 1e20, 1e21, 1e30, -1e30, 2.0, 65536, 'inf', '٣'],
  number: ['5', ' 7.5 ', '1_000.5', '1e3', '.5', '5.', 'inf', '-Infinity', 'nan', '0x10', 1e308, '1,5'],
  boolean: ['yes', 'off', 'True', 'FALSE', ' t ', '2', 2, 0.5, 1.0, 'on ', 'nope'],
  // Control characters and a bidi override: a nickname refuses them (NICKNAME_PATTERN), as the reference does.
  string: [' ', 'x'.repeat(65), '\u00e9\u{1F600}', '192.168.2.1', '01.2.3.4', 'a\u0000b', 'bell\u0007', 'x\u202Ey', 'tab\t', 'x'.repeat(65) + '\u0000'],
}

// Bodies that are not JSON, or not the right kind of JSON, sent to every operation.
const MALFORMED = ['', '   ', '{', '{"a":', '{"a" 1}', "{'a': 1}", '{"a": 1,}', '[1,]', 'nul', '{} x', '"\\x"', '{"a": "\u0001"}', '{"a": [1, {"b": }]}', '\u00e9']
const WRONG_TOP = ['[]', '"x"', '5', '1.5', 'null', 'true', '{}', '[{}]', '[[]]']

// Valid starting points Periscope can act on: an existing camera, a control and a format it offers.
const BASE_OVERRIDES: Record<string, (b: any) => any> = {
  'POST /api/devices/set_uvc_control': () => ({ bus_info: EHD, control_id: BRIGHTNESS, value: 3 }),
  'POST /api/devices/configure_stream': (b) => ({
    ...b,
    bus_info: EHD,
    stream_type: 'UDP',
    encode_type: 'H264',
    enabled: false,
    stream_format: { width: 1920, height: 1080, interval: { numerator: 1, denominator: 30 } },
  }),
}

function corpus(ops: Operation[]): Case[] {
  const cases: Case[] = []
  const add = (op: Operation, name: string, body: string, query: string, contentType: string | null = 'application/json') =>
    cases.push({ name: `${op.operationId} ${name}`, method: op.method, path: op.path, query, body, contentType })
  const json = (v: unknown) => JSON.stringify(v)
  for (const op of ops) {
    const validQuery = op.query.length ? '?' + op.query.map((q) => `${q.name}=${encodeURIComponent(String(validValue(q.schema)))}`).join('&') : ''
    if (op.query.length) {
      for (const q of op.query) {
        const others = op.query.filter((o) => o !== q).map((o) => `${o.name}=${encodeURIComponent(String(validValue(o.schema)))}`)
        const with_ = (v: string | null) => '?' + [...others, ...(v === null ? [] : [`${q.name}=${v}`])].join('&')
        const body = op.body ? json(validValue(op.body, 1)) : ''
        add(op, `query ${q.name} missing`, body, with_(null).replace(/\?$/, ''))
        add(op, `query ${q.name} empty`, body, with_(''))
        add(op, `query ${q.name} repeated`, body, with_(`a&${q.name}=b`))
        add(op, `query ${q.name} spaces`, body, with_('%20'))
        if (op.body) add(op, `query ${q.name} missing and body {}`, '{}', with_(null).replace(/\?$/, ''))
      }
    }
    if (!op.body) continue
    const override = BASE_OVERRIDES[op.operationId]
    const base = override ? override(validValue(op.body, 1)) : validValue(op.body, 1)
    add(op, 'valid', json(base), validQuery)
    for (const text of MALFORMED) add(op, `malformed ${json(text)}`, text, validQuery)
    for (const text of WRONG_TOP) add(op, `top-level ${text}`, text, validQuery)
    add(op, 'no content-type', json(base), validQuery, null)
    add(op, 'text/plain', json(base), validQuery, 'text/plain')
    add(op, 'application/vnd.x+json', json(base), validQuery, 'application/vnd.x+json')
    add(op, 'duplicate keys (the last wins)', json(base).replace(/^\{/, '{"zz": 1, "zz": 2, '), validQuery)
    const spots = places(op.body, base)
    for (const spot of spots) {
      const where = spot.loc.join('.')
      // Left out, required or not (a field with a default is filled in; both must agree on that too).
      add(op, `${where} missing`, json(withAt(base, spot.loc, REMOVE)), validQuery)
      const type = spot.schema.type ?? spot.schema.anyOf?.find((m: any) => m.type !== 'null')?.type
      for (const v of [...WRONG_ANY, ...(WRONG_BY_TYPE[type] ?? [])]) add(op, `${where} = ${json(v)}`, json(withAt(base, spot.loc, v)), validQuery)
    }
    // Several wrong fields at once: every leaf a list, then every leaf null; in field order.
    const leaves = spots.filter((p) => !spots.some((q) => q.loc.length > p.loc.length && p.loc.every((k, i) => q.loc[i] === k)))
    if (leaves.length > 1) {
      add(op, 'every leaf [1]', json(leaves.reduce((b, p) => withAt(b, p.loc, [1]), base as unknown)), validQuery)
      add(op, 'every leaf null', json(leaves.reduce((b, p) => withAt(b, p.loc, null), base as unknown)), validQuery)
      add(op, 'every leaf "abc"', json(leaves.reduce((b, p) => withAt(b, p.loc, 'abc'), base as unknown)), validQuery)
    }
  }
  return cases
}

/**
 * Where Periscope answers a 422 that the reference app does not: rules only the device or the network
 * knows, which pydantic models cannot hold. Each case is checked: it must be in the corpus, and Periscope
 * must still answer it with a 422 whose first error has the `type` and `loc` given.
 */
const SET = 'POST /api/devices/set_uvc_control'
const CONFIGURE = 'POST /api/devices/configure_stream'
const UPDATE = 'POST /api/network/update_connection_profile'
// Numbers (and what pydantic reads as numbers) that the exploreHD does not offer as a size or an interval.
// (Past MAX_FRAME_SIDE or MAX_INTERVAL_TERM both refuse alike: less_than_equal.)
const NOT_OFFERED = ['" 7 "', '"+3"', '"1_000"', '"5"', '"5.00"', '7']
const STRICTER_GROUPS: { reason: string; type: string; loc: Loc; cases: string[] }[] = [
  {
    reason: 'Brightness takes an integer from -64 to 64 (the control\'s flags); the model only says "a number"',
    type: 'value_error',
    loc: ['body', 'value'],
    cases: ['" 7.5 "', '"-Infinity"', '".5"', '"1_000.5"', '"1e3"', '"inf"', '"nan"', '1.5', '1e+308'].map((v) => `${SET} value = ${v}`),
  },
  {
    reason: 'control -1 is the exploreHD bitrate option (100000 to 20000000 bits/s): the unchanged value 3 is out of its range',
    type: 'value_error',
    loc: ['body', 'value'],
    cases: [`${SET} control_id = -1`],
  },
  {
    reason: 'a frame size the camera does not offer (exploreHD H264: 1920x1080, 1280x720, 800x600, 640x480)',
    type: 'value_error',
    loc: ['body', 'stream_format'],
    cases: ['width', 'height'].flatMap((f) => [...NOT_OFFERED, '"1.0"', '2', 'true'].map((v) => `${CONFIGURE} stream_format.${f} = ${v}`)),
  },
  {
    reason: 'a frame interval the camera does not offer at 1920x1080 (1/30, 1/25, 1/15)',
    type: 'value_error',
    loc: ['body', 'stream_format', 'interval'],
    cases: [
      ...[...NOT_OFFERED, '65536'].map((v) => `${CONFIGURE} stream_format.interval.numerator = ${v}`),
      ...[...NOT_OFFERED, '65536', '"1.0"', '2', 'true'].map((v) => `${CONFIGURE} stream_format.interval.denominator = ${v}`),
    ],
  },
  {
    reason: "method 'manual' needs at least one address (a rule across two fields)",
    type: 'value_error',
    loc: ['body', 'ip_addresses'],
    cases: [`${UPDATE} ip_addresses = []`, `${UPDATE} ip_addresses missing`],
  },
]
const STRICTER = STRICTER_GROUPS.flatMap((g) => g.cases.map((name) => ({ name, reason: g.reason, type: g.type, loc: g.loc })))

test('Periscope answers exactly what FastAPI + pydantic v2 answer, except where it is stricter on purpose', async () => {
  const ours = (await (await fetch(s.url + '/openapi.json')).json()) as any
  const theirs = (await (await fetch(referenceUrl + '/openapi.json')).json()) as any
  const all = operations(ours)
  const validating = all.filter((o) => o.body || o.query.length)
  // Every operation with a body or a query has its model in the reference app: none escapes the comparison.
  const referenceOps = new Set(operations(theirs).map((o) => o.operationId))
  expect(validating.map((o) => o.operationId).filter((id) => !referenceOps.has(id))).toEqual([])

  const cases = corpus(validating)
  expect(new Set(cases.map((c) => c.name)).size).toBe(cases.length)
  const answers = new Map<string, [Answer, Answer]>()
  // A few at a time: the machine is shared.
  for (let i = 0; i < cases.length; i += 8) {
    const batch = cases.slice(i, i + 8)
    const got = await Promise.all(batch.map(async (c) => [await send(referenceUrl, c), await send(s.url, c)] as [Answer, Answer]))
    batch.forEach((c, k) => answers.set(c.name, got[k]!))
  }

  const stricter = new Map(STRICTER.map((e) => [e.name, e]))
  const problems: unknown[] = []
  let compared = 0
  for (const c of cases) {
    const [ref, our] = answers.get(c.name)!
    const listed = stricter.get(c.name)
    if (listed) {
      const first = our.body?.detail?.[0]
      if (our.status !== 422 || first?.type !== listed.type || JSON.stringify(first?.loc) !== JSON.stringify(listed.loc))
        problems.push({ case: c.name, problem: 'listed as stricter, but Periscope no longer answers it that way', listed, ours: our })
      continue
    }
    if (ref.status === 422) {
      compared++
      if (our.status !== 422 || !Bun.deepEquals(our.body, ref.body)) problems.push({ case: c.name, body: c.body, fastapi: ref, periscope: our })
    } else if (ref.status !== 200) problems.push({ case: c.name, body: c.body, problem: `the reference app answered ${ref.status}`, fastapi: ref })
    else if (our.status === 422) problems.push({ case: c.name, body: c.body, problem: 'Periscope refuses with 422 what FastAPI accepts', periscope: our })
  }
  for (const e of STRICTER) if (!answers.has(e.name)) problems.push({ case: e.name, problem: 'listed as stricter, but the corpus has no such case' })
  const brief = (a?: Answer) => (a ? `${a.status} ${Array.isArray(a.body?.detail) ? a.body.detail.map((d: any) => `${d.type}@${d.loc.join('.')}`).join(',') : JSON.stringify(a.body).slice(0, 80)}` : '')
  for (const p of problems as any[]) console.log(`DIFF ${p.case}: ${p.problem ?? ''} fastapi ${brief(p.fastapi)} | periscope ${brief(p.periscope ?? p.ours)}`)
  console.log(`fastapi parity: ${cases.length} requests, ${compared} answered 422 by FastAPI compared body for body, ${STRICTER.length} listed as stricter`)
  expect(problems).toEqual([])
  expect(compared).toBeGreaterThan(300)
}, 300_000)
