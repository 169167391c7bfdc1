// The V4L2 camera backend: devices as the kernel reports them, controls set for real, hot-plug, and
// every ioctl in a per-device worker thread with a deadline (drivers/v4l2/pool.ts).
import { watch, type FSWatcher } from 'node:fs'
import type { Logger } from '../../core/log'
import type { ActiveFormat, CameraBackend, Control, ControlValue, EncodeType, RawDevice, VideoSource, XuQuery } from '../../core/types'
import { DeviceError } from '../../core/types'
import type { RawActiveFormat } from './device'
import { DEFAULT_WORKER_URL, DeviceWorker } from './pool'
import type { Formats, Probe, SetAnswer } from './protocol'
import { nodeNames, scanGroups, SYSFS_V4L, type NodeGroup } from './sysfs'

export interface V4l2Options {
  sysfsRoot?: string
  /** Watched for node creation and removal (inotify on devtmpfs). */
  devDir?: string
  workerUrl?: URL
  /** Deadline for enumerating one device (every node, format and control). */
  probeTimeoutMs?: number
  /** How long list() waits for a device whose last enumeration missed its deadline before using its last answer. */
  stalledWaitMs?: number
  /** Deadline for one control set, format read or extension-unit transfer. */
  ioTimeoutMs?: number
  /** Quiet time after the last node event before rescanning: one camera creates several nodes in a burst. */
  debounceMs?: number
  /** sysfs is polled too, in case inotify misses an event (or /dev is not devtmpfs). */
  pollMs?: number
  log?: Logger
}

type Change = { kind: 'added' | 'removed'; bus_info: string }

const NODE_NAME = /^(video|vbi|radio|swradio|v4l-touch)\d+$/
const natural = new Intl.Collator('en', { numeric: true }).compare

export function encodeTypeOf(pixelformat: string): EncodeType {
  if (pixelformat === 'H264') return 'H264'
  if (pixelformat === 'MJPG' || pixelformat === 'JPEG') return 'MJPG'
  return 'NONE'
}

interface Located { group: string; controlNode: string | null; cameraPaths: string[] }

export class V4l2Backend implements CameraBackend {
  readonly name = 'v4l2'
  private workers = new Map<string, DeviceWorker>()
  /** Last good probe per group: served when a device misses its deadline, so one slow camera does not hide. */
  private probes = new Map<string, { group: NodeGroup; probe: Probe }>()
  private located = new Map<string, Located>()
  private inflight = new Map<string, Promise<Probe | null>>()
  private stalled = new Set<string>()
  /** Formats per node, kept between hot-plug events (see worker.ts). */
  private formats = new Map<string, { identity: string; formats: Formats }>()
  private listeners = new Set<(c: Change) => void>()
  private known = new Set<string>()
  private watcher: FSWatcher | null = null
  private poller: Timer | null = null
  private debounce: Timer | null = null
  private lastNames = ''
  private rescanning: Promise<void> | null = null
  private rescanAgain = false
  private stopped = false
  private o: Required<Omit<V4l2Options, 'log'>> & { log?: Logger }

  constructor(opts: V4l2Options = {}) {
    this.o = {
      sysfsRoot: SYSFS_V4L,
      devDir: '/dev',
      workerUrl: DEFAULT_WORKER_URL,
      probeTimeoutMs: 10_000,
      stalledWaitMs: 250,
      ioTimeoutMs: 5_000,
      debounceMs: 250,
      pollMs: 1_000,
      ...opts,
    }
  }

  private worker(key: string): DeviceWorker {
    if (this.stopped) throw new DeviceError('ENODEV', 'the V4L2 backend is stopped')
    let w = this.workers.get(key)
    if (!w) this.workers.set(key, (w = new DeviceWorker(key, this.o.workerUrl)))
    return w
  }

  /**
   * One group's enumeration, or its last good one when it fails. A group whose last enumeration missed
   * its deadline is "stalled": callers then wait only briefly (stalledWaitMs) before taking the cached
   * answer, while the enumeration carries on in the background — so a wedged camera costs every other
   * camera's list() a few hundred milliseconds, not the whole deadline each time.
   */
  private async probeGroup(group: NodeGroup, fresh: boolean): Promise<Probe | null> {
    // A new enumeration each time (it must see a control set just before), except that a stalled
    // device gets no second one queued behind the first.
    let run = this.stalled.has(group.key) ? this.inflight.get(group.key) : undefined
    if (!run || fresh) {
      run = this.runProbe(group, fresh).finally(() => {
        if (this.inflight.get(group.key) === run) this.inflight.delete(group.key)
      })
      this.inflight.set(group.key, run)
    }
    if (!this.stalled.has(group.key)) return run
    const cached = this.probes.get(group.key)?.probe ?? null
    return Promise.race([run, Bun.sleep(this.o.stalledWaitMs).then(() => cached)])
  }

  private async runProbe(group: NodeGroup, fresh: boolean): Promise<Probe | null> {
    try {
      // What we hold now; an 'unchanged' answer refers to exactly this, whatever happens meanwhile.
      const held = new Map<string, Formats>()
      const known: Record<string, string> = {}
      for (const path of group.nodes) {
        const f = this.formats.get(path)
        if (!fresh && f?.formats) {
          known[path] = f.identity // so 'unchanged' always means "has formats"
          held.set(path, f.formats)
        }
      }
      const probe = await this.worker(group.key).request<Probe>({ op: 'probe', nodes: group.nodes, known, fresh }, this.o.probeTimeoutMs, `enumerating ${group.nodes.join(', ')}`)
      for (const node of probe.nodes) {
        if (node.formats === 'unchanged') node.formats = held.get(node.path) ?? null
        else this.formats.set(node.path, { identity: node.identity, formats: node.formats })
      }
      if (probe.failed.length) this.o.log?.warn('v4l2: nodes skipped', { failed: probe.failed })
      this.probes.set(group.key, { group, probe })
      this.stalled.delete(group.key)
      return probe
    } catch (e) {
      if (e instanceof DeviceError && e.code === 'ETIMEDOUT') this.stalled.add(group.key)
      const cached = this.probes.get(group.key)
      this.o.log?.warn('v4l2: enumeration failed', { nodes: group.nodes, err: e as Error, cached: !!cached })
      return cached?.probe ?? null
    }
  }

  /** fresh: re-read formats and menus too (they are cached between hot-plug events). */
  async list(opts: { fresh?: boolean } = {}): Promise<RawDevice[]> {
    return this.enumerate(opts.fresh ?? false)
  }

  private async enumerate(fresh: boolean): Promise<RawDevice[]> {
    const groups = scanGroups(this.o.sysfsRoot)
    const present = new Set(groups.map((g) => g.key))
    const paths = new Set(groups.flatMap((g) => g.nodes))
    for (const path of this.formats.keys()) if (!paths.has(path)) this.formats.delete(path)
    for (const [key, w] of this.workers)
      if (!present.has(key)) {
        w.close()
        this.workers.delete(key)
        this.probes.delete(key)
        this.stalled.delete(key)
      }
    const probed = await Promise.all(groups.map(async (g) => ({ group: g, probe: await this.probeGroup(g, fresh) })))
    const devices = new Map<string, RawDevice>()
    const located = new Map<string, Located>()
    for (const { group, probe } of probed) {
      if (!probe) continue
      for (const node of probe.nodes) {
        const bus = node.cap.bus_info
        let d = devices.get(bus)
        if (!d) {
          d = {
            bus_info: bus,
            name: node.cap.card || group.usb?.product || node.cap.driver,
            vid: group.usb?.vid ?? 0,
            pid: group.usb?.pid ?? 0,
            manufacturer: group.usb?.manufacturer ?? null,
            serial: group.usb?.serial ?? '',
            device_paths: [],
            cameras: [],
            controls: [],
          }
          devices.set(bus, d)
          located.set(bus, { group: group.key, controlNode: null, cameraPaths: [] })
        }
        const loc = located.get(bus)!
        d.device_paths.push(node.path)
        const formats = node.formats as Formats // 'unchanged' was resolved in probeGroup
        if (formats) {
          d.cameras.push({ path: node.path, formats })
          loc.cameraPaths.push(node.path)
        }
        if (probe.controls[bus]?.node === node.path) {
          d.controls = probe.controls[bus].controls
          loc.controlNode = node.path
        }
      }
    }
    this.located = located
    const videoFirst = (a: string, b: string) => Number(!/\/video\d+$/.test(a)) - Number(!/\/video\d+$/.test(b)) || natural(a, b)
    for (const d of devices.values()) {
      d.device_paths.sort(natural)
      d.cameras.sort((a, b) => videoFirst(a.path, b.path))
    }
    for (const loc of located.values()) loc.cameraPaths.sort(videoFirst)
    return [...devices.values()].sort((a, b) => natural(a.bus_info, b.bus_info))
  }

  private async locate(bus_info: string): Promise<Located> {
    let loc = this.located.get(bus_info)
    if (!loc) {
      await this.list()
      loc = this.located.get(bus_info)
    }
    if (!loc) throw new DeviceError('ENODEV', `no V4L2 device has bus_info '${bus_info}'`)
    return loc
  }

  async setControl(bus_info: string, control_id: number, value: ControlValue): Promise<ControlValue> {
    return (await this.set(bus_info, control_id, value, false)).value
  }

  /**
   * A set and the device's controls read right after it, in one request and one open of the node: the
   * caller needs the others' flags (auto exposure makes exposure inactive) and values after a set.
   */
  async setControlAndRead(bus_info: string, control_id: number, value: ControlValue): Promise<{ value: ControlValue; controls: Control[] }> {
    const answer = await this.set(bus_info, control_id, value, true)
    return { value: answer.value, controls: answer.controls ?? [] }
  }

  private async set(bus_info: string, control: number, value: ControlValue, withControls: boolean): Promise<SetAnswer> {
    const loc = await this.locate(bus_info)
    if (!loc.controlNode) throw new DeviceError('ENOENT', `device '${bus_info}' has no controls`)
    return this.worker(loc.group).request({ op: 'setControl', path: loc.controlNode, control, value, withControls }, this.o.ioTimeoutMs, `setting control ${control} on ${bus_info}`)
  }

  /**
   * The device's controls as they are now (values and flags: setting one control can make another
   * inactive). Far cheaper than list(): one node, no formats, menus cached.
   */
  async controls(bus_info: string): Promise<Control[]> {
    const loc = await this.locate(bus_info)
    if (!loc.controlNode) return []
    return this.worker(loc.group).request({ op: 'controls', path: loc.controlNode }, this.o.ioTimeoutMs, `reading the controls of ${bus_info}`)
  }

  async activeFormat(bus_info: string): Promise<ActiveFormat | null> {
    const loc = await this.locate(bus_info)
    const path = loc.cameraPaths[0]
    if (!path) return null
    const f = await this.worker(loc.group).request<RawActiveFormat>({ op: 'activeFormat', path }, this.o.ioTimeoutMs, `reading the format of ${path}`)
    return { device_path: path, encode_type: encodeTypeOf(f.pixelformat), width: f.width, height: f.height, interval: f.interval }
  }

  /** Nodes of every camera, in a form the streamer reads directly. */
  videoSource(device_path: string): VideoSource {
    return { kind: 'v4l2', device: device_path }
  }

  async xuQuery(device_path: string, q: XuQuery): Promise<Uint8Array> {
    let group = [...this.probes.values()].find((p) => p.group.nodes.includes(device_path))?.group
    if (!group) group = scanGroups(this.o.sysfsRoot).find((g) => g.nodes.includes(device_path))
    if (!group) throw new DeviceError('ENODEV', `${device_path} is not a video node of this machine`)
    return this.worker(group.key).request({ op: 'xuQuery', path: device_path, ...q }, this.o.ioTimeoutMs, `extension unit ${q.unit} selector ${q.selector} on ${device_path}`)
  }

  /** Devices (by sysfs parent) whose last enumeration missed its deadline: for the plugin's health. */
  stalledDevices(): string[] {
    return [...this.stalled]
  }

  onChange(listener: (change: Change) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  // ---- hot-plug ----

  /** Idempotent. The v4l2 plugin starts and stops it (its only owner). */
  async start(): Promise<void> {
    if (this.poller) return
    this.stopped = false
    this.lastNames = nodeNames(this.o.sysfsRoot).join(',')
    this.poller = setInterval(() => {
      if (nodeNames(this.o.sysfsRoot).join(',') !== this.lastNames) this.schedule()
    }, this.o.pollMs)
    this.poller.unref?.()
    this.known = new Set((await this.list()).map((d) => d.bus_info))
    try {
      this.watcher = watch(this.o.devDir, (_event, name) => {
        if (name && NODE_NAME.test(String(name))) this.schedule()
      })
      this.watcher.on('error', () => {}) // polling still covers us
    } catch (e) {
      this.o.log?.warn('v4l2: cannot watch /dev, relying on polling sysfs', { err: e as Error })
    }
  }

  private schedule() {
    if (this.stopped) return
    if (this.debounce) clearTimeout(this.debounce)
    this.debounce = setTimeout(() => {
      this.debounce = null
      void this.rescan()
    }, this.o.debounceMs)
  }

  private async rescan(): Promise<void> {
    if (this.rescanning) {
      this.rescanAgain = true
      return this.rescanning
    }
    this.rescanning = (async () => {
      do {
        this.rescanAgain = false
        this.lastNames = nodeNames(this.o.sysfsRoot).join(',')
        let now: Set<string>
        try {
          now = new Set((await this.enumerate(true)).map((d) => d.bus_info))
        } catch (e) {
          this.o.log?.error('v4l2: rescan failed', { err: e as Error })
          continue
        }
        const changes: Change[] = [
          ...[...this.known].filter((b) => !now.has(b)).map((bus_info) => ({ kind: 'removed' as const, bus_info })),
          ...[...now].filter((b) => !this.known.has(b)).map((bus_info) => ({ kind: 'added' as const, bus_info })),
        ]
        if (this.stopped) return
        this.known = now
        for (const c of changes) {
          this.o.log?.info(`v4l2: device ${c.kind}`, { bus_info: c.bus_info })
          for (const l of this.listeners) {
            try {
              l(c)
            } catch (e) {
              this.o.log?.error('v4l2: change listener failed', { err: e as Error })
            }
          }
        }
      } while (this.rescanAgain)
    })().finally(() => (this.rescanning = null))
    return this.rescanning
  }

  async stop(): Promise<void> {
    this.stopped = true
    this.watcher?.close()
    this.watcher = null
    if (this.poller) clearInterval(this.poller)
    if (this.debounce) clearTimeout(this.debounce)
    this.poller = this.debounce = null
    for (const w of this.workers.values()) w.close(false)
    this.workers.clear()
  }
}
