// Inside the VM: a camera another process streams (as BlueOS's mavlink-camera-manager holds every USB
// camera by default). The service's stream of it fails with GStreamer's "Device is busy"; the service says
// which process holds it, in the device's stream_status and in /api/health, and starts the stream by
// itself once that process let go.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { Receiver } from '../../integration/gstreamer.helpers'
import { running, VmService } from './service.helpers'

const RTP_PORT = 15604
const BUS = 'platform:vivid-000'
const NODE = '/dev/video0'
const service = new VmService(18083, 'cameras,v4l2,gstreamer')
const until = <T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs: number) => service.until(what, f, timeoutMs, 200)
let holder: ChildProcess | null = null
let holderOut = ''
let receiver: Receiver | null = null

type Device = { bus_info: string; stream_status: { state: string; error: string | null } }
const device = async () => ((await (await fetch(`${service.base}/api/devices`)).json()) as Device[]).find((d) => d.bus_info === BUS)

beforeAll(async () => {
  if (!existsSync('/sys/bus/platform/drivers/vivid/vivid.0')) throw new Error('vivid is not loaded: this test runs inside the kernel-tier VM')
  // The other camera manager: streams the node into nothing, printing its bus messages (-m).
  holder = spawn('gst-launch-1.0', ['-m', 'v4l2src', `device=${NODE}`, '!', 'video/x-raw,width=320,height=180', '!', 'fakesink'], { stdio: ['ignore', 'pipe', 'pipe'] })
  holder.stdout!.on('data', (d) => (holderOut += d))
  holder.stderr!.on('data', (d) => (holderOut += d))
  // Streaming once a live pipeline picked its clock, after PLAYING (the buffers are queued: the node is busy).
  await service.until('the holder streaming', async () => holderOut.includes('New clock'), 60_000, 200)
  await service.start()
}, 120_000)

afterAll(async () => {
  if (holder && holder.exitCode === null) holder.kill('SIGKILL')
  await receiver?.stop()
  await service.stop(15_000)
})

test('a node another process streams: the stream says who holds it, in the device and in health', async () => {
  await until('the vivid device listed', device, 30_000)
  const r = await service.post('/api/devices/configure_stream', { bus_info: BUS, stream_type: 'UDP', encode_type: 'SOFTWARE_H264', stream_format: { width: 320, height: 180, interval: { numerator: 1, denominator: 5 } }, enabled: true, endpoints: [{ host: '127.0.0.1', port: RTP_PORT }] })
  expect(r.status).toBe(200)
  const said = `in use by gst-launch-1.0 (pid ${holder!.pid})`
  const status = await until(`stream_status naming the holder (now ${JSON.stringify((await device())?.stream_status)})`, async () => {
    const s = (await device())?.stream_status
    return s?.error?.includes(said) ? s : null
  }, 90_000)
  expect(status.state).toBe('error')
  expect(status.error).toBe(`device ${NODE} is in use by gst-launch-1.0 (pid ${holder!.pid}); the stream starts when it is released`)
  const health = (await (await fetch(`${service.base}/api/health`)).json()) as any
  expect(health.status).toBe('degraded')
  expect(health.plugins.gstreamer.detail).toContain(`${BUS}: device ${NODE} is ${said}`)
}, 150_000)

test('once the holder ends, the stream starts by itself and a receiver decodes it', async () => {
  receiver = new Receiver(RTP_PORT, 'SOFTWARE_H264')
  await receiver.ready()
  holder!.kill('SIGTERM')
  await until('the holder gone', async () => !running(holder!.pid!), 20_000)
  await until('the stream running', async () => (await device())?.stream_status.state === 'running', 90_000)
  await until(`a decoded frame (got ${receiver.frames.length})`, async () => receiver!.frames.length >= 1, 120_000)
  expect((await device())!.stream_status.error).toBeNull()
}, 240_000)
