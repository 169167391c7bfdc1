// Every answer is what /openapi.json says it is: every documented operation called with valid input (and
// a few refusals), and each JSON body checked against the schema of its route and status — an `integer`
// must be a whole number (`short_bytes` of the retention policy was a fraction: 376375780434235.56).
// Every documented GET must be called here, so a new route is checked as soon as it is documented.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { until, type TestServer } from '../helpers'
import { operationOf, responseSchema, schemaProblems, type OpenApiDoc } from './openapi-schema'
import { BRIGHTNESS, EHD, FOLLOWER, LEADER, startContractServer } from './setup'

/** Every plugin that runs without GStreamer, NetworkManager or a browser. */
const PLUGINS = ['mock', 'cameras', 'preferences', 'recordings', 'network', 'link', 'audio', 'dwe', 'jpeg', 'whep', 'cockpit', 'metrics', 'mavlink', 'blueos', 'console']

/** Documented GETs not called, and why. */
const NOT_CALLED: Record<string, string> = {
  '/api/events': 'text/event-stream, no JSON (tests/contract/scanners.test.ts)',
  '/api/streams/{bus_info}/mjpeg': 'an endless multipart stream, no JSON; 503 without GStreamer (called below)',
  '/api/cockpit/signalling': 'a WebSocket (tests/contract/cockpit-signalling.test.ts)',
}

interface Answer { method: string; path: string; status: number; type: string | null; body: unknown }

let s: TestServer
let doc: OpenApiDoc
const answers: Answer[] = []

async function call(method: string, path: string, body?: unknown): Promise<Answer> {
  const res = await fetch(s.url + path, { method, headers: body === undefined ? {} : { 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  const type = res.headers.get('content-type')
  const text = await res.text()
  const answer = { method, path, status: res.status, type, body: type?.startsWith('application/json') ? JSON.parse(text) : text }
  answers.push(answer)
  return answer
}

beforeAll(async () => {
  s = await startContractServer({ plugins: PLUGINS })
  doc = (await s.call('GET', '/openapi.json')).body
  const dir = s.ctx.config.recordingsDir
  mkdirSync(dir, { recursive: true })
  for (const name of ['dive.mkv', 'wreck.mkv', 'survey.mkv']) writeFileSync(join(dir, name), Buffer.alloc(4096, 1))

  // Reads.
  for (const path of ['/', '/api/health', '/api/logs?limit=5', '/api/mock/devices', '/api/mock/audio', '/api/devices', '/api/preferences', '/api/preferences/get_recommended_host', '/api/recordings', '/api/recordings/disk', '/api/recordings/retention', '/api/network/wired/devices', '/api/network/connection_profiles', '/api/network/rollback', '/api/audio/sources', '/api/audio/streams', '/api/audio/sound_only', '/api/audio/sound_only/sdp?source=sim:hydrophone', '/metrics', '/register_service', '/cockpit_extras.json', '/api/cockpit/streams', '/api/link/ping', '/api/link/download?bytes=1000', '/widget-player.js', '/cockpit-widget-icon.svg', `/widget/${EHD}`, '/console/nothing.js'])
    await call('GET', path)
  for (const template of ['mjpeg', 'snapshot.jpg', 'camera.xml', 'whep/no-such-session']) await call('GET', `/api/streams/${EHD}/${template}`)
  for (const path of ['/api/recordings/dive.mkv', '/api/recordings/dive.mkv/download', '/api/recordings/dive.mkv/telemetry.ass', '/api/recordings/dive.mkv/telemetry.csv', '/api/recordings/ghost.mkv']) await call('GET', path)

  // Changes, and what they answer.
  await call('POST', '/api/devices/set_uvc_control', { bus_info: EHD, control_id: BRIGHTNESS, value: 10 })
  await call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'bow' })
  await call('POST', '/api/devices/add_follower', { leader_bus_info: LEADER, follower_bus_info: FOLLOWER })
  await call('POST', '/api/devices/remove_follower', { leader_bus_info: LEADER, follower_bus_info: FOLLOWER })
  await call('POST', '/api/devices/set_record_while_armed', { bus_info: EHD, enabled: true })
  await call('POST', '/api/devices/configure_stream', { bus_info: EHD, stream_type: 'UDP', encode_type: 'H264', stream_format: { width: 1920, height: 1080, interval: { numerator: 1, denominator: 30 } }, enabled: false, endpoints: [{ host: '127.0.0.1', port: 5600 }] })
  await call('POST', '/api/devices/restart_stream', { bus_info: EHD })
  await call('POST', '/api/devices/start_recording', { bus_info: EHD })
  await call('POST', '/api/devices/stop_recording', { bus_info: EHD })
  await call('POST', '/api/devices/capture_still', { bus_info: EHD })
  await call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD })
  await call('POST', '/api/preferences/save_preferences', (await call('GET', '/api/preferences')).body)
  await call('POST', '/api/link/upload', 'some bytes')
  await call('POST', '/api/audio/attach', { bus_info: LEADER, source: 'sim:hydrophone' })
  await call('POST', '/api/audio/set', { bus_info: EHD, gain_db: 3, muted: false })
  await call('POST', '/api/audio/mixer', { source: 'sim:mic1', volume: 3 })
  await call('POST', '/api/mock/unplug', { bus_info: FOLLOWER })
  await call('POST', '/api/mock/plug', { bus_info: FOLLOWER })
  await call('POST', '/api/recordings/dive.mkv/keep')
  await call('DELETE', '/api/recordings/dive.mkv/keep')
  await call('PATCH', '/api/recordings/wreck.mkv/wreck-2.mkv')
  await call('DELETE', '/api/recordings/survey.mkv')
  const zip = await call('POST', '/api/recordings/zip/prepare', ['dive.mkv'])
  const token = (zip.body as { token?: string }).token ?? 'none'
  await until('the zip ready', () => call('GET', `/api/recordings/zip/${token}`), (a) => a.status !== 200 || (a.body as { state?: string }).state !== 'preparing', 10_000)
  await call('GET', `/api/recordings/zip/download?token=${token}`)
  await call('DELETE', `/api/recordings/zip/${token}`)
  // A policy whose GB is a fraction and that no disk here can meet: the bytes still missing are counted.
  await call('POST', '/api/recordings/retention', { enabled: true, min_free_gb: 350000.3, max_age_days: 0 })
  await until('the policy short of space', () => call('GET', '/api/recordings/retention'), (a) => (a.body as { short_bytes: number }).short_bytes > 0, 10_000)
  await call('POST', '/api/recordings/retention', { enabled: true, min_free_gb: 350000.3, max_age_days: 0 })
  // Refusals answer in their documented shapes too.
  await call('POST', '/api/devices/set_uvc_control', { bus_info: 'nowhere', control_id: BRIGHTNESS, value: 1 })
  await call('POST', '/api/devices/set_uvc_control', { bus_info: EHD, control_id: 'x', value: 1 })
  await call('GET', '/api/logs?limit=x')
}, 60_000)
afterAll(() => s?.stop())

test('every JSON answer matches the schema of its route and status in /openapi.json (integers are whole numbers)', () => {
  const problems: string[] = []
  let checked = 0
  for (const a of answers) {
    const found = operationOf(doc, a.method, a.path)
    if (!found) {
      problems.push(`${a.method} ${a.path}: no documented operation`)
      continue
    }
    if (!found.op.responses?.[String(a.status)]) problems.push(`${a.method} ${a.path} → ${a.status}: a status the document does not list for ${found.template}`)
    const schema = responseSchema(found.op, a.status)
    if (!schema || !a.type?.startsWith('application/json')) continue
    checked++
    for (const p of schemaProblems(doc, schema, a.body)) problems.push(`${a.method} ${a.path} → ${a.status}: ${p}`)
  }
  expect(problems).toEqual([])
  expect(checked).toBeGreaterThan(40)
})

test("the retention policy's short_bytes is a whole number of bytes when its GB is a fraction", () => {
  const last = answers.filter((a) => a.path === '/api/recordings/retention').at(-1)!
  expect(last).toMatchObject({ method: 'POST', status: 200 })
  const short = (last.body as { short_bytes: number }).short_bytes
  expect(short).toBeGreaterThan(0)
  expect(Number.isInteger(short)).toBe(true)
})

test('every documented GET was called here, or is listed with the reason it is not', () => {
  const called = new Set(answers.map((a) => operationOf(doc, a.method, a.path)?.template).filter(Boolean))
  const missing = Object.entries(doc.paths)
    .filter(([template, ops]) => ops.get && !called.has(template) && !(template in NOT_CALLED))
    .map(([template]) => template)
  expect(missing).toEqual([])
})
