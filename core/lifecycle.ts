// Runs the plugin shape (core/plugin.ts) for one app instance: each plugin's setup() with its own
// context, its routes, and the lifecycle it declared; then start, stop and health for all of them.
import { Elysia, type AnyElysia } from 'elysia'
import type { AppContext, Lifecycle, PeriscopePlugin, PluginHealth } from './plugin'

/** One plugin set up for one app instance. */
export interface MountedPlugin {
  name: string
  routes: AnyElysia
  /** Rejects when the plugin's start() fails. */
  start(): Promise<void>
  stop(): Promise<void>
  health(): PluginHealth
}

/** Runs a plugin's setup() for an app and checks what it hands back. */
export async function mountPlugin(plugin: PeriscopePlugin, app: AppContext): Promise<MountedPlugin> {
  let hooks: Lifecycle | undefined
  app.registry.mounting = plugin.name
  const routes: unknown = await plugin.setup({
    ...app,
    log: app.log.child({ plugin: plugin.name }),
    lifecycle(declared) {
      if (hooks) throw new Error(`plugin '${plugin.name}' declared its lifecycle twice`)
      hooks = declared
    },
    flags: pluginFlagValues(plugin, app.config.pluginFlags),
  })
  const name = `periscope:${plugin.name}`
  if (!isElysia(routes) || routes.config.name !== name)
    throw new Error(`plugin '${plugin.name}': setup() must return its routes as new Elysia({ name: '${name}' }) (empty when it has none)`)
  // Elysia composes only its own instances: routes of another copy would be dropped without a word.
  if (!(routes instanceof Elysia))
    throw new Error(`plugin '${plugin.name}': its routes are made with another copy of Elysia (bundled into the plugin?); import Elysia from 'periscope/plugin' and leave it out of the bundle`)
  return {
    name: plugin.name,
    routes,
    start: async () => void (await hooks?.start?.()),
    stop: async () => void (await hooks?.stop?.()),
    health: () => hooks?.health?.() ?? { state: 'ok' },
  }
}

/**
 * Elysia by its shape first, so that routes made with another copy of the class (a plugin that bundled
 * its own) are told apart from no routes at all, and each gets its own sentence.
 */
function isElysia(value: unknown): value is AnyElysia {
  const v = value as AnyElysia | null
  return typeof v === 'object' && v !== null && typeof v.config === 'object' && Array.isArray(v.routes) && typeof v.handle === 'function' && typeof v.use === 'function'
}

/** A plugin's flags as the config parsed them (core/config.ts), else their defaults (an app made in a test). */
function pluginFlagValues(plugin: PeriscopePlugin, parsed: Record<string, unknown> = {}): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(plugin.flags ?? {}).map(([flag, def]) => {
      if (flag in parsed) return [flag, parsed[flag]]
      return [flag, typeof def.default === 'string' && def.parse ? def.parse(def.default) : def.default]
    }),
  )
}

/** The app's plugins, set up in the order given. */
export class PluginSet {
  private failed = new Map<string, string>() // plugin → why its start() failed

  private constructor(
    private readonly mounted: MountedPlugin[],
    private readonly app: AppContext,
    /** Paths whose answers keep an exact Content-Length (core/front.ts). */
    readonly exactLength: string[],
    /** Paths machines poll, which do not show that a client is there (core/http/activity.ts). */
    readonly backgroundPaths: string[],
    /** User agents of machines that crawl the API (core/http/activity.ts). */
    readonly backgroundAgents: string[],
  ) {}

  static async mount(plugins: PeriscopePlugin[], app: AppContext): Promise<PluginSet> {
    const mounted: MountedPlugin[] = []
    for (const plugin of plugins) mounted.push(await mountPlugin(plugin, app))
    return new PluginSet(
      mounted,
      app,
      plugins.flatMap((plugin) => plugin.exactLength ?? []),
      plugins.flatMap((plugin) => plugin.backgroundPaths ?? []),
      plugins.flatMap((plugin) => plugin.backgroundAgents ?? []),
    )
  }

  get routes(): AnyElysia[] {
    return this.mounted.map((plugin) => plugin.routes)
  }

  /** Plugins that provide backends first (a camera backend watches for hot-plug before the cameras plugin lists it). */
  private startOrder(): MountedPlugin[] {
    const providers = this.mounted.filter((plugin) => this.app.registry.provides(plugin.name))
    return [...providers, ...this.mounted.filter((plugin) => !providers.includes(plugin))]
  }

  async start(): Promise<void> {
    for (const plugin of this.startOrder()) {
      try {
        await plugin.start()
      } catch (e) {
        // A plugin whose hardware is missing must not take the service down with it.
        this.failed.set(plugin.name, (e as Error).message)
        this.app.log.error('plugin failed to start', { plugin: plugin.name, err: e })
      }
    }
  }

  /** In the reverse order of start: users of a backend stop before the plugin that provides it. */
  async stop(): Promise<void> {
    for (const plugin of this.startOrder().reverse()) {
      try {
        await plugin.stop()
      } catch (e) {
        this.app.log.error('plugin failed to stop', { plugin: plugin.name, err: e })
      }
    }
  }

  /** Each plugin's health by name, in the order given; a plugin whose start() failed is down. */
  health(): Record<string, PluginHealth> {
    return Object.fromEntries(this.mounted.map((plugin) => [plugin.name, this.healthOf(plugin)]))
  }

  private healthOf(plugin: MountedPlugin): PluginHealth {
    const failure = this.failed.get(plugin.name)
    if (failure !== undefined) return { state: 'down', detail: failure }
    try {
      return plugin.health()
    } catch (e) {
      return { state: 'down', detail: (e as Error).message }
    }
  }
}
