// Simulated cameras that behave like hardware: values clamp and quantize as UVC firmware does, automatic
// modes make controls inactive, read-only controls refuse, failures can be injected, devices unplug and
// come back (on another port too), and each camera describes the real video it would produce.
import type { ActiveFormat, CameraBackend, Control, ControlValue, RawDevice, VideoSource, XuQuery } from '../../core/types'
import { DeviceError } from '../../core/types'
import type { ExtensionUnit } from '../../core/xu'
import { probeTimecode, timecodeAvailable } from '../gstreamer/elements'
import { simulatedSource } from '../gstreamer/simulated'
import type { MockDeviceSpec, MockModel } from './cameras'
import { SimulatedExtensionUnit } from './xu'

const PATTERNS = ['ball', 'smpte', 'snow', 'pinwheel', 'spokes', 'gradient', 'circular', 'checkers-8']

/** The extension units the vendors declare for a device with these USB ids (core/xu.ts unitsFor). */
export type ExtensionUnitsOf = (vid: number, pid: number) => ExtensionUnit[]

interface Failure {
  errno: string
  remaining: number
  control_id?: number
}

class MockDevice {
  bus_info: string
  plugged = true
  readonly values = new Map<number, number>()
  readonly paths: string[]
  /** Made on first use: the vendors' declarations are registered after the simulation starts. */
  private units: SimulatedExtensionUnit[] | null = null
  failure: Failure | null = null
  active: ActiveFormat | null = null

  constructor(
    readonly model: MockModel,
    bus_info: string,
    readonly serial: string,
    firstNode: number,
    readonly pattern: string,
    private readonly unitsOf: ExtensionUnitsOf,
  ) {
    this.bus_info = bus_info
    this.paths = model.nodes.map((_, i) => `/dev/sim/video${firstNode + i}`)
    this.powerOn()
  }

  /** Firmware state after power-up: every control and extension-unit register at its default. */
  powerOn(): void {
    for (const c of this.model.controls) this.values.set(c.control_id, c.flags.default_value)
    this.units = null
  }

  /** The extension units declared for the USB ids this camera states, on the node at `path`. */
  unitsOn(path: string): SimulatedExtensionUnit[] {
    this.units ??= this.unitsOf(this.model.vid, this.model.pid).map((declaration) => new SimulatedExtensionUnit(declaration))
    const formats = this.model.nodes[this.paths.indexOf(path)]
    return formats ? this.units.filter((unit) => unit.declaration.nodeFormat in formats) : []
  }

  raw(): RawDevice {
    const cameras = this.model.nodes.flatMap((formats, i) => (formats ? [{ path: this.paths[i]!, formats }] : []))
    const controls: Control[] = this.model.controls.map((def) => {
      const inactive = def.inactiveWhen?.(this.values) ?? false
      return { control_id: def.control_id, name: def.name, value: this.values.get(def.control_id)!, flags: { ...def.flags, ...(inactive ? { inactive } : {}) } }
    })
    return {
      bus_info: this.bus_info,
      name: this.model.name,
      vid: this.model.vid,
      pid: this.model.pid,
      manufacturer: this.model.manufacturer,
      serial: this.serial,
      device_paths: this.paths,
      cameras,
      controls,
    }
  }
}

export class MockCameraBackend implements CameraBackend {
  readonly name = 'mock'
  readonly simulated: boolean = true
  private devices: MockDevice[] = []
  private listeners = new Set<(c: { kind: 'added' | 'removed'; bus_info: string }) => void>()

  private nextNode = 0

  /** `extensionUnits`: what the registered vendors declare (no vendor: no extension unit answers). */
  constructor(
    specs: MockDeviceSpec[],
    private readonly extensionUnits: ExtensionUnitsOf = () => [],
  ) {
    this.add(specs)
    void probeTimecode() // answered before the first stream starts
  }

  /** More simulated devices, plugged from the start (the cameras vendor plugins declare, before the cameras plugin lists them). */
  add(specs: MockDeviceSpec[]): void {
    for (const spec of specs) {
      this.devices.push(new MockDevice(spec.model, spec.bus_info, spec.serial, this.nextNode, PATTERNS[this.devices.length % PATTERNS.length]!, this.extensionUnits))
      this.nextNode += spec.model.nodes.length
    }
  }

  async list(): Promise<RawDevice[]> {
    return this.devices.filter((d) => d.plugged).map((d) => d.raw())
  }

  async controls(bus_info: string): Promise<Control[]> {
    return this.plugged(bus_info).raw().controls
  }

  private plugged(bus_info: string): MockDevice {
    const d = this.devices.find((x) => x.plugged && x.bus_info === bus_info)
    if (!d) throw new DeviceError('ENODEV', `no simulated device at ${bus_info}`)
    return d
  }

  private byPath(path: string): MockDevice {
    const d = this.devices.find((x) => x.plugged && x.paths.includes(path))
    if (!d) throw new DeviceError('ENODEV', `no simulated node ${path}`)
    return d
  }

  private consumeFailure(d: MockDevice, control_id?: number): void {
    const f = d.failure
    if (!f || (f.control_id !== undefined && f.control_id !== control_id)) return
    if (--f.remaining <= 0) d.failure = null
    throw new DeviceError(f.errno, `injected failure (${f.errno})`)
  }

  async setControl(bus_info: string, control_id: number, value: ControlValue): Promise<number> {
    const d = this.plugged(bus_info)
    const def = d.model.controls.find((c) => c.control_id === control_id)
    if (!def) throw new DeviceError('EINVAL', `no control ${control_id}`)
    this.consumeFailure(d, control_id)
    if (def.flags.read_only) throw new DeviceError('EACCES', 'read-only control')
    if (def.inactiveWhen?.(d.values)) throw new DeviceError('EACCES', 'inactive control')
    const f = def.flags
    let v = Number(value)
    if (!Number.isFinite(v)) throw new DeviceError('EINVAL', 'not a number')
    if (f.control_type === 'MENU') {
      if (!f.menu?.some((m) => m.index === v)) throw new DeviceError('EINVAL', `no menu item ${v}`)
    } else {
      // As V4L2 does: clamp to the range, round to the step; then the firmware's own granularity.
      v = Math.min(f.max_value, Math.max(f.min_value, v))
      if (f.step > 1) v = f.min_value + Math.round((v - f.min_value) / f.step) * f.step
      if (def.quantum) v = Math.round(v / def.quantum) * def.quantum
      v = Math.min(f.max_value, Math.max(f.min_value, Math.round(v)))
    }
    const held = f.control_type === 'BOOLEAN' ? (v ? 1 : 0) : v
    d.values.set(control_id, held)
    return held
  }

  async activeFormat(bus_info: string): Promise<ActiveFormat | null> {
    const d = this.plugged(bus_info)
    if (d.active) return d.active
    const index = d.model.nodes.findIndex((n) => n?.H264 || n?.MJPG)
    const node = d.model.nodes[index]!
    const encode_type = node.H264 ? 'H264' : 'MJPG'
    const size = (node.H264 ?? node.MJPG)![0]!
    return { device_path: d.paths[index]!, encode_type, width: size.width, height: size.height, interval: size.intervals[0]! }
  }

  videoSource(device_path: string, format: ActiveFormat): VideoSource {
    const d = this.byPath(device_path)
    d.active = format
    return { kind: 'gst', description: simulatedSource(format.encode_type, format.width, format.height, format.interval, d.pattern, timecodeAvailable()) }
  }

  async xuQuery(device_path: string, q: XuQuery): Promise<Uint8Array> {
    const d = this.byPath(device_path)
    const units = d.unitsOn(device_path)
    if (!units.length) throw new DeviceError('ENOENT', 'no such extension unit on this node')
    const unit = units.find((u) => u.answers(q))
    if (!unit) throw new DeviceError('ENOENT', `no extension unit ${q.unit} selector ${q.selector}`)
    this.consumeFailure(d)
    return unit.transfer(q)
  }

  onChange(listener: (c: { kind: 'added' | 'removed'; bus_info: string }) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  // ---- the simulation's own controls (POST /api/mock/…) ----

  /** Every simulated device, plugged or not. */
  describe(): { bus_info: string; serial: string; name: string; plugged: boolean }[] {
    return this.devices.map((d) => ({ bus_info: d.bus_info, serial: d.serial, name: d.model.name, plugged: d.plugged }))
  }

  unplug(bus_info: string): boolean {
    const d = this.devices.find((x) => x.plugged && x.bus_info === bus_info)
    if (!d) return false
    d.plugged = false
    this.emit('removed', bus_info)
    return true
  }

  /** Plugs an unplugged device back, optionally into another port. Firmware state resets, as on a power cycle. */
  plug(bus_info: string, new_bus_info?: string): 'plugged' | 'unknown' | 'already' | 'port_taken' {
    const d = this.devices.find((x) => x.bus_info === bus_info && !x.plugged) ?? this.devices.find((x) => x.bus_info === bus_info)
    if (!d) return 'unknown'
    if (d.plugged) return 'already'
    const target = new_bus_info ?? bus_info
    if (this.devices.some((x) => x !== d && x.plugged && x.bus_info === target)) return 'port_taken'
    d.bus_info = target
    d.plugged = true
    d.powerOn()
    this.emit('added', target)
    return 'plugged'
  }

  injectFailure(bus_info: string, errno: string, count: number, control_id?: number): boolean {
    const d = this.devices.find((x) => x.plugged && x.bus_info === bus_info)
    if (!d) return false
    d.failure = { errno, remaining: count, control_id }
    return true
  }

  /** An external tool changed the camera's format (for notify_camera STREAM_START). */
  setActiveFormat(bus_info: string, format: ActiveFormat): void {
    this.plugged(bus_info).active = format
  }

  private emit(kind: 'added' | 'removed', bus_info: string): void {
    for (const l of this.listeners) l({ kind, bus_info })
  }
}
