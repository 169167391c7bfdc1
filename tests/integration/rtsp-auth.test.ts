// RTSP under --token-scope all (plugins/rtsp/server.py require_token): a client without credentials,
// or with a wrong token, gets 401 and nothing to play; with the token as password (user `periscope`),
// ffprobe (ffmpeg) and GStreamer's rtspsrc (credentials in the URL,
// and as user-id/user-pw) decode the camera's H.264.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { loadPlugin } from '../../core/loader'
import { startTestServer, until, type TestServer } from '../helpers'
import { ffprobe, freePort, freeTcpPort, Receiver, requireRtspClients, RtpCounter, waitFor } from './gstreamer.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264
const TOKEN = 'rtsp-s3cret'
const AUTH = { authorization: `Bearer ${TOKEN}` }

let server: TestServer
let rtspPort: number
let endpoint: RtpCounter | null = null
const receivers: Receiver[] = []
const at = (credentials: string) => `rtsp://${credentials}127.0.0.1:${rtspPort}/${EHD}`

beforeAll(async () => {
  requireRtspClients()
  rtspPort = freeTcpPort()
  const plugins = await Promise.all(['mock', 'cameras', 'dwe', 'gstreamer', 'rtsp'].map(loadPlugin))
  server = await startTestServer({ plugins, config: { simulate: 'default', rtspPort, token: TOKEN, tokenScope: 'all' } })
  await until('the RTSP server ready', () => server.call('GET', '/api/health'), (r) => r.body?.plugins?.rtsp?.state === 'ok', 20_000)
  const port = freePort()
  endpoint = await RtpCounter.open(port)
  const r = await server.call(
    'POST',
    '/api/devices/configure_stream',
    { bus_info: EHD, stream_type: 'UDP', stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 30 } }, encode_type: 'H264', enabled: true, endpoints: [{ host: '127.0.0.1', port }] },
    AUTH,
  )
  expect(r.status).toBe(200)
  await until(`the mount of ${EHD}`, () => server.call('GET', '/api/rtsp', undefined, AUTH), (r) => r.body?.mounts?.some((m: any) => m.path === `/${EHD}`), 15_000)
  await waitFor('packets at the UDP endpoint', () => endpoint!.packets > 10, 15_000)
}, 60_000)

afterAll(async () => {
  for (const r of receivers) await r.stop()
  endpoint?.close()
  await server?.stop()
})

/** One DESCRIBE on a raw connection: the status line and the WWW-Authenticate headers, as sent. */
function describeRaw(headers: string[] = []): Promise<{ status: string; challenges: string[] }> {
  return new Promise((resolve, reject) => {
    const socket = connect(rtspPort, '127.0.0.1', () => socket.write([`DESCRIBE rtsp://127.0.0.1:${rtspPort}/${EHD} RTSP/1.0`, 'CSeq: 1', 'Accept: application/sdp', ...headers].join('\r\n') + '\r\n\r\n'))
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      text += chunk
      const end = text.indexOf('\r\n\r\n')
      if (end < 0) return
      const lines = text.slice(0, end).split('\r\n')
      socket.destroy()
      resolve({ status: lines[0]!, challenges: lines.filter((l) => /^www-authenticate:/i.test(l)).map((l) => l.slice(l.indexOf(':') + 1).trim()) })
    })
    socket.on('error', reject)
    setTimeout(() => (socket.destroy(), reject(new Error('no RTSP answer in 15 s'))), 15_000).unref()
  })
}

test('without credentials or with a wrong token: 401 asking for Basic; the right one: 200 with the SDP', async () => {
  const bare = await describeRaw()
  expect(bare.status).toBe('RTSP/1.0 401 Unauthorized')
  expect(bare.challenges.map((c) => c.split(' ')[0])).toEqual(['Basic'])
  const wrong = await describeRaw([`Authorization: Basic ${btoa('periscope:nope')}`])
  expect(wrong.status).toBe('RTSP/1.0 401 Unauthorized')
  const right = await describeRaw([`Authorization: Basic ${btoa(`periscope:${TOKEN}`)}`])
  expect(right.status).toBe('RTSP/1.0 200 OK')
  // The wrong one is counted with the HTTP ones in /metrics (the bare ask is not).
  await until('the wrong token counted', async () => server.ctx.refusals.wrongTokens, (n) => n === 1, 5000)
  expect(server.ctx.refusals.wrongTokens).toBe(1)
}, 30_000)

test('ffprobe (ffmpeg): nothing without the token or with a wrong one; with rtsp://periscope:<token>@host/path it sees the H.264 at its size', async () => {
  const bare = await ffprobe(at(''), 'tcp')
  expect(bare.streams).toEqual([])
  expect(bare.error).toContain('401')
  const wrong = await ffprobe(at('periscope:wrong@'), 'tcp')
  expect(wrong.streams).toEqual([])
  expect(wrong.error).toContain('401')
  for (const transport of ['tcp', 'udp'] as const) {
    const probed = await ffprobe(at(`periscope:${TOKEN}@`), transport)
    expect(probed.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['h264', 640, 480]])
  }
}, 90_000)

test("GStreamer's rtspsrc decodes frames with the credentials in the URL, and with user-id/user-pw", async () => {
  for (const rx of [Receiver.rtsp(at(`periscope:${TOKEN}@`), 'tcp'), new Receiver(0, 'H264', ['rtspsrc', `location=${at('')}`, 'user-id=periscope', `user-pw=${TOKEN}`, 'protocols=tcp', 'latency=0', '!', 'decodebin'])]) {
    receivers.push(rx)
    const t0 = Date.now()
    await waitFor('a frame decoded over RTSP with credentials', () => rx.firstFrameAfter(t0), 20_000)
    await waitFor('a decoded size', () => rx.width > 0)
    expect([rx.width, rx.height]).toEqual([640, 480])
    await rx.stop()
  }
}, 60_000)
