// GET /api/streams/{bus_info}/sdp: the description a VLC user opens, served by the running service and
// good enough for a real receiver (GStreamer's sdpdemux, which reads SDP as VLC does).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadPlugin } from '../../core/loader'
import { startTestServer, tempDir, type TestServer } from '../helpers'
import { eachLine, freePort, requireGStreamer, waitFor } from './gstreamer.helpers'

const EHD = 'usb-0000:00:14.0-1'
let s: TestServer
beforeAll(async () => {
  requireGStreamer()
  s = await startTestServer({ plugins: await Promise.all(['mock', 'cameras', 'dwe', 'gstreamer'].map(loadPlugin)), config: { simulate: 'single' } })
})
afterAll(async () => {
  await s?.stop()
})

const configure = (stream_type: 'UDP' | 'RECORDING', port: number, enabled = true) =>
  s.call('POST', '/api/devices/configure_stream', {
    bus_info: EHD,
    stream_type,
    encode_type: 'H264',
    stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
    enabled,
    endpoints: [{ host: '127.0.0.1', port }],
  })

test('a running UDP stream has an SDP description a receiver can play', async () => {
  expect((await s.call('GET', `/api/streams/${EHD}/sdp`)).status).toBe(404)
  const port = freePort()
  const file = join(tempDir(), 'stream.sdp')
  expect((await configure('UDP', port)).status).toBe(200)
  const res = await fetch(`${s.url}/api/streams/${EHD}/sdp`)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('application/sdp')
  const text = await res.text()
  expect(text).toContain(`m=video ${port} RTP/AVP 96`)
  writeFileSync(file, text)
  const rx = Bun.spawn(['gst-launch-1.0', '-v', 'filesrc', `location=${file}`, '!', 'sdpdemux', 'latency=0', '!', 'rtph264depay', '!', 'avdec_h264', '!', 'identity', 'name=out', 'silent=false', '!', 'fakesink'], {
    stdout: 'pipe',
    stderr: 'ignore',
  })
  let decoded = 0
  const reading = eachLine(rx.stdout as ReadableStream<Uint8Array>, (line) => {
    if (line.includes('GstIdentity:out: last-message = chain')) decoded++
  })
  try {
    await waitFor('more than 10 frames decoded from the SDP description', () => decoded > 10, 20_000)
  } finally {
    rx.kill('SIGKILL')
    await reading
  }
  expect((await configure('RECORDING', port)).status).toBe(200)
  expect((await s.call('GET', `/api/streams/${EHD}/sdp`)).status).toBe(409)
  expect((await configure('UDP', port, false)).status).toBe(200)
}, 60_000)
