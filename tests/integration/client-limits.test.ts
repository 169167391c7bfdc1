// The per-client limit on snapshots of a stopped camera (core/http/client-limits.ts): each may start
// the camera for a capture, so 10 at once, then one a second; past it 429 with Retry-After, counted.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { loadPlugin } from '../../core/loader'
import { CLIENT_LIMITS } from '../../core/http/client-limits'
import { parseMetrics, startTestServer, until, type TestServer } from '../helpers'

const WEBCAM = 'usb-0000:00:14.0-4'
let s: TestServer

beforeAll(async () => {
  const plugins = await Promise.all(['mock', 'cameras', 'gstreamer', 'jpeg', 'metrics'].map(loadPlugin))
  s = await startTestServer({ plugins, config: { simulate: 'default' } })
  await until('the camera stopped', () => s.call('GET', '/api/devices'), (r) => r.body.find((d: any) => d.bus_info === WEBCAM)?.stream_status?.state !== 'running', 20_000)
})
afterAll(async () => {
  await s?.stop()
})

test('snapshots of a stopped camera: the burst served (one capture shared), the rest 429 with Retry-After and a sentence', async () => {
  const burst = CLIENT_LIMITS.snapshot_stopped.burst
  const answers = await Promise.all(Array.from({ length: burst + 3 }, () => fetch(`${s.url}/api/streams/${WEBCAM}/snapshot.jpg`)))
  const statuses = answers.map((a) => a.status)
  expect(statuses.filter((st) => st === 200).length).toBe(burst)
  expect(statuses.filter((st) => st === 429).length).toBe(3)
  const refused = answers.find((a) => a.status === 429)!
  expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(((await refused.json()) as { detail: string }).detail).toContain('snapshots of a stopped camera')
  for (const a of answers) if (!a.bodyUsed) await a.arrayBuffer()
  const m = parseMetrics((await s.call('GET', '/metrics')).body)
  expect(m.value('periscope_http_limited_total', { kind: 'snapshot_stopped' })).toBe(3)
  // A bucket refills: a second later, one more is served.
  await until('a token back in the bucket', () => fetch(`${s.url}/api/streams/${WEBCAM}/snapshot.jpg`).then(async (r) => (await r.arrayBuffer(), r.status)), (st) => st === 200, 10_000)
}, 60_000)
