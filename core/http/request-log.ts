// One log line per request at info level (method, path, status and how long it took), and the same
// measure, by route template, for whoever watches answered requests (the metrics plugin).
import { Elysia } from 'elysia'
import { isHead, requestPath } from '../front'
import type { Logger } from '../log'

/** A request answered, timed from its arrival to its answer (a stream's head: not the stream's whole life). */
export interface AnsweredRequest {
  method: string
  /** The route that served it, as declared ('/api/streams/:bus_info/mjpeg'); null when none did (404, 405, a preflight, a missing token). */
  route: string | null
  status: number
  seconds: number
}

/** Who wants each answered request besides the log (the metrics plugin): one set per app. */
export class RequestWatchers {
  private watchers = new Set<(request: AnsweredRequest) => void>()

  watch(watcher: (request: AnsweredRequest) => void): () => void {
    this.watchers.add(watcher)
    return () => void this.watchers.delete(watcher)
  }

  get size(): number {
    return this.watchers.size
  }

  notify(request: AnsweredRequest): void {
    for (const watcher of this.watchers) {
      try {
        watcher(request)
      } catch {
        // A watcher's failure must not reach the request it measured.
      }
    }
  }
}

/**
 * The path as logged: a secret in it (the last segment of a WHEP session's Location, which ends the
 * session) is written as '…', so GET /api/logs never hands one out. Matched by shape, not by route,
 * since requests no route serves (a PATCH on a session: 405) are logged too.
 */
export const loggedPath = (path: string): string => path.replace(/(\/whep\/)[^/]+$/, '$1…')

/**
 * The request log: `plugin` times every request from its arrival and reports it once Elysia is done
 * with it; `early` reports one answered in an onRequest hook (a CORS preflight, a missing token), for
 * which Elysia runs no afterResponse hook.
 */
export function requestLog(log: Logger, watchers: RequestWatchers) {
  const began = new WeakMap<Request, number>()
  const finish = (request: Request, route: string | null, status: number) => {
    const logging = log.enabled('info')
    if (!logging && !watchers.size) return
    const start = began.get(request)
    const ms = start === undefined ? null : performance.now() - start
    // The front hands a HEAD to the app as a GET (core/front.ts).
    const method = isHead(request) ? 'HEAD' : request.method
    if (logging) log.info('request', { method, path: loggedPath(requestPath(request)), status, duration_ms: ms === null ? null : Math.round(ms * 100) / 100 })
    if (ms !== null) watchers.notify({ method, route, status, seconds: ms / 1000 })
  }
  const plugin = new Elysia({ name: 'periscope:request-log' })
    .onRequest(({ request }) => {
      began.set(request, performance.now())
    })
    .onAfterResponse({ as: 'global' }, ({ request, set, route, response }) => {
      // A handler that returns a Response (201 Created) says its status there, not in `set`.
      finish(request, route || null, response instanceof Response ? response.status : typeof set.status === 'number' ? set.status : 200)
    })
  return { plugin, early: (request: Request, status: number) => finish(request, null, status) }
}

/** How a hook that answers in onRequest reports its answer to the request log. */
export type EarlyAnswer = (request: Request, status: number) => void
