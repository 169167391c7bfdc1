// The HTTP front: Bun's node:http server in front of the app's fetch-style handler (Elysia's
// app.handle). Why not Bun.serve: it drops a handler-set Content-Length on every streamed body and
// sends it chunked (oven-sh/bun#10507), and a zip download promises its exact length up front.
// node:http keeps it. `npm run bench front` measures what this costs against Bun.serve.
import http, { type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface FrontOptions {
  hostname: string
  port: number
  /** Bytes of request body the front reads at most (the app applies its own, smaller limit). */
  bodyCap: number
  /** Seconds an idle keep-alive connection stays open. */
  idleTimeout: number
}

export interface Front {
  port: number
  /** Stops listening; `closeActive` also drops open connections (downloads, event streams). */
  stop(closeActive?: boolean): void
}

const arrivals = new WeakMap<Request, { caller: string; head: boolean }>()

/** The address a request came from, as the socket saw it (IPv4-mapped IPv6 shown as IPv4). */
export function callerAddress(request: Request): string | undefined {
  return arrivals.get(request)?.caller
}

/**
 * Whether a GET the app sees is really a HEAD. The front hands HEAD to the app as GET because Elysia
 * answers HEAD by reading the whole GET body to count it (a 6 GiB recording, an endless event
 * stream); the front sends the headers only. A route whose GET has effects checks this first.
 */
export function isHead(request: Request): boolean {
  return arrivals.get(request)?.head ?? false
}

const BODYLESS = new Set(['GET', 'HEAD', 'OPTIONS'])

export function serveHttp(handle: (request: Request) => Response | Promise<Response>, options: FrontOptions): Promise<Front> {
  const server = http.createServer((req, res) => {
    answer(req, res).catch((e) => {
      // Only a failure of the front itself lands here (the app turns its own errors into answers).
      if (!res.headersSent) plain(res, 500, `Internal error in the HTTP front: ${(e as Error).message}`)
      else res.destroy()
    })
  })
  server.keepAliveTimeout = options.idleTimeout * 1000
  // A zip download may wait minutes for its first byte, and an event stream runs for hours.
  server.requestTimeout = 0
  server.timeout = 0
  let origin = 'http://localhost'

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // Only origin-form targets ('/path?query'). The URL's origin is ours, never the client's Host
    // header: Elysia finds the path by position in the URL, so a crafted Host could move it.
    if (!req.url?.startsWith('/')) return plain(res, 400, 'The request target must be a path starting with /')
    const hangUp = new AbortController()
    res.once('close', () => {
      if (!res.writableFinished) hangUp.abort()
    })
    let body: Uint8Array | undefined
    if (!BODYLESS.has(req.method ?? 'GET')) {
      const read = await readBody(req, options.bodyCap)
      if (read === 'too large') {
        res.shouldKeepAlive = false
        return plain(res, 413, `Request body is larger than the limit of ${options.bodyCap} bytes`)
      }
      body = read
    }
    const head = req.method === 'HEAD'
    let request: Request
    try {
      request = new Request(origin + req.url, { method: head ? 'GET' : req.method, headers: req.headers as Record<string, string>, body, signal: hangUp.signal })
    } catch {
      return plain(res, 400, 'The request target is not a valid URL')
    }
    const address = req.socket.remoteAddress ?? ''
    arrivals.set(request, { caller: address.startsWith('::ffff:') ? address.slice(7) : address, head })
    const response = await handle(request)
    await send(response, res, hangUp.signal, head)
  }

  return new Promise((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port, options.hostname, () => {
      server.off('error', reject)
      const port = (server.address() as AddressInfo).port
      origin = `http://localhost:${port}`
      resolve({
        port,
        stop(closeActive = false) {
          server.close()
          if (closeActive) server.closeAllConnections()
          else server.closeIdleConnections()
        },
      })
    })
  })
}

const LATER = Symbol('later')
const soon = () => new Promise<typeof LATER>((resolve) => setImmediate(resolve, LATER))
/** A body that has this much ready at once is streamed even if it would end soon after. */
const WHOLE_UP_TO = 1 << 20

/**
 * Writes a response. What the body has ready at once (JSON, text, a small file) goes out whole with
 * its length; a body that makes the front wait (events, a zip) or is large is streamed as it comes,
 * with backpressure, under whatever length the route set. A body that fails midway cuts the
 * connection, so a client never takes a short transfer for a whole one. `head`: headers only.
 */
async function send(response: Response, res: ServerResponse, hungUp: AbortSignal, head: boolean): Promise<void> {
  const headers: string[] = []
  response.headers.forEach((value, name) => void headers.push(name, value))
  if (!response.body) {
    res.writeHead(response.status, headers)
    res.end()
    return
  }
  const reader = response.body.getReader()
  const stop = () => void reader.cancel().catch(() => {})
  hungUp.addEventListener('abort', stop, { once: true })
  try {
    const ready: Uint8Array[] = []
    let size = 0
    let next = reader.read()
    for (;;) {
      const got = await Promise.race([next, soon()])
      if (got === LATER) break
      if (got.done) {
        if (!response.headers.has('content-length')) headers.push('content-length', String(size))
        res.writeHead(response.status, headers)
        res.end(head ? undefined : ready.length === 1 ? ready[0] : Buffer.concat(ready, size))
        return
      }
      ready.push(got.value)
      size += got.value.byteLength
      next = reader.read()
      if (size >= WHOLE_UP_TO) break
    }
    res.writeHead(response.status, headers)
    if (head) {
      stop()
      res.end()
      return
    }
    for (const chunk of ready) res.write(chunk)
    for (let chunk: Awaited<typeof next> = await next; !chunk.done; chunk = await reader.read()) {
      if (hungUp.aborted) return
      if (!res.write(chunk.value)) await drained(res)
    }
    res.end()
  } catch {
    // The app chose the status; its body then failed (a recording changed under a zip). The client
    // gets that status and a transfer cut short of its length. The socket is ended, not destroyed,
    // so what was written still arrives (destroy drops it); destroy follows if the client stalls.
    if (hungUp.aborted) return void res.destroy()
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

function plain(res: ServerResponse, status: number, detail: string): void {
  const text = JSON.stringify({ detail })
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) })
  res.end(text)
}
