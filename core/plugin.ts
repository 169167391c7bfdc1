// A Periscope plugin is one module whose default export is definePlugin({ name, setup }). setup(ctx) is
// its Init, run once per app instance: it registers its backends with ctx.registry, declares the
// lifecycle of what it made with ctx.lifecycle({ start, stop, health }), and returns its routes as a
// named Elysia instance, `new Elysia({ name: 'periscope:<name>' })` (with no routes, an empty one). All
// of a plugin's state lives in setup()'s closure, so several apps in one process (the tests) share
// nothing. The core knows plugins only through this shape (core/lifecycle.ts runs it).
import type { AnyElysia } from 'elysia'
import type { Config } from './config'
import type { EventBus } from './events'
import type { RequestWatchers } from './http/request-log'
import type { Refusals } from './http/refusals'
import type { Logger } from './log'
import type { SettingsStore } from './store'
import { unavailable } from './errors'
import type { SocketEndpoint } from './front'
import { TelemetrySource } from './telemetry'
import { WEBRTC_VIEWER_KINDS, type AudioBackend, type AudioService, type CameraBackend, type DeviceDirectory, type NetworkBackend, type Streamer, type VendorDefinition, type ViewerKind, type WatchKind, type WatchLink } from './types'
import { checkVendor, clashWith, type RegisteredVendor } from './vendors'
import { xuControls } from './xu'

/** What one app instance shares with its plugins. */
export interface AppContext {
  config: Config
  registry: Registry
  events: EventBus
  store: SettingsStore
  log: Logger
  /** When any API client was last heard from (ms since epoch); the network rollback watches it. */
  activity: { lastRequestAt: number }
  /** Each answered request, timed, by route template (core/http/request-log.ts): the metrics plugin watches. */
  requests: RequestWatchers
  /** What the front refused (wrong tokens, origins, Host names) and the per-client limits: /metrics reads them. */
  refusals: Refusals
  /**
   * Answers a request as the HTTP port would (every rule: Host, origin, token, the request log), for a
   * plugin's own port that serves one of the app's routes elsewhere (Cockpit's /streams on 6020).
   */
  handle(request: Request): Promise<Response>
}

export interface PluginHealth { state: 'ok' | 'degraded' | 'down'; detail?: string; [k: string]: unknown }

/**
 * What a plugin made in setup() and must bracket: start() once the app listens (the hardware), stop()
 * when it stops, health() for GET /api/health (without it: ok). A plugin starts and stops exactly the
 * backends it created; plugins that provide backends start before the others and stop after them.
 */
export interface Lifecycle {
  start?(): void | Promise<void>
  stop?(): void | Promise<void>
  health?(): PluginHealth
}

export interface PluginContext extends AppContext {
  /** Declares this plugin's lifecycle for this app instance; at most once. */
  lifecycle(hooks: Lifecycle): void
  /** The values of the flags this plugin declares (`flags`), parsed, by flag name. */
  flags: Record<string, unknown>
}

/**
 * A command-line flag a plugin declares: `--<name> value` or PERISCOPE_<NAME>, listed by --help. Its
 * name must not be the core's or another loaded plugin's (refused at start).
 */
export interface PluginFlag {
  help: string
  /** The value when the flag is not given (a string is parsed like a given one). */
  default?: unknown
  /** Turns the raw string into the value; throws an Error whose message says what is expected. Default: the string. */
  parse?(raw: string): unknown
}

export interface PeriscopePlugin {
  name: string
  /** Registers backends and the lifecycle, and returns the routes: `new Elysia({ name: 'periscope:<name>' })`. */
  setup(ctx: PluginContext): AnyElysia | Promise<AnyElysia>
  /**
   * Paths whose streamed answers carry an exact Content-Length (a zip download). Bun.serve would send
   * them chunked, so the front serves them through node:http (core/front.ts).
   */
  exactLength?: string[]
  /**
   * Paths that machines poll (a metrics scraper, perhaps on the vehicle itself): a request to them does
   * not show that an API client is still there, which the network rollback watches for.
   */
  backgroundPaths?: string[]
  /** Flags of this plugin, by name without the dashes ('acme-ring-max'); setup() reads them in ctx.flags. */
  flags?: Record<string, PluginFlag>
  /**
   * User-Agent values of machines that crawl the API (BlueOS's service scanner GETs every documented
   * path): their requests do not show that a client is still there either, and GET /api/events gives
   * them its short finished answer, never the stream.
   */
  backgroundAgents?: string[]
}

export const definePlugin = (plugin: PeriscopePlugin): PeriscopePlugin => plugin

/** The single-instance backends, by kind. Camera backends and vendor definitions may be many. */
export interface Backends {
  streamer: Streamer
  network: NetworkBackend
  /** The sound of the streams (plugins/audio). */
  audio: AudioService
}

const ABSENT: Record<keyof Backends, string> = {
  streamer: 'No streamer is available: the GStreamer plugin is not loaded or GStreamer is not installed',
  network: 'No network backend is available: NetworkManager is not running or the network plugin is not loaded',
  audio: 'No sound is available: the audio plugin is not loaded',
}

export class Registry {
  private single = new Map<keyof Backends, { plugin: string; backend: unknown }>()
  private cameras: { plugin: string; backend: CameraBackend }[] = []
  private audio: { plugin: string; backend: AudioBackend }[] = []
  private vendorDefs: (RegisteredVendor & { withControls: VendorDefinition })[] = []
  /** The plugin whose setup() runs now (core/lifecycle.ts), so a refusal can name who registered what. */
  mounting = 'unknown'
  private directory: DeviceDirectory | null = null
  private links = new Map<WatchKind, { plugin: string; link: WatchLink }>()
  private viewerCounts = new Map<ViewerKind, { plugin: string; count: (bus_info: string) => number }>()
  private sockets: { plugin: string; endpoint: SocketEndpoint }[] = []
  private refusalCounts = new Map<string, () => Record<string, number>>()
  private limits = new Map<string, number>()
  /** The vehicle's telemetry (plugins/mavlink writes it while an autopilot is on the link; the recorder reads it). */
  readonly telemetry = new TelemetrySource()

  provide<K extends keyof Backends>(kind: K, backend: Backends[K], plugin: string): void {
    const taken = this.single.get(kind)
    if (taken) throw new Error(`backend '${kind}' is already provided by plugin '${taken.plugin}'`)
    this.single.set(kind, { plugin, backend })
  }

  get<K extends keyof Backends>(kind: K): Backends[K] | undefined {
    return this.single.get(kind)?.backend as Backends[K] | undefined
  }

  /** The backend, or a 503 naming what is missing. */
  require<K extends keyof Backends>(kind: K): Backends[K] {
    const backend = this.get(kind)
    if (!backend) throw unavailable(ABSENT[kind])
    return backend
  }

  addCameraBackend(backend: CameraBackend, plugin: string): void {
    this.cameras.push({ plugin, backend })
  }

  cameraBackends(): CameraBackend[] {
    return this.cameras.map((c) => c.backend)
  }

  /** Sound sources (ALSA, simulated): many, like camera backends. */
  addAudioBackend(backend: AudioBackend, plugin: string): void {
    this.audio.push({ plugin, backend })
  }

  audioBackends(): AudioBackend[] {
    return this.audio.map((a) => a.backend)
  }

  /**
   * A vendor's declared extension units become controls here, through the one interpreter (core/xu.ts).
   * A malformed definition, or one whose USB ids or control ids another vendor declared, is refused.
   */
  addVendor(definition: VendorDefinition, plugin = this.mounting): void {
    const problems = checkVendor(definition)
    if (problems.length) throw new Error(`vendor '${definition?.vendor}' (plugin ${plugin}) is malformed: ${problems.join('; ')}`)
    const clash = clashWith(definition, plugin, this.vendorDefs)
    if (clash) throw new Error(clash)
    const declared = (definition.extensionUnits ?? []).flatMap(xuControls)
    this.vendorDefs.push({ plugin, definition, withControls: { ...definition, controls: [...(definition.controls ?? []), ...declared] } })
  }

  /** The registered vendors, their extension units' controls among `controls` (what the cameras plugin lists). */
  vendors(): readonly VendorDefinition[] {
    return this.vendorDefs.map((v) => v.withControls)
  }

  /** The definitions as their plugins registered them, with the plugin's name. */
  registeredVendors(): readonly RegisteredVendor[] {
    return this.vendorDefs.map(({ plugin, definition }) => ({ plugin, definition }))
  }

  /** Whether a plugin provided a backend (it then starts before the plugins that use it). */
  /**
   * The cameras plugin's devices, for plugins that serve something per device (viewers). Not a backend:
   * it is built on the camera backends, so its plugin starts after theirs.
   */
  setDeviceDirectory(directory: DeviceDirectory): void {
    if (this.directory) throw new Error('a device directory is already set (two cameras plugins?)')
    this.directory = directory
  }

  /** The device directory, or a 503 when no cameras plugin is loaded. */
  deviceDirectory(): DeviceDirectory {
    if (!this.directory) throw unavailable('No device list is available: the cameras plugin is not loaded')
    return this.directory
  }

  /** A viewer plugin says how to reach a camera its way (the device's `watch.<kind>`). */
  addWatchLink(kind: WatchKind, link: WatchLink, plugin: string): void {
    const taken = this.links.get(kind)
    if (taken) throw new Error(`watch link '${kind}' is already provided by plugin '${taken.plugin}'`)
    this.links.set(kind, { plugin, link })
  }

  /** Every way to watch the camera, on this origin: null where no plugin serves it or it is not available now. */
  watch(bus_info: string, origin: URL): Record<WatchKind, string | null> {
    const link = (kind: WatchKind) => this.links.get(kind)?.link(bus_info, origin) ?? null
    return { rtsp: link('rtsp'), whep: link('whep'), cockpit: link('cockpit'), mjpeg: link('mjpeg'), snapshot: link('snapshot') }
  }

  /** A viewer plugin says how many watch a camera its way now (metrics read it; the plugin keeps the count). */
  addViewerCount(kind: ViewerKind, count: (bus_info: string) => number, plugin: string): void {
    const taken = this.viewerCounts.get(kind)
    if (taken) throw new Error(`viewer count '${kind}' is already provided by plugin '${taken.plugin}'`)
    this.viewerCounts.set(kind, { plugin, count })
  }

  /** WebRTC viewers of the camera now, over WHEP and Cockpit's signalling together (they share --max-viewers). */
  webrtcViewers(bus_info: string): number {
    return WEBRTC_VIEWER_KINDS.reduce((sum, kind) => sum + (this.viewerCounts.get(kind)?.count(bus_info) ?? 0), 0)
  }

  /**
   * A WebSocket endpoint a plugin serves on the HTTP port, beside the routes (core/front.ts upgrades
   * the request): Cockpit's signalling.
   */
  addSocketEndpoint(endpoint: SocketEndpoint, plugin: string): void {
    const taken = this.sockets.find((s) => s.endpoint.path === endpoint.path)
    if (taken) throw new Error(`the WebSocket path '${endpoint.path}' is already served by plugin '${taken.plugin}'`)
    this.sockets.push({ plugin, endpoint })
  }

  socketEndpoints(): SocketEndpoint[] {
    return this.sockets.map((s) => s.endpoint)
  }

  /** Viewers of the camera now, for each way of watching that a loaded plugin serves (absent: none serves it). */
  viewers(bus_info: string): Partial<Record<ViewerKind, number>> {
    return Object.fromEntries([...this.viewerCounts].map(([kind, { count }]) => [kind, count(bus_info)]))
  }

  /**
   * A limit a plugin enforces: `counts()` says how often it refused since the start, by reason
   * (/metrics: periscope_refusals_total{what, reason}). `what` names the thing refused ('whep_offer').
   */
  addRefusals(what: string, counts: () => Record<string, number>): void {
    if (this.refusalCounts.has(what)) throw new Error(`refusals of '${what}' are already counted`)
    this.refusalCounts.set(what, counts)
  }

  refusals(): { what: string; reason: string; count: number }[] {
    return [...this.refusalCounts].flatMap(([what, counts]) => Object.entries(counts()).map(([reason, count]) => ({ what, reason, count })))
  }

  /**
   * A limit was hit (an event-stream client dropped for being too far behind, a snapshot refused at the
   * children's cap, a MAVLink frame refused, …): counted by name for /metrics (periscope_limit_hits_total).
   * Names are fixed strings of the code, never request input; docs/limits.md lists them.
   */
  limitHit(limit: string): void {
    this.limits.set(limit, (this.limits.get(limit) ?? 0) + 1)
  }

  limitHits(): ReadonlyMap<string, number> {
    return this.limits
  }

  provides(plugin: string): boolean {
    return [...this.single.values(), ...this.cameras, ...this.audio].some((entry) => entry.plugin === plugin)
  }

  describe(): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [kind, { plugin }] of this.single) out[kind] = plugin
    this.cameras.forEach((c, i) => (out[`camera[${i}]`] = `${c.plugin}:${c.backend.name}`))
    return out
  }
}
