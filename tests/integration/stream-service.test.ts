// The streamer inside the real service (core/main.ts with simulated cameras): configure_stream over
// HTTP makes a receiver decode frames, restart_stream brings them back within 2 s, a recording lands
// in the recordings dir, and SIGTERM to the service leaves no gst process behind.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { alive, discover, freePort, gstChildrenOf, Receiver, requireGStreamer, tempDir, waitFor } from './gstreamer.helpers'

let service: Subprocess
let url = ''
const dataDir = tempDir('periscope-stream-')
const receivers: Receiver[] = []

async function call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(url + path, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null }
}

beforeAll(async () => {
  requireGStreamer()
  const port = 20000 + Math.floor(Math.random() * 20000)
  service = Bun.spawn([process.execPath, join(import.meta.dir, '../../core/main.ts'), '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--simulate', 'default', '--log-level', 'error'], {
    stdout: 'ignore',
    stderr: 'inherit',
    cwd: join(import.meta.dir, '../..'),
  })
  url = `http://127.0.0.1:${port}`
  const deadline = Date.now() + 15_000
  for (;;) {
    try {
      if ((await fetch(url + '/api/devices')).ok) break
    } catch {}
    if (Date.now() > deadline) throw new Error('the service did not answer within 15 s')
    await Bun.sleep(100)
  }
})

afterAll(async () => {
  for (const r of receivers) await r.stop()
  if (service && service.exitCode === null) {
    service.kill('SIGKILL')
    await service.exited
  }
})

/** A simulated device with an H.264 node, and a size/interval it offers. */
async function h264Device(): Promise<{ bus_info: string; width: number; height: number; fps: number }> {
  const { body } = await call('GET', '/api/devices')
  for (const d of body) {
    for (const cam of d.cameras ?? []) {
      const size = cam.formats?.H264?.find((s: any) => s.width <= 1280) ?? cam.formats?.H264?.[0]
      if (!size) continue
      const iv = size.intervals.find((i: any) => i.denominator / i.numerator === 15) ?? size.intervals[0]
      return { bus_info: d.bus_info, width: size.width, height: size.height, fps: iv.denominator / iv.numerator }
    }
  }
  throw new Error('no simulated device offers H264')
}

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
  const first = await waitFor('first frame', () => rx.firstFrameAfter(t0), 5000)
  expect(first - t0).toBeLessThan(2000)
  await waitFor('a size', () => rx.width > 0)
  expect([rx.width, rx.height]).toEqual([dev.width, dev.height])

  const t1 = Date.now()
  expect((await call('POST', '/api/devices/restart_stream', { bus_info: dev.bus_info })).status).toBe(200)
  const t2 = Date.now() // the old child has exited by now: later frames are the new child's
  const again = await waitFor('first frame after restart', () => rx.firstFrameAfter(t2), 5000)
  expect(again - t1).toBeLessThan(2000)
  expect(gstChildrenOf(service.pid).length).toBe(1)
}, 20_000)

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
  expect((await configure(true)).status).toBe(200)
  await Bun.sleep(2500)
  expect((await configure(false)).status).toBe(200)
  const dir = join(dataDir, 'recordings')
  const files = readdirSync(dir).filter((f) => f.endsWith('.mkv'))
  expect(files.length).toBe(1)
  expect(files[0]).toMatch(/_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d\.mkv$/)
  const d = discover(join(dir, files[0]!))
  expect(d.codec).toMatch(/H\.264/)
  expect([d.width, d.height]).toEqual([dev.width, dev.height])
}, 20_000)

test('SIGTERM to the service stops every gst child', async () => {
  const dev = await h264Device()
  await call('POST', '/api/devices/configure_stream', {
    bus_info: dev.bus_info,
    stream_type: 'UDP',
    stream_format: { width: dev.width, height: dev.height, interval: { numerator: 1, denominator: dev.fps } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  const children = await waitFor('a gst child', () => {
    const c = gstChildrenOf(service.pid)
    return c.length ? c : null
  })
  service.kill('SIGTERM')
  await service.exited
  await waitFor('children gone', () => children.every((p) => !alive(p)), 3000)
}, 20_000)
