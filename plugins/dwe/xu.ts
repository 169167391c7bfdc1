// exploreHD's H.264 encoder options over its UVC extension unit (FIELD-NOTES §1): unit 0x04, selector
// 0x02, 11-byte transfers. A command transfer [0x9A, cmd, 0…] selects the option; a second SET_CUR
// carries the value (big-endian), or a GET_CUR reads it back.
import type { CameraBackend, ControlFlags, RawDevice, VendorControl } from '../../core/types'
import { DeviceError } from '../../core/types'
import { DWE_MODELS } from './models'

export const XU_UNIT = 0x04
export const XU_SELECTOR = 0x02
export const XU_SIZE = 11
export const XU_TAG = 0x9a
export const UVC_SET_CUR = 0x01
export const UVC_GET_CUR = 0x81

interface Option {
  control_id: number
  name: string
  cmd: number
  /** Bytes of the big-endian value. */
  width: 1 | 2 | 4
  flags: ControlFlags
}

// Negative ids: vendor options (spec: set_uvc_control with control_id < 0).
export const EXPLOREHD_OPTIONS: Option[] = [
  {
    control_id: -1, name: 'H.264 Bitrate (bits/s)', cmd: 0x02, width: 4,
    flags: { control_type: 'INTEGER', min_value: 100_000, max_value: 20_000_000, step: 1, default_value: 5_000_000 },
  },
  {
    control_id: -2, name: 'H.264 GOP', cmd: 0x03, width: 2,
    flags: { control_type: 'INTEGER', min_value: 0, max_value: 29, step: 1, default_value: 29 },
  },
  {
    control_id: -3, name: 'H.264 Bitrate Mode', cmd: 0x06, width: 1,
    flags: {
      control_type: 'MENU', min_value: 1, max_value: 2, step: 1, default_value: 2,
      menu: [{ index: 1, name: 'CBR' }, { index: 2, name: 'VBR' }],
    },
  },
]

const EXPLOREHD = DWE_MODELS.filter((m) => m.device_type === 0)
const isExploreHD = (d: RawDevice) => EXPLOREHD.some((m) => m.vid === d.vid && m.pids.includes(d.pid))

/** The node that speaks H.264: the extension unit answers there. */
function h264Node(d: RawDevice): string {
  const cam = d.cameras.find((c) => 'H264' in c.formats)
  if (!cam) throw new DeviceError('ENODEV', `${d.bus_info} has no H.264 node for its encoder options`)
  return cam.path
}

function xu(backend: CameraBackend): NonNullable<CameraBackend['xuQuery']> {
  if (!backend.xuQuery) throw new DeviceError('EOPNOTSUPP', `the ${backend.name} backend has no UVC extension-unit access`)
  return backend.xuQuery.bind(backend)
}

export const commandTransfer = (cmd: number) => {
  const data = new Uint8Array(XU_SIZE)
  data[0] = XU_TAG
  data[1] = cmd
  return data
}

export function packValue(value: number, width: number): Uint8Array {
  const data = new Uint8Array(XU_SIZE)
  for (let i = 0; i < width; i++) data[i] = Math.floor(value / 256 ** (width - 1 - i)) % 256
  return data
}

export const unpackValue = (data: Uint8Array, width: number) => data.subarray(0, width).reduce((v, b) => v * 256 + b, 0)

function control(o: Option): VendorControl {
  const q = (query: number, data: Uint8Array) => ({ unit: XU_UNIT, selector: XU_SELECTOR, query, data })
  return {
    control_id: o.control_id,
    name: o.name,
    flags: o.flags,
    appliesTo: (d) => isExploreHD(d) && d.cameras.some((c) => 'H264' in c.formats),
    async get(d, backend) {
      const path = h264Node(d)
      const send = xu(backend)
      await send(path, q(UVC_SET_CUR, commandTransfer(o.cmd)))
      return unpackValue(await send(path, q(UVC_GET_CUR, new Uint8Array(XU_SIZE))), o.width)
    },
    async set(d, backend, value) {
      const n = Number(value)
      const { min_value, max_value } = o.flags
      if (!Number.isInteger(n) || n < min_value || n > max_value)
        throw new DeviceError('ERANGE', `${o.name} must be an integer from ${min_value} to ${max_value}, got ${value}`)
      if (o.flags.menu && !o.flags.menu.some((m) => m.index === n)) throw new DeviceError('EINVAL', `${o.name}: ${n} is not a menu index`)
      const path = h264Node(d)
      const send = xu(backend)
      await send(path, q(UVC_SET_CUR, commandTransfer(o.cmd)))
      await send(path, q(UVC_SET_CUR, packValue(n, o.width)))
    },
  }
}

export const EXPLOREHD_CONTROLS: VendorControl[] = EXPLOREHD_OPTIONS.map(control)
