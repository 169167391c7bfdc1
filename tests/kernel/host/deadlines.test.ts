// Deadlines: a device that stops answering fails with ETIMEDOUT (504) instead of hanging the request,
// and a camera whose enumeration hangs costs the others one deadline. The stalling device is a worker
// blocked in a real system call (stall-worker.ts) behind the real backend and pool. That the service
// keeps answering HTTP meanwhile is service-stall.test.ts, on the real service process.
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
const backends: V4l2Backend[] = []
afterAll(async () => {
  for (const b of backends) await b.stop()
  rmSync(root, { recursive: true, force: true })
})

const make = (ioTimeoutMs: number, sysfsRoot = join(root, 'class')) => {
  const b = new V4l2Backend({ sysfsRoot, workerUrl, ioTimeoutMs, probeTimeoutMs: 1000 })
  backends.push(b)
  return b
}

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
