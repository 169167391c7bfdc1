// createApp(config, plugins): one isolated Periscope instance (its own store, bus and registry), so a
// test can run many side by side on port 0. A Periscope app is the list of Elysia plugins composed below:
// the HTTP concerns of core/http/, then every plugin's routes.
import { Elysia, type AnyElysia } from 'elysia'
import type { Config } from './config'
import { EventBus } from './events'
import { serveHttp, type Front } from './front'
import { clientActivity } from './http/activity'
import { bearerToken } from './http/token'
import { bodyLimit } from './http/body-limit'
import { cors } from './http/cors'
import { hostCheck } from './http/hosts'
import { Refusals } from './http/refusals'
import { apiDocs } from './http/docs'
import { errorModel } from './http/error-model'
import { eventStream } from './http/events'
import { health } from './http/health'
import { logs } from './http/logs'
import { requestLog, RequestWatchers } from './http/request-log'
import { PluginSet } from './lifecycle'
import { atLeast, createLogger, LogRing, type Logger } from './log'
import { Registry, type AppContext, type PeriscopePlugin } from './plugin'
import { LOG_RING_CAPACITY } from './schemas'
import { SettingsStore } from './store'

export interface PeriscopeApp {
  app: Elysia
  ctx: AppContext
  plugins: PeriscopePlugin[]
  /** Starts the plugins (hardware) and listens; resolves with the bound address. */
  listen(): Promise<{ url: string; port: number }>
  /** The HTTP front once listening (which part served what: `handled`). */
  front(): Front | null
  stop(): Promise<void>
}

export async function createApp(config: Config, plugins: PeriscopePlugin[], log: Logger = createLogger(config.logLevel)): Promise<PeriscopeApp> {
  const events = new EventBus((event, err, unreported) =>
    log.error('an event listener failed', { event: event.type, err, ...(unreported ? { failures_unreported_before: unreported } : {}) }),
  )
  const recentLogs = new LogRing(LOG_RING_CAPACITY)
  const unsubscribeLog = keepLogs(log, recentLogs, events)
  const store = SettingsStore.open(config.dataDir)
  if (store.notice) log.error('settings database set aside', { detail: store.notice })
  if (store.problem) log.warn('settings cannot be saved', { detail: store.problem })
  const ctx: AppContext = { config, registry: new Registry(), events, store, log, activity: { lastRequestAt: 0 }, requests: new RequestWatchers(), refusals: new Refusals(config.clientLimits), handle: (request) => app.handle(request) }
  const mounted = await PluginSet.mount(plugins, ctx)

  // Request hooks run in this order: timing first, then the Host, the page's origin (preflights answered
  // there, before the token is asked for), the token.
  const requests = requestLog(log, ctx.requests)
  const app: AnyElysia = new Elysia()
    .use(requests.plugin)
    .use(clientActivity(ctx.activity, mounted.backgroundPaths, mounted.backgroundAgents))
    .use(bodyLimit(config.bodyLimit))
    .use(hostCheck(config.allowedHosts, ctx.refusals, requests.early))
    .use(cors(config.corsOrigins, ctx.refusals, requests.early))
    .use(bearerToken(config.token, config.tokenScope, ctx.refusals, requests.early))
    .use(errorModel({ log, routes: () => app.routes }))
    .use(apiDocs(config.corsOrigins))
    .use(health({ store, registry: ctx.registry, plugins: () => mounted.health() }))
    .use(eventStream(ctx.events, ctx.registry, config.eventsQueueBytes, mounted.backgroundAgents))
    .use(logs(recentLogs))
  for (const routes of mounted.routes) app.use(routes)

  let server: Front | null = null
  let stopping: Promise<void> | null = null

  return {
    app: app as unknown as Elysia,
    ctx,
    plugins,
    front: () => server,
    async listen() {
      await mounted.start()
      // The front reads at most twice the app's body limit, so the app's own 413 answers first.
      server = await serveHttp(app.handle, {
        hostname: config.host,
        port: config.port,
        routes: [...new Set(app.routes.map((route) => route.path))],
        exactLength: mounted.exactLength,
        bodyCap: Math.max(config.bodyLimit * 2, 16 << 20),
        bodySeconds: config.bodyTimeoutSeconds,
        idleTimeout: 60,
        onFault: (err) => log.error('HTTP front failed', { err }),
        sockets: ctx.registry.socketEndpoints(),
      })
      if (!server.nativeRoutes) log.warn('all HTTP goes through node:http (slower): this Bun does not take routes beside it', { bun: Bun.version })
      const port = server.port
      const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
      return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, port }
    },
    stop() {
      stopping ??= (async () => {
        await mounted.stop()
        server?.stop(true)
        store.close()
        unsubscribeLog()
      })()
      return stopping
    },
  }
}

/**
 * Every entry the app's logger writes goes into its ring (GET /api/logs); those at warn and above are
 * also `log` events. Returns the unsubscribe (a logger may outlive the app).
 */
function keepLogs(log: Logger, ring: LogRing, events: EventBus): () => void {
  let relaying = false
  return log.subscribe((record) => {
    const seq = ring.add(record)
    // A listener of the event that logs a warning itself must not loop.
    if (!atLeast(record.level, 'warn') || relaying) return
    relaying = true
    try {
      events.emit('log', LogRing.entry(seq, record))
    } finally {
      relaying = false
    }
  })
}
