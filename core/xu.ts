// UVC extension-unit controls as data, and their one interpreter. A vendor declares where its options
// live (unit, selector, how an option is addressed, how its value is packed); xuControls turns that
// declaration into controls that get and set through whatever extension-unit access the camera backend
// offers (V4L2: UVCIOC_CTRL_QUERY; simulated cameras: drivers/mock/xu.ts, built from the same
// declaration). Nothing here knows a vendor.
import type { CameraBackend, ControlFlags, RawDevice, VendorControl, VendorDefinition, VendorModel, XuQuery } from './types'
import { DeviceError } from './types'

export const UVC_SET_CUR = 0x01
export const UVC_GET_CUR = 0x81

/** How a value is packed at the start of a transfer. */
export type XuEncoding = 'u8' | 'u16be' | 'u32be'
const WIDTH: Record<XuEncoding, number> = { u8: 1, u16be: 2, u32be: 4 }

export interface XuControl {
  /** Negative: a vendor option (spec: set_uvc_control with control_id < 0). */
  control_id: number
  name: string
  /** Selector addressing: the control's selector. Command addressing: its command byte. */
  register: number
  encoding: XuEncoding
  flags: ControlFlags
}

/** How a control is reached inside the unit. */
export type XuAddressing =
  /** Standard UVC: each control is a selector of its own; SET_CUR writes it, GET_CUR reads it. */
  | { kind: 'selector' }
  /**
   * One selector carries several options: a SET_CUR of [...prefix, register, 0…] picks one, then the
   * next SET_CUR writes it or a GET_CUR reads it.
   */
  | { kind: 'command'; selector: number; prefix: number[] }

export interface ExtensionUnit {
  /** The models (USB ids) whose firmware has the unit. */
  models: Pick<VendorModel, 'vid' | 'pids'>[]
  /** The capture node that answers: the one offering this format ('H264'). */
  nodeFormat: string
  unit: number
  /** Bytes of every transfer. */
  size: number
  addressing: XuAddressing
  controls: XuControl[]
}

const hasIds = (unit: ExtensionUnit, vid: number, pid: number) => unit.models.some((m) => m.vid === vid && m.pids.includes(pid))

/** The units the registered vendors declare for a device with these USB ids. */
export const unitsFor = (vendors: readonly VendorDefinition[], vid: number, pid: number): ExtensionUnit[] =>
  vendors.flatMap((v) => v.extensionUnits ?? []).filter((unit) => hasIds(unit, vid, pid))

export const selectorOf = (unit: ExtensionUnit, control: XuControl) => (unit.addressing.kind === 'command' ? unit.addressing.selector : control.register)

/** The transfer that picks a control of a command-addressed unit: [...prefix, register, 0…]. */
export function commandTransfer(size: number, prefix: number[], register: number): Uint8Array {
  const data = new Uint8Array(size)
  data.set(prefix)
  data[prefix.length] = register
  return data
}

export function encodeValue(unit: ExtensionUnit, control: XuControl, value: number): Uint8Array {
  const data = new Uint8Array(unit.size)
  const width = WIDTH[control.encoding]
  for (let i = 0; i < width; i++) data[i] = Math.floor(value / 256 ** (width - 1 - i)) % 256
  return data
}

export const decodeValue = (control: XuControl, data: Uint8Array) => data.subarray(0, WIDTH[control.encoding]).reduce((v, b) => v * 256 + b, 0)

function access(backend: CameraBackend): NonNullable<CameraBackend['xuQuery']> {
  if (!backend.xuQuery) throw new DeviceError('EOPNOTSUPP', `the ${backend.name} backend has no UVC extension-unit access`)
  return backend.xuQuery.bind(backend)
}

function nodeOf(unit: ExtensionUnit, d: RawDevice): string {
  const cam = d.cameras.find((c) => unit.nodeFormat in c.formats)
  if (!cam) throw new DeviceError('ENODEV', `${d.bus_info} has no ${unit.nodeFormat} node for its extension unit`)
  return cam.path
}

function checkValue(control: XuControl, value: number): void {
  const { min_value, max_value, menu } = control.flags
  if (!Number.isInteger(value) || value < min_value || value > max_value)
    throw new DeviceError('ERANGE', `${control.name} must be an integer from ${min_value} to ${max_value}, got ${value}`)
  if (menu && !menu.some((m) => m.index === value)) throw new DeviceError('EINVAL', `${control.name}: ${value} is not a menu index`)
}

/** The declared controls as controls the cameras plugin lists and sets like any other. */
export function xuControls(unit: ExtensionUnit): VendorControl[] {
  return unit.controls.map((control) => {
    const query = (q: number, data: Uint8Array): XuQuery => ({ unit: unit.unit, selector: selectorOf(unit, control), query: q, data })
    // A command-addressed unit is told which option the next transfer is about.
    const pick = async (send: ReturnType<typeof access>, path: string) => {
      const { addressing } = unit
      if (addressing.kind === 'command') await send(path, query(UVC_SET_CUR, commandTransfer(unit.size, addressing.prefix, control.register)))
    }
    return {
      control_id: control.control_id,
      name: control.name,
      flags: control.flags,
      appliesTo: (d) => hasIds(unit, d.vid, d.pid) && d.cameras.some((c) => unit.nodeFormat in c.formats),
      async get(d, backend) {
        const path = nodeOf(unit, d)
        const send = access(backend)
        await pick(send, path)
        return decodeValue(control, await send(path, query(UVC_GET_CUR, new Uint8Array(unit.size))))
      },
      async set(d, backend, value) {
        const n = Number(value)
        checkValue(control, n)
        const path = nodeOf(unit, d)
        const send = access(backend)
        await pick(send, path)
        await send(path, query(UVC_SET_CUR, encodeValue(unit, control, n)))
      },
    }
  })
}
