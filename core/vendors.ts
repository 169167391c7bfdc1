// Vendor definitions are checked once, when a plugin registers one (core/plugin.ts addVendor): a
// malformed definition, or one that claims USB ids or control ids another vendor already declared, is
// refused at start with a sentence naming both, instead of shadowing the other silently at run time.
import type { Camera, ControlFlags, FormatSize, VendorDefinition } from './types'
import type { ExtensionUnit } from './xu'

const CONTROL_TYPES = ['INTEGER', 'BOOLEAN', 'MENU', 'BUTTON', 'INTEGER64', 'CTRL_CLASS', 'STRING', 'BITMASK', 'INTEGER_MENU']
const ENCODING_BYTES = { u8: 1, u16be: 2, u32be: 4 } as const

const hex4 = (n: number) => n.toString(16).padStart(4, '0')
/** A USB id as lsusb writes it: 3961:2100. */
export const usbId = (vid: number, pid: number) => `${hex4(vid)}:${hex4(pid)}`

const isU16 = (n: unknown) => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 0xffff
const isByte = (n: unknown) => Number.isInteger(n) && (n as number) >= 0 && (n as number) <= 0xff

/** Identity, typed: a vendor plugin's declaration reads as one (`periscope/plugin`). */
export const defineVendor = (definition: VendorDefinition): VendorDefinition => definition

/** Capture-node formats for a simulated camera: every size at every frame rate. */
export function formatSizes(sizes: [width: number, height: number][], fps: number[]): FormatSize[] {
  return sizes.map(([width, height]) => ({ width, height, intervals: fps.map((f) => ({ numerator: 1, denominator: f })) }))
}

function checkFlags(where: string, f: ControlFlags): string[] {
  const out: string[] = []
  if (!CONTROL_TYPES.includes(f?.control_type)) return [`${where}: control_type must be one of ${CONTROL_TYPES.join(', ')}`]
  for (const k of ['min_value', 'max_value', 'step', 'default_value'] as const) if (!Number.isFinite(f[k])) out.push(`${where}: flags.${k} must be a number`)
  if (out.length) return out
  if (f.min_value > f.max_value) out.push(`${where}: min_value ${f.min_value} is above max_value ${f.max_value}`)
  if (f.default_value < f.min_value || f.default_value > f.max_value) out.push(`${where}: default_value ${f.default_value} is outside ${f.min_value}..${f.max_value}`)
  if (f.control_type === 'MENU' || f.control_type === 'INTEGER_MENU') {
    const indexes = (f.menu ?? []).map((m) => m.index)
    if (!indexes.length) out.push(`${where}: a ${f.control_type} control needs menu items`)
    else if (!indexes.includes(f.default_value)) out.push(`${where}: default_value ${f.default_value} is not one of its menu indexes ${indexes.join(', ')}`)
    if (new Set(indexes).size !== indexes.length) out.push(`${where}: its menu repeats an index`)
  }
  return out
}

function checkUnit(vendor: VendorDefinition, unit: ExtensionUnit, i: number): string[] {
  const where = `extension unit ${i} (unit ${unit.unit})`
  const out: string[] = []
  if (!isByte(unit.unit) || unit.unit === 0) out.push(`${where}: unit must be an integer from 1 to 255`)
  if (!Number.isInteger(unit.size) || unit.size < 1 || unit.size > 0xffff) out.push(`${where}: size must be a positive integer (bytes of each transfer)`)
  if (!unit.nodeFormat) out.push(`${where}: nodeFormat must name the format of the node that answers ('H264', 'MJPG', …)`)
  const own = new Set(vendor.models.flatMap((m) => m.pids.map((pid) => usbId(m.vid, pid))))
  for (const m of unit.models ?? []) for (const pid of m.pids) if (!own.has(usbId(m.vid, pid))) out.push(`${where}: USB id ${usbId(m.vid, pid)} is not one of the vendor's models`)
  if (!unit.models?.length) out.push(`${where}: it names no model`)
  const { addressing } = unit
  if (addressing?.kind === 'command') {
    if (!isByte(addressing.selector)) out.push(`${where}: the command selector must be a byte`)
    if (!addressing.prefix.every(isByte)) out.push(`${where}: the command prefix must be bytes`)
    if (addressing.prefix.length + 1 > unit.size) out.push(`${where}: a command transfer (prefix + register) does not fit in ${unit.size} bytes`)
  } else if (addressing?.kind !== 'selector') out.push(`${where}: addressing must be { kind: 'selector' } or { kind: 'command', selector, prefix }`)
  const registers = new Set<number>()
  for (const c of unit.controls ?? []) {
    const cw = `${where} control ${c.control_id} '${c.name}'`
    if (!isByte(c.register)) out.push(`${cw}: register must be a byte`)
    if (registers.has(c.register)) out.push(`${cw}: register 0x${c.register.toString(16)} is already another control's`)
    registers.add(c.register)
    const width = ENCODING_BYTES[c.encoding]
    if (!width) out.push(`${cw}: encoding must be u8, u16be or u32be`)
    else {
      if (width > unit.size) out.push(`${cw}: a ${c.encoding} value does not fit in ${unit.size} bytes`)
      if (c.flags && Number.isFinite(c.flags.max_value) && (c.flags.min_value < 0 || c.flags.max_value >= 256 ** width)) out.push(`${cw}: its range ${c.flags.min_value}..${c.flags.max_value} does not fit ${c.encoding}`)
    }
  }
  return out
}

function checkNodes(where: string, nodes: (Camera['formats'] | null)[]): string[] {
  if (!Array.isArray(nodes) || !nodes.some(Boolean)) return [`${where}: it needs at least one capture node with formats`]
  const out: string[] = []
  for (const formats of nodes) {
    for (const [fourcc, sizes] of Object.entries(formats ?? {})) {
      if (!sizes.length) out.push(`${where}: format ${fourcc} lists no size`)
      for (const s of sizes) {
        if (!Number.isInteger(s.width) || !Number.isInteger(s.height) || s.width <= 0 || s.height <= 0) out.push(`${where}: format ${fourcc} has a size that is not positive integers`)
        if (!s.intervals?.length || s.intervals.some((iv) => !(iv.numerator > 0 && iv.denominator > 0))) out.push(`${where}: ${fourcc} ${s.width}x${s.height} needs positive frame intervals`)
      }
    }
  }
  return out
}

/** What is wrong with a definition on its own, as sentences; empty when it is well-formed. */
export function checkVendor(v: VendorDefinition): string[] {
  const out: string[] = []
  if (typeof v?.vendor !== 'string' || !v.vendor.trim()) return ['the definition needs a vendor name (vendor: string)']
  if (!Array.isArray(v.models) || !v.models.length) out.push('it declares no model (models: [{ vid, pids, device_type, role, model }])')
  const ids = new Set<string>()
  for (const m of v.models ?? []) {
    const where = `model '${m.model}'`
    if (!m.model) out.push('a model has no name')
    if (!isU16(m.vid)) out.push(`${where}: vid must be a 16-bit USB vendor id`)
    if (!m.pids?.length || !m.pids.every(isU16)) out.push(`${where}: pids must be 16-bit USB product ids (at least one)`)
    if (![0, 1, 2, 3, 4].includes(m.device_type)) out.push(`${where}: device_type must be 0 to 4 (spec DeviceType)`)
    if (!['none', 'leader', 'follower'].includes(m.role)) out.push(`${where}: role must be none, leader or follower`)
    for (const pid of m.pids ?? []) {
      const id = usbId(m.vid, pid)
      if (ids.has(id)) out.push(`USB id ${id} is declared twice`)
      ids.add(id)
    }
  }
  ;(v.extensionUnits ?? []).forEach((unit, i) => out.push(...checkUnit(v, unit, i)))
  const controls = controlsOf(v)
  const seen = new Set<number>()
  for (const c of controls) {
    const where = `control ${c.control_id} '${c.name}'`
    // spec: set_uvc_control with control_id < 0 is a vendor option; V4L2 ids are the camera's own.
    if (!Number.isInteger(c.control_id) || c.control_id >= 0) out.push(`${where}: a vendor control id must be a negative integer`)
    if (seen.has(c.control_id)) out.push(`${where}: control id ${c.control_id} is declared twice`)
    seen.add(c.control_id)
    if (!c.name) out.push(`control ${c.control_id} has no name`)
    out.push(...checkFlags(where, c.flags))
  }
  for (const c of v.controls ?? []) {
    if (typeof c.appliesTo !== 'function' || typeof c.get !== 'function' || typeof c.set !== 'function')
      out.push(`control ${c.control_id} '${c.name}': a control in code needs appliesTo(), get() and set() (or declare it on an extension unit)`)
  }
  for (const cam of v.simulated ?? []) {
    const where = `simulated camera '${cam.name}'`
    if (!cam.name) out.push('a simulated camera has no name')
    if (!ids.has(usbId(cam.vid, cam.pid))) out.push(`${where}: its USB id ${usbId(cam.vid, cam.pid)} is not one of the vendor's models`)
    out.push(...checkNodes(where, cam.nodes))
  }
  for (const board of v.frameSync?.usb ?? []) if (!isU16(board.vid) || !isU16(board.pid)) out.push('frameSync: its USB ids must be 16-bit')
  return out
}

/** Every control id a definition brings (declared on an extension unit or in code), with its name and flags. */
function controlsOf(v: VendorDefinition): { control_id: number; name: string; flags: ControlFlags }[] {
  return [...(v.extensionUnits ?? []).flatMap((unit) => unit.controls ?? []), ...(v.controls ?? [])]
}

/** A registered definition and the plugin that registered it. */
export interface RegisteredVendor {
  definition: VendorDefinition
  plugin: string
}

const label = (v: VendorDefinition, plugin: string) => `vendor '${v.vendor}' (plugin ${plugin})`

/**
 * Why `v` cannot join the registered vendors, in one sentence naming both, or null. USB ids identify a
 * model to one vendor only; control ids are unique across vendors, since a control in code may apply
 * to any camera.
 */
export function clashWith(v: VendorDefinition, plugin: string, registered: readonly RegisteredVendor[]): string | null {
  const ids = new Map<string, string>(v.models.flatMap((m) => m.pids.map((pid) => [usbId(m.vid, pid), m.model] as [string, string])))
  const controls = controlsOf(v)
  for (const other of registered) {
    for (const m of other.definition.models) {
      for (const pid of m.pids) {
        const mine = ids.get(usbId(m.vid, pid))
        if (mine !== undefined)
          return `${label(v, plugin)} declares USB id ${usbId(m.vid, pid)} ('${mine}'), which ${label(other.definition, other.plugin)} already declares ('${m.model}'): a USB id belongs to one vendor`
      }
    }
    for (const theirs of controlsOf(other.definition)) {
      const mine = controls.find((c) => c.control_id === theirs.control_id)
      if (mine)
        return `${label(v, plugin)} declares control id ${mine.control_id} ('${mine.name}'), which ${label(other.definition, other.plugin)} already declares ('${theirs.name}'): choose ids of your own`
    }
  }
  return null
}
