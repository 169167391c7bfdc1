// Simulated cameras paint each frame's capture time (ms since the Unix epoch) as 48 white/black cells across
// the top 1/16 of the picture, before encoding, at every size and rate: read back here from what independent
// clients decode (ffmpeg over RTSP for H.264, ffmpeg from the MJPEG endpoint), with a reader written from
// the definition (tests/timecode.ts), never from the painter.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { loadPlugin } from '../../core/loader'
import { startTestServer, until, type TestServer } from '../helpers'
import { readTimecode, unclean } from '../timecode'
import { freePort, freeTcpPort, requireRtspClients, RtpCounter, waitFor } from './gstreamer.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264
const WEBCAM = 'usb-0000:00:14.0-4' // MJPG only

let server: TestServer
let rtspPort: number
const counters: RtpCounter[] = []

beforeAll(async () => {
  requireRtspClients()
  rtspPort = freeTcpPort()
  const plugins = await Promise.all(['mock', 'cameras', 'dwe', 'gstreamer', 'rtsp', 'jpeg'].map(loadPlugin))
  server = await startTestServer({ plugins, config: { simulate: 'default', rtspPort } })
  await until('the RTSP server ready', () => server.call('GET', '/api/health'), (r) => r.body?.plugins?.rtsp?.state === 'ok', 20_000)
}, 40_000)

afterAll(async () => {
  for (const c of counters) c.close()
  await server?.stop()
})

async function stream(bus_info: string, encode: 'H264' | 'MJPG', width: number, height: number, fps: number): Promise<void> {
  const port = freePort()
  const endpoint = await RtpCounter.open(port)
  counters.push(endpoint)
  const r = await server.call('POST', '/api/devices/configure_stream', {
    bus_info,
    stream_type: 'UDP',
    stream_format: { width, height, interval: { numerator: 1, denominator: fps } },
    encode_type: encode,
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port }],
  })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  await waitFor('packets at the UDP endpoint', () => endpoint.packets > 10, 15_000)
}

/** `count` frames decoded by ffmpeg as 8-bit luma, each with when its last byte arrived here. */
async function decodeLuma(input: string[], width: number, height: number, count: number): Promise<{ luma: Uint8Array; at: number }[]> {
  const proc = Bun.spawn(['ffmpeg', '-v', 'error', ...input, '-frames:v', String(count), '-fps_mode', 'passthrough', '-f', 'rawvideo', '-pix_fmt', 'gray', '-'], { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
  const size = width * height
  const frames: { luma: Uint8Array; at: number }[] = []
  let pending = new Uint8Array(0)
  const timer = setTimeout(() => proc.kill('SIGKILL'), 30_000)
  try {
    for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
      const joined = new Uint8Array(pending.length + chunk.length)
      joined.set(pending)
      joined.set(chunk, pending.length)
      let offset = 0
      for (; joined.length - offset >= size; offset += size) frames.push({ luma: joined.slice(offset, offset + size), at: Date.now() })
      pending = joined.slice(offset)
    }
  } finally {
    clearTimeout(timer)
  }
  const code = await proc.exited
  expect(frames.length, `ffmpeg (exit ${code}): ${await new Response(proc.stderr).text()}`).toBe(count)
  return frames
}

function checkCodes(frames: { luma: Uint8Array; at: number }[], width: number, height: number, fps: number): void {
  const codes = frames.map(({ luma }) => readTimecode(luma, width, height))
  expect(codes.every((c) => c !== null), 'every frame carries a readable code').toBe(true)
  const ms = codes.map((c) => c!.ms)
  frames.forEach(({ at }, i) => {
    // Taken on this machine's clock when the frame was made: before it reached us, and not long before.
    expect(ms[i]!, 'the code is no later than the frame reached the client').toBeLessThanOrEqual(at)
    expect(at - ms[i]!, 'ms from capture to the client').toBeLessThan(5_000)
  })
  // One code per frame, at the camera's spacing (the median: a loaded machine may bunch a few).
  const steps = ms.slice(1).map((m, i) => m - ms[i]!)
  expect(Math.min(...steps), 'codes only increase').toBeGreaterThan(0)
  const median = [...steps].sort((a, b) => a - b)[Math.floor(steps.length / 2)]!
  expect(Math.abs(median - 1000 / fps), `median ms between codes at ${fps} fps`).toBeLessThan(1000 / fps / 3)
  // Nothing else is drawn in the band: inside the cells (3 px from edges a lossy encoder smears), every
  // pixel is white or black, in every frame.
  for (const { luma } of frames) expect(unclean(luma, width, height, 3), 'grey pixels inside the cells').toBe(0)
}

test('H.264 at 640×480, 30 fps, over RTSP into ffmpeg: every frame carries its capture time, at the camera spacing', async () => {
  await stream(EHD, 'H264', 640, 480, 30)
  const frames = await decodeLuma(['-rtsp_transport', 'tcp', '-i', `rtsp://127.0.0.1:${rtspPort}/${EHD}`], 640, 480, 45)
  checkCodes(frames, 640, 480, 30)
}, 60_000)

test('H.264 at 1920×1080, 15 fps, the same camera reconfigured: the code follows the size and rate', async () => {
  await stream(EHD, 'H264', 1920, 1080, 15)
  const frames = await decodeLuma(['-rtsp_transport', 'tcp', '-i', `rtsp://127.0.0.1:${rtspPort}/${EHD}`], 1920, 1080, 25)
  checkCodes(frames, 1920, 1080, 15)
}, 60_000)

test('MJPG at 1280×720, 15 fps, from the MJPEG endpoint into ffmpeg: the JPEGs carry the code too', async () => {
  await stream(WEBCAM, 'MJPG', 1280, 720, 15)
  const frames = await decodeLuma(['-f', 'mpjpeg', '-i', `${server.url}/api/streams/${WEBCAM}/mjpeg`], 1280, 720, 25)
  checkCodes(frames, 1280, 720, 15)
}, 60_000)

test("a snapshot of a camera that is not streaming (a one-shot capture of its source) carries its capture time", async () => {
  expect((await server.call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD })).status).toBe(200)
  const asked = Date.now()
  const r = await fetch(`${server.url}/api/streams/${EHD}/snapshot.jpg`)
  expect(r.status, await r.clone().text().catch(() => '')).toBe(200)
  const jpeg = new Uint8Array(await r.arrayBuffer())
  const decoded = Bun.spawnSync(['ffmpeg', '-v', 'error', '-i', '-', '-f', 'rawvideo', '-pix_fmt', 'gray', '-'], { stdin: jpeg })
  const probed = Bun.spawnSync(['ffprobe', '-v', 'error', '-show_entries', 'stream=width,height', '-of', 'csv=p=0', '-'], { stdin: jpeg })
  const [width, height] = probed.stdout.toString().trim().split(',').map(Number) as [number, number]
  const code = readTimecode(new Uint8Array(decoded.stdout), width, height)
  expect(code, `a code in the ${width}×${height} snapshot`).not.toBeNull()
  expect(code!.ms).toBeGreaterThanOrEqual(asked - 1000)
  expect(code!.ms).toBeLessThanOrEqual(Date.now())
}, 60_000)
