// One log line per request at info level: method, path, status and how long it took.
import { Elysia } from 'elysia'
import { requestPath } from '../front'
import type { Logger } from '../log'

export function requestLog(log: Logger) {
  const began = new WeakMap<Request, number>()
  return new Elysia({ name: 'periscope:request-log' })
    .onRequest(({ request }) => {
      began.set(request, performance.now())
    })
    .onAfterResponse({ as: 'global' }, ({ request, set }) => {
      if (!log.enabled('info')) return
      const start = began.get(request)
      log.info('request', {
        method: request.method,
        path: requestPath(request),
        status: typeof set.status === 'number' ? set.status : 200,
        duration_ms: start === undefined ? null : Math.round((performance.now() - start) * 100) / 100,
      })
    })
}
