// The only place the console calls fetch(), and the one place its URLs are resolved (serviceUrl: under
// the page's base). JSON in and out; every failure becomes an ApiError that carries the service's
// `detail` sentence (a 422's list mapped to the fields it names by `loc`), so no refused request can
// pass for a success. A 401 asks the pilot for the token (core/http/token.ts: with --token, every
// change needs it; with --token-scope all, every read too), keeps it for the session, and sends the
// request again. What the browser fetches by itself (the event stream, MJPEG and snapshot pictures,
// a recording's player or download link) cannot carry a header: for those the token also goes in a
// session cookie under the page's base path, which the service takes for reads only.
import { Value } from './state'
import type { Device } from './types'

// ---- where the service is, seen from this page ----
// The page may be served under a prefix that a reverse proxy strips (BlueOS shows an extension at
// http://blueos.local/extensionv2/periscope/, proxied to the service's `/`; nginx at a sub-path), so
// nothing here is sent to the host's root: the service's own paths (`/api/…`, as it names them) are
// taken from the page's base, the directory of the page (document.baseURI). At `/` it is the same thing.

/** The service's `/` for this page: its base, ending in `/` (`http://blueos.local/extensionv2/periscope/`). */
export const serviceBase = (): string => new URL('.', document.baseURI).href

/** The page's base as it is on another host (the vehicle at a new address): same scheme, port and prefix. */
export function serviceBaseAt(hostname: string): string {
  const base = new URL(serviceBase())
  base.hostname = hostname
  return base.href
}

/**
 * The URL of a service path for this page: `/api/devices` is `api/devices` under the page's base. A full
 * URL (the vehicle at a new address, network page) is left as it is; `base`: another base than the page's
 * (serviceBaseAt).
 */
export function serviceUrl(pathOrUrl: string, base: string = serviceBase()): string {
  const servicePath = pathOrUrl.startsWith('/') && !pathOrUrl.startsWith('//')
  return new URL(servicePath ? pathOrUrl.slice(1) : pathOrUrl, base).href
}

/**
 * A Location the service answered a request with (a WHEP session's): a path from its root, as the
 * service sees it, is one of its own paths, so under the page's base; anything else is taken relative
 * to the request, as HTTP says.
 */
export const answeredLocation = (value: string, requestUrl: string): string => (value.startsWith('/') && !value.startsWith('//') ? serviceUrl(value) : new URL(value, requestUrl).href)

/**
 * A device's `watch` links as this page reaches them. The service writes them on the host its request
 * came to, which behind a proxy is the proxy's upstream (often 127.0.0.1), not the pilot's: the HTTP
 * ones (WHEP, MJPEG, snapshot) keep their path under the page's base; the RTSP one, which no proxy
 * carries, keeps its port and path on the host this page was loaded from (the vehicle, for BlueOS).
 */
export function watchLinksForPage(watch: NonNullable<Device['watch']>): NonNullable<Device['watch']> {
  const http = (link: string | null) => {
    if (!link) return link
    const url = new URL(link)
    return serviceUrl(url.pathname + url.search)
  }
  // By text: not every browser parses the host of a URL whose scheme it does not know. (location.hostname
  // has an IPv6 address in its brackets, as a URL needs it.)
  const rtsp = watch.rtsp && watch.rtsp.replace(/^(rtsp:\/\/)(\[[^\]]*\]|[^/:?#]*)/i, (_, scheme: string) => scheme + location.hostname)
  // Cockpit's signalling: on its own port like RTSP (the vehicle's host), or a path on this port like the HTTP ones.
  const cockpit = watch.cockpit && (new URL(watch.cockpit.replace(/^ws/, 'http')).pathname.length > 1 ? http(watch.cockpit.replace(/^ws/, 'http'))!.replace(/^http/, 'ws') : watch.cockpit.replace(/^(wss?:\/\/)(\[[^\]]*\]|[^/:?#]*)/i, (_, scheme: string) => scheme + location.hostname))
  return { rtsp, whep: http(watch.whep), cockpit, mjpeg: http(watch.mjpeg), snapshot: http(watch.snapshot) }
}

export interface FieldErrors {
  /** The message for each field, keyed by its loc without the leading 'body'/'query'/'path': 'endpoints.0.port'. */
  [field: string]: string
}

export class ApiError extends Error {
  constructor(
    /** The HTTP status; 0 when the service did not answer at all. */
    readonly status: number,
    /** The sentence to show. */
    readonly detail: string,
    readonly fields: FieldErrors = {},
  ) {
    super(detail)
  }
}

interface PydanticError {
  loc: (string | number)[]
  msg: string
  type: string
}

/** A 422's errors by field, and one sentence naming each field with its message. */
export function validationErrors(list: PydanticError[]): { detail: string; fields: FieldErrors } {
  const fields: FieldErrors = {}
  const sentences: string[] = []
  for (const error of list) {
    const loc = error.loc[0] === 'body' || error.loc[0] === 'query' || error.loc[0] === 'path' ? error.loc.slice(1) : error.loc
    const key = loc.join('.')
    fields[key] ??= error.msg
    sentences.push(key ? `${key}: ${error.msg}` : error.msg)
  }
  return { detail: sentences.join('; ') || 'The service refused the request as invalid', fields }
}

const TOKEN_KEY = 'periscope.token'

/** Whether the service answered the last request (false: the banner shows; events.ts sets it too). */
export const reachable = new Value(true)

/** Set while the page waits for the pilot to type the token; the shell shows the prompt. */
export const tokenPrompt = new Value<{ refused: boolean; answer(token: string | null): void } | null>(null)

export const savedToken = (): string | null => sessionStorage.getItem(TOKEN_KEY)

/** The cookie core/http/token.ts reads (TOKEN_COOKIE), for this page's base path only: null removes it. */
function tokenCookie(token: string | null): void {
  const path = new URL(serviceBase()).pathname
  document.cookie = token === null ? `periscope_token=; path=${path}; max-age=0; samesite=strict` : `periscope_token=${encodeURIComponent(token)}; path=${path}; samesite=strict`
}
// A reload keeps the tab's token (sessionStorage) and so its cookie.
if (typeof document !== 'undefined' && savedToken()) tokenCookie(savedToken())

let asking: Promise<string | null> | null = null

/** One prompt at a time: requests refused together wait for the same answer. */
function askForToken(refused: boolean): Promise<string | null> {
  asking ??= new Promise<string | null>((resolve) => {
    tokenPrompt.set({
      refused,
      answer(token) {
        asking = null
        tokenPrompt.set(null)
        if (token) {
          sessionStorage.setItem(TOKEN_KEY, token)
          tokenCookie(token)
        }
        resolve(token)
      },
    })
  })
  return asking
}

export interface RawAnswer {
  status: number
  headers: Headers
  text: string
}

/**
 * One request, the token added when the session has one; a 401 prompts for it (again, saying so, when
 * the one typed was wrong) and sends the request again, until the pilot cancels. Rejects with an
 * ApiError for any status outside 2xx, and for no answer at all. `path`: a service path (`/api/…`) or a
 * full URL, as serviceUrl takes them.
 */
export async function request(method: string, path: string, body?: { type: string; text: string | Uint8Array<ArrayBuffer> }, options: { keepalive?: boolean; timeoutMs?: number } = {}): Promise<RawAnswer> {
  const url = serviceUrl(path)
  for (;;) {
    const headers: Record<string, string> = {}
    if (body) headers['content-type'] = body.type
    const token = savedToken()
    if (token) headers.authorization = `Bearer ${token}`
    // Another origin (the vehicle at a new address, network page) says nothing about this page's link.
    const own = new URL(url).origin === location.origin
    let res: Response
    try {
      // keepalive: sent even as the page goes (a reload, a closed tab).
      // timeoutMs: no answer by then is no answer (a cut link leaves a request waiting for minutes).
      res = await fetch(url, { method, headers, body: body?.text, cache: 'no-store', keepalive: options.keepalive, signal: options.timeoutMs ? AbortSignal.timeout(options.timeoutMs) : undefined })
    } catch (e) {
      if (!own) throw new ApiError(0, `${new URL(url).host} did not answer (${(e as Error).message})`)
      reachable.set(false)
      throw new ApiError(0, `The service did not answer (${(e as Error).message}); the page reconnects by itself`)
    }
    if (own) reachable.set(true)
    const text = await res.text()
    if (res.ok) return { status: res.status, headers: res.headers, text }
    if (res.status === 401) {
      if (token && savedToken() === token) {
        sessionStorage.removeItem(TOKEN_KEY)
        tokenCookie(null)
      }
      if (savedToken() || (await askForToken(Boolean(token)))) continue
    }
    throw refusal(res, text)
  }
}

/**
 * A pause before asking the service again, cut short once it answers again after not answering (a
 * tether back, a service started again): probed every 500 ms, each probe given 1 s; while it answers
 * all along, or `stopped()`, the whole pause (or none). `unanswered`: the request that failed got no
 * answer, so a first probe answered ends the pause. A view so comes back within about a second of its
 * vehicle, not after the rest of a growing pause.
 */
export async function pauseUntilBack(ms: number, stopped: () => boolean, unanswered = false): Promise<void> {
  const end = performance.now() + ms
  let missed = unanswered
  while (!stopped() && performance.now() < end) {
    const answered = await fetch(serviceUrl('/api/health'), { cache: 'no-store', signal: AbortSignal.timeout(1000) }).then(
      () => true,
      () => false,
    )
    if (answered && missed) return
    missed ||= !answered
    await new Promise((resolve) => setTimeout(resolve, Math.min(500, Math.max(0, end - performance.now()))))
  }
}

/** The service's refusal as an ApiError: its `detail` sentence (or the fields' sentences), else its status. */
export function refusal(res: Response, text: string): ApiError {
  let detail: unknown
  try {
    detail = (JSON.parse(text) as { detail?: unknown }).detail
  } catch {}
  if (Array.isArray(detail)) {
    const { detail: sentence, fields } = validationErrors(detail as PydanticError[])
    return new ApiError(res.status, sentence, fields)
  }
  if (typeof detail === 'string' && detail) return new ApiError(res.status, detail)
  return new ApiError(res.status, `The service answered ${res.status} ${res.statusText}`.trim())
}

/** JSON in, JSON out. */
export async function api<T>(method: string, path: string, body?: unknown): Promise<T> {
  const answer = await request(method, path, body === undefined ? undefined : { type: 'application/json', text: JSON.stringify(body) })
  return (answer.text ? JSON.parse(answer.text) : null) as T
}

export const get = <T>(path: string) => api<T>('GET', path)
export const post = <T>(path: string, body?: unknown) => api<T>('POST', path, body)
