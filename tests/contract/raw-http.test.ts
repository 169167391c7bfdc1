// Hostile HTTP at the byte level, against the real service in its own process (core/main.ts, logging
// every request as in production): odd request lines, Host variants, absolute-form targets, odd methods,
// duplicate and oversized headers, bad percent-encoding, HTTP/1.0, sent to every documented route.
// The service must live through all of it, and answer JSON (never a 500, never Bun's HTML error page)
// wherever an answer is ours to give. What Bun's parser refuses before our code runs is asserted as Bun
// answers it today, so a Bun upgrade that changes it is noticed.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { rmSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { BUN, tempDir, until } from '../helpers'

const ROOT = join(import.meta.dir, '..', '..')
let service: Subprocess<'ignore', 'ignore', 'pipe'>
let port = 0
let dataDir = ''
const logs: Record<string, any>[] = []

beforeAll(async () => {
  dataDir = tempDir()
  service = Bun.spawn(
    [BUN, 'core/main.ts', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--simulate', 'default', '--log-level', 'info', '--allowed-hosts', 'rov', '--plugins', 'cameras,preferences,dwe,recordings,network,gstreamer'],
    { cwd: ROOT, stdin: 'ignore', stdout: 'ignore', stderr: 'pipe' },
  )
  // Read the log as it comes (one line per request: a pipe left unread would stall the service).
  ;(async () => {
    let rest = ''
    for await (const chunk of service.stderr as unknown as AsyncIterable<Uint8Array>) {
      const lines = (rest + new TextDecoder().decode(chunk)).split('\n')
      rest = lines.pop()!
      for (const line of lines) {
        try {
          logs.push(JSON.parse(line))
        } catch {
          logs.push({ level: 'raw', line })
        }
      }
    }
  })()
  const listening = await until('the service to listen', async () => logs.find((l) => l.msg === 'listening'), (l) => l !== undefined || service.exitCode !== null, 30_000)
  expect({ exitCode: service.exitCode, listening: listening !== undefined }).toEqual({ exitCode: null, listening: true })
  port = Number(new URL(listening!.url).port)
}, 40_000)

afterAll(async () => {
  service.kill('SIGTERM')
  await service.exited
  rmSync(dataDir, { recursive: true, force: true })
})

interface Answer {
  /** 0: the connection closed with no answer. */
  status: number
  headers: Record<string, string>
  body: string
}

/** Sends bytes as they are on a fresh connection; reads until the server closes it. */
function exchange(bytes: string | Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const socket = connect(port, '127.0.0.1', () => socket.write(typeof bytes === 'string' ? Buffer.from(bytes, 'utf8') : bytes))
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('error', () => {}) // a reset after the answer: the answer is what counts
    socket.on('close', () => resolve(parse(Buffer.concat(chunks).toString('latin1'))))
    socket.setTimeout(10_000, () => {
      socket.destroy()
      reject(new Error(`no end of answer to ${JSON.stringify(String(bytes).slice(0, 80))}`))
    })
  })
}

function parse(text: string): Answer {
  if (!text) return { status: 0, headers: {}, body: '' }
  const cut = text.indexOf('\r\n\r\n')
  const [statusLine, ...lines] = text.slice(0, cut).split('\r\n')
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  let body = text.slice(cut + 4)
  if (headers['transfer-encoding'] === 'chunked') {
    let out = ''
    for (let at = 0; ; ) {
      const eol = body.indexOf('\r\n', at)
      const size = parseInt(body.slice(at, eol), 16)
      if (!size) break
      out += body.slice(eol + 2, eol + 2 + size)
      at = eol + 2 + size + 2
    }
    body = out
  }
  return { status: Number(statusLine!.split(' ')[1]), headers, body }
}

/** An answer of ours: JSON, never a 500 (502-504 are backends failing, not bugs), `detail` when it refuses. */
function expectOurs(what: string, a: Answer): void {
  const summary = { what, status: a.status, type: a.headers['content-type'], body: a.body.slice(0, 200) }
  expect(summary.status).toBeGreaterThan(0)
  expect(a.status === 500 || a.status > 504 ? summary : 'ok').toBe('ok')
  expect(a.headers['content-type']?.startsWith('application/json') ? 'json' : summary).toBe('json')
  const body = JSON.parse(a.body)
  if (a.status >= 400) expect(body).toHaveProperty('detail')
}


const alive = async () => {
  expect(service.exitCode).toBeNull()
  expectOurs('health', await exchange('GET /api/health HTTP/1.1\r\nHost: rov\r\nConnection: close\r\n\r\n'))
}

/** Every documented operation, with 'x' for its path parameters (the event stream never ends: left out). */
async function operations(): Promise<{ method: string; path: string }[]> {
  const doc = JSON.parse((await exchange('GET /openapi.json HTTP/1.1\r\nHost: rov\r\nConnection: close\r\n\r\n')).body)
  return Object.entries<Record<string, unknown>>(doc.paths)
    .filter(([template]) => template !== '/api/events')
    .flatMap(([template, ops]) => Object.keys(ops).map((method) => ({ method: method.toUpperCase(), path: template.replace(/\{[^}]+\}/g, 'x') })))
}

/** Request variants our code answers (Bun lets them through): the request line and headers around `method path`. */
const OURS: [string, (method: string, path: string) => string][] = [
  ['HTTP/1.0 without Host', (m, p) => `${m} ${p} HTTP/1.0\r\n`],
  ['empty Host', (m, p) => `${m} ${p} HTTP/1.1\r\nHost:\r\n`],
  ['Host: a (shorter than Elysia expects)', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: a\r\n`],
  ['Host: [::1]', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: [::1]\r\n`],
  ['Host: évil (UTF-8)', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: évil\r\n`],
  ['Host twice', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: a\r\nHost: b.example\r\n`],
  ['Host with a port past 65535', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: rov:99999\r\n`],
  ['Host that is no URL host (1.2.3.4.5)', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: 1.2.3.4.5\r\n`],
  ['Host: a/b?c#d', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: a/b?c#d\r\n`],
  ['Host: user@rov', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: user@rov\r\n`],
  ['a space in the Host', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: a b\r\n`],
  ['absolute-form target', (m, p) => `${m} http://elsewhere${p} HTTP/1.1\r\nHost: elsewhere\r\n`],
  ['absolute-form target, another host and no Host', (m, p) => `${m} http://x:1${p} HTTP/1.0\r\n`],
  ['bad percent-encoding in the query', (m, p) => `${m} ${p}${p.includes('?') ? '&' : '?'}%zz=%C0%AF&path=%00 HTTP/1.1\r\nHost: rov\r\n`],
  ['a 15 KiB header (Bun takes 16 KiB of headers)', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: rov\r\nX-Big: ${'a'.repeat(15 << 10)}\r\n`],
  ['190 headers (Bun takes 198 in all)', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: rov\r\n${Array.from({ length: 190 }, (_, i) => `X-H${i}: ${i}\r\n`).join('')}`],
  ['duplicate Content-Type', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: rov\r\nContent-Type: text/plain\r\nContent-Type: application/json\r\n`],
  ['Origin and Authorization of no one', (m, p) => `${m} ${p} HTTP/1.1\r\nHost: rov\r\nOrigin: null\r\nAuthorization: Bearer ../..\r\n`],
  ['HEAD', (m, p) => `${m === 'GET' ? 'HEAD' : m} ${p} HTTP/1.1\r\nHost: rov\r\n`],
  ['TRACE', (_, p) => `TRACE ${p} HTTP/1.1\r\nHost: rov\r\n`],
]

const finish = (method: string, head: string) => {
  const body = ['POST', 'PUT', 'PATCH'].includes(method) ? '{}' : ''
  return `${head}Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`
}

describe('raw HTTP against every documented route (the service in its own process)', () => {
  test('every variant is answered in JSON by our code, and the service lives', async () => {
    const ops = await operations()
    expect(ops.length).toBeGreaterThan(30)
    for (const { method, path } of ops) {
      for (const [what, line] of OURS) {
        const a = await exchange(finish(method, line(method, path)))
        if (line(method, path).startsWith('HEAD ')) {
          expect({ what, method, path, status: a.status, body: a.body }).toMatchObject({ status: expect.any(Number), body: '' })
          expect(a.headers['content-type']).toStartWith('application/json')
          expect(a.status === 500 ? 'a 500' : 'ok').toBe('ok')
        } else expectOurs(`${what}: ${method} ${path}`, a)
      }
    }
    await alive()
    // Nothing escaped a handler: no failure of the front, no unhandled error, nothing the logger could not write.
    expect(logs.filter((l) => l.level === 'error' || l.level === 'raw')).toEqual([])
    // Every request was logged, with a path (the log hook reads every URL it is given). The last lines may
    // still be in the pipe from the service's stdout (2 of 940 were, on a loaded machine): waited for.
    const requests = () => logs.filter((l) => l.msg === 'request').length
    await until('every request logged', async () => requests(), (n) => n >= ops.length * OURS.length, 10_000).catch(() => {})
    expect(requests()).toBeGreaterThanOrEqual(ops.length * OURS.length)
  }, 120_000)

  test('TRACE and other methods on a path that does not serve them: 405 with Allow and a JSON body', async () => {
    const a = await exchange('TRACE /api/devices HTTP/1.1\r\nHost: rov\r\nConnection: close\r\n\r\n')
    expect(a.status).toBe(405)
    expect(a.headers.allow).toBe('GET, HEAD')
    expect(JSON.parse(a.body)).toEqual({ detail: 'Method Not Allowed' })
    const b = await exchange('DELETE /api/health HTTP/1.0\r\n\r\n')
    expect(b.status).toBe(405)
    expect(JSON.parse(b.body)).toEqual({ detail: 'Method Not Allowed' })
  })

  test('the service lives through what Bun refuses itself; Bun answers these before our code, as asserted', async () => {
    // [what, bytes, Bun's status (0: it closes without an answer)]
    const refused: [string, string, number][] = [
      ['HTTP/1.1 without Host', 'GET /api/health HTTP/1.1\r\nConnection: close\r\n\r\n', 400],
      ['OPTIONS *', 'OPTIONS * HTTP/1.1\r\nHost: rov\r\nConnection: close\r\n\r\n', 400],
      ['CONNECT', 'CONNECT rov:80 HTTP/1.1\r\nHost: rov:80\r\nConnection: close\r\n\r\n', 0],
      ['an unknown method', 'FOO /api/health HTTP/1.1\r\nHost: rov\r\nConnection: close\r\n\r\n', 400],
      ['a lowercase method', 'get /api/health HTTP/1.1\r\nHost: rov\r\nConnection: close\r\n\r\n', 400],
      ['HTTP/2.0 in a request line', 'GET /api/health HTTP/2.0\r\nHost: rov\r\nConnection: close\r\n\r\n', 400],
      ['garbage', 'hello\r\n\r\n', 400],
      ['two spaces in the request line', 'GET  /api/health HTTP/1.1\r\nHost: rov\r\nConnection: close\r\n\r\n', 400],
      ['a NUL in the path', 'GET /api/he\u0000alth HTTP/1.1\r\nHost: rov\r\nConnection: close\r\n\r\n', 400],
      ['obs-fold (a header continued on the next line)', 'GET /api/health HTTP/1.1\r\nHost: rov\r\nX-A: a\r\n b\r\nConnection: close\r\n\r\n', 400],
      ['a header without a colon', 'GET /api/health HTTP/1.1\r\nHost: rov\r\nNoColon\r\nConnection: close\r\n\r\n', 400],
      ['a space before the colon', 'GET /api/health HTTP/1.1\r\nHost : rov\r\nConnection: close\r\n\r\n', 400],
      ['a control character in a header value', 'GET /api/health HTTP/1.1\r\nHost: rov\r\nX-A: a\u0001b\r\nConnection: close\r\n\r\n', 400],
      ['300 headers', `GET /api/health HTTP/1.1\r\nHost: rov\r\n${Array.from({ length: 300 }, (_, i) => `X-H${i}: ${i}\r\n`).join('')}Connection: close\r\n\r\n`, 431],
      ['a 64 KiB header', `GET /api/health HTTP/1.1\r\nHost: rov\r\nX-Big: ${'a'.repeat(64 << 10)}\r\nConnection: close\r\n\r\n`, 431],
      ['two different Content-Lengths', 'POST /api/devices/set_nickname HTTP/1.1\r\nHost: rov\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}', 400],
      ['a negative Content-Length', 'POST /api/devices/set_nickname HTTP/1.1\r\nHost: rov\r\nContent-Length: -1\r\nConnection: close\r\n\r\n', 400],
      ['Content-Length and chunked', 'POST /api/devices/set_nickname HTTP/1.1\r\nHost: rov\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n', 400],
      ['a body past the front cap (16 MiB)', 'POST /api/devices/set_nickname HTTP/1.1\r\nHost: rov\r\nContent-Type: application/json\r\nContent-Length: 99999999\r\nConnection: close\r\n\r\n{}', 413],
      ['a 100 KiB request target', `GET /api/health?${'a'.repeat(100 << 10)} HTTP/1.1\r\nHost: rov\r\nConnection: close\r\n\r\n`, 431],
    ]
    // Bun's answer: the status, no body and no content type (nothing there to make JSON).
    const answers: [string, number, string, string | undefined][] = []
    for (const [what, bytes] of refused) {
      const a = await exchange(bytes)
      answers.push([what, a.status, a.body.slice(0, 80), a.headers['content-type']])
    }
    expect(answers).toEqual(refused.map(([what, , status]) => [what, status, '', undefined]))
    await alive()
    expect(logs.filter((l) => l.level === 'error' || l.level === 'raw')).toEqual([])
  }, 60_000)

  test("a body over the app's limit (under the front's cap) is our JSON 413", async () => {
    const body = `{"bus_info": "${'a'.repeat(1 << 20)}", "nickname": "x"}`
    const a = await exchange(`POST /api/devices/set_nickname HTTP/1.1\r\nHost: rov\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`)
    expect(a.status).toBe(413)
    expect(JSON.parse(a.body).detail).toContain('larger than the limit')
  })
})
