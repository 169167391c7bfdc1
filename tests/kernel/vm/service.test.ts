// Inside the VM: the real service (core/main.ts with the cameras, v4l2 and dwe plugins) lists the vivid
// devices, sets a control over HTTP (v4l2-ctl reads it back), and survives an unplug/plug (sysfs
// unbind/bind) with the control restored on reappearance.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { v4l2ctl } from './v4l2ctl'

const REPO = join(import.meta.dir, '../../..')
const PORT = 18080
const BASE = `http://127.0.0.1:${PORT}`
const DRIVER = '/sys/bus/platform/drivers/vivid'
const BUS = 'platform:vivid-000'
const BRIGHTNESS = 0x00980900
const dataDir = mkdtempSync('/tmp/periscope-vm-')
let service: ChildProcess | null = null
let log = ''

async function until<T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  while (Date.now() < deadline) {
    try {
      const v = await f()
      if (v) return v
    } catch (e) {
      last = e
    }
    await Bun.sleep(100)
  }
  throw new Error(`${what}: not within ${timeoutMs} ms (${last ?? 'no answer'})\n--- service log ---\n${log.slice(-3000)}`)
}

const devices = async () => (await (await fetch(`${BASE}/api/devices`)).json()) as { bus_info: string; device_info: { device_paths: string[] }; controls: { control_id: number; value: unknown }[] }[]
const setControl = (bus_info: string, control_id: number, value: number) =>
  fetch(`${BASE}/api/devices/set_uvc_control`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bus_info, control_id, value }) })

beforeAll(async () => {
  if (!existsSync(`${DRIVER}/vivid.0`)) throw new Error('vivid is not loaded: this test runs inside the kernel-tier VM')
  service = spawn(join(REPO, 'node_modules/.bin/bun'), ['run', 'core/main.ts', '--port', String(PORT), '--host', '127.0.0.1', '--data-dir', dataDir, '--simulate', 'off', '--plugins', 'cameras,v4l2,dwe'], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] })
  service.stdout!.on('data', (d) => (log += d))
  service.stderr!.on('data', (d) => (log += d))
  await until('the service answering /api/health', async () => (await fetch(`${BASE}/api/health`)).ok, 60_000)
})

afterAll(async () => {
  if (!existsSync(`${DRIVER}/vivid.0`)) writeFileSync(`${DRIVER}/bind`, 'vivid.0')
  if (service?.pid && service.exitCode === null) {
    service.kill('SIGTERM')
    const exited = new Promise((r) => service!.once('exit', r))
    if ((await Promise.race([exited, Bun.sleep(5000).then(() => 'late')])) === 'late') process.kill(service.pid, 'SIGKILL')
  }
  rmSync(dataDir, { recursive: true, force: true })
})

test('GET /api/devices lists the vivid devices with every node and their controls', async () => {
  const list = await devices()
  expect(list.map((d) => d.bus_info)).toEqual(['platform:vivid-000', 'platform:vivid-001'])
  expect(list[0]!.device_info.device_paths).toContain('/dev/video0')
  expect(list[0]!.device_info.device_paths.length).toBe(10)
  expect(list[0]!.controls.find((c) => c.control_id === BRIGHTNESS)?.value).toBe(128)
})

test('POST set_uvc_control sets the control for real (v4l2-ctl reads it back); refusals keep their status', async () => {
  const r = await setControl(BUS, BRIGHTNESS, 99)
  expect(r.status).toBe(200)
  expect(((await r.json()) as { success: boolean }).success).toBe(true)
  expect(v4l2ctl(['-d', '/dev/video0', '-C', 'brightness']).trim()).toBe('brightness: 99')
  expect((await setControl('usb-nowhere', BRIGHTNESS, 1)).status).toBe(404)
  expect((await setControl(BUS, 0x0098f90c, 1)).status).toBe(409) // read-only
})

test('unbind is an unplug, bind a plug: the device returns with its control restored', async () => {
  writeFileSync(`${DRIVER}/unbind`, 'vivid.0')
  await until('the devices leaving GET /api/devices', async () => (await devices()).length === 0, 10_000)
  writeFileSync(`${DRIVER}/bind`, 'vivid.0')
  await until('the devices coming back', async () => (await devices()).length === 2, 15_000)
  // The driver starts from its defaults (128); the service restores what was set over HTTP.
  await until('brightness restored to 99', async () => v4l2ctl(['-d', '/dev/video0', '-C', 'brightness']).trim() === 'brightness: 99', 10_000)
  const back = (await devices()).find((d) => d.bus_info === BUS)!
  expect(back.controls.find((c) => c.control_id === BRIGHTNESS)?.value).toBe(99)
})
