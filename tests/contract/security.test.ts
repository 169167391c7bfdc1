// What holds by default (docs/security.md), over the wire: Host names (421, two Hosts 400), origins
// (403 for a page elsewhere, whatever the content type, nothing changed), local-network preflights,
// the token (any case of Bearer, constant time, counted; --token-scope all for every read), per-client
// limits (429 + Retry-After), the request-body deadline (408, connection closed), the documents.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { connect } from 'node:net'
import { hostname } from 'node:os'
import { parseMetrics, type TestServer } from '../helpers'
import { EHD, startContractServer } from './setup'

const PLUGINS = ['mock', 'cameras', 'preferences', 'dwe', 'recordings', 'metrics']
const STRANGER = 'http://127.0.0.2:8081' // another origin on loopback: not one of this machine's addresses

interface Raw {
  status: number
  headers: Record<string, string>
  body: string
  /** Whether the server closed the connection after its answer. */
  closed: boolean
  ms: number
}

/** Sends `head` (and then `trickle`, a byte every `everyMs`) on a raw socket; the first answer. */
function raw(url: string, head: string, trickle = '', everyMs = 500): Promise<Raw> {
  const { port } = new URL(url)
  return new Promise((resolve, reject) => {
    const t0 = performance.now()
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(head))
    let text = ''
    let sent = 0
    const drip = trickle ? setInterval(() => sent < trickle.length && !socket.destroyed && socket.write(trickle[sent++]!), everyMs) : undefined
    let answered: Omit<Raw, 'closed'> | null = null
    const done = (closed: boolean) => {
      clearInterval(drip)
      clearTimeout(guard)
      socket.destroy()
      if (answered) resolve({ ...answered, closed })
      else reject(new Error(`no answer: ${JSON.stringify(text)}`))
    }
    const guard = setTimeout(() => done(false), 20_000)
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      text += chunk
      const end = text.indexOf('\r\n\r\n')
      if (end < 0 || answered) return
      const [status, ...lines] = text.slice(0, end).split('\r\n')
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
      const length = Number(headers['content-length'] ?? 0)
      if (text.length < end + 4 + length) return
      answered = { status: Number(status!.split(' ')[1]), headers, body: text.slice(end + 4, end + 4 + length), ms: performance.now() - t0 }
      // Closed by the server within a second of its answer, or still open.
      setTimeout(() => done(false), 1000)
    })
    socket.on('close', () => done(true))
    socket.on('error', (e) => (answered ? done(true) : reject(e)))
  })
}

let s: TestServer
beforeAll(async () => {
  s = await startContractServer({ plugins: PLUGINS })
})
afterAll(async () => {
  await s?.stop()
})

/** Every documented operation, path parameters as 'x'. */
async function operations(server: TestServer): Promise<{ method: string; path: string; template: string }[]> {
  const doc = (await server.call('GET', '/openapi.json')).body
  return Object.entries<Record<string, unknown>>(doc.paths).flatMap(([template, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path: template.replace(/\{[^}]+\}/g, 'x'), template })))
}

/** What a change could touch: the devices, the preferences, the recordings. */
async function state(server: TestServer, headers: Record<string, string> = {}): Promise<unknown> {
  return Promise.all(['/api/devices', '/api/preferences', '/api/recordings'].map(async (p) => (await server.call('GET', p, undefined, headers)).body))
}

describe('Host names (DNS rebinding)', () => {
  test('evil.test: 421 with a sentence; two Host headers: 400; nothing served to either', async () => {
    const evil = await raw(s.url, 'GET /api/devices HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
    expect(evil.status).toBe(421)
    expect(JSON.parse(evil.body).detail).toContain("'evil.test'")
    const withPort = await raw(s.url, 'POST /api/devices/set_nickname HTTP/1.1\r\nHost: evil.test:8080\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}')
    expect(withPort.status).toBe(421)
    const twice = await raw(s.url, 'GET /api/devices HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
    expect(twice.status).toBe(400)
    expect(JSON.parse(twice.body).detail).toContain('more than one Host')
    // The zip download is served by the node:http part of the front: the same checks.
    const zip = await raw(s.url, 'GET /api/recordings/zip/download?token=x HTTP/1.1\r\nHost: localhost\r\nHost: evil.test\r\nConnection: close\r\n\r\n')
    expect(zip.status).toBe(400)
    expect((await raw(s.url, 'GET /api/recordings/zip/download?token=x HTTP/1.1\r\nHost: evil.test\r\nConnection: close\r\n\r\n')).status).toBe(421)
  })

  test("served: IP literals, localhost, this machine's name, any .local name; --allowed-hosts adds one (and * any)", async () => {
    for (const host of ['127.0.0.1', '10.1.2.3:8080', '[::1]:80', 'localhost:8080', hostname(), 'vehicle.local', 'blueos.local:80']) {
      expect({ host, status: (await raw(s.url, `GET /api/health HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)).status }).toEqual({ host, status: 200 })
    }
    const named = await startContractServer({ plugins: ['mock', 'cameras'], config: { allowedHosts: ['rov.example', '*.fleet.example'] } })
    try {
      for (const [host, status] of [['rov.example', 200], ['a.fleet.example', 200], ['fleet.example', 421], ['evil.test', 421]] as const) {
        expect({ host, status: (await raw(named.url, `GET /api/devices HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`)).status }).toEqual({ host, status })
      }
    } finally {
      await named.stop()
    }
  })

  test('watch links name only a served host', async () => {
    const answer = await raw(s.url, 'GET /api/devices HTTP/1.1\r\nHost: vehicle.local:8080\r\nConnection: close\r\n\r\n')
    expect(answer.status).toBe(200)
    expect(answer.body).not.toContain('evil')
  })
})

describe('origins', () => {
  test('a page elsewhere: every state-changing operation refused with 403, whatever the content type, and nothing changes', async () => {
    const before = await state(s)
    const bodies: [string, string | null][] = [
      ['application/json', '{"bus_info":"usb-0000:00:14.0-1","nickname":"pwned"}'],
      ['application/x-www-form-urlencoded', 'bus_info=x&nickname=pwned'],
      ['text/plain', '{"bus_info":"usb-0000:00:14.0-1","nickname":"pwned"}'],
      ['', null],
    ]
    const changing = (await operations(s)).filter((o) => !['GET', 'HEAD', 'OPTIONS'].includes(o.method))
    expect(changing.length).toBeGreaterThan(15)
    for (const op of changing) {
      for (const [type, body] of bodies) {
        const res = await fetch(s.url + op.path, { method: op.method, headers: { origin: STRANGER, ...(type ? { 'content-type': type } : {}) }, body })
        const detail = ((await res.json()) as { detail: string }).detail
        expect({ op: `${op.method} ${op.path}`, type, status: res.status }).toEqual({ op: `${op.method} ${op.path}`, type, status: 403 })
        expect(detail).toContain(STRANGER)
      }
    }
    // A fetch without Origin that the browser marks cross-site (Sec-Fetch-Site): refused the same way.
    const marked = await fetch(`${s.url}/api/devices/set_nickname`, { method: 'POST', headers: { 'content-type': 'text/plain', 'sec-fetch-site': 'cross-site' }, body: JSON.stringify({ bus_info: EHD, nickname: 'pwned' }) })
    expect(marked.status).toBe(403)
    expect(await state(s)).toEqual(before)
  })

  test('reads of recordings, logs and devices from a page elsewhere: 403; the vehicle\'s own origins on any port: served with CORS', async () => {
    for (const path of ['/api/recordings', '/api/logs', '/api/devices', '/api/recordings/x/download', '/api/events']) {
      const res = await fetch(s.url + path, { headers: { origin: STRANGER } })
      expect({ path, status: res.status, cors: res.headers.get('access-control-allow-origin') }).toEqual({ path, status: 403, cors: null })
    }
    const port = new URL(s.url).port
    for (const origin of [`http://127.0.0.1:${port}`, 'http://127.0.0.1', 'http://localhost:5173', `http://${hostname()}.local`]) {
      const res = await fetch(`${s.url}/api/recordings`, { headers: { origin } })
      expect({ origin, status: res.status, cors: res.headers.get('access-control-allow-origin') }).toEqual({ origin, status: 200, cors: origin })
    }
    // The name the page reached the service by is the vehicle's, on any port (BlueOS at http://blueos.local/).
    const viaName = await raw(s.url, 'GET /api/recordings HTTP/1.1\r\nHost: blueos.local:8080\r\nOrigin: http://blueos.local\r\nConnection: close\r\n\r\n')
    expect([viaName.status, viaName.headers['access-control-allow-origin']]).toEqual([200, 'http://blueos.local'])
    const otherLocal = await raw(s.url, 'GET /api/recordings HTTP/1.1\r\nHost: blueos.local:8080\r\nOrigin: http://laptop.local\r\nConnection: close\r\n\r\n')
    expect(otherLocal.status).toBe(403)
  })

  test("Chromium's local/private-network preflights: allowed origins only", async () => {
    const ask = (origin: string) =>
      fetch(`${s.url}/api/devices/set_nickname`, {
        method: 'OPTIONS',
        headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-private-network': 'true', 'access-control-request-local-network': 'true' },
      })
    const own = await ask('http://localhost:3000')
    expect([own.status, own.headers.get('access-control-allow-private-network'), own.headers.get('access-control-allow-local-network')]).toEqual([204, 'true', 'true'])
    const stranger = await ask(STRANGER)
    expect([stranger.status, stranger.headers.get('access-control-allow-private-network'), stranger.headers.get('access-control-allow-local-network')]).toEqual([403, null, null])
  })

  test('--cors-origins adds an origin; * opens to any page (and only then)', async () => {
    const one = await startContractServer({ plugins: ['mock', 'cameras'], config: { corsOrigins: [STRANGER] } })
    try {
      const res = await one.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'ok' }, { origin: STRANGER })
      expect([res.status, res.headers.get('access-control-allow-origin')]).toEqual([200, STRANGER])
      expect((await one.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'no' }, { origin: 'http://127.0.0.3' })).status).toBe(403)
    } finally {
      await one.stop()
    }
  })

  test('the console and /docs may be framed only by the vehicle\'s own pages (frame-ancestors); /docs has a CSP without inline script', async () => {
    const docs = await fetch(`${s.url}/docs`)
    const csp = docs.headers.get('content-security-policy')!
    expect(csp).toContain("script-src 'self';")
    expect(csp).toMatch(/frame-ancestors 'self' .*http:\/\/localhost:\*/)
    expect(csp).toContain('http://127.0.0.1:*')
    expect(csp).not.toContain('127.0.0.2')
    expect(await docs.text()).not.toMatch(/<script>/)
    const init = await fetch(`${s.url}/docs/assets/swagger-init.js`)
    expect([init.status, await init.text()]).toEqual([200, expect.stringContaining('SwaggerUIBundle')])
  })
})

describe('the token', () => {
  test('--token: Bearer in any case (RFC 9110), compared whole; a wrong one counted in /metrics, never logged', async () => {
    const guarded = await startContractServer({ plugins: PLUGINS, config: { token: 'T0ken-x' }, logLevel: 'info' })
    try {
      const change = (authorization?: string) => guarded.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'cased' }, authorization ? { authorization } : {})
      for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) expect({ scheme, status: (await change(`${scheme} T0ken-x`)).status }).toEqual({ scheme, status: 200 })
      for (const wrong of ['Bearer T0ken-', 'Bearer T0ken-xx', 'Bearer t0ken-x', 'Basic T0ken-x', 'T0ken-x']) expect({ wrong, status: (await change(wrong)).status }).toEqual({ wrong, status: 401 })
      const missing = await change()
      expect([missing.status, missing.headers.get('www-authenticate')]).toEqual([401, 'Bearer'])
      // Reads stay open under the default scope.
      expect((await guarded.call('GET', '/api/recordings')).status).toBe(200)
      const m = parseMetrics((await guarded.call('GET', '/metrics')).body)
      expect(m.value('periscope_http_wrong_tokens_total', {})).toBe(5)
      const logged = JSON.stringify((await guarded.call('GET', '/api/logs?limit=1000')).body)
      expect(logged).not.toContain('T0ken')
    } finally {
      await guarded.stop()
    }
  })

  test('--token-scope all: every read under /api/ refused without the token and served with it (header, or the console\'s cookie); /api/health stays open; a cookie never makes a change', async () => {
    const guarded = await startContractServer({ plugins: PLUGINS, config: { token: 'read-me', tokenScope: 'all' } })
    try {
      const reads = (await operations(guarded)).filter((o) => o.method === 'GET' && o.path.startsWith('/api/') && o.path !== '/api/health')
      expect(reads.length).toBeGreaterThanOrEqual(10)
      for (const { path } of reads) {
        const bare = await fetch(guarded.url + path)
        expect({ path, status: bare.status }).toEqual({ path, status: 401 })
        const cancel = new AbortController() // the event stream never ends: its head is enough
        for (const headers of [{ authorization: 'Bearer read-me' }, { cookie: 'other=1; periscope_token=read-me' }] as Record<string, string>[]) {
          const res = await fetch(guarded.url + path, { headers, signal: cancel.signal })
          const via = Object.keys(headers)[0]
          expect({ path, via, refused: res.status === 401, failed: res.status >= 500 }).toEqual({ path, via, refused: false, failed: false })
        }
        cancel.abort()
      }
      expect((await fetch(`${guarded.url}/api/health`)).status).toBe(200)
      expect((await fetch(`${guarded.url}/api/recordings`, { headers: { cookie: 'periscope_token=wrong' } })).status).toBe(401)
      const byCookie = await guarded.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'cookie' }, { cookie: 'periscope_token=read-me' })
      expect(byCookie.status).toBe(401)
      const before = await state(guarded, { authorization: 'Bearer read-me' })
      expect(JSON.stringify(before)).not.toContain('cookie')
    } finally {
      await guarded.stop()
    }
  })
})

describe('per-client limits and the body deadline', () => {
  test('zip prepare: 8 at once, then 429 with Retry-After and a sentence; counted in /metrics', async () => {
    const fresh = await startContractServer({ plugins: PLUGINS })
    try {
      const statuses: number[] = []
      let refused: Awaited<ReturnType<TestServer['call']>> | null = null
      for (let i = 0; i < 10; i++) {
        const r = await fresh.call('POST', '/api/recordings/zip/prepare', ['nothing-here'])
        statuses.push(r.status)
        if (r.status === 429) refused ??= r
      }
      expect(statuses).toEqual([...Array(8).fill(404), 429, 429])
      expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
      expect(refused!.body.detail).toContain('Too many zip archives prepared')
      const m = parseMetrics((await fresh.call('GET', '/metrics')).body)
      expect(m.value('periscope_http_limited_total', { kind: 'zip_prepare' })).toBe(2)
    } finally {
      await fresh.stop()
    }
    // --client-limits off: none.
    const unlimited = await startContractServer({ plugins: PLUGINS, config: { clientLimits: false } })
    try {
      for (let i = 0; i < 12; i++) expect((await unlimited.call('POST', '/api/recordings/zip/prepare', ['nothing-here'])).status).toBe(404)
    } finally {
      await unlimited.stop()
    }
  })

  test('WHEP sessions: 20 at once, then 429 with Retry-After; counted in /metrics', async () => {
    const whep = await startContractServer({ plugins: ['mock', 'cameras', 'whep', 'metrics'] })
    try {
      const statuses: number[] = []
      for (let i = 0; i < 22; i++) {
        const res = await fetch(`${whep.url}/api/streams/${EHD}/whep`, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: 'not an offer' })
        statuses.push(res.status)
        if (res.status === 429) expect(res.headers.get('retry-after')).toMatch(/^\d+$/)
      }
      expect(statuses.slice(0, 20).filter((st) => st === 429)).toEqual([])
      expect(statuses.slice(20)).toEqual([429, 429])
      const m = parseMetrics((await whep.call('GET', '/metrics')).body)
      expect(m.value('periscope_http_limited_total', { kind: 'webrtc_session' })).toBe(2)
    } finally {
      await whep.stop()
    }
  })

  test('a body sent a byte at a time: 408 at the deadline (--body-timeout) and the connection closed', async () => {
    const slow = await startContractServer({ plugins: ['mock', 'cameras', 'recordings'], config: { bodyTimeoutSeconds: 1 } })
    try {
      const body = JSON.stringify({ bus_info: EHD, nickname: 'slow' })
      const answer = await raw(slow.url, `POST /api/devices/set_nickname HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`, body, 300)
      expect(answer.status).toBe(408)
      expect(JSON.parse(answer.body).detail).toContain('--body-timeout')
      expect(answer.closed).toBe(true)
      expect(answer.ms).toBeLessThan(5000)
      // The node:http part of the front (paths that stream with an exact length, any method) holds the same deadline.
      const viaNode = await raw(slow.url, 'POST /api/recordings/zip/download HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n', 'x'.repeat(50), 300)
      expect([viaNode.status, viaNode.closed]).toEqual([408, true])
      // A whole body in time is served as before.
      expect((await slow.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'quick' })).status).toBe(200)
    } finally {
      await slow.stop()
    }
  })
})

test('the documents: every /api/ operation lists 403, and 401 (all but /api/health); the limited ones 429', async () => {
  const doc = (await s.call('GET', '/openapi.json')).body
  const missing: string[] = []
  for (const [path, ops] of Object.entries<Record<string, { responses: Record<string, unknown> }>>(doc.paths)) {
    if (!path.startsWith('/api/')) continue
    for (const [method, op] of Object.entries(ops)) {
      if (!op.responses['403']) missing.push(`403 ${method} ${path}`)
      if (path !== '/api/health' && !op.responses['401']) missing.push(`401 ${method} ${path}`)
    }
  }
  expect(missing).toEqual([])
  expect(doc.paths['/api/recordings/zip/prepare'].post.responses['429']).toBeDefined()
})
