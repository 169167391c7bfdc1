// Inside the VM: the real service (core/main.ts with the cameras, v4l2 and dwe plugins) lists the vivid
// devices, sets a control over HTTP (v4l2-ctl reads it back), and survives an unplug/plug (sysfs
// unbind/bind) with the control restored on reappearance; a set costs one open of the node (observe.ts).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, writeFileSync } from 'node:fs'
import { IoctlTrace, NodeOpens } from './observe'
import { VmService } from './service.helpers'
import { name2var, parseControls, v4l2ctl } from './v4l2ctl'

const DRIVER = '/sys/bus/platform/drivers/vivid'
const BUS = 'platform:vivid-000'
const BRIGHTNESS = 0x00980900
const GAIN_AUTO = 0x00980912
const GAIN = 0x00980913
const trace = new IoctlTrace(['VIDIOC_S_EXT_CTRLS', 'VIDIOC_QUERYMENU'])
const service = new VmService(18080, 'cameras,v4l2,dwe')
const until = service.until.bind(service)

interface ControlJson { control_id: number; name: string; value: unknown; flags: { control_type: string; default_value: unknown; read_only?: boolean; inactive?: boolean } }
const devices = async () => (await (await fetch(`${service.base}/api/devices`)).json()) as { bus_info: string; device_info: { device_paths: string[] }; controls: ControlJson[] }[]
const setControl = (bus_info: string, control_id: number, value: number) => service.post('/api/devices/set_uvc_control', { bus_info, control_id, value })

beforeAll(async () => {
  if (!existsSync(`${DRIVER}/vivid.0`)) throw new Error('vivid is not loaded: this test runs inside the kernel-tier VM')
  await service.start()
})

afterAll(async () => {
  if (!existsSync(`${DRIVER}/vivid.0`)) writeFileSync(`${DRIVER}/bind`, 'vivid.0')
  await service.stop()
})

test('GET /api/devices lists the vivid devices with every node and their controls', async () => {
  const list = await devices()
  expect(list.map((d) => d.bus_info)).toEqual(['platform:vivid-000', 'platform:vivid-001'])
  expect(list[0]!.device_info.device_paths).toContain('/dev/video0')
  expect(list[0]!.device_info.device_paths.length).toBe(10)
  // Whatever an earlier test left in the driver: the service shows what the driver holds.
  const held = Number(v4l2ctl(['-d', '/dev/video0', '-C', 'brightness']).trim().split(': ')[1])
  expect(list[0]!.controls.find((c) => c.control_id === BRIGHTNESS)?.value).toBe(held)
})

test('POST set_uvc_control sets the control for real (v4l2-ctl reads it back); refusals keep their status', async () => {
  const r = await setControl(BUS, BRIGHTNESS, 99)
  expect(r.status).toBe(200)
  expect(((await r.json()) as { success: boolean }).success).toBe(true)
  expect(v4l2ctl(['-d', '/dev/video0', '-C', 'brightness']).trim()).toBe('brightness: 99')
  expect((await setControl('usb-nowhere', BRIGHTNESS, 1)).status).toBe(404)
  expect((await setControl(BUS, 0x0098f90c, 1)).status).toBe(409) // read-only
})

test("vivid's BOOLEAN controls are numbers over HTTP (0/1, as on simulated cameras), equal to v4l2-ctl's, and set as numbers", async () => {
  const booleans = (await devices()).find((d) => d.bus_info === BUS)!.controls.filter((c) => c.flags.control_type === 'BOOLEAN')
  const theirs = new Map(parseControls(v4l2ctl(['-d', '/dev/video0', '--list-ctrls'])).controls.map((c) => [c.id, c]))
  expect(booleans.length).toBeGreaterThan(3)
  for (const c of booleans) {
    expect(typeof c.value).toBe('number')
    expect(typeof c.flags.default_value).toBe('number')
    expect([0, 1]).toContain(c.value as number)
    expect(c.flags.default_value).toBe(Number(theirs.get(c.control_id)!.default))
    if (theirs.get(c.control_id)!.value !== undefined) expect(c.value).toBe(Number(theirs.get(c.control_id)!.value))
  }
  // vivid's own "Boolean" control: set to 1 and to 0, the answer and the list hold numbers, v4l2-ctl agrees.
  const boolean = booleans.find((c) => c.control_id === 0x0098f901)!
  const before = boolean.value as number
  for (const value of [1, 0]) {
    const r = await setControl(BUS, boolean.control_id, value)
    expect(r.status).toBe(200)
    expect(await r.json()).toEqual({ success: true, value })
    expect((await devices()).find((d) => d.bus_info === BUS)!.controls.find((c) => c.control_id === boolean.control_id)!.value).toBe(value)
    expect(v4l2ctl(['-d', '/dev/video0', '-C', name2var(boolean.name)]).trim()).toBe(`${name2var(boolean.name)}: ${value}`)
  }
  // true/false are still taken (as 1/0, as pydantic's float takes them), and answered as numbers.
  const r = await service.post('/api/devices/set_uvc_control', { bus_info: BUS, control_id: boolean.control_id, value: true })
  expect(await r.json()).toEqual({ success: true, value: 1 })
  expect((await setControl(BUS, boolean.control_id, before)).status).toBe(200)
})

test('one set_uvc_control is one open of the control node, one S_EXT_CTRLS, no menu query; GET shows the flags it changed', async () => {
  const gain = async () => (await devices()).find((d) => d.bus_info === BUS)!.controls.find((c) => c.control_id === GAIN)!
  const before = (await devices()).find((d) => d.bus_info === BUS)!.controls.find((c) => c.control_id === GAIN_AUTO)!.value as number
  for (const [auto, inactive] of [[0, false], [1, true]] as const) {
    const opens = new NodeOpens('/dev/video0')
    trace.start()
    let r: Response
    try {
      r = await setControl(BUS, GAIN_AUTO, auto)
      const ioctls = trace.counts()
      expect({ opens: opens.count(), sets: ioctls.VIDIOC_S_EXT_CTRLS, menus: ioctls.VIDIOC_QUERYMENU }).toEqual({ opens: 1, sets: 1, menus: 0 })
    } finally {
      trace.stop()
      opens.close()
    }
    expect(await r.json()).toEqual({ success: true, value: auto })
    // Auto gain makes gain inactive: the list the set answered is the one GET serves.
    expect((await gain()).flags.inactive).toBe(inactive)
  }
  expect((await setControl(BUS, GAIN_AUTO, before)).status).toBe(200)
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
