// The event loop never waits on a device: a control transfer blocked for 3 s in a worker thread leaves
// an HTTP health check answering in milliseconds, and a device that stops answering fails with
// ETIMEDOUT (504) instead of hanging the request. The stalling device is a worker blocked in a real
// system call (stall-worker.ts) behind the real backend and pool.
import { afterAll, expect, test } from 'bun:test'
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fromDeviceError, HttpError } from '../../../core/errors'
import { DeviceError } from '../../../core/types'
import { V4l2Backend } from '../../../drivers/v4l2/backend'
import { STALL_BUS, WEDGED_BUS } from './stall'

// A sysfs look-alike: one node whose parent device is a directory of the temp tree.
const root = mkdtempSync(join(tmpdir(), 'v4l2-sysfs-'))
mkdirSync(join(root, 'devices/stall0'), { recursive: true })
mkdirSync(join(root, 'class/video0'), { recursive: true })
symlinkSync(join(root, 'devices/stall0'), join(root, 'class/video0/device'))

const workerUrl = new URL('./stall-worker.ts', import.meta.url)
const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => Response.json({ state: 'ok' }) })
const backends: V4l2Backend[] = []
afterAll(async () => {
  server.stop(true)
  for (const b of backends) await b.stop()
  rmSync(root, { recursive: true, force: true })
})

const make = (ioTimeoutMs: number, sysfsRoot = join(root, 'class')) => {
  const b = new V4l2Backend({ sysfsRoot, workerUrl, ioTimeoutMs, probeTimeoutMs: 1000 })
  backends.push(b)
  return b
}

test('a control transfer stalled for 3 s does not delay GET /api/health', async () => {
  const backend = make(10_000)
  expect((await backend.list()).map((d) => d.bus_info)).toEqual([STALL_BUS])
  const started = performance.now()
  const set = backend.setControl(STALL_BUS, 0x00980900, 3000)
  const latencies: number[] = []
  while (performance.now() - started < 2500) {
    const t = performance.now()
    const r = await fetch(`http://127.0.0.1:${server.port}/api/health`)
    expect(r.status).toBe(200)
    latencies.push(performance.now() - t)
    await Bun.sleep(100)
  }
  expect(await set).toBe(3000)
  expect(performance.now() - started).toBeGreaterThanOrEqual(2900) // the stall was real
  expect(latencies.length).toBeGreaterThan(10)
  console.log(`GET /api/health during a 3 s control stall: ${latencies.length} requests, max ${Math.max(...latencies).toFixed(1)} ms`)
  // Generous: a shared CI core, but an order of magnitude under the stall.
  expect(Math.max(...latencies)).toBeLessThan(250)
})

test('a device that stops answering fails with ETIMEDOUT → 504, and the next request gets a fresh worker', async () => {
  const backend = make(500)
  await backend.list()
  const t = performance.now()
  const err = await backend.setControl(STALL_BUS, 0x00980900, 3000).catch((e) => e)
  expect(performance.now() - t).toBeLessThan(2000)
  expect(err).toBeInstanceOf(DeviceError)
  expect((err as DeviceError).code).toBe('ETIMEDOUT')
  const http = fromDeviceError(err, 'set_uvc_control')
  expect(http).toBeInstanceOf(HttpError)
  expect((http as HttpError).status).toBe(504)
  // The wedged worker was abandoned; a quick request succeeds on a new one.
  expect(await backend.setControl(STALL_BUS, 0x00980900, 1)).toBe(1)
})

test('a camera whose enumeration hangs costs the others one deadline, then a short wait per list()', async () => {
  // Two devices: video0 answers, "wedged0" never finishes enumerating.
  mkdirSync(join(root, 'devices/wedged'), { recursive: true })
  mkdirSync(join(root, 'class2/video0'), { recursive: true })
  mkdirSync(join(root, 'class2/wedged0'), { recursive: true })
  symlinkSync(join(root, 'devices/stall0'), join(root, 'class2/video0/device'))
  symlinkSync(join(root, 'devices/wedged'), join(root, 'class2/wedged0/device'))
  const backend = make(1000, join(root, 'class2'))
  let t = performance.now()
  expect((await backend.list()).map((d) => d.bus_info)).toEqual([STALL_BUS]) // the wedged one has no past answer
  expect(performance.now() - t).toBeGreaterThanOrEqual(900) // it waited for the deadline once
  for (let i = 0; i < 3; i++) {
    t = performance.now()
    expect((await backend.list()).map((d) => d.bus_info)).toEqual([STALL_BUS])
    expect(performance.now() - t).toBeLessThan(800) // stalled: a short wait, not the deadline again
  }
  expect((await backend.list()).map((d) => d.bus_info)).not.toContain(WEDGED_BUS)
  expect(backend.stalledDevices()).toEqual([join(root, 'devices/wedged')]) // the plugin's health says "degraded"
})
