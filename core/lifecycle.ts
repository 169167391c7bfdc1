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
  const routes: unknown = await plugin.setup({
    ...app,
    log: app.log.child({ plugin: plugin.name }),
    lifecycle(declared) {
      if (hooks) throw new Error(`plugin '${plugin.name}' declared its lifecycle twice`)
      hooks = declared
    },
  })
  const name = `periscope:${plugin.name}`
  if (!(routes instanceof Elysia) || routes.config.name !== name)
    throw new Error(`plugin '${plugin.name}': setup() must return its routes as new Elysia({ name: '${name}' }) (empty when it has none)`)
  return {
    name: plugin.name,
    routes,
    start: async () => void (await hooks?.start?.()),
    stop: async () => void (await hooks?.stop?.()),
    health: () => hooks?.health?.() ?? { state: 'ok' },
  }
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
