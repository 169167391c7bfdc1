// Synchronous V4L2 operations on one open node: capabilities, formats, controls, the active format and
// raw UVC extension-unit transfers. Blocking: called from worker threads only (see worker.ts).
import { ptr as ptrOf } from 'bun:ffi'
import type { Control, ControlFlags, ControlValue, FormatSize, Interval, MenuItem, XuQuery } from '../../core/types'
import { DeviceError } from '../../core/types'
import { C, CONTROL_TYPES, IOCTLS, offsetOf, sizeOf, type StructName } from './abi'
import { ioctl, SysError, tryIoctl } from './libc'
import { reduceIntervals, reduceSizes } from './ranges'

const EINVAL = 22
const ENOTTY = 25

/** A zeroed struct and little-endian accessors at the ABI table's offsets. */
class Struct<S extends StructName> {
  readonly bytes: Uint8Array
  private view: DataView
  constructor(readonly name: S) {
    this.bytes = new Uint8Array(sizeOf(name))
    this.view = new DataView(this.bytes.buffer)
  }
  private off(f: string) {
    return offsetOf(this.name, f as never)
  }
  u32(f: string) { return this.view.getUint32(this.off(f), true) }
  s32(f: string) { return this.view.getInt32(this.off(f), true) }
  s64(f: string) { return this.view.getBigInt64(this.off(f), true) }
  u64(f: string) { return this.view.getBigUint64(this.off(f), true) }
  setU32(f: string, v: number) { this.view.setUint32(this.off(f), v >>> 0, true) }
  setU8(f: string, v: number) { this.view.setUint8(this.off(f), v) }
  setU16(f: string, v: number) { this.view.setUint16(this.off(f), v, true) }
  setU64(f: string, v: bigint) { this.view.setBigUint64(this.off(f), v, true) }
  str(f: string, len: number) { return cString(this.bytes.subarray(this.off(f), this.off(f) + len)) }
}

function cString(b: Uint8Array): string {
  const end = b.indexOf(0)
  return new TextDecoder().decode(end < 0 ? b : b.subarray(0, end))
}

/** 'YUYV', 'MJPG', 'H264'; trailing spaces dropped ('Y10 ' → 'Y10'), '-BE' for big-endian variants. */
export function fourcc(v: number): string {
  const s = String.fromCharCode(v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, (v >> 24) & 0x7f).trimEnd()
  return v & 0x80000000 ? `${s}-BE` : s
}

// ---- capabilities ----

export interface Capability { driver: string; card: string; bus_info: string; version: number; capabilities: number; device_caps: number }

export function queryCap(fd: number): Capability {
  const s = new Struct('v4l2_capability')
  ioctl(fd, IOCTLS.VIDIOC_QUERYCAP, s.bytes, 'VIDIOC_QUERYCAP')
  const capabilities = s.u32('capabilities')
  return {
    driver: s.str('driver', 16),
    card: s.str('card', 32),
    bus_info: s.str('bus_info', 32),
    version: s.u32('version'),
    capabilities,
    // device_caps describes this node; older drivers only fill the device-wide field.
    device_caps: capabilities & C.V4L2_CAP_DEVICE_CAPS ? s.u32('device_caps') : capabilities,
  }
}

// ---- formats ----

function enumIntervals(fd: number, pixelformat: number, width: number, height: number): Interval[] {
  const out: Interval[] = []
  for (let index = 0; ; index++) {
    const s = new Struct('v4l2_frmivalenum')
    s.setU32('index', index)
    s.setU32('pixel_format', pixelformat)
    s.setU32('width', width)
    s.setU32('height', height)
    const err = tryIoctl(fd, IOCTLS.VIDIOC_ENUM_FRAMEINTERVALS, s.bytes)
    if (err === EINVAL || err === ENOTTY) break
    if (err) throw new SysError(err, 'VIDIOC_ENUM_FRAMEINTERVALS')
    const fr = (p: string) => ({ numerator: s.u32(`${p}.numerator`), denominator: s.u32(`${p}.denominator`) })
    if (s.u32('type') === C.V4L2_FRMIVAL_TYPE_DISCRETE) {
      out.push(fr('discrete'))
      continue
    }
    const stepwise = s.u32('type') === C.V4L2_FRMIVAL_TYPE_STEPWISE
    return reduceIntervals({ min: fr('stepwise.min'), max: fr('stepwise.max'), step: stepwise ? fr('stepwise.step') : null })
  }
  return out
}

function enumSizes(fd: number, pixelformat: number): FormatSize[] {
  const sizes: { width: number; height: number }[] = []
  for (let index = 0; ; index++) {
    const s = new Struct('v4l2_frmsizeenum')
    s.setU32('index', index)
    s.setU32('pixel_format', pixelformat)
    const err = tryIoctl(fd, IOCTLS.VIDIOC_ENUM_FRAMESIZES, s.bytes)
    if (err === EINVAL || err === ENOTTY) break
    if (err) throw new SysError(err, 'VIDIOC_ENUM_FRAMESIZES')
    if (s.u32('type') === C.V4L2_FRMSIZE_TYPE_DISCRETE) {
      sizes.push({ width: s.u32('discrete.width'), height: s.u32('discrete.height') })
      continue
    }
    const g = (f: string) => s.u32(`stepwise.${f}`)
    const continuous = s.u32('type') === C.V4L2_FRMSIZE_TYPE_CONTINUOUS
    sizes.push(...reduceSizes({
      minW: g('min_width'), maxW: g('max_width'), stepW: continuous ? 1 : g('step_width'),
      minH: g('min_height'), maxH: g('max_height'), stepH: continuous ? 1 : g('step_height'),
    }))
    break
  }
  return sizes.map(({ width, height }) => ({ width, height, intervals: enumIntervals(fd, pixelformat, width, height) }))
}

/** ENUM_FMT → ENUM_FRAMESIZES → ENUM_FRAMEINTERVALS for single-planar capture; keys are fourcc names. */
export function enumFormats(fd: number): Record<string, FormatSize[]> {
  const formats: Record<string, FormatSize[]> = {}
  for (let index = 0; ; index++) {
    const s = new Struct('v4l2_fmtdesc')
    s.setU32('index', index)
    s.setU32('type', C.V4L2_BUF_TYPE_VIDEO_CAPTURE)
    const err = tryIoctl(fd, IOCTLS.VIDIOC_ENUM_FMT, s.bytes)
    if (err === EINVAL || err === ENOTTY) break
    if (err) throw new SysError(err, 'VIDIOC_ENUM_FMT')
    const pf = s.u32('pixelformat')
    formats[fourcc(pf)] = enumSizes(fd, pf)
  }
  return formats
}

// ---- controls ----

/** What QUERY_EXT_CTRL says about one control. */
export interface ControlInfo {
  id: number
  type: number
  name: string
  minimum: bigint
  maximum: bigint
  step: bigint
  default_value: bigint
  flags: number
  elem_size: number
  elems: number
  nr_of_dims: number
}

function readInfo(s: Struct<'v4l2_query_ext_ctrl'>): ControlInfo {
  return {
    id: s.u32('id'),
    type: s.u32('type'),
    name: s.str('name', 32),
    minimum: s.s64('minimum'),
    maximum: s.s64('maximum'),
    step: s.u64('step'),
    default_value: s.s64('default_value'),
    flags: s.u32('flags'),
    elem_size: s.u32('elem_size'),
    elems: s.u32('elems'),
    nr_of_dims: s.u32('nr_of_dims'),
  }
}

export function queryControl(fd: number, id: number): ControlInfo {
  const s = new Struct('v4l2_query_ext_ctrl')
  s.setU32('id', id)
  const err = tryIoctl(fd, IOCTLS.VIDIOC_QUERY_EXT_CTRL, s.bytes)
  if (err === EINVAL) throw new DeviceError('ENOENT', `the device has no control ${id}`)
  if (err) throw new SysError(err, 'VIDIOC_QUERY_EXT_CTRL')
  return readInfo(s)
}

/** Every control, in driver order (NEXT_CTRL | NEXT_COMPOUND), disabled ones left out like v4l2-ctl does. */
export function enumControlInfos(fd: number): ControlInfo[] {
  const out: ControlInfo[] = []
  let id = 0
  for (;;) {
    const s = new Struct('v4l2_query_ext_ctrl')
    s.setU32('id', (id | C.V4L2_CTRL_FLAG_NEXT_CTRL | C.V4L2_CTRL_FLAG_NEXT_COMPOUND) >>> 0)
    const err = tryIoctl(fd, IOCTLS.VIDIOC_QUERY_EXT_CTRL, s.bytes)
    if (err === EINVAL || err === ENOTTY) break
    if (err) throw new SysError(err, 'VIDIOC_QUERY_EXT_CTRL')
    const info = readInfo(s)
    id = info.id
    if (!(info.flags & C.V4L2_CTRL_FLAG_DISABLED)) out.push(info)
  }
  return out
}

/** The wire model carries scalar controls and strings; arrays and compound payloads (codec state) are left out. */
export const representable = (i: ControlInfo) => CONTROL_TYPES[i.type] !== undefined && i.nr_of_dims === 0

export function queryMenu(fd: number, info: ControlInfo): MenuItem[] {
  const items: MenuItem[] = []
  for (let index = Number(info.minimum); index <= Number(info.maximum); index++) {
    const s = new Struct('v4l2_querymenu')
    s.setU32('id', info.id)
    s.setU32('index', index)
    const err = tryIoctl(fd, IOCTLS.VIDIOC_QUERYMENU, s.bytes)
    if (err === EINVAL) continue // a hole: the driver skips this index
    if (err) throw new SysError(err, 'VIDIOC_QUERYMENU')
    const name = info.type === C.V4L2_CTRL_TYPE_INTEGER_MENU ? String(s.s64('value')) : s.str('name', 32)
    items.push({ index, name })
  }
  return items
}

/** One v4l2_ext_controls holding one v4l2_ext_control (and the string buffer it points to, if any). */
class ExtControl {
  readonly head = new Struct('v4l2_ext_controls')
  readonly ctrl = new Struct('v4l2_ext_control')
  private payload: Uint8Array | null = null
  constructor(info: ControlInfo) {
    // The control's class, not 0: old drivers (and UVC on old kernels) require it.
    this.head.setU32('ctrl_class', (info.id & 0x0fff0000) >>> 0)
    this.head.setU32('count', 1)
    this.ctrl.setU32('id', info.id)
    this.head.setU64('controls', BigInt(ptrOf(this.ctrl.bytes)))
    if (info.type === C.V4L2_CTRL_TYPE_STRING) this.setString('', Number(info.maximum) + 1)
  }
  setString(value: string, capacity: number) {
    const encoded = new TextEncoder().encode(value)
    this.payload = new Uint8Array(Math.max(capacity, encoded.length + 1))
    this.payload.set(encoded)
    this.ctrl.setU32('size', this.payload.length)
    this.ctrl.setU64('string', BigInt(ptrOf(this.payload)))
  }
  string() {
    return cString(this.payload!)
  }
}

function getValue(fd: number, info: ControlInfo): ControlValue {
  const x = new ExtControl(info)
  ioctl(fd, IOCTLS.VIDIOC_G_EXT_CTRLS, x.head.bytes, 'VIDIOC_G_EXT_CTRLS')
  switch (info.type) {
    case C.V4L2_CTRL_TYPE_STRING:
      return x.string()
    case C.V4L2_CTRL_TYPE_INTEGER64:
      return Number(x.ctrl.s64('value64'))
    case C.V4L2_CTRL_TYPE_BITMASK:
      return x.ctrl.u32('value')
    default:
      // BOOLEAN too: the control framework stores 0 or 1, and the wire carries it as that number.
      return x.ctrl.s32('value')
  }
}

const readable = (i: ControlInfo) =>
  !(i.flags & C.V4L2_CTRL_FLAG_WRITE_ONLY) && i.type !== C.V4L2_CTRL_TYPE_CTRL_CLASS && i.type !== C.V4L2_CTRL_TYPE_BUTTON

/** Menus of one node by control id: they are fixed for the life of a device, so a caller may keep them. */
export type MenuCache = Map<number, MenuItem[]>

export function toControl(fd: number, info: ControlInfo, menus?: MenuCache): Control {
  const type = CONTROL_TYPES[info.type]!
  const flags: ControlFlags = {
    default_value: Number(info.default_value),
    max_value: Number(info.maximum),
    min_value: Number(info.minimum),
    step: Number(info.step),
    control_type: type,
    read_only: (info.flags & C.V4L2_CTRL_FLAG_READ_ONLY) !== 0,
    inactive: (info.flags & C.V4L2_CTRL_FLAG_INACTIVE) !== 0,
    disabled: (info.flags & C.V4L2_CTRL_FLAG_DISABLED) !== 0,
  }
  if (info.type === C.V4L2_CTRL_TYPE_MENU || info.type === C.V4L2_CTRL_TYPE_INTEGER_MENU) {
    let menu = menus?.get(info.id)
    if (!menu) {
      menu = queryMenu(fd, info)
      menus?.set(info.id, menu)
    }
    flags.menu = menu
  }
  const value = readable(info) ? getValue(fd, info) : flags.default_value
  return { flags, control_id: info.id, name: info.name, value }
}

/** Every control the wire model can carry, with menus and current values. */
export function enumControls(fd: number, menus?: MenuCache): Control[] {
  return enumControlInfos(fd).filter(representable).map((info) => toControl(fd, info, menus))
}

/** Why the driver refused a set, in words (the 409's reason). */
function refusal(info: ControlInfo, e: SysError): DeviceError {
  const what = `control '${info.name}' (${info.id})`
  if (e.code === 'EACCES' || e.code === 'EBUSY' || e.code === 'EPERM') {
    const reason =
      info.flags & C.V4L2_CTRL_FLAG_READ_ONLY ? 'read-only'
      : info.flags & C.V4L2_CTRL_FLAG_GRABBED ? 'busy: the device is streaming'
      : info.flags & C.V4L2_CTRL_FLAG_INACTIVE ? 'inactive (another control disables it)'
      : info.type === C.V4L2_CTRL_TYPE_CTRL_CLASS ? 'a control class heading, not a settable control'
      : 'refused by the driver'
    return new DeviceError(e.code, `${what} is ${reason}`)
  }
  if (e.code === 'EINVAL' || e.code === 'ERANGE')
    return new DeviceError(e.code, `${what} does not accept this value (range ${info.minimum}..${info.maximum}, step ${info.step})`)
  return new DeviceError(e.code, `${what}: VIDIOC_S_EXT_CTRLS failed with ${e.code}`)
}

/** S_EXT_CTRLS with the control's class and type, then the value read back from the driver. */
export function setControl(fd: number, id: number, value: ControlValue): ControlValue {
  const info = queryControl(fd, id)
  if (!representable(info)) throw new DeviceError('EINVAL', `control '${info.name}' (${id}) has a compound type the API cannot set`)
  const x = new ExtControl(info)
  if (info.type === C.V4L2_CTRL_TYPE_STRING) {
    if (typeof value !== 'string') throw new DeviceError('EINVAL', `control '${info.name}' (${id}) takes a string`)
    x.setString(value, Number(info.maximum) + 1)
  } else {
    if (typeof value === 'string') throw new DeviceError('EINVAL', `control '${info.name}' (${id}) takes a number, not a string`)
    if (!Number.isInteger(value)) throw new DeviceError('EINVAL', `control '${info.name}' (${id}) takes an integer, got ${value}`)
    if (info.type === C.V4L2_CTRL_TYPE_INTEGER64) {
      x.ctrl.setU64('value64', BigInt.asUintN(64, BigInt(value)))
    } else {
      const wide = info.type === C.V4L2_CTRL_TYPE_BITMASK ? value >= 0 && value <= 0xffffffff : value >= -0x80000000 && value <= 0x7fffffff
      if (!wide) throw new DeviceError('ERANGE', `control '${info.name}' (${id}): ${value} is outside ${info.minimum}..${info.maximum}`)
      x.ctrl.setU32('value', value >>> 0)
    }
  }
  try {
    ioctl(fd, IOCTLS.VIDIOC_S_EXT_CTRLS, x.head.bytes, 'VIDIOC_S_EXT_CTRLS')
  } catch (e) {
    throw e instanceof SysError ? refusal(info, e) : e
  }
  return readable(info) ? getValue(fd, info) : value
}

// ---- the active format (notify_camera STREAM_START) ----

export interface RawActiveFormat { pixelformat: string; width: number; height: number; interval: Interval }

export function activeFormat(fd: number): RawActiveFormat {
  const f = new Struct('v4l2_format')
  f.setU32('type', C.V4L2_BUF_TYPE_VIDEO_CAPTURE)
  ioctl(fd, IOCTLS.VIDIOC_G_FMT, f.bytes, 'VIDIOC_G_FMT')
  const p = new Struct('v4l2_streamparm')
  p.setU32('type', C.V4L2_BUF_TYPE_VIDEO_CAPTURE)
  const err = tryIoctl(fd, IOCTLS.VIDIOC_G_PARM, p.bytes)
  if (err && err !== ENOTTY && err !== EINVAL) throw new SysError(err, 'VIDIOC_G_PARM')
  const interval = err
    ? { numerator: 0, denominator: 0 }
    : { numerator: p.u32('parm.capture.timeperframe.numerator'), denominator: p.u32('parm.capture.timeperframe.denominator') }
  return { pixelformat: fourcc(f.u32('fmt.pix.pixelformat')), width: f.u32('fmt.pix.width'), height: f.u32('fmt.pix.height'), interval }
}

// ---- UVC extension units ----

/** Packs a uvc_xu_control_query around `data` (the transfer buffer, filled in place for GET requests). */
export function xuStruct(q: XuQuery, data: Uint8Array): Uint8Array {
  const s = new Struct('uvc_xu_control_query')
  s.setU8('unit', q.unit)
  s.setU8('selector', q.selector)
  s.setU8('query', q.query)
  s.setU16('size', data.length)
  s.setU64('data', data.length ? BigInt(ptrOf(data)) : 0n)
  return s.bytes
}

/** UVCIOC_CTRL_QUERY: resolves with the transfer buffer (what the device returned for GET_*). */
export function xuQuery(fd: number, q: XuQuery): Uint8Array {
  const data = new Uint8Array(q.data)
  ioctl(fd, IOCTLS.UVCIOC_CTRL_QUERY, xuStruct(q, data), 'UVCIOC_CTRL_QUERY')
  return data
}
