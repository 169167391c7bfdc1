// A vendor is declared once, as data, in its plugin; simulated cameras have no vendor protocol of their
// own. They state the USB ids they pretend to have, and their extension units answer as the registered
// declarations say (drivers/mock/xu.ts): without the DWE plugin the simulated exploreHD has no encoder
// options and refuses exploreHD's own transfers, and declarations the simulator has never seen drive the
// same register file through the same interpreter (core/xu.ts).
import { afterEach, expect, test } from 'bun:test'
import { join } from 'node:path'
import { loadPlugin } from '../../core/loader'
import { DeviceError, type RawDevice, type VendorDefinition } from '../../core/types'
import { unitsFor, UVC_GET_CUR, UVC_SET_CUR, xuControls, type ExtensionUnit } from '../../core/xu'
import { MockCameraBackend } from '../../drivers/mock/backend'
import { MODELS, PRESETS } from '../../drivers/mock/cameras'
import { startTestServer, until, type TestServer } from '../helpers'
import { device, EHD, WEBCAM } from './setup'

const ACME = join(import.meta.dir, '..', '..', 'examples', 'acme-plugin.ts')
const RING_CAM = 'usb-0000:00:14.0-5'
const servers: TestServer[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()))
})

async function start(plugins: string[], simulate = 'default'): Promise<TestServer> {
  const s = await startTestServer({ plugins: await Promise.all(plugins.map(loadPlugin)), config: { simulate } })
  servers.push(s)
  return s
}

const vendorIds = (d: { controls: { control_id: number }[] }) => d.controls.map((c) => c.control_id).filter((id) => id < 0)

test('without the DWE plugin the simulated exploreHD has no encoder options, and its extension unit does not answer exploreHD transfers', async () => {
  const s = await start(['mock', 'cameras'])
  expect(vendorIds(await device(s, EHD))).toEqual([])
  expect((await s.call('POST', '/api/devices/set_uvc_control', { bus_info: EHD, control_id: -1, value: 2_500_000 })).status).toBe(404)

  // The bytes exploreHD's firmware takes (FIELD-NOTES §1), sent straight to a simulation no vendor declared anything to.
  const backend = new MockCameraBackend(PRESETS.single!)
  const h264 = (await backend.list())[0]!.cameras.find((c) => 'H264' in c.formats)!.path
  const pick = new Uint8Array([0x9a, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0])
  const e = await backend.xuQuery(h264, { unit: 0x04, selector: 0x02, query: UVC_SET_CUR, data: pick }).catch((x) => x)
  expect(e).toBeInstanceOf(DeviceError)
  expect((e as DeviceError).code).toBe('ENOENT')
})

test('with the DWE plugin the same simulated camera has them, at the declared defaults after power-up', async () => {
  const s = await start(['mock', 'cameras', 'dwe'])
  const ehd = await device(s, EHD)
  expect(vendorIds(ehd)).toEqual([-1, -2, -3])
  expect(ehd.controls.filter((c: any) => c.control_id < 0).map((c: any) => c.value)).toEqual([5_000_000, 29, 2])
  expect(vendorIds(await device(s, WEBCAM))).toEqual([])
})

test("the example plugin's declared extension-unit control (a selector of its own) works on its simulated camera, and survives a re-plug", async () => {
  const s = await start(['mock', 'cameras', 'dwe', ACME])
  const ringCam = await device(s, RING_CAM)
  expect(vendorIds(ringCam)).toEqual([-100, -101])
  expect(ringCam.controls.find((c: any) => c.control_id === -101)).toMatchObject({ name: 'Lens heater', value: 0, flags: { control_type: 'MENU', max_value: 2 } })
  expect(await s.call('POST', '/api/devices/set_uvc_control', { bus_info: RING_CAM, control_id: -101, value: 2 })).toMatchObject({ status: 200, body: { value: 2 } })
  expect((await s.call('POST', '/api/devices/set_uvc_control', { bus_info: RING_CAM, control_id: -101, value: 3 })).status).toBe(422)
  expect((await device(s, RING_CAM)).controls.find((c: any) => c.control_id === -101).value).toBe(2)
  // A power cycle resets the simulated register; the cameras plugin restores the saved value over the extension unit.
  await s.call('POST', '/api/mock/unplug', { bus_info: RING_CAM })
  await until('the RingCam gone', () => device(s, RING_CAM), (d) => !d)
  await s.call('POST', '/api/mock/plug', { bus_info: RING_CAM })
  const back = await until('the RingCam back', () => device(s, RING_CAM), (d) => !!d)
  expect(back.controls.find((c: any) => c.control_id === -101).value).toBe(2)
  expect(vendorIds(await device(s, EHD))).toEqual([-1, -2, -3]) // DWE's, untouched
})

test('a declaration made up here (command bytes, prefix and sizes the simulator has never seen) drives the same register file', async () => {
  // On the simulated Logitech's ids: a two-byte prefix, a 6-byte transfer, a u16 and a u32.
  const unit: ExtensionUnit = {
    models: [{ vid: MODELS.webcam.vid, pids: [MODELS.webcam.pid] }],
    nodeFormat: 'MJPG',
    unit: 0x0b,
    size: 6,
    addressing: { kind: 'command', selector: 0x07, prefix: [0x55, 0xaa] },
    controls: [
      { control_id: -7, name: 'Zoom', register: 0x31, encoding: 'u16be', flags: { control_type: 'INTEGER', min_value: 0, max_value: 1000, step: 1, default_value: 100 } },
      { control_id: -8, name: 'Shutter (µs)', register: 0x32, encoding: 'u32be', flags: { control_type: 'INTEGER', min_value: 1, max_value: 1_000_000, step: 1, default_value: 20_000 } },
    ],
  }
  const vendors: VendorDefinition[] = [{ vendor: 'Made up', models: [], extensionUnits: [unit] }]
  const backend = new MockCameraBackend(PRESETS.default!, (vid, pid) => unitsFor(vendors, vid, pid))
  const webcam = (await backend.list()).find((d) => d.bus_info === WEBCAM)!
  const [zoom, shutter] = xuControls(unit)
  expect(zoom!.appliesTo(webcam)).toBe(true)
  expect(await zoom!.get(webcam, backend)).toBe(100)
  expect(await shutter!.get(webcam, backend)).toBe(20_000)
  await zoom!.set(webcam, backend, 640)
  await shutter!.set(webcam, backend, 987_654)
  expect([await zoom!.get(webcam, backend), await shutter!.get(webcam, backend)]).toEqual([640, 987_654])

  // The simulated unit holds what the declaration says, nothing else: the wrong prefix, size or selector is refused.
  const path = webcam.cameras[0]!.path
  const send = (selector: number, query: number, data: number[]) => backend.xuQuery(path, { unit: 0x0b, selector, query, data: new Uint8Array(data) }).catch((x: DeviceError) => x.code)
  expect(await send(0x07, UVC_SET_CUR, [0x9a, 0x31, 0, 0, 0, 0])).toBe('EPROTO')
  expect(await send(0x07, UVC_SET_CUR, [0x55, 0xaa, 0x31, 0, 0, 0, 0, 0, 0, 0, 0])).toBe('EINVAL')
  expect(await send(0x07, UVC_GET_CUR, [0, 0, 0, 0, 0, 0])).toBe('EPROTO') // nothing picked
  expect(await send(0x02, UVC_SET_CUR, [0x55, 0xaa, 0x31, 0, 0, 0])).toBe('ENOENT')
  // Raw bytes: pick 0x31, read it back big-endian (640 = 0x0280).
  expect(await send(0x07, UVC_SET_CUR, [0x55, 0xaa, 0x31, 0, 0, 0])).toEqual(new Uint8Array([0x55, 0xaa, 0x31, 0, 0, 0]))
  expect(await send(0x07, UVC_GET_CUR, [0, 0, 0, 0, 0, 0])).toEqual(new Uint8Array([0x02, 0x80, 0, 0, 0, 0]))

  // Other cameras carry no such unit; the exploreHD, with no DWE declaration here, none at all.
  const ehd = (await backend.list()).find((d: RawDevice) => d.bus_info === EHD)!
  expect(zoom!.appliesTo(ehd)).toBe(false)
  expect(await backend.xuQuery(ehd.cameras[1]!.path, { unit: 0x04, selector: 0x02, query: UVC_GET_CUR, data: new Uint8Array(11) }).catch((x: DeviceError) => x.code)).toBe('ENOENT')
})
