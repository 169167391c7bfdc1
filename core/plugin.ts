// A Periscope plugin is an Elysia plugin with a lifecycle: setup() registers its backends with the
// registry and returns its routes (an Elysia instance, composed with .use()); start()/stop() bracket
// the hardware. The core knows plugins only through this shape.
import type { AnyElysia } from 'elysia'
import type { Config } from './config'
import type { EventBus } from './events'
import type { Logger } from './log'
import type { SettingsStore } from './store'
import { unavailable } from './errors'
import type { CameraBackend, NetworkBackend, Streamer, VendorDefinition } from './types'

export interface PluginContext {
  config: Config
  registry: Registry
  events: EventBus
  store: SettingsStore
  log: Logger
  /** When any API client was last heard from (ms since epoch); the network rollback watches it. */
  activity: { lastRequestAt: number }
}

export interface PluginHealth { state: 'ok' | 'degraded' | 'down'; detail?: string; [k: string]: unknown }

/** What setup() may hand back: routes plus a lifecycle bound to this one app instance. */
export interface PluginInstance {
  routes?: AnyElysia
  start?(): void | Promise<void>
  stop?(): void | Promise<void>
  health?(): PluginHealth
}

export interface PeriscopePlugin {
  name: string
  /**
   * Registers backends and returns the routes (an Elysia instance) or a PluginInstance. A plugin whose
   * state lives in setup()'s closure and comes back as a PluginInstance can serve several apps in one
   * process (the tests do that); start/stop/health on the plugin object itself suit single-instance plugins.
   */
  setup(ctx: PluginContext): AnyElysia | PluginInstance | void | Promise<AnyElysia | PluginInstance | void>
  start?(): void | Promise<void>
  stop?(): void | Promise<void>
  health?(): PluginHealth
  /**
   * Paths whose streamed answers carry an exact Content-Length (a zip download). Bun.serve would send
   * them chunked, so the front serves them through node:http (core/front.ts).
   */
  exactLength?: string[]
}

export const definePlugin = (plugin: PeriscopePlugin): PeriscopePlugin => plugin

/** The single-instance backends, by kind. Camera backends and vendor definitions may be many. */
export interface Backends {
  streamer: Streamer
  network: NetworkBackend
}

const ABSENT: Record<keyof Backends, string> = {
  streamer: 'No streamer is available: the GStreamer plugin is not loaded or GStreamer is not installed',
  network: 'No network backend is available: NetworkManager is not running or the network plugin is not loaded',
}

export class Registry {
  private single = new Map<keyof Backends, { plugin: string; backend: unknown }>()
  private cameras: { plugin: string; backend: CameraBackend }[] = []
  private vendorDefs: VendorDefinition[] = []

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

  addVendor(definition: VendorDefinition): void {
    this.vendorDefs.push(definition)
  }

  vendors(): readonly VendorDefinition[] {
    return this.vendorDefs
  }

  describe(): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [kind, { plugin }] of this.single) out[kind] = plugin
    this.cameras.forEach((c, i) => (out[`camera[${i}]`] = `${c.plugin}:${c.backend.name}`))
    return out
  }
}
