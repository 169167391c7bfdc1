// createApp(config, plugins): one isolated Periscope instance (its own store, bus and registry), so a
// test can run many side by side on port 0. The app itself is an Elysia plugin tree: core routes, then
// every plugin's routes composed with .use().
import { openapi } from '@elysiajs/openapi'
import { Elysia, t } from 'elysia'
import { dirname, join } from 'node:path'
import type { Config } from './config'
import { fromDeviceError, HttpError, RequestValidationError, valueError } from './errors'
import { EventBus } from './events'
import { hangUpSignal, requestPath, routeMatcher, serveHttp, type Front } from './front'
import { createLogger, type Logger } from './log'
import { componentSchemas, docs } from './openapi'
import { Registry, type PeriscopePlugin, type PluginContext, type PluginHealth, type PluginInstance } from './plugin'
import { SettingsStore } from './store'
import { DeviceError } from './types'
import { bodyLimitOf } from './validation'
import { VERSION } from './version'

export interface PeriscopeApp {
  app: Elysia
  ctx: PluginContext
  plugins: PeriscopePlugin[]
  /** Starts the plugins (hardware) and listens; resolves with the bound address. */
  listen(): Promise<{ url: string; port: number }>
  /** The HTTP front once listening (which part served what: `handled`). */
  front(): Front | null
  stop(): Promise<void>
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']
const SWAGGER_DIR = dirname(require.resolve('swagger-ui-dist/package.json'))

export async function createApp(config: Config, plugins: PeriscopePlugin[], log: Logger = createLogger(config.logLevel)): Promise<PeriscopeApp> {
  const store = SettingsStore.open(config.dataDir)
  if (store.notice) log.error('settings database set aside', { detail: store.notice })
  if (store.problem) log.warn('settings cannot be saved', { detail: store.problem })
  const ctx: PluginContext = { config, registry: new Registry(), events: new EventBus(), store, log, activity: { lastRequestAt: 0 } }
  const startedAt = Date.now()
  const failed = new Map<string, string>() // plugin → why start() failed
  const requestStart = new WeakMap<Request, number>()

  const corsHeaders = (origin: string | null): Record<string, string> => {
    if (!origin) return {}
    const any = config.corsOrigins.includes('*')
    if (!any && !config.corsOrigins.includes(origin)) return {}
    return {
      'access-control-allow-origin': any ? '*' : origin,
      'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
      'access-control-allow-headers': 'content-type, authorization',
      'access-control-max-age': '600',
      ...(any ? {} : { vary: 'Origin' }),
    }
  }

  const app = new Elysia()
    .onRequest(({ request, set }) => {
      requestStart.set(request, performance.now())
      bodyLimitOf.set(request, config.bodyLimit)
      ctx.activity.lastRequestAt = Date.now()
      const cors = corsHeaders(request.headers.get('origin'))
      Object.assign(set.headers, cors)
      if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: cors })
      if (config.token && MUTATING.has(request.method) && requestPath(request).startsWith('/api/')) {
        if (request.headers.get('authorization') !== `Bearer ${config.token}`) {
          set.status = 401
          set.headers['www-authenticate'] = 'Bearer'
          return { detail: 'This operation needs the bearer token: send Authorization: Bearer <token>' }
        }
      }
    })
    .onTransform({ as: 'global' }, ({ params, request, route }) => {
      // Path parameters are decoded once, by Elysia's router, for every route (a handler never decodes
      // again: '%25' is '%'). A segment that is not valid percent-encoded UTF-8 ('%zz', '%C0%AF') comes
      // out null: answered here, for every route, as a 422 naming the parameter.
      if (Object.values(params ?? {}).every((value) => typeof value === 'string')) return
      const undecodable = Object.entries(rawParams(route, requestPath(request))).filter(([name]) => typeof params[name] !== 'string')
      throw new RequestValidationError(undecodable.flatMap(([name, raw]) => valueError(['path', name], `the ${name} is not valid percent-encoded UTF-8`, raw).errors))
    })
    .onError(({ error: raised, code, request, set }) => {
      // Elysia wraps whatever a parse hook throws in a ParseError; ours are in its cause.
      const error = code === 'PARSE' && (raised as Error).cause instanceof Error ? ((raised as Error).cause as Error) : raised
      const body = (status: number, detail: unknown) => {
        set.status = status
        return { detail }
      }
      if (error instanceof RequestValidationError) return body(422, error.errors)
      if (error instanceof HttpError) {
        // A device or daemon failing is worth a line of its own; refusals of bad requests are not.
        if (error.status >= 500) log.warn('request failed', { method: request.method, path: requestPath(request), status: error.status, detail: error.detail })
        return body(error.status, error.detail)
      }
      if (error instanceof DeviceError) {
        const mapped = fromDeviceError(error, 'device')
        if (mapped instanceof RequestValidationError) return body(422, mapped.errors)
        return body((mapped as HttpError).status, (mapped as HttpError).detail)
      }
      if (code === 'NOT_FOUND') {
        // A path the app serves, with another method: 405 and what it takes, as FastAPI answers.
        const allowed = methodsAt(requestPath(request))
        if (!allowed.length) return body(404, 'Not Found')
        set.headers.allow = allowed.join(', ')
        return body(405, 'Method Not Allowed')
      }
      // Only a route that skipped docs()/validated() lets Elysia parse JSON itself; still a 422, not a 400.
      if (code === 'PARSE') return body(422, [{ type: 'json_invalid', loc: ['body', 0], msg: 'JSON decode error', input: {}, ctx: { error: 'Expecting value' } }])
      log.error('unhandled error', { method: request.method, path: requestPath(request), err: error })
      return body(500, `Internal error (a bug; the log has the details): ${(error as Error)?.message ?? String(error)}`)
    })
    .onAfterResponse(({ request, set }) => {
      if (!log.enabled('info')) return
      const began = requestStart.get(request)
      log.info('request', {
        method: request.method,
        path: requestPath(request),
        status: typeof set.status === 'number' ? set.status : 200,
        duration_ms: began === undefined ? null : Math.round((performance.now() - began) * 100) / 100,
      })
    })
    .use(
      openapi({
        path: '/docs',
        specPath: '/openapi.json',
        provider: 'swagger-ui',
        openapiVersion: '3.1.0',
        // Served from the package, not a CDN: a vehicle at sea has no internet.
        swagger: { version: '5', cdn: '/docs/assets/swagger-ui-bundle.js', theme: '/docs/assets/swagger-ui.css' } as never,
        documentation: {
          info: { title: 'Periscope', version: VERSION, description: 'Camera and network management for robots: UVC cameras, RTP streams, recordings, wired network.' },
          tags: [
            { name: 'cameras', description: 'Devices, controls, streams, leader/follower groups' },
            { name: 'network', description: 'Wired network through NetworkManager' },
            { name: 'preferences', description: 'Stored preferences' },
            { name: 'recordings', description: 'Recordings on disk: list, rename, delete, download, zip' },
            { name: 'system', description: 'Health and events' },
          ],
          components: { schemas: componentSchemas() as never },
        },
      }),
    )
    .get('/docs/assets/:file', ({ params }) => {
      if (!/^swagger-ui(-bundle\.js|\.css)$/.test(params.file)) throw new HttpError(404, 'Not Found')
      return Bun.file(join(SWAGGER_DIR, params.file))
    }, { detail: { hide: true } })
    .get(
      '/api/health',
      () => {
        const health = Object.fromEntries(plugins.map((p) => [p.name, pluginHealth(p)]))
        const settings: PluginHealth = store.health()
        return {
          // Degraded as soon as one plugin is not fine (NetworkManager away, a stream failing, …) or a
          // setting cannot be saved (a full card).
          status: settings.state === 'ok' && Object.values(health).every((h) => h.state === 'ok') ? 'ok' : 'degraded',
          version: VERSION,
          uptime_s: Math.round((Date.now() - startedAt) / 1000),
          settings,
          plugins: health,
          backends: ctx.registry.describe(),
        }
      },
      { ...docs({ tag: 'system', summary: 'Version, uptime, and the state of every plugin and backend' }) },
    )
    .get('/api/events', ({ request }) => eventStream(ctx.events, hangUpSignal(request)), {
      ...docs({
        tag: 'system',
        summary: 'Server-sent events',
        description:
          'One `event:` per change: device_added, device_removed, device_updated, stream_error, frame_stats, preferences_updated, network_changed, zip_progress. `data:` is JSON.',
        ok: { content: { 'text/event-stream': { schema: t.String() } } },
      }),
    })

  function pluginHealth(p: PeriscopePlugin): PluginHealth {
    if (failed.has(p.name)) return { state: 'down', detail: failed.get(p.name) }
    try {
      return instances.get(p)!.health?.() ?? { state: 'ok' }
    } catch (e) {
      return { state: 'down', detail: (e as Error).message }
    }
  }

  const instances = new Map<PeriscopePlugin, PluginInstance>()
  for (const plugin of plugins) {
    const result = await plugin.setup({ ...ctx, log: log.child({ plugin: plugin.name }) })
    const instance: PluginInstance = result instanceof Elysia ? { routes: result } : (result ?? {})
    instances.set(plugin, {
      routes: instance.routes,
      start: instance.start ?? plugin.start?.bind(plugin),
      stop: instance.stop ?? plugin.stop?.bind(plugin),
      health: instance.health ?? plugin.health?.bind(plugin),
    })
    if (instance.routes) app.use(instance.routes)
  }

  // Which methods each route pattern takes, read from the app's routes on the first 405 (all are added by then).
  let routeTable: { method: string; matches: RegExp }[] | undefined
  /** The methods the app serves at a path (HEAD with GET, as Starlette lists them); none: an unknown path. */
  function methodsAt(path: string): string[] {
    routeTable ??= app.routes.map((route) => ({ method: route.method, matches: routeMatcher(route.path) }))
    // Elysia also takes a path with one trailing slash.
    const loose = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path
    const served = new Set(routeTable.filter((route) => route.matches.test(loose)).map((route) => route.method))
    if (served.has('GET')) served.add('HEAD')
    return METHOD_ORDER.filter((method) => served.has(method))
  }

  let server: Front | null = null
  let stopping: Promise<void> | null = null

  return {
    app: app as unknown as Elysia,
    ctx,
    plugins,
    front: () => server,
    async listen() {
      for (const plugin of plugins) {
        try {
          await instances.get(plugin)!.start?.()
        } catch (e) {
          // A plugin whose hardware is missing must not take the service down with it.
          failed.set(plugin.name, (e as Error).message)
          log.error('plugin failed to start', { plugin: plugin.name, err: e })
        }
      }
      // The front reads at most twice the app's body limit, so the app's own 413 answers first.
      server = await serveHttp(app.handle, {
        hostname: config.host,
        port: config.port,
        routes: [...new Set(app.routes.map((route) => route.path))],
        exactLength: plugins.flatMap((plugin) => plugin.exactLength ?? []),
        bodyCap: Math.max(config.bodyLimit * 2, 16 << 20),
        idleTimeout: 60,
        onFault: (err) => log.error('HTTP front failed', { err }),
      })
      if (!server.nativeRoutes) log.warn('all HTTP goes through node:http (slower): this Bun does not take routes beside it', { bun: Bun.version })
      const port = server.port
      const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host
      return { url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`, port }
    },
    stop() {
      stopping ??= (async () => {
        for (const plugin of [...plugins].reverse()) {
          try {
            await instances.get(plugin)!.stop?.()
          } catch (e) {
            log.error('plugin failed to stop', { plugin: plugin.name, err: e })
          }
        }
        server?.stop(true)
        store.close()
      })()
      return stopping
    },
  }
}

function eventStream(events: EventBus, signal: AbortSignal): Response {
  const encoder = new TextEncoder()
  let unsubscribe = () => {}
  let heartbeat: ReturnType<typeof setInterval> | undefined
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        try {
          controller.enqueue(encoder.encode(text))
        } catch {
          close()
        }
      }
      const close = () => {
        unsubscribe()
        clearInterval(heartbeat)
      }
      send('retry: 2000\n: connected\n\n')
      unsubscribe = events.subscribe((e) => send(`id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`))
      // Comments keep proxies and Bun's idle timeout from closing a quiet stream, and reveal dead clients.
      heartbeat = setInterval(() => send(': keep-alive\n\n'), 5000)
      signal.addEventListener('abort', () => {
        close()
        try {
          controller.close()
        } catch {}
      })
    },
    cancel() {
      unsubscribe()
      clearInterval(heartbeat)
    },
  })
  return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' } })
}

/** Each path parameter's segment as sent (still percent-encoded), in the route's order: the 422's input. */
function rawParams(route: string, path: string): Record<string, string> {
  const names = route.split('/')
  const segments = path.split('/')
  const raw: Record<string, string> = {}
  names.forEach((part, i) => {
    if (part.startsWith(':') && segments[i] !== undefined) raw[part.slice(1)] = segments[i]!
  })
  return raw
}
