// GET /metrics on simulated cameras (no GStreamer: every stream stopped): Prometheus names and types,
// one set of series per connected camera labelled by bus_info alone, requests counted by route template
// (never a raw bus_info or recording name), the viewer plugins' counts through the registry, the process
// metrics that hold under Bun (an event-loop block shows), the route's HTTP behaviour (HEAD, 405, CORS, a
// token, the network rollback's client activity) and its OpenAPI entry. The values moving with a real
// stream, and promtool's verdict: tests/integration/metrics.test.ts.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createSocket } from 'node:dgram'
import { statfsSync } from 'node:fs'
import { STREAM_STATES } from '../../core/schemas'
import { createLogger } from '../../core/log'
import { MediaHub } from '../../media/hub'
import { parseMetrics, until, type TestServer } from '../helpers'
import { BRIGHTNESS, EHD, FOLLOWER, LEADER, startContractServer, WEBCAM } from './setup'

const CAMERAS = [EHD, LEADER, FOLLOWER, WEBCAM]
// Viewer plugins load without GStreamer (they then serve nobody); the RTSP server stays off.
const PLUGINS = ['mock', 'cameras', 'preferences', 'dwe', 'recordings', 'jpeg', 'whep', 'rtsp', 'metrics']

let s: TestServer
beforeAll(async () => {
  s = await startContractServer({ plugins: PLUGINS, config: { rtspPort: 0 } })
})
afterAll(async () => {
  await s?.stop()
})

async function scrape(server: TestServer = s) {
  const res = await fetch(`${server.url}/metrics`)
  expect(res.status).toBe(200)
  return { res, text: await res.text() }
}

describe('GET /metrics', () => {
  test('text exposition 0.0.4; every family typed and explained; counters end in _total, units are seconds and bytes', async () => {
    const { res, text } = await scrape()
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    const m = parseMetrics(text)
    const families = [...m.types.keys()]
    expect(families.length).toBeGreaterThan(20)
    for (const name of families) {
      expect(m.help.get(name)?.length ?? 0).toBeGreaterThan(5)
      if (m.types.get(name) === 'counter') expect(name).toEndWith('_total')
      if (name.startsWith('periscope_')) expect(name).not.toMatch(/_(ms|milliseconds|kb|mb|kbytes|percent)(_|$)/)
    }
    expect(m.types.get('periscope_http_request_duration_seconds')).toBe('histogram')
    // Every sample belongs to a declared family (a histogram's _bucket/_sum/_count to its own).
    for (const sample of m.samples) expect(m.types.has(sample.name.replace(/_(bucket|sum|count)$/, '')) || m.types.has(sample.name)).toBe(true)
  })

  test('per camera: info, the stream state set, counters, viewers by protocol, recording — labelled by bus_info only', async () => {
    const devices = (await s.call('GET', '/api/devices')).body as any[]
    const m = parseMetrics((await scrape()).text)
    expect(m.matching('periscope_camera_info').map((x) => x.labels.bus_info).sort()).toEqual(devices.map((d) => d.bus_info).sort())
    for (const d of devices) {
      const bus_info = d.bus_info
      expect(m.matching('periscope_camera_info', { bus_info })[0]!.labels).toEqual({
        bus_info,
        name: d.name,
        nickname: d.nickname,
        vid: d.vid.toString(16).padStart(4, '0'),
        pid: d.pid.toString(16).padStart(4, '0'),
      })
      for (const state of STREAM_STATES) expect(m.value('periscope_stream_state', { bus_info, state })).toBe(d.stream_status.state === state ? 1 : 0)
      expect(m.value('periscope_stream_restarts_total', { bus_info })).toBe(d.stream_status.restarts)
      expect(m.value('periscope_stream_dropped_frames_total', { bus_info })).toBe(d.frame_stats.num_drops)
      expect(m.value('periscope_stream_frames_total', { bus_info })).toBe(0) // nothing streams without GStreamer
      expect(m.value('periscope_stream_sent_bytes_total', { bus_info })).toBe(0)
      for (const protocol of ['rtsp', 'whep', 'mjpeg']) expect(m.value('periscope_viewers', { bus_info, protocol })).toBe(0)
      expect(m.value('periscope_recording_active', { bus_info })).toBe(0)
      expect(m.value('periscope_recording_bytes', { bus_info })).toBe(0)
    }
    // Segment cuts of recordings made while streaming: none yet, every camera together (segments.test.ts counts real ones).
    expect(m.value('periscope_recording_segment_cuts_total')).toBe(0)
    for (const phase of ['start', 'close']) expect(m.value('periscope_recording_segment_switch_seconds', { phase })).toBe(0)
    // Only the info metric names a camera by more than its bus_info: a new nickname starts no new series elsewhere.
    for (const sample of m.samples.filter((x) => x.name.startsWith('periscope_') && 'bus_info' in x.labels && x.name !== 'periscope_camera_info')) {
      expect(Object.keys(sample.labels).filter((k) => !['bus_info', 'state', 'protocol'].includes(k))).toEqual([])
    }
  })

  test('a nickname shows in the info metric alone; an unplugged camera leaves no series behind, and returns when plugged', async () => {
    expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'Aft "cam"' })).status).toBe(200)
    let m = parseMetrics((await scrape()).text)
    expect(m.matching('periscope_camera_info', { bus_info: WEBCAM })[0]!.labels.nickname).toBe('Aft "cam"')
    expect(m.matching('periscope_stream_frames_total', { bus_info: WEBCAM })).toHaveLength(1)

    expect((await s.call('POST', '/api/mock/unplug', { bus_info: WEBCAM })).status).toBe(200)
    await until('the webcam gone', async () => (await s.call('GET', '/api/devices')).body.map((d: any) => d.bus_info), (list) => !list.includes(WEBCAM))
    m = parseMetrics((await scrape()).text)
    expect(m.samples.filter((x) => x.labels.bus_info === WEBCAM)).toEqual([])
    expect(m.matching('periscope_camera_info').length).toBe(CAMERAS.length - 1)

    expect((await s.call('POST', '/api/mock/plug', { bus_info: WEBCAM })).status).toBe(200)
    await until('the webcam back', async () => parseMetrics((await scrape()).text).matching('periscope_camera_info', { bus_info: WEBCAM }).length, (n) => n === 1)
  })

  test('requests are counted and timed by route template: no bus_info, recording name or unknown path becomes a label', async () => {
    const count = (m: ReturnType<typeof parseMetrics>, labels: Record<string, string>) => m.value('periscope_http_requests_total', labels) ?? 0
    const before = parseMetrics((await scrape()).text)
    for (let i = 0; i < 3; i++) expect((await s.call('GET', '/api/devices')).status).toBe(200)
    expect((await s.call('GET', '/api/streams/usb-odd-camera-7/mjpeg')).status).toBe(404)
    expect((await s.call('DELETE', '/api/recordings/secret-dive-42.mkv')).status).toBe(404)
    expect((await s.call('GET', '/api/nothing-here-9')).status).toBe(404)
    expect((await s.call('POST', '/api/devices')).status).toBe(405)
    const preflight = await fetch(`${s.url}/api/devices/restart_stream`, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' } })
    expect(preflight.status).toBe(204)
    const created = await s.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'Bow' })
    expect(created.status).toBe(200)
    const { text } = await scrape()
    const after = parseMetrics(text)
    expect(count(after, { method: 'GET', route: '/api/devices', status: '200' }) - count(before, { method: 'GET', route: '/api/devices', status: '200' })).toBe(3)
    expect(count(after, { method: 'GET', route: '/api/streams/:bus_info/mjpeg', status: '404' }) - count(before, { method: 'GET', route: '/api/streams/:bus_info/mjpeg', status: '404' })).toBe(1)
    expect(count(after, { method: 'DELETE', route: '/api/recordings/:recording_path', status: '404' }) - count(before, { method: 'DELETE', route: '/api/recordings/:recording_path', status: '404' })).toBe(1)
    // Unknown paths and wrong methods match no route: one `unmatched` series per status, whatever the path.
    expect(count(after, { method: 'GET', route: 'unmatched', status: '404' }) - count(before, { method: 'GET', route: 'unmatched', status: '404' })).toBe(1)
    expect(count(after, { method: 'POST', route: 'unmatched', status: '405' }) - count(before, { method: 'POST', route: 'unmatched', status: '405' })).toBe(1)
    expect(count(after, { method: 'OPTIONS', route: 'unmatched', status: '204' }) - count(before, { method: 'OPTIONS', route: 'unmatched', status: '204' })).toBe(1)
    for (const raw of ['usb-odd-camera-7', 'secret-dive-42', 'nothing-here-9']) expect(text).not.toContain(raw)
    // The latency histogram: the three requests (and the earlier ones) observed, cumulative buckets.
    const buckets = after.matching('periscope_http_request_duration_seconds_bucket', { method: 'GET', route: '/api/devices' })
    const seen = after.value('periscope_http_request_duration_seconds_count', { method: 'GET', route: '/api/devices' })!
    expect(seen - (before.value('periscope_http_request_duration_seconds_count', { method: 'GET', route: '/api/devices' }) ?? 0)).toBe(3)
    expect(buckets.find((b) => b.labels.le === '+Inf')!.value).toBe(seen)
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.value).toBeGreaterThanOrEqual(buckets[i - 1]!.value)
    expect(after.value('periscope_http_request_duration_seconds_sum', { method: 'GET', route: '/api/devices' })).toBeGreaterThan(0)
  })

  test('the process: CPU and RSS as the kernel counts them, the event-loop lag sees a block, the disk of the recordings', async () => {
    let m = parseMetrics((await scrape()).text)
    const rss = m.value('process_resident_memory_bytes')!
    const status = await Bun.file('/proc/self/status').text()
    const kernelRss = Number(/^VmRSS:\s+(\d+) kB/m.exec(status)![1]) * 1024
    expect(Math.abs(rss - kernelRss) / kernelRss).toBeLessThan(0.25) // the same process (the test runs the service), read moments apart
    expect(m.value('process_cpu_seconds_total')).toBeGreaterThan(0)
    expect(m.value('process_start_time_seconds')).toBeGreaterThan(Date.now() / 1000 - 3600)
    // What Bun does not implement is left out rather than served as zeros.
    for (const absent of ['nodejs_active_handles_total', 'nodejs_gc_duration_seconds', 'process_heap_bytes', 'nodejs_version_info']) expect(m.types.has(absent)).toBe(false)
    expect(m.matching('periscope_build_info')[0]!.labels).toEqual({ version: '0.1.0', bun: Bun.version })

    // Block this process's event loop (it runs the service) for 300 ms: the lag since the last scrape shows it.
    const blockedFrom = performance.now()
    while (performance.now() - blockedFrom < 300) {}
    await Bun.sleep(20)
    m = parseMetrics((await scrape()).text)
    expect(m.value('nodejs_eventloop_lag_max_seconds')).toBeGreaterThanOrEqual(0.25)

    const fs = statfsSync(s.ctx.config.recordingsDir)
    expect(m.value('periscope_recordings_disk_size_bytes')).toBe(fs.blocks * fs.bsize)
    const free = m.value('periscope_recordings_disk_free_bytes')!
    expect(Math.abs(free - fs.bavail * fs.bsize)).toBeLessThan(64 << 20) // other suites write to this disk meanwhile
  })

  test('log entries are counted by level as they are written', async () => {
    const before = parseMetrics((await scrape()).text).value('periscope_log_entries_total', { level: 'warn' })!
    // A device failing (502) is logged at warn.
    expect((await s.call('POST', '/api/mock/fail', { bus_info: EHD, errno: 'EIO', count: 1 })).status).toBe(200)
    expect((await s.call('POST', '/api/devices/set_uvc_control', { bus_info: EHD, control_id: BRIGHTNESS, value: 3 })).status).toBe(502)
    expect(parseMetrics((await scrape()).text).value('periscope_log_entries_total', { level: 'warn' })).toBe(before + 1)
  })
})

describe('/metrics over HTTP', () => {
  test('HEAD answers the headers; other methods 405 with Allow; CORS as everywhere; documented as text/plain', async () => {
    const head = await fetch(`${s.url}/metrics`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-type')).toContain('text/plain')
    expect(await head.text()).toBe('')
    for (const method of ['POST', 'DELETE', 'PATCH']) {
      const res = await s.call(method, '/metrics')
      expect(res.status).toBe(405)
      expect(res.body).toEqual({ detail: 'Method Not Allowed' })
      expect(res.headers.get('allow')).toBe('GET, HEAD')
    }
    // CORS as everywhere: a page of the vehicle's is allowed; one elsewhere gets no CORS headers (docs/security.md).
    const cors = await fetch(`${s.url}/metrics`, { headers: { origin: 'http://localhost:3000' } })
    expect(cors.headers.get('access-control-allow-origin')).toBe('http://localhost:3000')
    const elsewhere = await fetch(`${s.url}/metrics`, { headers: { origin: 'http://grafana.example' } })
    expect([elsewhere.status, elsewhere.headers.get('access-control-allow-origin')]).toEqual([200, null])
    const doc = (await s.call('GET', '/openapi.json')).body
    const op = doc.paths['/metrics'].get
    expect(op.tags).toEqual(['system'])
    expect(Object.keys(op.responses['200'].content)).toEqual(['text/plain'])
  })

  test('with a token configured a scrape needs none (reads stay open), and a scrape is not a client for the network rollback', async () => {
    const guarded = await startContractServer({ plugins: ['mock', 'cameras', 'metrics'], config: { token: 'sesame' } })
    try {
      expect((await fetch(`${guarded.url}/metrics`)).status).toBe(200)
      expect((await guarded.call('POST', '/api/mock/unplug', { bus_info: EHD })).status).toBe(401)
      // Refused before any route ran: counted all the same, as unmatched.
      const refused = parseMetrics(await (await fetch(`${guarded.url}/metrics`)).text())
      expect(refused.value('periscope_http_requests_total', { method: 'POST', route: 'unmatched', status: '401' })).toBe(1)
      const heard = guarded.ctx.activity.lastRequestAt
      await Bun.sleep(5) // the clock must be able to move
      expect((await fetch(`${guarded.url}/metrics`)).status).toBe(200)
      expect(guarded.ctx.activity.lastRequestAt).toBe(heard)
      expect((await fetch(`${guarded.url}/api/health`)).status).toBe(200)
      expect(guarded.ctx.activity.lastRequestAt).toBeGreaterThan(heard)
    } finally {
      await guarded.stop()
    }
  })

  test('without the metrics plugin there is no /metrics', async () => {
    const bare = await startContractServer({ plugins: ['mock', 'cameras'] })
    try {
      expect((await bare.call('GET', '/metrics')).status).toBe(404)
    } finally {
      await bare.stop()
    }
  })
})

test("the stream's hub counts what the pipeline sends: every byte, and a frame per RTP marker bit", async () => {
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 30, members: ['usb-tap'], log: createLogger('error') })
  await hub.listen()
  const sender = createSocket('udp4')
  try {
    const packet = (marker: boolean, size: number) => {
      const p = Buffer.alloc(size)
      p[0] = 0x80 // RTP version 2
      p[1] = (marker ? 0x80 : 0) | 96
      return p
    }
    const sent = [packet(false, 1200), packet(false, 1200), packet(true, 300), packet(true, 900)]
    for (const p of sent) await new Promise<void>((done) => sender.send(p, hub.ports[0]!, '127.0.0.1', () => done()))
    await until('the four packets at the hub', async () => hub.sent(0), (c) => c.bytes === 3600)
    expect(hub.sent(0)).toEqual({ bytes: 3600, frames: 2 })
    expect(() => hub.sent(1)).toThrow(RangeError)
  } finally {
    sender.close()
    hub.close()
  }
})
