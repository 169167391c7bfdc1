// Inside the VM: the real service (core/main.ts with the cameras, v4l2 and gstreamer plugins) streams a
// vivid capture node — raw YUYV only — as SOFTWARE_H264 over RTP/UDP to a real GStreamer receiver on
// loopback, which decodes frames of the configured size. The VM's CPU is emulated (TCG), hence the small
// size, the low rate and the generous waits; no frame within them is a failure.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { Receiver } from '../../integration/gstreamer.helpers'
import { running, VmService } from './service.helpers'
import { v4l2ctl } from './v4l2ctl'

const RTP_PORT = 15600
const BUS = 'platform:vivid-000'
const NODE = '/dev/video0'
// 320x180 at 5 fps: the smallest webcam size vivid offers, at a rate x264 keeps up with under TCG.
const WIDTH = 320
const HEIGHT = 180
const INTERVAL = { numerator: 1, denominator: 5 }
const FRAMES = 5
const service = new VmService(18081, 'cameras,v4l2,gstreamer')
const until = <T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs: number) => service.until(what, f, timeoutMs, 200)
let receiver: Receiver | null = null

type Device = { bus_info: string; cameras: { path: string; formats: Record<string, { width: number; height: number }[]> }[]; stream: Record<string, unknown>; stream_status: { state: string; error: string | null } }
const device = async () => ((await (await fetch(`${service.base}/api/devices`)).json()) as Device[]).find((d) => d.bus_info === BUS)
const post = (path: string, body: unknown) => service.post(path, body)

/** gst-launch children of the service, by parent pid (the streamer prefixes setpriv, which execs gst). */
const gstChildren = (pid: number) =>
  spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .filter((l) => l.includes('gst-launch'))
    .map((l) => Number(l.trim().split(/\s+/)[0]))


beforeAll(async () => {
  if (!existsSync('/sys/bus/platform/drivers/vivid/vivid.0')) throw new Error('vivid is not loaded: this test runs inside the kernel-tier VM')
  for (const tool of ['gst-launch-1.0', 'setpriv', 'ps']) {
    if (!Bun.which(tool)) throw new Error(`${tool} is missing: run scripts/setup/kernel.sh (it runs scripts/setup/gstreamer.sh)`)
  }
  await service.start()
})

afterAll(async () => {
  const pid = service.pid
  const children = pid ? gstChildren(pid) : []
  await receiver?.stop()
  await service.stop(15_000)
  for (const child of children) {
    try {
      process.kill(child, 'SIGKILL')
    } catch {}
  }
})

test('a vivid node (raw YUYV only) offers SOFTWARE_H264 at the size the test streams', async () => {
  expect(v4l2ctl(['-d', NODE, '--list-formats-ext'])).toContain(`Size: Discrete ${WIDTH}x${HEIGHT}`)
  const vivid = await until('the vivid device listed', device, 30_000)
  const camera = vivid.cameras.find((c) => c.path === NODE)!
  expect(Object.keys(camera.formats)).not.toContain('MJPG')
  expect(camera.formats.YUYV!.some((s) => s.width === WIDTH && s.height === HEIGHT)).toBe(true)
  // Asking for H264 is refused with the list of what the camera can do: SOFTWARE_H264 from its YUYV.
  const h264 = await post('/api/devices/configure_stream', { bus_info: BUS, stream_type: 'UDP', encode_type: 'H264', stream_format: { width: WIDTH, height: HEIGHT, interval: INTERVAL }, enabled: false, endpoints: [{ host: '127.0.0.1', port: RTP_PORT }] })
  expect(h264.status).toBe(422)
  expect(JSON.stringify(await h264.json())).toContain('SOFTWARE_H264, NONE')
})

test('SOFTWARE_H264 over UDP: v4l2src → x264enc → RTP, and a real receiver decodes frames of the configured size', async () => {
  receiver = new Receiver(RTP_PORT, 'SOFTWARE_H264')
  await receiver.ready()
  const started = Date.now()
  const r = await post('/api/devices/configure_stream', { bus_info: BUS, stream_type: 'UDP', encode_type: 'SOFTWARE_H264', stream_format: { width: WIDTH, height: HEIGHT, interval: INTERVAL }, enabled: true, endpoints: [{ host: '127.0.0.1', port: RTP_PORT }] })
  expect(r.status).toBe(200)
  expect((await device())!.stream).toMatchObject({ encode_type: 'SOFTWARE_H264', device_path: NODE, width: WIDTH, height: HEIGHT, enabled: true })
  await until(`${FRAMES} decoded frames at the receiver (got ${receiver.frames.length})`, async () => receiver!.frames.length >= FRAMES, 120_000)
  console.log(`first decoded frame ${receiver.frames[0]! - started} ms after configure_stream; ${FRAMES} frames after ${receiver.frames[FRAMES - 1]! - started} ms`)
  expect([receiver.width, receiver.height]).toEqual([WIDTH, HEIGHT])
  // The service says 'running' at its child's first progress report, which can come after a receiver's
  // first frames (under TCG, once 5 frames were decoded while it still said 'starting').
  const status = await until('the stream said running', async () => { const s = (await device())!.stream_status; return s.state !== 'starting' && s }, 30_000)
  expect(status).toMatchObject({ state: 'running', error: null })
}, 180_000)

test('SIGTERM to the service stops its gst child', async () => {
  const children = gstChildren(service.pid!)
  expect(children.length).toBe(1)
  await service.stop(15_000)
  expect(service.exited).toBe(true)
  await until('the gst child gone', async () => children.every((c) => !running(c)), 10_000)
}, 30_000)
