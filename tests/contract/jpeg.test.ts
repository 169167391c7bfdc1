// The JPEG views' refusals (plugins/jpeg), with or without GStreamer: 404 unknown device, 503 nothing to
// stream or capture with, 422 for a bad ?height= in pydantic's shape, and both routes in the OpenAPI
// document with their content types. What needs real video is in tests/integration/jpeg.test.ts.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseMetrics, type TestServer } from '../helpers'
import { startContractServer, WEBCAM } from './setup'

const fakeDirs: string[] = []

/** A directory holding a stand-in gst-launch-1.0: a capture answers a 640×480 JPEG at once, a scaling (fdsrc) takes 0.5 s. */
function fakeGstDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'periscope-fake-gst-'))
  fakeDirs.push(dir)
  const fake = join(dir, 'gst-launch-1.0')
  writeFileSync(
    fake,
    `#!/usr/bin/env python3
import re, sys, time
def jpeg(w, h):
    sof = bytes([0xff, 0xc0, 0, 17, 8, h >> 8, h & 255, w >> 8, w & 255, 3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])
    sos = bytes([0xff, 0xda, 0, 12, 3, 1, 0, 2, 0x11, 3, 0x11, 0, 63, 0])
    return bytes([0xff, 0xd8]) + sof + sos + bytes([0x12, 0x34]) + bytes([0xff, 0xd9])
args = ' '.join(sys.argv[1:])
if 'fdsrc' in args:
    sys.stdin.buffer.read()
    time.sleep(0.5)
    m = re.search(r'width=(\\d+),height=(\\d+)', args)
    sys.stdout.buffer.write(jpeg(int(m.group(1)), int(m.group(2))))
else:
    sys.stdout.buffer.write(jpeg(640, 480))
sys.stdout.flush()
`,
  )
  chmodSync(fake, 0o755)
  return dir
}

let s: TestServer
let noGst: TestServer
beforeAll(async () => {
  // Without the gstreamer plugin: no streamer, so no stream runs. GStreamer itself found (a stand-in:
  // the tier runs before any tier installs it), so the refusal is the streamer's.
  // gst-launch-1.0 is looked up once, at setup.
  const path = process.env.PATH
  process.env.PATH = `${fakeGstDir()}:${path}`
  try {
    s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'jpeg'] })
  } finally {
    process.env.PATH = path
  }
  // And as on a machine without GStreamer at all.
  process.env.PATH = '/nonexistent'
  try {
    noGst = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'jpeg'] })
  } finally {
    process.env.PATH = path
  }
})
afterAll(async () => {
  await s.stop()
  await noGst.stop()
  for (const dir of fakeDirs) rmSync(dir, { recursive: true, force: true })
})

test('an unknown bus_info is 404 on both routes', async () => {
  for (const route of ['mjpeg', 'snapshot.jpg', 'snapshot.jpg?height=100']) {
    const r = await s.call('GET', `/api/streams/usb-nope/${route}`)
    expect(r.status).toBe(404)
    expect(r.body).toEqual({ detail: "No device with bus_info 'usb-nope' is connected" })
  }
})

test('MJPEG with no streamer is 503 saying why; without GStreamer both routes are 503 saying what to install', async () => {
  const r = await s.call('GET', `/api/streams/${WEBCAM}/mjpeg`)
  expect(r.status).toBe(503)
  expect(r.body.detail).toContain('No streamer is available')
  for (const route of ['mjpeg', 'snapshot.jpg']) {
    const n = await noGst.call('GET', `/api/streams/${WEBCAM}/${route}`)
    expect(n.status).toBe(503)
    expect(n.body.detail).toContain('gst-launch-1.0 not found')
  }
  expect((await noGst.call('GET', '/api/health')).body.plugins.jpeg.state).toBe('down')
})

test('?height= is validated as pydantic would: an integer from 16 to 4320', async () => {
  const cases: [string, unknown][] = [
    ['abc', { type: 'int_parsing', loc: ['query', 'height'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'abc' }],
    ['1.5', { type: 'int_parsing', loc: ['query', 'height'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: '1.5' }],
    ['8', { type: 'greater_than_equal', loc: ['query', 'height'], msg: 'Input should be greater than or equal to 16', input: '8', ctx: { ge: 16 } }],
    ['99999', { type: 'less_than_equal', loc: ['query', 'height'], msg: 'Input should be less than or equal to 4320', input: '99999', ctx: { le: 4320 } }],
  ]
  for (const [height, error] of cases) {
    const r = await s.call('GET', `/api/streams/${WEBCAM}/snapshot.jpg?height=${height}`)
    expect(r.status).toBe(422)
    expect(r.body).toEqual({ detail: [error] })
  }
})

test('both routes are documented with their content types, parameters and errors', async () => {
  const { body: doc } = await s.call('GET', '/openapi.json')
  const mjpeg = doc.paths['/api/streams/{bus_info}/mjpeg'].get
  expect(Object.keys(mjpeg.responses['200'].content)).toEqual(['multipart/x-mixed-replace'])
  expect(Object.keys(mjpeg.responses).sort()).toEqual(['200', '401', '403', '404', '409', '422', '503'])
  const snap = doc.paths['/api/streams/{bus_info}/snapshot.jpg'].get
  expect(Object.keys(snap.responses['200'].content)).toEqual(['image/jpeg'])
  expect(Object.keys(snap.responses).sort()).toEqual(['200', '401', '403', '404', '409', '422', '429', '502', '503', '504'])
  expect(snap.parameters).toContainEqual({ name: 'height', in: 'query', required: false, schema: expect.objectContaining({ type: 'integer', minimum: 16, maximum: 4320 }) })
  expect(snap.parameters).toContainEqual({ name: 'bus_info', in: 'path', required: true, schema: { type: 'string' } })
})

test('snapshot children are capped (--snapshot-children): the next few wait, the rest are 503 with Retry-After and a sentence, counted in /metrics', async () => {
  const dir = fakeGstDir()
  const path = process.env.PATH
  process.env.PATH = `${dir}:${path}`
  let capped: TestServer
  try {
    // gstreamer: the capture's source is the streamer's (it finds the stand-in gst-launch on PATH too).
    capped = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'gstreamer', 'jpeg', 'metrics'], config: { snapshotChildren: 1, clientLimits: false } }) // the children's cap alone, not the per-client one
  } finally {
    process.env.PATH = path
  }
  try {
    const cameras = ((await capped.call('GET', '/api/devices')).body as any[]).map((d) => d.bus_info)
    expect(cameras.length).toBeGreaterThanOrEqual(4)
    // 4 cameras × 3 size classes below 480 rows: 12 scalings of 0.5 s each, 1 at a time, 8 more may wait.
    const answers = await Promise.all(
      cameras.slice(0, 4).flatMap((bus_info) => [100, 200, 300].map((height) => fetch(`${capped.url}/api/streams/${bus_info}/snapshot.jpg?height=${height}`).then(async (r) => ({ status: r.status, retry: r.headers.get('retry-after'), body: (r.status === 200 ? null : await r.json()) as any })))),
    )
    const refused = answers.filter((a) => a.status === 503)
    expect(refused.length).toBeGreaterThanOrEqual(3)
    expect(answers.filter((a) => a.status === 200).length).toBeGreaterThanOrEqual(9)
    for (const a of refused) {
      expect(a.retry).toBe('1')
      expect(a.body.detail).toMatch(/^Too many snapshots are being made \(1 snapshot children run and 8 wait, the most allowed; --snapshot-children 1\); try again in 1 s$/)
    }
    const health = (await capped.call('GET', '/api/health')).body.plugins.jpeg
    expect(health.snapshot_children).toMatchObject({ running: 0, max: 1, most: 1, refused: refused.length })
    const metrics = parseMetrics(await (await fetch(`${capped.url}/metrics`)).text())
    expect(metrics.value('periscope_limit_hits_total', { limit: 'snapshot_children' })).toBe(refused.length)
    // The log holds no line per refusal: a limit is counted, not logged as a failure.
    expect(capped.logs.filter((l) => l.msg === 'request failed')).toEqual([])
  } finally {
    await capped.stop()
  }
}, 60_000)
