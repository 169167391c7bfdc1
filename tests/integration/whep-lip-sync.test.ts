// Lip sync over WHEP, judged by a player we did not write: GStreamer's webrtcbin (fixtures/whep-skew.py)
// receives a camera's video and its microphone, lines both up by our RTCP sender reports as a player does,
// and measures each decoded video frame's time against the sound's. werift's own reports said every packet
// was sent at a whole second (media/webrtc/sender-clock.ts): sound and video came out up to a second apart.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import { loadPlugin } from '../../core/loader'
import { startTestServer, type TestServer } from '../helpers'
import { freePort, freeTcpPort, requireGStreamer } from './gstreamer.helpers'

const EHD = 'usb-0000:00:14.0-1'
let s: TestServer
beforeAll(async () => {
  requireGStreamer()
  const plugins = await Promise.all(['mock', 'cameras', 'preferences', 'dwe', 'gstreamer', 'audio', 'rtsp', 'whep'].map(loadPlugin))
  s = await startTestServer({ plugins, config: { simulate: 'single', rtspPort: freeTcpPort() } })
})
afterAll(async () => {
  await s?.stop()
})

test('webrtcbin plays the sound and the video in step: sender reports with the true time, skew within 100 ms', async () => {
  const configured = await s.call('POST', '/api/devices/configure_stream', {
    bus_info: EHD,
    stream_type: 'UDP',
    encode_type: 'H264',
    stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 30 } },
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  expect(configured.status).toBe(200)
  const sound = async () => ((await s.call('GET', '/api/audio/streams')).body as any[]).find((a) => a.bus_info === EHD)
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await Bun.sleep(200)) if ((await sound())?.state === 'running') break
  expect((await sound())?.state).toBe('running')

  const player = Bun.spawn(['/usr/bin/python3', join(import.meta.dir, 'fixtures/whep-skew.py'), `${s.url}/api/streams/${EHD}/whep`, '8'], { stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => player.kill('SIGKILL'), 90_000)
  const out = await new Response(player.stdout).text()
  clearTimeout(timer)
  const line = out.trim().split('\n').at(-1) ?? ''
  const result = JSON.parse(line || '{}')
  console.log('whep lip sync:', line, (await new Response(player.stderr).text()).slice(-500))
  expect(result.status).toBe(201)
  expect(result.frames).toBeGreaterThan(60)
  expect(result.audio_buffers).toBeGreaterThan(100)
  // Reports once a second or so: with the true time, their fractions of a second spread over the second
  // (all of 5 or more under 100 ms by chance: under 1e-5); cut to the second, they all sit near 0.
  expect(result.sender_reports).toBeGreaterThanOrEqual(5)
  expect(result.sender_report_ntp_fraction_max_ms).toBeGreaterThan(100)
  // Once the first reports have come (the first seconds), each second's median skew is within 100 ms.
  const settled = (result.per_second_p50 as number[]).slice(2)
  expect(settled.length).toBeGreaterThanOrEqual(4)
  for (const ms of settled) expect(Math.abs(ms)).toBeLessThan(100)
}, 120_000)
