// The HTTP front, in two parts on one port. Bun.serve is the fast one, but it drops a handler-set
// Content-Length on every streamed body and sends it chunked (oven-sh/bun#10507, open in 1.4.5);
// Bun's node:http keeps it, at about half the requests/s (`npm run bench front`). Bun's node:http
// listens through Bun.serve itself, and a Bun.serve `routes` table is served ahead of node:http's
// handler, so the front gives that call the app's routes: they run natively, and only the paths that
// stream with an exact length (and routes whose patterns would catch them) fall through to node:http.
import http, { type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Server, ServerWebSocket, WebSocketHandler } from 'bun'

/**
 * A WebSocket served on the port beside the routes (Cockpit's signalling). `accept` sees the upgrade
 * request and its caller's address first: a Response refuses it (sent as is), anything else is the
 * socket's `data`. The handler gets every socket of every endpoint: each socket's data says whose.
 */
export interface SocketEndpoint<T extends object = object> {
  path: string
  accept(request: Request, caller: string | undefined): Response | { data: T }
  /** An accepted request that did not become a socket (not a WebSocket handshake): what `accept` took, given back. */
  unused?(data: T): void
  handler: WebSocketHandler<T>
}

export interface FrontOptions {
  hostname: string
  port: number
  /** The app's route patterns (Elysia's, which Bun's router reads alike: '/api/recordings/:name'). */
  routes: string[]
  /** Paths whose streamed answers must keep their Content-Length: served by node:http. */
  exactLength: string[]
  /** Bytes of request body the front takes at most (the app applies its own, smaller limit). */
  bodyCap: number
  /**
   * Seconds a request's body may take to arrive whole, from its headers on; later: 408 and the
   * connection closed (a body sent at a byte a second would hold its socket for ever).
   */
  bodySeconds: number
  /** Seconds an idle keep-alive connection stays open on the node:http part (its Bun.serve call sets none for the native part). */
  idleTimeout: number
  /** Told of a failure of the front itself (a bug: the client got a JSON 500). */
  onFault(error: unknown): void
  /** WebSocket endpoints: served by the native part only (node:http's part never sees them). */
  sockets?: SocketEndpoint[]
}

export interface Front {
  port: number
  /** How many route patterns Bun.serve answers natively (0: Bun's node:http changed; all is node:http). */
  nativeRoutes: number
  /** Requests each part has handed to the app so far: proof of which part serves what. */
  handled: { native: number; node: number }
  /** Stops listening; `closeActive` also drops open connections (downloads, event streams). */
  stop(closeActive?: boolean): void
}

interface Arrival {
  caller(): string | undefined
  head: boolean
  hangUp(): AbortSignal
}
const arrivals = new WeakMap<Request, Arrival>()

/** The address a request came from, as the socket saw it (IPv4-mapped IPv6 shown as IPv4). */
export function callerAddress(request: Request): string | undefined {
  const address = arrivals.get(request)?.caller()
  return address?.startsWith('::ffff:') ? address.slice(7) : address
}

/**
 * Whether a GET the app sees is really a HEAD. The front hands HEAD to the app as GET because Elysia
 * answers HEAD by reading the whole GET body to count it (a 6 GiB recording, an endless event
 * stream); the front sends the headers only. A route whose GET has effects checks this first.
 */
export function isHead(request: Request): boolean {
  return arrivals.get(request)?.head ?? false
}

/** Aborted when the client hangs up before its answer is whole: what an event stream or a download stops on. */
export function hangUpSignal(request: Request): AbortSignal {
  return arrivals.get(request)?.hangUp() ?? request.signal
}

/**
 * The header of an answer that never ends (the event stream, MJPEG): nginx, which BlueOS puts in front
 * of an extension's page and others at a sub-path, buffers what it proxies unless told not to, and
 * would hold events and pictures back (its `proxy_buffering off` does the same, where one can set it).
 */
export const UNBUFFERED_BY_PROXIES = { 'x-accel-buffering': 'no' } as const

const sources = new WeakMap<Response, AsyncIterable<Uint8Array>>()

/**
 * A Response streamed from `source` (an async generator). Where the node:http part sends it (the
 * zip download), it reads `source` itself: through Bun's ReadableStream around it, half as fast.
 */
export function streamResponse(source: AsyncIterable<Uint8Array>, init: ResponseInit): Response {
  const response = new Response(source as unknown as ReadableStream<Uint8Array>, init)
  sources.set(response, source)
  return response
}

const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS'])

export function serveHttp(handle: (request: Request) => Response | Promise<Response>, options: FrontOptions): Promise<Front> {
  const server = http.createServer((req, res) => {
    viaNode(req, res).catch((e) => {
      // Only a failure of the front itself lands here (the app turns its own errors into answers).
      options.onFault(e)
      if (!res.headersSent) plain(res, 500, FAULT)
      else res.destroy()
    })
  })
  server.keepAliveTimeout = options.idleTimeout * 1000
  // A zip download may wait minutes for its first byte, and an event stream runs for hours.
  server.requestTimeout = 0
  server.timeout = 0
  const handled = { native: 0, node: 0 }
  let origin = 'http://localhost'

  /**
   * The URL the app sees: ours, never one built from a client's short Host header, since Elysia finds
   * the path by position in the URL ('http://a/api/health' would route as '/health').
   */
  const urlFor = (target: string) => origin + target

  // The native part: a HEAD is handed over as GET (see isHead) and answered with headers only.
  const viaBun = async (request: Request, bun: { requestIP(r: Request): { address: string } | null }): Promise<Response> => {
    const head = request.method === 'HEAD'
    let seen = request
    let body: ArrayBuffer | null = null
    if (request.body && !BODYLESS.has(request.method)) {
      const read = await withinDeadline(request.arrayBuffer(), options.bodySeconds)
      if (read === LATE) return lateBody(options.bodySeconds)
      body = read
    }
    if (head || body || !appReadable(request.url)) {
      try {
        seen = new Request(appReadable(request.url) ? request.url : urlFor(targetOf(request.url)), { method: head ? 'GET' : request.method, headers: request.headers, body })
      } catch {
        return jsonAnswer(400, 'The request target is not a valid URL path')
      }
    }
    arrivals.set(seen, { caller: () => bun.requestIP(request)?.address, head, hangUp: () => request.signal })
    handled.native++
    const response = await handle(seen)
    return head ? headersOnly(response) : response
  }

  async function viaNode(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // An absolute-form target ('http://rov/path', as proxies send) is taken by its path, as Bun.serve does.
    const target = req.url?.startsWith('/') ? req.url : pathOf(req.url)
    if (!target) return plain(res, 400, 'The request target must be a path (/…) or an absolute http URL')
    let body: Uint8Array | undefined
    if (!BODYLESS.has(req.method ?? 'GET')) {
      const read = await withinDeadline(readBody(req, options.bodyCap), options.bodySeconds)
      if (read === 'too large' || read === LATE) {
        res.shouldKeepAlive = false
        if (read === LATE) {
          res.once('finish', () => req.destroy())
          return plain(res, 408, lateDetail(options.bodySeconds))
        }
        return plain(res, 413, `Request body is larger than the limit of ${options.bodyCap} bytes`)
      }
      body = read
    }
    const head = req.method === 'HEAD'
    let request: Request
    try {
      request = new Request(urlFor(target), { method: head ? 'GET' : req.method, headers: withEveryHost(req), body })
    } catch {
      return plain(res, 400, 'The request target is not a valid URL')
    }
    let hangUp: AbortController | undefined
    handled.node++
    arrivals.set(request, {
      caller: () => req.socket.remoteAddress,
      head,
      // Made on first use: most requests never ask.
      hangUp() {
        if (!hangUp) {
          hangUp = new AbortController()
          if (res.destroyed) hangUp.abort()
          else res.once('close', () => res.writableFinished || hangUp!.abort())
        }
        return hangUp.signal
      },
    })
    const response = await handle(request)
    // The connection ends with this answer: in Bun 1.4.5 the native part's next answer on a connection
    // node:http answered on before sometimes goes out without its status line and headers (a client
    // sees a malformed response; tests/contract/front.test.ts). A new connection per download or Range
    // request costs a handshake on loopback or a LAN.
    res.shouldKeepAlive = false
    await send(head ? await headersOnly(response) : response, res)
  }

  const native: Record<string, unknown> = Object.fromEntries(options.routes.filter((route) => !options.exactLength.some((path) => catches(route, path))).map((route) => [route, viaBun]))
  const sockets = socketsServed((options.sockets ?? []) as SocketEndpoint[])
  if (sockets) Object.assign(native, sockets.routes)
  let nativeRoutes = 0
  let bunServer: { stop(closeActive?: boolean): unknown } | undefined
  return new Promise((resolve, reject) => {
    server.once('error', reject)
    const serve = Bun.serve
    // node:http calls Bun.serve synchronously inside listen(); the routes join that one call.
    ;(Bun as { serve: unknown }).serve = (serveOptions: Record<string, unknown>) => {
      if (typeof serveOptions.onNodeHTTPRequest === 'function') nativeRoutes = Object.keys(native).length
      // The body cap holds on both parts (node:http's own call sets none).
      // Bun's own error page (HTML, a stack, source paths) is never served: a throw that escapes a
      // handler answers JSON. Only a bug of the front can get here: the app answers its own errors.
      const error = (e: unknown) => {
        options.onFault(e)
        return jsonAnswer(500, FAULT)
      }
      bunServer = serve({ ...serveOptions, error, maxRequestBodySize: options.bodyCap, ...(nativeRoutes ? { routes: native } : {}), ...(nativeRoutes && sockets ? { websocket: sockets.websocket } : {}) } as never)
      return bunServer
    }
    try {
      server.listen(options.port, options.hostname, () => {
        server.off('error', reject)
        const port = (server.address() as AddressInfo).port
        origin = `http://localhost:${port}`
        resolve({
          port,
          nativeRoutes,
          handled,
          stop(closeActive = false) {
            server.close()
            if (closeActive) {
              server.closeAllConnections()
              bunServer?.stop(true) // the native part's connections too (event streams)
            } else server.closeIdleConnections()
          },
        })
      })
    } finally {
      ;(Bun as { serve: unknown }).serve = serve
    }
  })
}

/**
 * The routes that upgrade to the endpoints' WebSockets, and one handler for them all (Bun.serve takes
 * one): a socket's data (an object each endpoint makes) says whose it is.
 */
export function socketsServed(endpoints: SocketEndpoint[]): { routes: Record<string, (request: Request, server: Server<unknown>) => Response | undefined>; websocket: WebSocketHandler<object> } | null {
  if (!endpoints.length) return null
  const owners = new WeakMap<object, SocketEndpoint>()
  const routes = Object.fromEntries(
    endpoints.map((endpoint) => [
      endpoint.path,
      (request: Request, server: Server<unknown>) => {
        const accepted = endpoint.accept(request, server.requestIP(request)?.address)
        if (accepted instanceof Response) return accepted
        const data = Object(accepted.data) as object
        owners.set(data, endpoint)
        if (server.upgrade(request, { data })) return undefined
        endpoint.unused?.(data)
        return jsonAnswer(426, 'This is a WebSocket endpoint: connect with a WebSocket client (Upgrade: websocket)')
      },
    ]),
  )
  const of = (ws: ServerWebSocket<object>) => owners.get(ws.data)!.handler as WebSocketHandler<object>
  return {
    routes,
    websocket: {
      // Bun's default (16 MB messages) would let one client make the service hold a lot: each endpoint
      // bounds its own messages below this, the most any of them may take.
      maxPayloadLength: MAX_SOCKET_MESSAGE_BYTES,
      idleTimeout: 120,
      sendPings: true,
      open: (ws) => of(ws).open?.(ws),
      message: (ws, message) => of(ws).message?.(ws, message),
      close: (ws, code, reason) => of(ws).close?.(ws, code, reason),
      drain: (ws) => of(ws).drain?.(ws),
    },
  }
}

/** The most bytes of one WebSocket message on any endpoint (Bun closes the socket past it, code 1009). */
export const MAX_SOCKET_MESSAGE_BYTES = 64 * 1024

const FAULT = 'Internal error in the HTTP front (a bug; the log has the details)'

/**
 * Where the path starts in a URL Bun.serve hands over: 'http://<Host>/p?q' when the Host header
 * makes a URL, else '/p?q' alone (no Host, an empty one, 'évil', 'a/b'); -1 when there is none.
 */
function pathStart(url: string): number {
  if (url.startsWith('/')) return 0
  const authority = url.indexOf('://')
  return authority < 0 ? -1 : url.indexOf('/', authority + 3)
}

/** The path and query of a URL Bun.serve hands over ('/' when it has none). */
function targetOf(url: string): string {
  const at = pathStart(url)
  return at < 0 ? '/' : url.slice(at)
}

/** A request's path, as sent (not decoded), for logs and checks: never throws, whatever the URL. */
export function requestPath(request: Request): string {
  const target = targetOf(request.url)
  const query = target.indexOf('?')
  return query < 0 ? target : target.slice(0, query)
}

/**
 * Whether the app can take Bun's URL as it is: `new URL` accepts it (not 'http://a:99999/…'), and
 * the path starts where Elysia looks for it (the first '/' from index 11 on: 'http://a/api/health'
 * would route as '/health'). Otherwise the front hands over a copy under its own origin.
 */
function appReadable(url: string): boolean {
  return pathStart(url) >= 11 && URL.canParse(url)
}

function pathOf(target: string | undefined): string | null {
  try {
    const url = new URL(target ?? '')
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.pathname + url.search : null
  } catch {
    return null
  }
}

/** What a route pattern ('/api/recordings/:name/download') matches: a parameter is one non-empty segment. */
export function routeMatcher(route: string): RegExp {
  const pattern = route.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part === '*' ? '.*' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
  return new RegExp(`^${pattern.join('/')}$`)
}

const catches = (route: string, path: string) => routeMatcher(route).test(path)

/** A HEAD's answer: the GET's status and headers, with the length of a body that is whole at once. */
async function headersOnly(response: Response): Promise<Response> {
  const headers = new Headers(response.headers)
  if (response.body && !headers.has('content-length') && WHOLE_TYPES.test(headers.get('content-type') ?? '')) {
    headers.set('content-length', String((await response.bytes()).byteLength))
  } else await response.body?.cancel()
  return new Response(null, { status: response.status, headers })
}

// JSON and plain text are values the app serialised in memory: read whole, at once (read as a stream,
// they cost a third of the requests/s when GET /api/devices went through node:http). A route that
// streams uses another type.
const WHOLE_TYPES = /^(?:application\/json|text\/plain)\b/
const LATER = Symbol('later')
const soon = () => new Promise<typeof LATER>((resolve) => setImmediate(resolve, LATER))
/** A body that has this much ready at once is streamed even if it would end soon after. */
const WHOLE_UP_TO = 1 << 20

/**
 * Writes a response. JSON and text, and any body that has all of itself ready at once (a small file),
 * go out whole with their length; a body that makes the front wait (events, a zip) or is large is streamed as it comes,
 * with backpressure, under whatever length the route set. A body that fails midway cuts the
 * connection, so a client never takes a short transfer for a whole one.
 */
async function send(response: Response, res: ServerResponse): Promise<void> {
  const headers: string[] = []
  response.headers.forEach((value, name) => void headers.push(name, value))
  if (!response.body) {
    res.writeHead(response.status, headers)
    res.end()
    return
  }
  if (WHOLE_TYPES.test(response.headers.get('content-type') ?? '')) {
    const body = await response.bytes()
    if (!response.headers.has('content-length')) headers.push('content-length', String(body.byteLength))
    res.writeHead(response.status, headers)
    res.end(body)
    return
  }
  // A body made by streamResponse() is read from its source: Bun's stream around it halves the speed.
  const chunks = (sources.get(response) ?? response.body)[Symbol.asyncIterator]()
  const stop = () => void chunks.return?.()?.catch(() => {})
  const hungUp = () => res.destroyed && !res.writableFinished
  res.once('close', () => hungUp() && stop())
  try {
    const ready: Uint8Array[] = []
    let size = 0
    let next = chunks.next()
    for (;;) {
      const got = await Promise.race([next, soon()])
      if (got === LATER) break
      if (got.done) {
        if (!response.headers.has('content-length')) headers.push('content-length', String(size))
        res.writeHead(response.status, headers)
        res.end(ready.length === 1 ? ready[0] : Buffer.concat(ready, size))
        return
      }
      ready.push(got.value)
      size += got.value.byteLength
      next = chunks.next()
      if (size >= WHOLE_UP_TO) break
    }
    res.writeHead(response.status, headers)
    for (const chunk of ready) res.write(chunk)
    for (let chunk = await next; !chunk.done; chunk = await chunks.next()) {
      if (hungUp()) return
      if (!res.write(chunk.value)) await drained(res)
    }
    res.end()
  } catch {
    // The app chose the status; its body then failed (a recording changed under a zip). The client
    // gets that status and a transfer cut short of its length. The socket is ended, not destroyed,
    // so what was written still arrives (destroy drops it); destroy follows if the client stalls.
    if (hungUp()) return void res.destroy()
    if (!res.headersSent) {
      res.writeHead(response.status, headers)
      res.flushHeaders()
    }
    res.socket?.end()
    setTimeout(() => res.destroy(), 10_000).unref()
  }
}

/** Resolves when the socket takes more, or when it closes (the hang-up is handled by the caller). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done)
      res.off('close', done)
      resolve()
    }
    res.on('drain', done)
    res.on('close', done)
  })
}

async function readBody(req: IncomingMessage, cap: number): Promise<Uint8Array | 'too large'> {
  if (Number(req.headers['content-length'] ?? 0) > cap) {
    req.resume()
    return 'too large'
  }
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > cap) {
      req.resume()
      return 'too large'
    }
    chunks.push(chunk)
  }
  return Buffer.concat(chunks, size)
}

const LATE = Symbol('late')

/** `work`, or LATE once `seconds` have passed (the body then is dropped with its connection). */
function withinDeadline<T>(work: Promise<T>, seconds: number): Promise<T | typeof LATE> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<typeof LATE>((resolve) => (timer = setTimeout(resolve, seconds * 1000, LATE)))
  work.catch(() => {}) // a body cut short after the deadline
  return Promise.race([work, late]).finally(() => clearTimeout(timer))
}

const lateDetail = (seconds: number) => `The request body did not arrive whole within ${seconds} s (--body-timeout); the connection is closed`

function lateBody(seconds: number): Response {
  return Response.json({ detail: lateDetail(seconds) }, { status: 408, headers: { connection: 'close' } })
}

/**
 * The request's headers with every Host it sent, joined as Bun.serve joins them ('a, b'): node:http
 * keeps only the first, and the Host check (core/http/hosts.ts) refuses two.
 */
function withEveryHost(req: IncomingMessage): Record<string, string> {
  const headers = req.headers as Record<string, string>
  const hosts: string[] = []
  for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i]!.toLowerCase() === 'host') hosts.push(req.rawHeaders[i + 1]!)
  return hosts.length > 1 ? { ...headers, host: hosts.join(', ') } : headers
}

function jsonAnswer(status: number, detail: string): Response {
  return Response.json({ detail }, { status })
}

function plain(res: ServerResponse, status: number, detail: string): void {
  const text = JSON.stringify({ detail })
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}
