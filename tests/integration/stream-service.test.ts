// The streamer inside the real service (core/main.ts with simulated cameras): configure_stream over
// HTTP makes a receiver decode frames, restart_stream brings them back within 2 s, a recording lands
// in the recordings dir, and SIGTERM to the service leaves no gst process behind.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { until } from '../helpers'
import { alive, discover, freePort, gstChildrenOf, Receiver, requireGStreamer, waitFor } from './gstreamer.helpers'
import { h264Device as offeredH264, startService, type Service } from './service.helpers'

const services: Service[] = []
const receivers: Receiver[] = []
/** The service most tests share; the SIGTERM test starts its own. */
let shared: Service
const call = (method: string, path: string, body?: unknown) => shared.call(method, path, body)

beforeAll(async () => {
  requireGStreamer()
  shared = await startService()
  services.push(shared)
}, 40_000)

afterAll(async () => {
  for (const r of receivers) await r.stop()
  for (const service of services) await service.kill()
})

const h264Device = (service: Service = shared) => offeredH264(service)
const device = async (bus_info: string): Promise<any> => (await call('GET', '/api/devices')).body.find((d: any) => d.bus_info === bus_info)

test('configure_stream → frames at a receiver; restart_stream → frames again within 2 s', async () => {
  const dev = await h264Device()
  const port = freePort()
  const rx = new Receiver(port, 'H264')
  receivers.push(rx)
  await rx.ready()
  const t0 = Date.now()
  const r = await call('POST', '/api/devices/configure_stream', {
    bus_info: dev.bus_info,
    stream_type: 'UDP',
    stream_format: { width: dev.width, height: dev.height, interval: { numerator: 1, denominator: dev.fps } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port }],
  })
  expect(r.status).toBe(200)
  const first = await waitFor('first frame', () => rx.firstFrameAfter(t0), 10_000)
  expect(first - t0).toBeLessThan(2000)
  await waitFor('a size', () => rx.width > 0)
  expect([rx.width, rx.height]).toEqual([dev.width, dev.height])

  const t1 = Date.now()
  expect((await call('POST', '/api/devices/restart_stream', { bus_info: dev.bus_info })).status).toBe(200)
  const t2 = Date.now() // the old child has exited by now: later frames are the new child's
  const again = await waitFor('first frame after restart', () => rx.firstFrameAfter(t2), 10_000)
  expect(again - t1).toBeLessThan(2000)
  expect(gstChildrenOf(shared.proc.pid).length).toBe(1)
}, 45_000)

test('a RECORDING stream writes a Matroska file named after the device into the recordings dir', async () => {
  const dev = await h264Device()
  const configure = (enabled: boolean) =>
    call('POST', '/api/devices/configure_stream', {
      bus_info: dev.bus_info,
      stream_type: 'RECORDING',
      stream_format: { width: dev.width, height: dev.height, interval: { numerator: 1, denominator: dev.fps } },
      encode_type: 'H264',
      enabled,
      endpoints: [],
    })
  const dir = join(shared.dataDir, 'recordings')
  const recordings = () => (existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.mkv')) : [])
  expect((await configure(true)).status).toBe(200)
  // Recording for a while: until the stream runs and its file holds a good part of a second of video
  // (the muxer flushes every second), rather than for a fixed time.
  await until('the stream running', () => device(dev.bus_info), (d) => d?.stream_status?.state === 'running', 15_000)
  await waitFor('a recording with video in it', () => recordings().length === 1 && statSync(join(dir, recordings()[0]!)).size > 50_000, 15_000)
  expect((await configure(false)).status).toBe(200)
  const files = recordings()
  expect(files.length).toBe(1)
  expect(files[0]).toMatch(/_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d_seg001\.mkv$/) // its first segment (docs/recordings.md)
  const d = discover(join(dir, files[0]!))
  expect(d.codec).toMatch(/H\.264/)
  expect([d.width, d.height]).toEqual([dev.width, dev.height])
}, 45_000)

test('restart_stream of a device as first seen streams to loopback (simulated cameras: a demo sends nothing off the machine)', async () => {
  const service = await startService()
  services.push(service)
  try {
    const dev = (await service.call('GET', '/api/devices')).body.find((d: any) => d.stream.stream_type === 'UDP' && d.stream.encode_type !== 'NONE')
    expect(dev.stream.endpoints).toEqual([{ host: '127.0.0.1', port: expect.any(Number) }])
    expect((await service.call('POST', '/api/devices/restart_stream', { bus_info: dev.bus_info })).status).toBe(200)
    // Where the child sends: its multiudpsink clients, from its own command line.
    const [child] = await waitFor('a gst child', () => {
      const c = gstChildrenOf(service.proc.pid)
      return c.length ? c : null
    }, 15_000)
    const clients = readFileSync(`/proc/${child}/cmdline`, 'utf8')
      .split('\0')
      .filter((arg) => arg.startsWith('clients='))
      .flatMap((arg) => arg.slice('clients='.length).split(','))
    // The endpoint, and the service's own stream hub (media/hub.ts): loopback, both.
    expect(clients).toContain(`127.0.0.1:${dev.stream.endpoints[0].port}`)
    expect(clients.length).toBe(2)
    expect(clients.every((client) => client.startsWith('127.0.0.1:'))).toBe(true)
    expect((await service.call('POST', '/api/devices/unconfigure_stream', { bus_info: dev.bus_info })).status).toBe(200)
  } finally {
    service.proc.kill('SIGTERM')
    await service.proc.exited
  }
}, 60_000)

test('SIGTERM to the service stops every gst child', async () => {
  const service = await startService()
  services.push(service)
  const dev = await h264Device(service)
  await service.call('POST', '/api/devices/configure_stream', {
    bus_info: dev.bus_info,
    stream_type: 'UDP',
    stream_format: { width: dev.width, height: dev.height, interval: { numerator: 1, denominator: dev.fps } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  const children = await waitFor('a gst child', () => {
    const c = gstChildrenOf(service.proc.pid)
    return c.length ? c : null
  }, 15_000)
  service.proc.kill('SIGTERM')
  await service.proc.exited
  await waitFor('children gone', () => children.every((p) => !alive(p)), 10_000)
}, 60_000)
