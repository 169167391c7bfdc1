// The device logic, once, above any CameraBackend: identity and settings restore, controls, streams,
// leader/follower groups, external management. Mutations run one at a time (a queue), reads never wait.
import type { Static } from '@sinclair/typebox'
import { belowFloor, freeBytes, noRoomDetail } from '../../core/disk'
import { conflict, fromDeviceError, notFound, valueError, HttpError } from '../../core/errors'
import type { PluginContext, PluginHealth } from '../../core/plugin'
import { readPreferences } from '../../core/preferences'
import type { ConfigureStreamRequest, DeviceModel, NotifyCameraRequest } from '../../core/schemas'
import type {
  Device,
  DeviceDirectory,
  DeviceRecording,
  CameraBackend,
  Control,
  ControlValue,
  Endpoint,
  GroupRole,
  RawDevice,
  Stream,
  StreamMember,
  StreamJob,
  HubHealth,
  StreamHealth,
  VendorControl,
} from '../../core/types'
import { DeviceError } from '../../core/types'
import { HEALTH_TICK_MS, healthSentence, watchHealth, type HealthChange } from '../../media/health'
import { checkStreamFormat, defaultStream, sourcePixelFormat } from './formats'

/** The recorder's words for a full disk (GStreamer's filesink: "No space left on device"). */
const DISK_FULL = /No space left/i


/** What is remembered about a device, keyed by its identity (serial when it has one, else bus_info). */
export interface DeviceSettings {
  bus_info: string // where it was last seen
  nickname: string
  controls: Record<string, number> // saved before values were numbers everywhere: may hold true/false
  stream: Stream
  leader: string | null // identity of the leader it follows
  followers: string[] // identities
  externally_managed: boolean
  /** Record while the vehicle is armed: arming starts a recording of its stream, disarming stops it. */
  record_while_armed?: boolean
}

interface Present {
  raw: RawDevice
  backend: CameraBackend
  identity: string
  device_type: number
  role: GroupRole
  /** `readError`: why the camera did not answer the last read; `value` is then the declared default, not the camera's. */
  vendorControls: { def: VendorControl; value: number; readError: string | null }[]
}

const NS = 'devices'

export class DeviceManager implements DeviceDirectory {
  private present = new Map<string, Present>() // by bus_info
  private settings = new Map<string, DeviceSettings>() // by identity
  private queue: Promise<unknown> = Promise.resolve()
  /** By origin; kept at most a health tick, since the streams' health figures change every second without an event. */
  private cachedList = new Map<string, { json: Uint8Array; at: number }>()
  private unsubscribers: (() => void)[] = []

  constructor(private readonly ctx: PluginContext) {
    for (const { key, value } of ctx.store.list<DeviceSettings>(NS)) this.settings.set(key, value)
    // Any event may change what GET /api/devices shows (stream state, frame stats, …); a log entry does not.
    this.unsubscribers.push(ctx.events.subscribe((event) => event.type !== 'log' && this.cachedList.clear()))
  }

  // ---- lifecycle ----

  async start(): Promise<void> {
    this.unsubscribers.push(watchHealth((change) => this.onHealth(change)))
    this.unsubscribers.push(
      this.ctx.registry.telemetry.onChange((change, now) => {
        if (change === 'armed') void this.onArmed(now?.armed ?? false).catch((e) => this.ctx.log.error('record while armed failed', { err: e }))
      }),
    )
    // Each camera backend is started and stopped by the plugin that provides it, before this runs.
    for (const backend of this.ctx.registry.cameraBackends()) {
      this.unsubscribers.push(
        backend.onChange((change) => {
          void this.serial(() => (change.kind === 'added' ? this.deviceArrived(backend, change.bus_info) : this.deviceLeft(change.bus_info))).catch((e) =>
            this.ctx.log.error('hot-plug handling failed', { bus_info: change.bus_info, err: e }),
          )
        }),
      )
      for (const raw of await backend.list()) await this.serial(() => this.adopt(backend, raw, false))
    }
  }

  /** Alerts raised, by bus_info: the hub that raised it (a clear is taken only from it). */
  private alerts = new Map<string, unknown>()

  /** A stream's delivered rate fell below 90 % of its configured rate, or a viewer lagged or lost packets, for 2 s, or all is back for 2 s: an event and a log line. */
  private onHealth({ hub, bus_info, health, ended }: HealthChange): void {
    if (health.alert) {
      if (this.ctx.registry.get('streamer')?.live(bus_info)?.hub !== hub) return // another service's hub (tests run several)
      this.alerts.set(bus_info, hub)
    } else if (this.alerts.get(bus_info) === hub) this.alerts.delete(bus_info)
    else return
    const name = this.displayName(bus_info)
    const sentence = healthSentence(name, health, this.ctx.config.delayAlertMs)
    const behind = health.viewer_delay_ms === null ? '' : `, ${health.viewer_delay_ms} ms behind`
    const message = health.alert ? sentence : ended ? `${name}: the stream stopped` : `${name}: video back at ${Math.round(health.fps ?? 0)} fps of ${Math.round(health.configured_fps)}${behind}`
    this.ctx.events.emit('stream_health', { bus_info, state: health.alert ? 'alert' : 'ok', message, health: this.asShown(bus_info, health) })
    const fields = { bus_info, fps: health.fps, configured_fps: health.configured_fps, viewer_delay_ms: health.viewer_delay_ms, viewer_loss: health.viewer_loss }
    if (health.alert) this.ctx.log.warn(message, fields)
    else this.ctx.log.info(message, fields)
  }

  /** What a pilot calls the camera: its nickname, else its name, else its bus_info. */
  private displayName(bus_info: string): string {
    const entry = this.present.get(bus_info)
    if (!entry) return bus_info
    return this.settingsOf(entry).nickname || entry.raw.name || bus_info
  }

  /** The health of the stream of camera `bus_info` (its own member's), as the API shows it; null while none runs. */
  private healthOf(bus_info: string): StreamHealth | null {
    const live = this.ctx.registry.get('streamer')?.live(bus_info)
    const health = live && !live.hub.closed ? live.hub.health(live.member) : null
    return health && this.asShown(bus_info, health)
  }

  /** A hub's figures as the API shows them: with the alert's sentence, and the camera's dropped frames (its group's: frame_stats). */
  private asShown(bus_info: string, health: HubHealth): StreamHealth {
    const entry = this.present.get(bus_info)
    const leader = entry && this.settingsOf(entry).leader
    const streamKey = leader ? this.busInfoOf(leader) : bus_info
    return {
      ...health,
      dropped_frames: this.ctx.registry.get('streamer')?.frameDrops(streamKey) ?? 0,
      alert: health.alert ? healthSentence(this.displayName(bus_info), health, this.ctx.config.delayAlertMs) : null,
    }
  }

  /** Degraded while a connected camera's vendor control shows its default because its read failed. */
  health(): PluginHealth {
    const unread = [...this.present.values()].flatMap((p) =>
      p.vendorControls.filter((v) => v.readError).map((v) => `${p.raw.bus_info}: control ${v.def.control_id} '${v.def.name}' could not be read (${v.readError}); it shows its default`),
    )
    return unread.length ? { state: 'degraded', detail: unread.join('; ') } : { state: 'ok' }
  }

  async stop(): Promise<void> {
    this.unsubscribers.forEach((u) => u())
    await this.queue.catch(() => {})
  }

  /** Runs mutations one after another so that groups and settings never interleave. */
  private serial<T>(fn: () => Promise<T> | T): Promise<T> {
    const run = this.queue.then(fn, fn)
    this.queue = run.catch(() => {})
    return run
  }

  // ---- identity ----

  private identityOf(raw: RawDevice): string {
    if (raw.serial) {
      const key = `serial:${raw.vid.toString(16)}:${raw.pid.toString(16)}:${raw.serial}`
      // Two cameras that share a serial (cheap clones do) must not share settings.
      const holder = [...this.present.values()].find((p) => p.identity === key && p.raw.bus_info !== raw.bus_info)
      if (!holder) return key
    }
    return `bus:${raw.bus_info}`
  }

  private model(raw: RawDevice): { device_type: number; role: GroupRole } {
    for (const vendor of this.ctx.registry.vendors()) {
      const m = vendor.models.find((x) => x.vid === raw.vid && x.pids.includes(raw.pid))
      if (m) return { device_type: m.device_type, role: m.role }
    }
    return { device_type: 0, role: 'none' }
  }

  private async deviceArrived(backend: CameraBackend, bus_info: string): Promise<void> {
    const raw = (await backend.list()).find((d) => d.bus_info === bus_info)
    if (raw) await this.adopt(backend, raw, true)
  }

  /** A device appeared: remember it, restore its controls first, then its stream. */
  private async adopt(backend: CameraBackend, raw: RawDevice, announce: boolean): Promise<void> {
    const identity = this.identityOf(raw)
    const { device_type, role } = this.model(raw)
    const vendorControls: Present['vendorControls'] = []
    for (const vendor of this.ctx.registry.vendors()) {
      for (const def of vendor.controls ?? []) {
        if (!def.appliesTo(raw)) continue
        try {
          vendorControls.push({ def, value: await def.get(raw, backend), readError: null })
        } catch (e) {
          // Listed with its default, saying so: a value shown as read must have been read.
          const readError = `${(e as Error).message}${e instanceof DeviceError ? ` (${e.code})` : ''}`
          this.ctx.log.warn('a vendor control could not be read; it shows its default', { bus_info: raw.bus_info, control_id: def.control_id, control: def.name, err: e })
          vendorControls.push({ def, value: def.flags.default_value, readError })
        }
      }
    }
    const entry: Present = { raw, backend, identity, device_type, role, vendorControls }
    this.present.set(raw.bus_info, entry)
    let saved = structuredClone(this.settings.get(identity))
    if (!saved) {
      saved = { bus_info: raw.bus_info, nickname: '', controls: {}, stream: defaultStream(raw, this.freeEndpoint()), leader: null, followers: [], externally_managed: false }
    }
    saved.bus_info = raw.bus_info
    try {
      this.save([identity, saved])
    } catch (e) {
      if (!(e instanceof HttpError && e.status === 507)) throw e
      // A full card must not cost the camera: it runs on what was saved (or first-seen defaults), unsaved.
      this.settings.set(identity, saved)
      this.ctx.log.warn('camera settings not saved', { bus_info: raw.bus_info, detail: e.detail })
    }
    await this.restoreControls(entry, saved)
    this.invalidate()
    if (announce) this.ctx.events.emit('device_added', { bus_info: raw.bus_info, device: this.toModel(entry) })
    await this.resumeStream(entry)
  }

  /**
   * Applies the saved controls. Ids do not order auto modes before the controls they govern (focus
   * absolute 0x9a090a comes before focus auto 0x9a090c), so what was refused as inactive gets a second pass.
   */
  private async restoreControls(entry: Present, saved: DeviceSettings): Promise<void> {
    let pending = Object.entries(saved.controls)
    for (let pass = 1; pass <= 2 && pending.length; pass++) {
      const refused: typeof pending = []
      for (const [id, value] of pending) {
        try {
          await this.applyControl(entry, Number(id), Number(value), false)
        } catch (e) {
          refused.push([id, value])
          if (pass === 2) this.ctx.log.warn('could not restore a control', { bus_info: entry.raw.bus_info, control_id: Number(id), err: e })
        }
      }
      // One re-read of values and flags per pass, not one per control.
      await this.refreshControls(entry).catch(() => {})
      pending = refused
    }
  }


  private async deviceLeft(bus_info: string): Promise<void> {
    const entry = this.present.get(bus_info)
    if (!entry) return
    this.present.delete(bus_info)
    this.invalidate()
    const saved = this.settingsOf(entry)
    // Its stream stops, its viewers waiting for it to come back; its settings stay. A follower leaving
    // regroups its leader without it.
    const streamer = this.ctx.registry.get('streamer')
    if (streamer) await streamer.stop(bus_info, { cameraLeft: true }).catch(() => {})
    const leader = saved.leader ? this.presentByIdentity(saved.leader) : undefined
    if (leader) await this.resumeStream(leader).catch((e) => this.ctx.log.warn('could not regroup', { err: e }))
    this.ctx.events.emit('device_removed', { bus_info })
  }

  // ---- reading ----

  /** A copy to change and hand to save(): memory changes only when the store took the change. */
  private settingsOf(entry: Present): DeviceSettings {
    return structuredClone(this.settings.get(entry.identity)!)
  }

  private presentByIdentity(identity: string): Present | undefined {
    return [...this.present.values()].find((p) => p.identity === identity)
  }

  private get(bus_info: string): Present {
    const entry = this.present.get(bus_info)
    if (!entry) throw notFound(`No device with bus_info '${bus_info}' is connected`)
    return entry
  }

  private busInfoOf(identity: string): string {
    return this.presentByIdentity(identity)?.raw.bus_info ?? this.settings.get(identity)?.bus_info ?? identity
  }

  /** Every control of a device as the API shows it, whichever backend or vendor plugin answered. */
  private controlsOf(entry: Present): Control[] {
    return [
      ...entry.raw.controls,
      ...entry.vendorControls.map(({ def, value, readError }) => ({ control_id: def.control_id, name: def.name, flags: readError ? { ...def.flags, read_error: readError } : def.flags, value })),
    ].map((c) => ({ ...c, value: wireValue(c.value), flags: { ...c.flags, default_value: wireValue(c.flags.default_value) as number } }))
  }

  /** The device as the API shows it; with `origin` (the request's), its `watch` links on that host. */
  toModel(entry: Present, origin?: URL): Static<typeof DeviceModel> {
    const { raw } = entry
    const saved = this.settingsOf(entry)
    const streamer = this.ctx.registry.get('streamer')
    const streamKey = saved.leader ? this.busInfoOf(saved.leader) : raw.bus_info
    return {
      cameras: raw.cameras,
      controls: this.controlsOf(entry),
      stream: saved.stream,
      name: raw.name,
      vid: raw.vid,
      pid: raw.pid,
      bus_info: raw.bus_info,
      manufacturer: raw.manufacturer,
      nickname: saved.nickname,
      device_info: { device_name: raw.name, bus_info: raw.bus_info, device_paths: raw.device_paths, vid: raw.vid, pid: raw.pid },
      device_type: entry.device_type,
      followers: saved.followers.map((f) => this.busInfoOf(f)),
      is_managed: saved.leader !== null,
      frame_stats: { num_drops: streamer?.frameDrops(streamKey) ?? 0 },
      is_externally_managed: saved.externally_managed,
      string3: raw.serial,
      stream_status: { ...(streamer?.status(streamKey) ?? { state: 'stopped' as const, error: null, restarts: 0 }), health: this.healthOf(raw.bus_info) },
      leader: saved.leader ? this.busInfoOf(saved.leader) : null,
      recording: streamer?.recording(raw.bus_info) ?? { active: false, file: null, started: null, bytes: 0, error: null },
      record_while_armed: saved.record_while_armed ?? false,
      ...(origin ? { watch: this.ctx.registry.watch(raw.bus_info, origin) } : {}),
    }
  }

  device(bus_info: string): Device | undefined {
    const entry = this.present.get(bus_info)
    return entry && this.toModel(entry)
  }

  devices(): Device[] {
    return [...this.present.values()].map((entry) => this.toModel(entry))
  }

  /**
   * GET /api/devices, sorted by device_type then bus_info; kept as encoded JSON until anything changes,
   * per origin the API is reached on (the `watch` links name it; a few at most: LAN address, hostname).
   */
  listJson(requestUrl: string): Uint8Array {
    // The origin is the URL up to its path (the front hands every request a well-formed absolute URL);
    // parsed only to build a new answer, not on every poll.
    const pathAt = requestUrl.indexOf('/', requestUrl.indexOf('//') + 2)
    const key = pathAt < 0 ? requestUrl : requestUrl.slice(0, pathAt)
    const cached = this.cachedList.get(key)
    const now = performance.now()
    let json = cached && now - cached.at < HEALTH_TICK_MS ? cached.json : undefined
    if (!json) {
      const origin = new URL(requestUrl)
      const entries = [...this.present.values()].sort((a, b) => a.device_type - b.device_type || (a.raw.bus_info < b.raw.bus_info ? -1 : a.raw.bus_info > b.raw.bus_info ? 1 : 0))
      json = new TextEncoder().encode(JSON.stringify(entries.map((e) => this.toModel(e, origin))))
      // Host headers are the client's to choose: keep only the newest few.
      if (!cached && this.cachedList.size >= 8) this.cachedList.delete(this.cachedList.keys().next().value!)
      this.cachedList.set(key, { json, at: now })
    }
    return json
  }

  private invalidate(): void {
    this.cachedList.clear()
  }

  /**
   * Saves, then keeps in memory. A write the disk refuses (full card: 507) throws and leaves memory as
   * it was, so the API never shows a setting that a restart would lose.
   */
  private save(...changes: [identity: string, settings: DeviceSettings][]): void {
    this.ctx.store.transaction(() => {
      for (const [identity, settings] of changes) this.ctx.store.set(NS, identity, settings)
    })
    for (const [identity, settings] of changes) this.settings.set(identity, settings)
    this.invalidate()
  }

  private updated(entry: Present): void {
    this.invalidate()
    this.ctx.events.emit('device_updated', { bus_info: entry.raw.bus_info, device: this.toModel(entry) })
  }

  /** A port for a new device's default endpoint that no other device uses. */
  private freeEndpoint(): Endpoint {
    const prefs = readPreferences(this.ctx.store, this.ctx.registry)
    const used = new Set([...this.settings.values()].flatMap((s) => s.stream.endpoints.map((e) => e.port)))
    let port = prefs.default_stream.port
    while (used.has(port)) port++
    return { host: prefs.default_stream.host, port }
  }

  // ---- controls ----

  setControl(bus_info: string, control_id: number, value: number): Promise<{ success: true; value: ControlValue }> {
    return this.serial(async () => {
      const entry = this.get(bus_info)
      const control = this.controlsOf(entry).find((c) => c.control_id === control_id)
      if (!control) throw notFound(`${entry.raw.name} (${bus_info}) has no control with id ${control_id}`)
      const coerced = checkControlValue(control, value)
      const held = await this.applyControl(entry, control_id, coerced)
      const saved = this.settingsOf(entry)
      if (control.flags.control_type !== 'BUTTON' && typeof held === 'number') saved.controls[String(control_id)] = held
      try {
        this.save([entry.identity, saved])
      } catch (e) {
        if (!(e instanceof HttpError && e.status === 507)) throw e
        this.updated(entry) // the camera does hold the new value
        throw new HttpError(507, `The camera holds the new value of control ${control_id}, but a restart or re-plug will lose it. ${e.detail}`)
      }
      this.updated(entry)
      return { success: true as const, value: held }
    })
  }

  /** Applies through the vendor or the backend; updates the cached device; answers what the hardware holds. */
  /** A control can change others' flags (auto exposure makes exposure inactive): re-read them. */
  private async refreshControls(entry: Present): Promise<void> {
    const { backend } = entry
    const controls = backend.controls
      ? await backend.controls(entry.raw.bus_info)
      : (await backend.list()).find((d) => d.bus_info === entry.raw.bus_info)?.controls
    if (controls) entry.raw = { ...entry.raw, controls }
  }

  private async applyControl(entry: Present, control_id: number, value: number, refresh = true): Promise<ControlValue> {
    const vendor = entry.vendorControls.find((v) => v.def.control_id === control_id)
    const what = `${entry.raw.name} (${entry.raw.bus_info}) control ${control_id}`
    try {
      if (vendor) {
        await vendor.def.set(entry.raw, entry.backend, value)
        vendor.value = wireValue(await vendor.def.get(entry.raw, entry.backend)) as number
        vendor.readError = null
        return vendor.value
      }
      if (refresh && entry.backend.setControlAndRead) {
        // The set and the re-read of the others' flags in one device round trip.
        const { value: held, controls } = await entry.backend.setControlAndRead(entry.raw.bus_info, control_id, value)
        entry.raw = { ...entry.raw, controls }
        return wireValue(held)
      }
      const held = wireValue(await entry.backend.setControl(entry.raw.bus_info, control_id, value))
      if (refresh) await this.refreshControls(entry)
      return held
    } catch (e) {
      if (e instanceof DeviceError) throw fromDeviceError(e, what, ['body', 'value'], value)
      throw e
    }
  }

  // ---- streams ----

  configureStream(req: Static<typeof ConfigureStreamRequest>) {
    return this.serial(async () => {
      const entry = this.get(req.bus_info)
      const saved = this.settingsOf(entry)
      if (saved.leader) throw conflict(`${req.bus_info} follows ${this.busInfoOf(saved.leader)} and streams with it: configure the leader instead`)
      if (req.enabled && saved.externally_managed) throw conflict(`${req.bus_info} is managed by an external tool (notify_camera DEVICE_MANAGED); send DEVICE_UNMANAGED first`)
      const { width, height, interval } = req.stream_format
      const device_path = checkStreamFormat(entry.raw, req.encode_type, width, height, interval)
      if (req.enabled && req.stream_type === 'UDP' && req.encode_type !== 'NONE' && req.endpoints.length === 0) {
        throw valueError(['body', 'endpoints'], 'a UDP stream needs at least one endpoint', req.endpoints)
      }
      saved.stream = { device_path, encode_type: req.encode_type, stream_type: req.stream_type, endpoints: req.endpoints, width, height, interval, enabled: req.enabled }
      this.save([entry.identity, saved])
      this.updated(entry)
      // Saved first: a missing streamer must not lose the configuration.
      if (!req.enabled) await this.stopStream(entry)
      else {
        try {
          await this.startGroup(entry)
        } catch (e) {
          if (e instanceof HttpError && e.status === 503) throw new HttpError(503, `The stream configuration is saved, but the stream cannot start: ${e.detail}`)
          throw e
        }
      }
      return { success: true }
    })
  }

  unconfigureStream(bus_info: string) {
    return this.serial(async () => {
      const entry = this.get(bus_info)
      const saved = this.settingsOf(entry)
      saved.stream = { ...saved.stream, enabled: false, endpoints: [] }
      this.save([entry.identity, saved])
      await this.stopStream(entry)
      this.updated(entry)
      return { success: true }
    })
  }

  restartStream(bus_info: string) {
    return this.serial(async () => {
      let entry = this.get(bus_info)
      const saved = this.settingsOf(entry)
      if (saved.externally_managed) throw conflict(`${bus_info} is managed by an external tool; its stream is not ours to restart`)
      // A follower's stream is its leader's group stream: restart that.
      if (saved.leader) {
        const leader = this.presentByIdentity(saved.leader)
        if (!leader) throw conflict(`${bus_info} follows ${this.busInfoOf(saved.leader)}, which is not connected`)
        entry = leader
      }
      const s = this.settingsOf(entry)
      s.stream.enabled = true
      this.save([entry.identity, s])
      await this.startGroup(entry)
      this.updated(entry)
      return { success: true }
    })
  }

  // ---- recording while streaming ----

  /**
   * Records the running stream (a follower: its group's, one file with a track per camera). Refused
   * with 507 below --min-free-to-record: on a full disk the recorder would start, answer `active: true`,
   * and stop at its first write, leaving a stub of a file.
   */
  async startRecording(bus_info: string): Promise<DeviceRecording> {
    const { streamer, entry } = this.recordable(bus_info)
    const current = streamer.recording(bus_info)
    if (current.active) throw conflict(`${bus_info} is already recording to ${current.file}; stop_recording first`)
    this.roomToRecord()
    let started: DeviceRecording | null
    try {
      started = await streamer.startRecording(bus_info)
    } catch (e) {
      if (DISK_FULL.test((e as Error).message)) throw this.noRoom()
      throw new HttpError(503, `The recording of ${bus_info} could not start: ${(e as Error).message}`)
    }
    if (!started) throw this.notStreaming(entry)
    return started
  }

  /** 507 when the recordings disk has less free than --min-free-to-record (unknown: let the recorder try). */
  private roomToRecord(): void {
    const free = belowFloor(this.ctx.config.recordingsDir, this.ctx.config.minFreeToRecordMiB)
    if (free !== null) throw this.noRoom(free)
  }

  private noRoom(free = freeBytes(this.ctx.config.recordingsDir) ?? 0): HttpError {
    this.ctx.registry.limitHit('recording_disk_full')
    return new HttpError(507, noRoomDetail(free, this.ctx.config.minFreeToRecordMiB, 'a recording'))
  }

  async stopRecording(bus_info: string): Promise<DeviceRecording> {
    const { streamer } = this.recordable(bus_info)
    const stopped = await streamer.stopRecording(bus_info)
    if (!stopped) throw conflict(`${bus_info} is not recording; start one with start_recording`)
    return stopped
  }

  private recordable(bus_info: string) {
    const entry = this.get(bus_info)
    const streamer = this.ctx.registry.get('streamer')
    if (!streamer) throw new HttpError(503, 'No streamer is available (GStreamer is not installed), so nothing streams or records')
    if (!streamer.live(bus_info)) throw this.notStreaming(entry)
    return { streamer, entry }
  }

  private notStreaming(entry: Present): HttpError {
    const saved = this.settingsOf(entry)
    const who = saved.leader ? `${entry.raw.bus_info} (its leader ${this.busInfoOf(saved.leader)})` : entry.raw.bus_info
    return conflict(`The stream of ${who} is not running, and a recording branches off the running stream: start it with restart_stream (or configure_stream with enabled true), then start_recording`)
  }

  // ---- record while armed ----

  /** POST /api/devices/set_record_while_armed: saved per camera; switched on while armed, it starts recording now. */
  setRecordWhileArmed(bus_info: string, enabled: boolean) {
    return this.serial(async () => {
      const entry = this.get(bus_info)
      const saved = this.settingsOf(entry)
      saved.record_while_armed = enabled
      this.save([entry.identity, saved])
      this.updated(entry)
      return entry
    }).then(async (entry) => {
      if (enabled && this.ctx.registry.telemetry.current()?.armed) await this.armedRecording(entry, true)
      return { success: true, record_while_armed: enabled }
    })
  }

  /** The autopilot armed or disarmed: each camera set to record while armed starts or stops (a group once, by its leader). */
  private async onArmed(armed: boolean): Promise<void> {
    const entries = [...this.present.values()].filter((e) => this.settingsOf(e).record_while_armed)
    for (const entry of entries) await this.armedRecording(entry, armed)
  }

  private async armedRecording(entry: Present, armed: boolean): Promise<void> {
    const { bus_info } = entry.raw
    const streamer = this.ctx.registry.get('streamer')
    const active = streamer?.recording(bus_info).active ?? false
    if (armed === active) return // already recording (the pilot, or its group's leader), or not recording
    const announce = (action: 'started' | 'stopped' | 'failed', detail: string, file: string | null) =>
      this.ctx.events.emit('record_while_armed', { bus_info, armed, action, detail, file })
    try {
      const recording = armed ? await this.startRecording(bus_info) : await this.stopRecording(bus_info)
      announce(armed ? 'started' : 'stopped', armed ? 'the vehicle armed: recording started' : 'the vehicle disarmed: recording stopped', recording.file)
    } catch (e) {
      const detail = `the vehicle ${armed ? 'armed' : 'disarmed'}, but the recording could not ${armed ? 'start' : 'stop'}: ${(e as Error).message}`
      this.ctx.log.warn('record while armed', { bus_info, detail })
      announce('failed', detail, null)
    }
  }

  setNickname(bus_info: string, nickname: string) {
    return this.serial(async () => {
      const entry = this.get(bus_info)
      const saved = this.settingsOf(entry)
      saved.nickname = nickname
      this.save([entry.identity, saved])
      this.updated(entry)
      return { success: true }
    })
  }

  /** (Re)starts the stream a device leads, with its present followers, in one job. */
  private async startGroup(leader: Present): Promise<void> {
    const saved = this.settingsOf(leader)
    const stream = saved.stream
    if (stream.encode_type === 'NONE') return this.stopStream(leader)
    const streamer = this.ctx.registry.require('streamer')
    const followers = saved.followers.map((f) => this.presentByIdentity(f)).filter((p): p is Present => !!p)
    const members = [leader, ...followers].map((p) => this.memberOf(p, p === leader ? stream.device_path : safeCheck(p.raw, stream), stream))
    const job: StreamJob = { bus_info: leader.raw.bus_info, stream, members, recordings_dir: this.ctx.config.recordingsDir }
    await streamer.start(job)
    this.invalidate()
  }

  /** A camera as a stream (or a still capture) reads it: node `path` in the stream's format. */
  private memberOf(p: Present, path: string, stream: Stream): StreamMember {
    const format = { device_path: path, encode_type: stream.encode_type, width: stream.width, height: stream.height, interval: stream.interval }
    return { bus_info: p.raw.bus_info, label: this.settingsOf(p).nickname || p.raw.name, source: p.backend.videoSource(path, format), pixel_format: sourcePixelFormat(p.raw, stream.encode_type) }
  }

  stillSource(bus_info: string): { member: StreamMember; stream: Stream } | undefined {
    const entry = this.present.get(bus_info)
    if (!entry) return undefined
    const saved = this.settingsOf(entry)
    const leader = (saved.leader && this.presentByIdentity(saved.leader)) || entry
    const stream = this.settingsOf(leader).stream
    if (stream.encode_type === 'NONE') return undefined
    return { member: this.memberOf(entry, leader === entry ? stream.device_path : safeCheck(entry.raw, stream), stream), stream }
  }

  private async stopStream(entry: Present): Promise<void> {
    const streamer = this.ctx.registry.get('streamer')
    if (streamer) await streamer.stop(entry.raw.bus_info)
    this.invalidate()
  }

  /** After a plug: an enabled stream comes back; a follower brings its leader's group back. */
  private async resumeStream(entry: Present): Promise<void> {
    const saved = this.settingsOf(entry)
    if (saved.externally_managed) return
    const leader = saved.leader ? this.presentByIdentity(saved.leader) : entry
    if (!leader || !this.settingsOf(leader).stream.enabled) return
    if (!this.ctx.registry.get('streamer')) return // nothing to resume with; GET shows the stream as stopped
    try {
      await this.startGroup(leader)
    } catch (e) {
      this.ctx.log.warn('could not resume a stream', { bus_info: leader.raw.bus_info, err: e })
      this.ctx.events.emit('stream_error', { bus_info: leader.raw.bus_info, state: 'error', error: (e as Error).message })
    }
  }

  // ---- groups ----

  addFollower(leader_bus_info: string, follower_bus_info: string, external: boolean) {
    return this.serial(async () => {
      const leader = this.get(leader_bus_info)
      const follower = this.get(follower_bus_info)
      if (leader === follower) throw conflict(`${leader_bus_info} cannot follow itself`)
      if (leader.role !== 'leader') throw conflict(`${leader.raw.name} (${leader_bus_info}) cannot lead a group: it is not a leader-capable camera`)
      if (follower.role !== 'follower') throw conflict(`${follower.raw.name} (${follower_bus_info}) cannot follow: it is not a follower-capable camera`)
      const fs = this.settingsOf(follower)
      const ls = this.settingsOf(leader)
      if (!external && fs.externally_managed) throw conflict(`${follower_bus_info} is managed by an external tool; use external/add_follower`)
      if (fs.leader === leader.identity) throw conflict(`${follower_bus_info} already follows ${leader_bus_info}`)
      if (fs.leader) throw conflict(`${follower_bus_info} already follows ${this.busInfoOf(fs.leader)}; remove it there first`)
      if (ls.leader) throw conflict(`${leader_bus_info} is itself a follower of ${this.busInfoOf(ls.leader)}`)
      await this.stopStream(follower)
      fs.leader = leader.identity
      fs.stream = { ...fs.stream, enabled: false, endpoints: [] }
      ls.followers = [...ls.followers, follower.identity]
      this.save([follower.identity, fs], [leader.identity, ls])
      if (ls.stream.enabled && !ls.externally_managed) await this.startGroup(leader)
      this.updated(follower)
      this.updated(leader)
      return { success: true }
    })
  }

  removeFollower(leader_bus_info: string, follower_bus_info: string) {
    return this.serial(async () => {
      const leader = this.get(leader_bus_info)
      const follower = this.get(follower_bus_info)
      if (!this.settingsOf(leader).followers.includes(follower.identity)) throw conflict(`${follower_bus_info} is not a follower of ${leader_bus_info}`)
      await this.detach(leader, follower)
      this.updated(follower)
      this.updated(leader)
      return { success: true }
    })
  }

  private async detach(leader: Present, follower: Present): Promise<void> {
    const ls = this.settingsOf(leader)
    const fs = this.settingsOf(follower)
    ls.followers = ls.followers.filter((f) => f !== follower.identity)
    fs.leader = null
    this.save([leader.identity, ls], [follower.identity, fs])
    if (ls.stream.enabled && !ls.externally_managed && this.ctx.registry.get('streamer')) await this.startGroup(leader)
  }

  // ---- external management ----

  notifyCamera(bus_info: string, event: NonNullable<Static<typeof NotifyCameraRequest>['event']>) {
    return this.serial(async () => {
      const entry = this.get(bus_info)
      const saved = this.settingsOf(entry)
      if (event === 'DEVICE_MANAGED') {
        saved.externally_managed = true
        this.save([entry.identity, saved])
        await this.stopStream(entry)
        // Out of any group: an external tool owns the camera now.
        const leader = saved.leader ? this.presentByIdentity(saved.leader) : undefined
        if (leader) await this.detach(leader, entry)
        for (const f of saved.followers.map((id) => this.presentByIdentity(id)).filter((p): p is Present => !!p)) await this.detach(entry, f)
      } else if (event === 'DEVICE_UNMANAGED') {
        saved.externally_managed = false
        this.save([entry.identity, saved])
        await this.resumeStream(entry)
      } else {
        if (!entry.backend.activeFormat) throw new HttpError(503, `The ${entry.backend.name} backend cannot read a camera's active format`)
        const active = await entry.backend.activeFormat(bus_info).catch((e) => {
          throw e instanceof DeviceError ? fromDeviceError(e, `${bus_info} active format`) : e
        })
        if (!active) throw conflict(`${bus_info} reports no active format`)
        saved.stream = { ...saved.stream, ...active }
        this.save([entry.identity, saved])
      }
      this.updated(entry)
      return { success: true }
    })
  }
}

/** The follower's node for the leader's format (a follower model offers the leader's formats). */
function safeCheck(raw: RawDevice, stream: Stream): string {
  try {
    return checkStreamFormat(raw, stream.encode_type, stream.width, stream.height, stream.interval)
  } catch {
    throw conflict(`follower ${raw.bus_info} cannot stream ${stream.encode_type} ${stream.width}x${stream.height}: the group cannot start`)
  }
}

/**
 * The one place a control value takes its wire type (spec: `ControlModel.value: float`): a boolean,
 * whoever produced it (a plain-JS backend or vendor plugin is not held to ControlValue by the compiler),
 * leaves as 0/1, so simulated and real cameras answer alike.
 */
export function wireValue(value: ControlValue | boolean): ControlValue {
  return typeof value === 'boolean' ? Number(value) : value
}

/** Checks a value against a control's flags before the hardware sees it; answers the value to send. */
export function checkControlValue(control: Control, value: number): number {
  const f = control.flags
  const loc = ['body', 'value']
  const name = `'${control.name}' (${control.control_id})`
  if (f.read_only) throw conflict(`Control ${name} is read-only`)
  if (f.disabled) throw conflict(`Control ${name} is disabled`)
  if (f.inactive) throw conflict(`Control ${name} is inactive now (another control, such as an automatic mode, drives it)`)
  switch (f.control_type) {
    case 'BOOLEAN':
      if (value !== 0 && value !== 1) throw valueError(loc, `control ${name} is a boolean: send 0 or 1`, value)
      return value
    case 'BUTTON':
      return 1
    case 'MENU':
    case 'INTEGER_MENU': {
      const indexes = (f.menu ?? []).map((m) => m.index)
      if (!indexes.includes(value)) throw valueError(loc, `control ${name} accepts the menu indexes ${indexes.join(', ')}`, value)
      return value
    }
    case 'INTEGER':
    case 'INTEGER64':
    case 'BITMASK': {
      if (!Number.isInteger(value)) throw valueError(loc, `control ${name} takes an integer`, value)
      if (value < f.min_value || value > f.max_value) throw valueError(loc, `control ${name} takes a value from ${f.min_value} to ${f.max_value}`, value)
      if (f.control_type !== 'BITMASK' && f.step > 1 && (value - f.min_value) % f.step !== 0) {
        throw valueError(loc, `control ${name} moves in steps of ${f.step} from ${f.min_value}`, value)
      }
      return value
    }
    default:
      throw valueError(loc, `control ${name} is of type ${f.control_type} and cannot be set with a number`, value)
  }
}
