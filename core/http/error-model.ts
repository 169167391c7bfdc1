// The error model: every failure answers {"detail": ...} with its status, as FastAPI does. Thrown
// HttpErrors and DeviceErrors map to their status, validation failures to a 422 list, a known path with
// another method to a 405 with Allow, anything else to a logged 500; path parameters that are not valid
// percent-encoded UTF-8 are a 422 naming the parameter, for every route.
import { Elysia } from 'elysia'
import { fromDeviceError, HttpError, LimitError, RequestValidationError, valueError } from '../errors'
import { requestPath, routeMatcher } from '../front'
import type { Logger } from '../log'
import { DeviceError } from '../types'

const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']

export interface ErrorModelOptions {
  log: Logger
  /** The app's routes, read on the first 405 (all are added by then). */
  routes(): readonly { method: string; path: string }[]
}

export function errorModel({ log, routes }: ErrorModelOptions) {
  let routeTable: { method: string; matches: RegExp }[] | undefined
  /** The methods the app serves at a path (HEAD with GET, as Starlette lists them); none: an unknown path. */
  function methodsAt(path: string): string[] {
    routeTable ??= routes().map((route) => ({ method: route.method, matches: routeMatcher(route.path) }))
    // Elysia also takes a path with one trailing slash.
    const loose = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path
    const served = new Set(routeTable.filter((route) => route.matches.test(loose)).map((route) => route.method))
    if (served.has('GET')) served.add('HEAD')
    return METHOD_ORDER.filter((method) => served.has(method))
  }

  return new Elysia({ name: 'periscope:error-model' })
    .onTransform({ as: 'global' }, ({ params, request, route }) => {
      // Path parameters are decoded once, by Elysia's router, for every route (a handler never decodes
      // again: '%25' is '%'). A segment that is not valid percent-encoded UTF-8 ('%zz', '%C0%AF') comes
      // out null: answered here, for every route, as a 422 naming the parameter.
      if (Object.values(params ?? {}).every((value) => typeof value === 'string')) return
      const undecodable = Object.entries(rawParams(route, requestPath(request))).filter(([name]) => typeof params[name] !== 'string')
      throw new RequestValidationError(undecodable.flatMap(([name, raw]) => valueError(['path', name], `the ${name} is not valid percent-encoded UTF-8`, raw).errors))
    })
    .onError({ as: 'global' }, ({ error: raised, code, request, set }) => {
      // Elysia wraps whatever a parse hook throws in a ParseError; ours are in its cause.
      const error = code === 'PARSE' && (raised as Error).cause instanceof Error ? ((raised as Error).cause as Error) : raised
      const body = (status: number, detail: unknown) => {
        set.status = status
        return { detail }
      }
      const refused = (failure: HttpError) => {
        if (failure.retryAfter !== undefined) set.headers['retry-after'] = String(failure.retryAfter)
        // A device or daemon failing is worth a line of its own (GET /api/logs shows it); refusals of bad requests and limits are not.
        if (failure.status >= 500 && !(failure instanceof LimitError)) log.warn('request failed', { method: request.method, path: requestPath(request), status: failure.status, detail: failure.detail })
        return body(failure.status, failure.detail)
      }
      if (error instanceof RequestValidationError) return body(422, error.errors)
      if (error instanceof HttpError) return refused(error)
      if (error instanceof DeviceError) {
        const mapped = fromDeviceError(error, 'device')
        if (mapped instanceof RequestValidationError) return body(422, mapped.errors)
        return refused(mapped as HttpError)
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
