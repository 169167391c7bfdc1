// Inside the VM: the real service (core/main.ts with the cameras, v4l2, gstreamer and rtsp plugins)
// streams a vivid capture node as SOFTWARE_H264 over RTP/UDP, and its RTSP server (plugins/rtsp: the
// helper server.py run by the host's /usr/bin/python3, seen over 9p) serves it at
// rtsp://127.0.0.1:<port>/<bus_info>: a real RTSP client (gst-launch-1.0 rtspsrc over TCP) decodes frames
// of the configured size and ffprobe sees H.264 at that size; vivid removed and added (unbind, bind) under
// a viewer that restarts on silence as QGroundControl's does, and it decodes again. The VM's CPU is emulated (TCG), hence the
// small size, the low rate and the generous waits; nothing within them is a failure.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { ffprobe, freePort, freeTcpPort, Receiver, RestartingViewer, RtpCounter } from '../../integration/gstreamer.helpers'
import { SYSTEM_PYTHON } from '../../../plugins/rtsp/helper'
import { running, VmService } from './service.helpers'

const BUS = 'platform:vivid-000'
const NODE = '/dev/video0'
// As stream.test.ts: vivid's smallest webcam size, at a rate x264 keeps up with under TCG.
const WIDTH = 320
const HEIGHT = 180
const FPS = 5
const FRAMES = 5
const RTSP_PORT = freeTcpPort()
const URL = `rtsp://127.0.0.1:${RTSP_PORT}/${BUS}`
const service = new VmService(18082, 'cameras,v4l2,gstreamer,rtsp', ['--rtsp-port', String(RTSP_PORT)])
const until = <T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs: number) => service.until(what, f, timeoutMs, 200)
const get = async (path: string) => (await fetch(`${service.base}${path}`)).json() as Promise<any>
let receiver: Receiver | null = null
let endpoint: RtpCounter | null = null
let viewer: RestartingViewer | null = null
const DRIVER = '/sys/bus/platform/drivers/vivid'
/**
 * The viewer's restart on silence (QGroundControl's "RTSP Video Timeout", a setting, 8 s by default; the
 * integration tier uses 2 s at real speed). Its clock starts with the client, as QGroundControl's does,
 * so it must outlast a new client's first frame: under TCG that took 6 s here and more than 8 s on CI,
 * where an 8 s viewer restarted before every first frame for 120 s.
 */
const SILENCE_MS = 20_000
/** Under TCG, how long after the stream runs again the viewer may take: a silence and a new client's first frame (the integration tier holds 5 s at real speed). */
const BACK_WITHIN_MS = 120_000

/** The service's children (setpriv execs what it prefixes): gst-launch streams and the RTSP helper. */
function children(pid: number): { pid: number; args: string }[] {
  return spawnSync('ps', ['-o', 'pid=,args=', '--ppid', String(pid)], { encoding: 'utf8' })
    .stdout.split('\n')
    .map((line) => /^\s*(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => !!m)
    .map((m) => ({ pid: Number(m[1]), args: m[2]! }))
}

/** Enough frames decoded, or why not yet (the until's failure shows the last reason). */
function decoded(frames: number): true {
  if (frames >= FRAMES) return true
  throw new Error(`${frames} of ${FRAMES} frames decoded, the viewer restarted ${viewer!.restarts} times`)
}

beforeAll(async () => {
  if (!existsSync('/sys/bus/platform/drivers/vivid/vivid.0')) throw new Error('vivid is not loaded: this test runs inside the kernel-tier VM')
  for (const tool of ['gst-launch-1.0', 'setpriv', 'ps', 'ffprobe']) {
    if (!Bun.which(tool)) throw new Error(`${tool} is missing: run scripts/setup/kernel.sh (it runs scripts/setup/gstreamer.sh and rtsp.sh)`)
  }
  const gi = spawnSync(SYSTEM_PYTHON, ['-c', "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer"], { encoding: 'utf8' })
  if (gi.status !== 0) throw new Error(`GstRtspServer is not importable by ${SYSTEM_PYTHON} inside the VM: run scripts/setup/kernel.sh (it runs scripts/setup/rtsp.sh)\n${gi.stderr}`)
  await service.start()
  // The helper imports GStreamer's Python bindings under an emulated CPU: give it time.
  await until('the RTSP server ready (plugins.rtsp ok in /api/health)', async () => (await get('/api/health')).plugins?.rtsp?.state === 'ok', 120_000)
}, 240_000)

afterAll(async () => {
  const pid = service.pid
  const spawned = pid ? children(pid) : []
  await receiver?.stop()
  await viewer?.stop()
  endpoint?.close()
  if (!existsSync(`${DRIVER}/vivid.0`)) writeFileSync(`${DRIVER}/bind`, 'vivid.0') // leave vivid as we found it
  await service.stop(15_000)
  for (const child of spawned) {
    try {
      process.kill(child.pid, 'SIGKILL')
    } catch {}
  }
})

test('a vivid node streamed as SOFTWARE_H264: its RTSP URL (the device\'s watch.rtsp) decodes over TCP in rtspsrc at the configured size, and ffprobe sees h264 at that size', async () => {
  const rtpPort = freePort()
  endpoint = await RtpCounter.open(rtpPort)
  const started = Date.now()
  const r = await service.post('/api/devices/configure_stream', {
    bus_info: BUS,
    stream_type: 'UDP',
    encode_type: 'SOFTWARE_H264',
    stream_format: { width: WIDTH, height: HEIGHT, interval: { numerator: 1, denominator: FPS } },
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: rtpPort }],
  })
  expect(r.status).toBe(200)
  await until(`RTP at the UDP endpoint (got ${endpoint.packets} packets)`, async () => endpoint!.packets > 10, 120_000)
  await until('the mount in GET /api/rtsp', async () => (await get('/api/rtsp')).mounts.some((m: any) => m.bus_info === BUS && m.url === URL), 30_000)
  // The device says where to watch it: the URL this test uses.
  const device = (await get('/api/devices')).find((d: any) => d.bus_info === BUS)
  expect(device.watch.rtsp).toBe(URL)

  receiver = Receiver.rtsp(URL, 'tcp')
  const asked = Date.now()
  await until(`${FRAMES} frames decoded over RTSP/TCP (got ${receiver.frames.length})`, async () => receiver!.frames.length >= FRAMES, 120_000)
  console.log(`RTSP: first frame decoded ${receiver.frames[0]! - asked} ms after the client started (${asked - started} ms after configure_stream)`)
  expect([receiver.width, receiver.height]).toEqual([WIDTH, HEIGHT])

  const probed = await ffprobe(URL, 'tcp', 90_000)
  expect(probed.error).toBe('')
  expect(probed.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['h264', WIDTH, HEIGHT]])
  expect((await get('/api/devices')).find((d: any) => d.bus_info === BUS).stream_status).toMatchObject({ state: 'running', error: null })
}, 400_000)

test('vivid removed and added (unbind, bind) under an RTSP viewer that restarts on silence as QGroundControl\'s does: the stream runs again by itself and the viewer decodes it again, with no action', async () => {
  await receiver?.stop()
  receiver = null
  const startedAt = Date.now()
  viewer = new RestartingViewer(URL, SILENCE_MS)
  await until('the viewer decoding', async () => decoded(viewer!.frames.length), 120_000)
  console.log(`a new RTSP client's first frame under TCG: ${viewer.frames[0]! - startedAt} ms (${viewer.restarts} restarts)`)
  writeFileSync(`${DRIVER}/unbind`, 'vivid.0')
  await until('the device gone from GET /api/devices', async () => !(await get('/api/devices')).some((d: any) => d.bus_info === BUS), 30_000)
  writeFileSync(`${DRIVER}/bind`, 'vivid.0')
  await until('the device back, its stream running again', async () => (await get('/api/devices')).find((d: any) => d.bus_info === BUS)?.stream_status?.state === 'running', 120_000)
  const runningAt = Date.now()
  await until('the viewer decoding again', async () => decoded(viewer!.framesAfter(runningAt)), BACK_WITHIN_MS)
  console.log(`vivid removed and added: the RTSP viewer decoding again ${viewer.frames.find((f) => f > runningAt)! - runningAt} ms after the stream ran again (${viewer.restarts} restarts)`)
  expect((await get('/api/devices')).find((d: any) => d.bus_info === BUS).stream_status).toMatchObject({ state: 'running', error: null })
}, 400_000)

test('SIGTERM to the service stops its RTSP helper and its gst child', async () => {
  const spawned = children(service.pid!)
  expect(spawned.filter((c) => c.args.includes('gst-launch')).length).toBe(1)
  expect(spawned.filter((c) => c.args.includes('plugins/rtsp/server.py')).length).toBe(1)
  await service.stop(15_000)
  expect(service.exited).toBe(true)
  await until('the helper and the gst child gone', async () => spawned.every((c) => !running(c.pid)), 10_000)
}, 30_000)
