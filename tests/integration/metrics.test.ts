// GET /metrics with real GStreamer: Prometheus's own checker (`promtool check metrics`, Debian's
// prometheus package: scripts/setup/metrics.sh) accepts what the service serves, idle and while a
// stream runs and a viewer watches; the frames and bytes counters move with the stream by as much as an
// independent RTP receiver at the UDP endpoint counts; the MJPEG viewer gauge is 1 while curl reads the
// stream and 0 once it hangs up.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { loadPlugin } from '../../core/loader'
import { parseMetrics, startTestServer, until, type TestServer } from '../helpers'
import { freePort, requireGStreamer, RtpCounter } from './gstreamer.helpers'
import { promtoolCheck, requirePromtool, scrape as scrapeAt } from './metrics.helpers'

const EHD = 'usb-0000:00:14.0-1' // simulated exploreHD: H.264

let s: TestServer
const spawned: Subprocess[] = []

beforeAll(async () => {
  requireGStreamer()
  requirePromtool()
  const plugins = await Promise.all(['mock', 'cameras', 'preferences', 'recordings', 'gstreamer', 'jpeg', 'whep', 'metrics'].map(loadPlugin))
  s = await startTestServer({ plugins, config: { simulate: 'default' } })
}, 30_000)

afterAll(async () => {
  for (const proc of spawned) proc.kill('SIGKILL')
  await s?.stop()
})

const scrape = () => scrapeAt(s.url)

test('promtool accepts the idle service, and refuses a broken exposition (the check can fail)', async () => {
  const { text } = await scrape()
  expect(await promtoolCheck(text)).toEqual({ code: 0, output: '' })
  const broken = await promtoolCheck(text.replace(/periscope_stream_frames_total\{/, 'periscope_stream_frames{'))
  expect(broken.code).not.toBe(0)
}, 30_000)

test('a running stream moves frames and bytes as the UDP endpoint receives them; an MJPEG client is a viewer while it reads; promtool accepts it all', async () => {
  const port = freePort()
  const endpoint = await RtpCounter.open(port)
  try {
    const configured = await s.call('POST', '/api/devices/configure_stream', {
      bus_info: EHD,
      stream_type: 'UDP',
      encode_type: 'H264',
      stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 30 } },
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port }],
    })
    expect(configured.status).toBe(200)
    await until('the stream running, as /metrics says', async () => (await scrape()).m.value('periscope_stream_state', { bus_info: EHD, state: 'running' }), (v) => v === 1, 20_000)
    await until('frames at the endpoint', async () => endpoint.frames.length, (n) => n > 0, 10_000)

    // Over a window of at least 3 s, the counters move as the endpoint's receiver counts (the same
    // packets, read moments apart in this process: a key frame's burst at most).
    const first = (await scrape()).m
    const at = { frames: endpoint.frames.length, bytes: endpoint.bytes }
    const windowStart = performance.now()
    await until('3 s of stream', async () => performance.now() - windowStart, (ms) => ms >= 3000, 5000)
    const second = (await scrape()).m
    const received = { frames: endpoint.frames.length - at.frames, bytes: endpoint.bytes - at.bytes }
    const counted = {
      frames: second.value('periscope_stream_frames_total', { bus_info: EHD })! - first.value('periscope_stream_frames_total', { bus_info: EHD })!,
      bytes: second.value('periscope_stream_sent_bytes_total', { bus_info: EHD })! - first.value('periscope_stream_sent_bytes_total', { bus_info: EHD })!,
    }
    console.log(`metrics: over ${Math.round(performance.now() - windowStart)} ms, counted ${counted.frames} frames / ${counted.bytes} B; the endpoint received ${received.frames} / ${received.bytes} B`)
    expect(received.frames).toBeGreaterThan(30) // the stream really ran (30 fps for 3 s on a loaded machine)
    expect(Math.abs(counted.frames - received.frames)).toBeLessThanOrEqual(3)
    // A frame read by one socket and not yet by the other is all that may differ (a key frame: 5-10 % of the window).
    expect(Math.abs(counted.bytes - received.bytes)).toBeLessThanOrEqual(received.bytes * 0.2)
    expect(second.value('periscope_stream_state', { bus_info: EHD, state: 'stopped' })).toBe(0)
    expect(second.value('periscope_viewers', { bus_info: EHD, protocol: 'mjpeg' })).toBe(0)

    // A real MJPEG client (curl) reading the stream is one viewer; gone when it hangs up.
    const curl = Bun.spawn(['curl', '-sN', '-o', '/dev/null', `${s.url}/api/streams/${EHD}/mjpeg`], { stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' })
    spawned.push(curl)
    const watching = await until('the MJPEG viewer counted', async () => (await scrape()).m.value('periscope_viewers', { bus_info: EHD, protocol: 'mjpeg' }), (v) => v === 1, 15_000)
    expect(watching).toBe(1)
    const { text } = await scrape()
    expect(parseMetrics(text).value('periscope_viewers', { bus_info: EHD, protocol: 'whep' })).toBe(0)
    expect(await promtoolCheck(text)).toEqual({ code: 0, output: '' })
    curl.kill('SIGKILL')
    await curl.exited
    await until('the MJPEG viewer gone', async () => (await scrape()).m.value('periscope_viewers', { bus_info: EHD, protocol: 'mjpeg' }), (v) => v === 0, 10_000)
  } finally {
    endpoint.close()
    await s.call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD })
  }
  // A stopped stream: its counters start again from 0 when it next starts (Prometheus takes that as a reset).
  const { m } = await until('the stream stopped', async () => await scrape(), ({ m }) => m.value('periscope_stream_state', { bus_info: EHD, state: 'stopped' }) === 1, 15_000)
  expect(m.value('periscope_stream_frames_total', { bus_info: EHD })).toBe(0)
}, 90_000)
