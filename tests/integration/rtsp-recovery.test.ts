// An RTSP viewer that behaves as QGroundControl's receiver does (its VideoReceiver restarts the whole
// pipeline when no frame came for its "RTSP Video Timeout", or when the session ends) decodes again
// within 5 s of the stream running again after each fault: a stream restart, a reconfiguration (a new
// size), and the service killed (-9) and started again where it was, with its settings, by its supervisor.
// The client is GStreamer's rtspsrc (gst-launch), restarted as QGroundControl would (RestartingViewer).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { freeTcpPort, until } from '../helpers'
import { freePort, requireRtspClients, RestartingViewer, RtpCounter } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264
/** QGroundControl's restart on silence (its "RTSP Video Timeout" setting, in seconds there). */
const TIMEOUT_MS = 2_000
/** The bound: decoding again within 5 s of the source being back. */
const BACK_WITHIN_MS = 5_000

let service: Service
const httpPort = freeTcpPort()
const rtspPort = freeTcpPort()
const args = ['--rtsp-port', String(rtspPort)]
const endpoint = { port: freePort(), counter: undefined as RtpCounter | undefined }

let viewer: RestartingViewer | undefined

beforeAll(async () => {
  requireRtspClients()
  endpoint.counter = await RtpCounter.open(endpoint.port)
  service = await startService({ port: httpPort, args })
}, 60_000)

afterAll(async () => {
  await viewer?.stop()
  endpoint.counter?.close()
  await service?.kill()
})

async function configure(width: number, height: number): Promise<void> {
  const r = await service.call('POST', '/api/devices/configure_stream', {
    bus_info: EHD,
    stream_type: 'UDP',
    stream_format: { width, height, interval: { numerator: 1, denominator: 15 } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: endpoint.port }],
  })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
}

/** Waits for the stream to run (the source back), then for the viewer to decode 5 frames after that. */
async function backWithin(what: string): Promise<void> {
  await until(`${what}: the stream running`, () => service.call('GET', '/api/devices'), (r) => r.body?.find?.((d: any) => d.bus_info === EHD)?.stream_status?.state === 'running', 30_000)
  const running = Date.now()
  await until(`${what}: the viewer decoding again`, async () => viewer!.framesAfter(running), (n) => n >= 5, BACK_WITHIN_MS)
  console.log(`rtsp recovery: ${what}: decoding ${Date.now() - running} ms after the stream ran again (${viewer!.restarts} restarts of the viewer so far)`)
}

test('a QGroundControl-like RTSP viewer decodes again within 5 s after a stream restart, a new size, and kill -9 of the service', async () => {
  await configure(640, 480)
  await until('the mount', () => service.call('GET', '/api/rtsp'), (r) => r.body?.mounts?.some((m: any) => m.bus_info === EHD), 20_000)
  viewer = new RestartingViewer(`rtsp://127.0.0.1:${rtspPort}/${EHD}`, TIMEOUT_MS)
  await until('the viewer decoding', async () => viewer!.frames.length, (n) => n >= 10, 20_000)

  expect((await service.call('POST', '/api/devices/restart_stream', { bus_info: EHD })).status).toBe(200)
  await backWithin('restart_stream')

  await configure(1280, 720)
  await backWithin('reconfigured to 1280×720')

  await service.kill()
  service = await startService({ port: httpPort, args, dataDir: service.dataDir })
  await backWithin('the service killed (-9) and started again')
}, 120_000)
