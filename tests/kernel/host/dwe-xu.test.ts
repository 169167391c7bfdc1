// exploreHD's encoder options (declared in plugins/dwe, interpreted by core/xu.ts) speak the extension-unit
// byte protocol of FIELD-NOTES §1. No UVC device exists here, so a firmware look-alike written from
// FIELD-NOTES (not from the declaration) answers at the ioctl boundary: every transfer is packed into the
// real uvc_xu_control_query (drivers/v4l2/device.ts xuStruct) and decoded from there.
import { ptr } from 'bun:ffi'
import { expect, test } from 'bun:test'
import type { CameraBackend, RawDevice, XuQuery } from '../../../core/types'
import { DeviceError } from '../../../core/types'
import { xuStruct } from '../../../drivers/v4l2/device'
import { Registry } from '../../../core/plugin'
import { xuControls } from '../../../core/xu'
import dwe from '../../../plugins/dwe'
import { DWE, DWE_MODELS, EXPLOREHD_ENCODER } from '../../../plugins/dwe/vendor'

const EXPLOREHD_CONTROLS = xuControls(EXPLOREHD_ENCODER)

const hex = (b: Uint8Array) => [...b].map((x) => x.toString(16).padStart(2, '0')).join(' ')

/** The camera side: a command transfer selects an option; the next SET_CUR stores it; GET_CUR reads it. */
class ExploreHdFirmware {
  transfers: string[] = []
  private selected = -1
  private values = new Map<number, Uint8Array>()
  readonly backend: CameraBackend = {
    name: 'firmware',
    list: async () => [],
    setControl: async () => 0,
    videoSource: (device) => ({ kind: 'v4l2', device }),
    onChange: () => () => {},
    xuQuery: async (path: string, q: XuQuery) => this.transfer(path, q),
  }

  private transfer(path: string, q: XuQuery): Uint8Array {
    const data = new Uint8Array(q.data)
    const raw = xuStruct(q, data)
    const view = new DataView(raw.buffer)
    const [unit, selector, query, size] = [raw[0]!, raw[1]!, raw[2]!, view.getUint16(4, true)]
    expect(Number(view.getBigUint64(8, true))).toBe(ptr(data)) // the struct points at the transfer buffer
    expect(path).toBe('/dev/video2') // the H.264 node
    this.transfers.push(`${query === 0x01 ? 'SET_CUR' : query === 0x81 ? 'GET_CUR' : query} u${unit} s${selector} [${size}] ${hex(data)}`)
    if (unit !== 4 || selector !== 2 || size !== 11) throw new DeviceError('EINVAL', 'wrong unit, selector or size')
    if (query === 0x01 && data[0] === 0x9a) this.selected = data[1]!
    else if (query === 0x01) this.values.set(this.selected, data)
    else if (query === 0x81) return this.values.get(this.selected) ?? new Uint8Array(11)
    return data
  }
}

const exploreHD = (pid = 0x2100): RawDevice => ({
  bus_info: 'usb-0000:01:00.0-1.2', name: 'exploreHD USB Camera', vid: 0x3961, pid, manufacturer: 'DeepWater Exploration Inc.', serial: 'DWE123',
  device_paths: ['/dev/video0', '/dev/video1', '/dev/video2', '/dev/video3'],
  cameras: [
    { path: '/dev/video0', formats: { MJPG: [] } },
    { path: '/dev/video2', formats: { H264: [] } },
  ],
  controls: [],
})
const byId = (id: number) => EXPLOREHD_CONTROLS.find((c) => c.control_id === id)!
const Z = (n: number) => Array(n).fill('00').join(' ')

test('bitrate: command transfer 9a 02, then the u32 big-endian value; read back with GET_CUR', async () => {
  const fw = new ExploreHdFirmware()
  await byId(-1).set(exploreHD(), fw.backend, 8_000_000)
  expect(await byId(-1).get(exploreHD(), fw.backend)).toBe(8_000_000)
  expect(fw.transfers).toEqual([
    `SET_CUR u4 s2 [11] 9a 02 ${Z(9)}`,
    `SET_CUR u4 s2 [11] 00 7a 12 00 ${Z(7)}`,
    `SET_CUR u4 s2 [11] 9a 02 ${Z(9)}`,
    `GET_CUR u4 s2 [11] ${Z(11)}`,
  ])
})

test('GOP (u16, 0–29) and CBR/VBR mode (u8, 1 = CBR, 2 = VBR)', async () => {
  const fw = new ExploreHdFirmware()
  await byId(-2).set(exploreHD(), fw.backend, 15)
  await byId(-3).set(exploreHD(), fw.backend, 1)
  expect(fw.transfers).toEqual([
    `SET_CUR u4 s2 [11] 9a 03 ${Z(9)}`,
    `SET_CUR u4 s2 [11] 00 0f ${Z(9)}`,
    `SET_CUR u4 s2 [11] 9a 06 ${Z(9)}`,
    `SET_CUR u4 s2 [11] 01 ${Z(10)}`,
  ])
  expect(await byId(-2).get(exploreHD(), fw.backend)).toBe(15)
  expect(await byId(-3).get(exploreHD(), fw.backend)).toBe(1)
})

test('out-of-range values are refused before any transfer (ERANGE/EINVAL → 422)', async () => {
  const fw = new ExploreHdFirmware()
  for (const [id, v] of [[-2, 30], [-1, 50], [-3, 3], [-2, 1.5]] as const) {
    const e = await byId(id).set(exploreHD(), fw.backend, v).catch((x) => x)
    expect(e).toBeInstanceOf(DeviceError)
    expect(['ERANGE', 'EINVAL']).toContain((e as DeviceError).code)
  }
  expect(fw.transfers).toEqual([])
})

test('the options apply to exploreHD cameras with an H.264 node only; ids are negative', () => {
  expect(EXPLOREHD_CONTROLS.map((c) => c.control_id)).toEqual([-1, -2, -3])
  for (const m of DWE_MODELS.filter((m) => m.device_type === 0))
    for (const pid of m.pids) expect(EXPLOREHD_CONTROLS.every((c) => c.appliesTo({ ...exploreHD(pid), vid: m.vid }))).toBe(true)
  const stellar = { ...exploreHD(), pid: 0x1101 }
  const noH264 = { ...exploreHD(), cameras: [{ path: '/dev/video0', formats: { MJPG: [] } }] }
  const generic = { ...exploreHD(), vid: 0x046d, pid: 0x0825 }
  for (const d of [stellar, noH264, generic]) expect(EXPLOREHD_CONTROLS.some((c) => c.appliesTo(d))).toBe(false)
})

test('a backend without extension-unit access → EOPNOTSUPP (a 502, not a crash)', async () => {
  const { xuQuery: _, ...plain } = new ExploreHdFirmware().backend
  const e = await byId(-1).get(exploreHD(), plain as CameraBackend).catch((x) => x)
  expect((e as DeviceError).code).toBe('EOPNOTSUPP')
})

test('the plugin registers the declaration; the registry interprets its extension unit into the three options', () => {
  const registry = new Registry()
  dwe.setup({ registry } as never)
  const [vendor] = registry.vendors()
  expect(vendor).toMatchObject({ vendor: 'DeepWater Exploration', models: DWE_MODELS, extensionUnits: [EXPLOREHD_ENCODER], frameSync: DWE.frameSync })
  expect(vendor!.controls!.map(({ control_id, name, flags }) => ({ control_id, name, flags }))).toEqual(
    EXPLOREHD_CONTROLS.map(({ control_id, name, flags }) => ({ control_id, name, flags })),
  )
})
