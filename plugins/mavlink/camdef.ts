// A camera's MAVLink camera definition (https://mavlink.io/en/services/camera_def.html), generated from
// its controls as GET /api/devices lists them: what QGroundControl downloads from CAMERA_INFORMATION's
// cam_definition_uri to draw a camera's settings, and the parameters PARAM_EXT reads and sets
// (plugins/mavlink/params.ts). One control is one parameter:
// - INTEGER: type int32 with min, max and step; MENU and INTEGER_MENU: int32 with an option per entry;
//   BOOLEAN: bool (uint8 with Off/On options when it is an auto mode that greys out others, because
//   QGroundControl's exclusions compare an option's value);
// - an auto mode (plugins/cameras/governs.ts) excludes the controls it governs in every option but its
//   manual one, and asks for their values again when it changes (<updates>);
// - read-only, disabled, button, string, bitmask and 64-bit controls are left out (nothing to set).
// The parameter ids are derived from control ids (PARAM_EXT's param_id is char[16]); the control's name
// is the description. The version is a hash of this shape (not of values or inactive flags), so a
// ground station's cached copy is reused until the controls themselves change.
import { governingAuto, manualValue } from '../cameras/governs'
import type { Registry } from '../../core/plugin'
import type { Control, Device } from '../../core/types'

/** PARAM_EXT's param_id is char[16]: QGroundControl matches parameters by these names. */
export const MAX_PARAM_ID = 16

export interface CameraParam {
  id: string
  control_id: number
  /** The definition's type, and the MAV_PARAM_EXT_TYPE the value travels as. */
  type: 'int32' | 'bool' | 'uint8'
  control: Control
}

/** A stable id per control: V4L2 ids in hex (CID_009A0902), vendor options (negative ids) as VND_<n>. */
export function paramId(control_id: number): string {
  return control_id >= 0 ? `CID_${control_id.toString(16).toUpperCase().padStart(8, '0')}` : `VND_${-control_id}`
}

const SETTABLE = new Set(['INTEGER', 'BOOLEAN', 'MENU', 'INTEGER_MENU'])
const INT32 = { min: -(2 ** 31), max: 2 ** 31 - 1 }

/** The controls that are parameters, in the device's order, with the auto modes that govern others known. */
export function cameraParams(device: Pick<Device, 'controls'>): CameraParam[] {
  const usable = device.controls.filter(
    (c) =>
      SETTABLE.has(c.flags.control_type) &&
      !c.flags.read_only &&
      !c.flags.disabled &&
      (c.flags.control_type !== 'INTEGER' || (c.flags.min_value >= INT32.min && c.flags.max_value <= INT32.max)),
  )
  const governors = new Set(usable.map((c) => governingAuto(c, usable)?.control_id).filter((id) => id !== undefined))
  return usable.map((control) => ({
    id: paramId(control.control_id),
    control_id: control.control_id,
    type: control.flags.control_type === 'BOOLEAN' ? (governors.has(control.control_id) ? 'uint8' : 'bool') : 'int32',
    control,
  }))
}

const escape = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

interface Option {
  name: string
  value: number
}

function optionsOf(param: CameraParam): Option[] | null {
  const f = param.control.flags
  if (f.control_type === 'MENU' || f.control_type === 'INTEGER_MENU') return (f.menu ?? []).map((m) => ({ name: m.name, value: m.index }))
  if (param.type === 'uint8') return [{ name: 'Off', value: 0 }, { name: 'On', value: 1 }]
  return null
}

/** A default QGroundControl accepts: inside the range, one of the options; else none is written. */
function defaultOf(param: CameraParam, options: Option[] | null): number | null {
  const f = param.control.flags
  const value = f.default_value
  if (!Number.isInteger(value)) return null
  if (options) return options.some((o) => o.value === value) ? value : null
  if (param.type === 'bool') return value === 0 || value === 1 ? value : null
  return value >= f.min_value && value <= f.max_value ? value : null
}

export interface CameraDefinition {
  xml: string
  /** CAMERA_INFORMATION's cam_definition_version (uint16, never 0): changes when the parameters' shape does. */
  version: number
  params: CameraParam[]
}

export function cameraDefinition(device: Pick<Device, 'controls'>, names: { vendor: string; model: string }): CameraDefinition {
  const params = cameraParams(device)
  const controls = params.map((p) => p.control)
  // The controls each auto mode governs: excluded while the auto mode is on, re-read when it changes.
  const governed = new Map<number, string[]>()
  for (const p of params) {
    const auto = governingAuto(p.control, controls)
    if (auto) governed.set(auto.control_id, [...(governed.get(auto.control_id) ?? []), p.id])
  }
  const body = params.map((p) => {
    const f = p.control.flags
    const options = optionsOf(p)
    const byAuto = governed.get(p.control_id)
    const manual = byAuto ? manualValue(p.control) : undefined
    const value = defaultOf(p, options)
    const attrs = [`name="${p.id}"`, `type="${p.type}"`, value !== null ? `default="${value}"` : null]
    if (!options && p.type === 'int32') attrs.push(`min="${f.min_value}"`, `max="${f.max_value}"`, `step="${Math.max(1, f.step)}"`)
    const lines = [`    <parameter ${attrs.filter(Boolean).join(' ')}>`, `      <description>${escape(p.control.name)}</description>`]
    if (byAuto) lines.push('      <updates>', ...byAuto.map((id) => `        <update>${id}</update>`), '      </updates>')
    if (options) {
      lines.push('      <options>')
      for (const o of options) {
        const excluded = byAuto && manual !== undefined && o.value !== manual ? byAuto : null
        if (!excluded) lines.push(`        <option name="${escape(o.name)}" value="${o.value}"/>`)
        else lines.push(`        <option name="${escape(o.name)}" value="${o.value}">`, '          <exclusions>', ...excluded.map((id) => `            <exclude>${id}</exclude>`), '          </exclusions>', '        </option>')
      }
      lines.push('      </options>')
    }
    lines.push('    </parameter>')
    return lines.join('\n')
  })
  const version = shapeVersion(names, params, governed)
  const xml = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<mavlinkcamera>',
    `  <definition version="${version}">`,
    `    <model>${escape(names.model)}</model>`,
    `    <vendor>${escape(names.vendor)}</vendor>`,
    '  </definition>',
    '  <parameters>',
    ...body,
    '  </parameters>',
    '</mavlinkcamera>',
    '',
  ].join('\n')
  return { xml, version, params }
}

/** FNV-1a over what the definition says (not values, not inactive flags), folded to 1…65535. */
function shapeVersion(names: { vendor: string; model: string }, params: CameraParam[], governed: Map<number, string[]>): number {
  const shape = JSON.stringify([
    names,
    params.map((p) => {
      const f = p.control.flags
      return [p.id, p.type, p.control.name, f.min_value, f.max_value, f.step, f.default_value, f.menu ?? null, governed.get(p.control_id) ?? null]
    }),
  ])
  let hash = 0x811c9dc5
  for (const byte of Buffer.from(shape, 'utf8')) hash = Math.imul(hash ^ byte, 0x01000193) >>> 0
  return (((hash ^ (hash >>> 16)) >>> 0) % 65535) + 1
}

/** The camera's vendor and model: the vendor plugin's names, else the USB manufacturer and product. */
export function cameraNames(registry: Registry, device: Device): { vendor: string; model: string } {
  const found = registry
    .vendors()
    .map((vendor) => ({ vendor: vendor.vendor, model: vendor.models.find((m) => m.vid === device.vid && m.pids.includes(device.pid)) }))
    .find((f) => f.model)
  return { vendor: found?.vendor ?? device.manufacturer ?? 'Unknown', model: found?.model?.model ?? device.name ?? 'UVC camera' }
}

/** Where a camera's definition is served (plugins/mavlink/index.ts), on `origin`. */
export const definitionPath = (bus_info: string) => `/api/streams/${bus_info.replace(/[^\w.~:-]/g, encodeURIComponent)}/camera.xml`
