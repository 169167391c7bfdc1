// The core around the operations: events, OpenAPI and Swagger, health, preferences, body limit, CORS,
// the bearer token, configuration, third-party plugins.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { loadConfig } from '../../core/config'
import { loadPlugin } from '../../core/loader'
import { BUN, FOLLOW_EVENTS, listenEvents as listen, until as waitFor, type TestServer } from '../helpers'
import { device, EHD, startContractServer } from './setup'

let s: TestServer
beforeAll(async () => {
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', join(import.meta.dir, '..', '..', 'examples', 'acme-plugin.ts')], config: { simulate: 'default' } })
})
afterAll(async () => {
  await s.stop()
})

describe('server-sent events', () => {
  test('device_removed and device_added arrive within 1 s of unplug and plug', async () => {
    const sse = listen(`${s.url}/api/events`)
    try {
      const res = await sse.ready
      expect(res.headers.get('content-type')).toContain('text/event-stream')
      const t0 = performance.now()
      await s.call('POST', '/api/mock/unplug', { bus_info: EHD })
      await until(() => sse.events.some((e) => e.type === 'device_removed'), 1000)
      const removed = sse.events.find((e) => e.type === 'device_removed')!
      expect(removed.data.bus_info).toBe(EHD)
      expect(removed.at - t0).toBeLessThan(1000)
      const t1 = performance.now()
      await s.call('POST', '/api/mock/plug', { bus_info: EHD })
      await until(() => sse.events.some((e) => e.type === 'device_added'), 1000)
      const added = sse.events.find((e) => e.type === 'device_added')!
      expect(added.data.bus_info).toBe(EHD)
      expect(added.data.device.string3).toBe('EHD0001')
      expect(added.at - t1).toBeLessThan(1000)
      await s.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'x' })
      await until(() => sse.events.some((e) => e.type === 'device_updated'), 1000)
      await s.call('POST', '/api/preferences/save_preferences', { default_stream: { host: '127.0.0.2', port: 5600 } })
      await until(() => sse.events.some((e) => e.type === 'preferences_updated'), 1000)
      expect(sse.events.find((e) => e.type === 'preferences_updated')!.data.default_stream.host).toBe('127.0.0.2')
    } finally {
      sse.close()
    }
  })
})

describe('preferences', () => {
  test('defaults, save replaces whole, read back, recommended host', async () => {
    const fresh = await startContractServer()
    try {
      // Simulated cameras: the default stream host is loopback (tests/contract/loopback.test.ts).
      expect(await fresh.call('GET', '/api/preferences')).toMatchObject({ status: 200, body: { default_stream: { host: '127.0.0.1', port: 5600 }, suggest_host: true, frequency_offset: 0 } })
      expect(await fresh.call('POST', '/api/preferences/save_preferences', { suggest_host: false, frequency_offset: 0.5 })).toMatchObject({ status: 200, body: { success: true } })
      // Left out of a save, default_stream takes this machine's default: loopback, cameras being simulated.
      expect((await fresh.call('GET', '/api/preferences')).body).toEqual({ default_stream: { host: '127.0.0.1', port: 5600 }, suggest_host: false, frequency_offset: 0.5 })
      expect(await fresh.call('GET', '/api/preferences/get_recommended_host')).toMatchObject({ status: 200, body: { host: '127.0.0.1' } })
    } finally {
      await fresh.stop()
    }
  })
})

describe('OpenAPI and Swagger UI', () => {
  test('OpenAPI 3.1 document at version 0.1.0 with the spec component names and every response', async () => {
    const { status, body: doc } = await s.call('GET', '/openapi.json')
    expect(status).toBe(200)
    expect(doc.openapi).toBe('3.1.0')
    expect(doc.info.version).toBe('0.1.0')
    for (const name of ['DeviceModel', 'CameraModel', 'FormatSizeModel', 'IntervalModel', 'ControlModel', 'ControlFlagsModel', 'MenuItemModel', 'StreamModel', 'DeviceInfoModel', 'FrameDropStats', 'HTTPValidationError', 'ValidationError']) {
      expect(doc.components.schemas[name]).toBeDefined()
    }
    expect(doc.components.schemas.DeviceModel.properties.cameras.anyOf[0].items).toEqual({ $ref: '#/components/schemas/CameraModel' })
    const ops = Object.entries(doc.paths).flatMap(([path, methods]: [string, any]) => Object.entries(methods).map(([m, op]: [string, any]) => ({ path, m, op })))
    for (const { path, op } of ops) {
      expect(op.responses['200']).toBeDefined()
      if (op.requestBody) expect(op.responses['422'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/HTTPValidationError' })
      if (path.startsWith('/api/devices') && path !== '/api/devices') expect(op.tags).toEqual(['cameras'])
    }
    expect(doc.paths['/api/devices'].get.responses['200'].content['application/json'].schema).toEqual({ type: 'array', items: { $ref: '#/components/schemas/DeviceModel' } })
    expect(doc.paths['/api/devices/set_uvc_control'].post.responses['404']).toBeDefined()
  })

  test('Swagger UI is served with its assets from the package (no CDN at sea)', async () => {
    const page = await fetch(`${s.url}/docs`)
    const html = await page.text()
    expect(page.status).toBe(200)
    expect(html).toContain('/docs/assets/swagger-ui-bundle.js')
    expect(html).not.toContain('unpkg.com')
    const js = await fetch(`${s.url}/docs/assets/swagger-ui-bundle.js`)
    expect(js.status).toBe(200)
    expect((await js.arrayBuffer()).byteLength).toBeGreaterThan(100_000)
    expect((await fetch(`${s.url}/docs/assets/..%2Fpackage.json`)).status).toBe(404)
  })
})

describe('health, limits, CORS, token, unknown routes', () => {
  test('health lists every plugin and backend', async () => {
    const { body } = await s.call('GET', '/api/health')
    expect(body).toMatchObject({ status: 'ok', version: '0.1.0' })
    expect(typeof body.uptime_s).toBe('number')
    expect(Object.keys(body.plugins)).toEqual(['mock', 'cameras', 'preferences', 'dwe', 'acme'])
    expect(body.backends['camera[0]']).toBe('mock:mock')
  })

  test('a body over the limit is a 413 in the error shape, with or without Content-Length', async () => {
    const big = JSON.stringify({ bus_info: 'x'.repeat(1_100_000), nickname: 'a' })
    const r = await s.call('POST', '/api/devices/set_nickname', big)
    expect(r.status).toBe(413)
    expect(r.body.detail).toContain('1048576')
    const chunked = new ReadableStream({
      start(c) {
        for (let i = 0; i < 12; i++) c.enqueue(new TextEncoder().encode('x'.repeat(100_000)))
        c.close()
      },
    })
    const res = await fetch(`${s.url}/api/devices/set_nickname`, { method: 'POST', body: chunked, headers: { 'content-type': 'application/json' } })
    expect(res.status).toBe(413)
  })

  test('each instance keeps its own body limit (two apps in one process)', async () => {
    const small = await startContractServer({ config: { bodyLimit: 1000 } })
    try {
      const body = { bus_info: EHD, nickname: 'n'.repeat(60), pad: 'x'.repeat(1500) }
      expect((await small.call('POST', '/api/devices/set_nickname', body)).status).toBe(413)
      expect((await s.call('POST', '/api/devices/set_nickname', body)).status).toBe(200)
    } finally {
      await small.stop()
    }
  })

  test('CORS preflight and headers for a UI on another of the vehicle\'s origins; a page elsewhere refused; * only when configured', async () => {
    const pre = await fetch(`${s.url}/api/devices/set_nickname`, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' } })
    expect(pre.status).toBe(204)
    expect(pre.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
    const get = await fetch(`${s.url}/api/devices`, { headers: { origin: 'http://localhost:5173' } })
    expect(get.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
    const elsewhere = await fetch(`${s.url}/api/devices/set_nickname`, { method: 'OPTIONS', headers: { origin: 'http://ui.example', 'access-control-request-method': 'POST' } })
    expect(elsewhere.status).toBe(403)
    expect(((await elsewhere.json()) as { detail: string }).detail).toContain('http://ui.example')
    const open = await startContractServer({ config: { corsOrigins: ['*'] } })
    try {
      const any = await fetch(`${open.url}/api/devices`, { headers: { origin: 'http://ui.example' } })
      expect([any.status, any.headers.get('access-control-allow-origin')]).toEqual([200, '*'])
    } finally {
      await open.stop()
    }
  })

  test('unknown paths are 404 in the error shape', async () => {
    expect(await s.call('GET', '/api/nothing')).toMatchObject({ status: 404, body: { detail: 'Not Found' } })
  })

  test('a configured bearer token guards mutating operations only', async () => {
    const guarded = await startContractServer({ config: { token: 's3cret', corsOrigins: ['http://ui.local'] } })
    try {
      expect((await guarded.call('GET', '/api/devices')).status).toBe(200)
      const denied = await guarded.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'a' })
      expect(denied).toMatchObject({ status: 401, body: { detail: expect.stringContaining('Bearer') } })
      expect((await guarded.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'a' }, { authorization: 'Bearer s3cret' })).status).toBe(200)
      const other = await fetch(`${guarded.url}/api/devices`, { headers: { origin: 'http://evil.local' } })
      expect(other.headers.get('access-control-allow-origin')).toBeNull()
      const ui = await fetch(`${guarded.url}/api/devices`, { headers: { origin: 'http://ui.local' } })
      expect(ui.headers.get('access-control-allow-origin')).toBe('http://ui.local')
    } finally {
      await guarded.stop()
    }
  })
})

/** One raw HTTP/1.1 exchange over TCP (Connection: close), for what fetch() hides: framing, HEAD, Host. */
async function raw(url: string, head: string): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const { hostname, port } = new URL(url)
  const chunks: Uint8Array[] = []
  await new Promise<void>((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(head.replace(/\n/g, '\r\n') + 'Connection: close\r\n\r\n'))
    socket.on('data', (c: Buffer) => chunks.push(c))
    socket.on('end', () => resolve())
    socket.on('error', reject)
    socket.setTimeout(3000, () => reject(new Error(`no end of answer to ${head.split('\n')[0]}`)))
  })
  const text = Buffer.concat(chunks).toString('latin1')
  const cut = text.indexOf('\r\n\r\n')
  const [statusLine, ...lines] = text.slice(0, cut).split('\r\n')
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  return { status: Number(statusLine!.split(' ')[1]), headers, body: text.slice(cut + 4) }
}

describe('the HTTP front (Bun.serve routes and node:http on one port, core/front.ts)', () => {
  let f: TestServer
  beforeAll(async () => {
    // Host names the front's tests send (its routing, not the Host check: tests/contract/security.test.ts).
    f = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'recordings'], config: { allowedHosts: ['rov', 'a', 'elsewhere'] } })
  })
  afterAll(async () => {
    await f.stop()
  })

  test('the app routes run natively, and the zip download through node:http', async () => {
    // The service warns when this Bun takes no routes beside node:http (all of it would be slower).
    expect(f.logs.filter((l) => String(l.msg).includes('node:http'))).toEqual([])
    // Proof of the fast path, counted by the front as each part hands a request to the app: a Bun
    // that routed everything through node:http (or stopped taking the routes) fails here.
    const { handled, nativeRoutes } = f.app.front()!
    expect(nativeRoutes).toBeGreaterThan(10)
    const before = { ...handled }
    for (const path of ['/api/devices', '/api/health', '/api/recordings', '/api/preferences', '/api/recordings/disk', '/openapi.json']) {
      expect((await fetch(f.url + path)).status).toBeLessThan(500)
    }
    expect((await raw(f.url, 'HEAD /api/devices HTTP/1.1\nHost: rov\n')).status).toBe(200)
    expect(handled).toEqual({ native: before.native + 7, node: before.node })

    // The zip download, the one path that needs node:http: its exact Content-Length, not chunked.
    const dir = f.ctx.config.recordingsDir
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'front.mp4'), Buffer.alloc(3000, 7))
    const job = await f.call('POST', '/api/recordings/zip/prepare', ['front.mp4'])
    expect(job.status).toBe(200)
    await waitFor('the zip to be ready', async () => (await f.call('GET', `/api/recordings/zip/${job.body.token}`)).body.state, (state) => state === 'ready')
    const atDownload = { ...handled }
    const zip = await raw(f.url, `GET /api/recordings/zip/download?token=${job.body.token} HTTP/1.1\nHost: rov\n`)
    expect(zip.status).toBe(200)
    expect(zip.headers['transfer-encoding']).toBeUndefined()
    expect(Number(zip.headers['content-length'])).toBe(Buffer.byteLength(zip.body, 'latin1'))
    expect(Number(zip.headers['content-length'])).toBeGreaterThan(3000)
    expect(handled).toEqual({ native: atDownload.native, node: atDownload.node + 1 })
    // So are the routes whose patterns would catch its path (zip/:token, :name/download, :old_name/:new_name).
    expect((await f.call('GET', '/api/recordings/zip/nope')).status).toBe(404)
    expect(handled).toEqual({ native: atDownload.native, node: atDownload.node + 2 })
    rmSync(join(dir, 'front.mp4'))
  })

  test('a connection node:http answered on ends with that answer, so no native answer on it goes out without its head (Bun 1.4.5)', async () => {
    const dir = f.ctx.config.recordingsDir
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, 'keep.mkv'), Buffer.alloc(4096, 1))
    try {
      // A keep-alive client (Bun's fetch) alternating the two parts: with the connection kept, about one
      // native answer in a hundred came without its status line and headers (a malformed response; this
      // test failed at its 16th pair then).
      const failures: string[] = []
      for (let i = 0; i < 300; i++) {
        for (const path of ['/api/recordings/keep.mkv/download', '/api/health']) {
          try {
            await (await fetch(f.url + path)).arrayBuffer()
          } catch (e) {
            failures.push(`${i} ${path}: ${(e as Error).message}`)
          }
        }
      }
      expect(failures).toEqual([])
    } finally {
      rmSync(join(dir, 'keep.mkv'))
    }
  }, 60_000)

  test('JSON answers carry their exact Content-Length, not chunked framing', async () => {
    const r = await raw(f.url, 'GET /api/devices HTTP/1.1\nHost: rov\n')
    expect(r.status).toBe(200)
    expect(r.headers['transfer-encoding']).toBeUndefined()
    expect(Number(r.headers['content-length'])).toBe(Buffer.byteLength(r.body, 'latin1'))
    expect(JSON.parse(r.body).length).toBeGreaterThan(0)
  })

  test('HEAD: the GET headers and length, no body; an endless event stream answers at once', async () => {
    const get = await raw(f.url, 'GET /api/health HTTP/1.1\nHost: rov\n')
    const head = await raw(f.url, 'HEAD /api/health HTTP/1.1\nHost: rov\n')
    expect(head.status).toBe(200)
    expect(head.body).toBe('')
    expect(head.headers['content-length']).toBe(get.headers['content-length'])
    const events = await raw(f.url, 'HEAD /api/events HTTP/1.1\nHost: rov\nAccept: text/event-stream\n')
    expect(events.status).toBe(200)
    expect(events.headers['content-type']).toContain('text/event-stream')
    expect(events.body).toBe('')
  })

  test('the Host header does not move the route; absolute-form targets are taken by their path', async () => {
    // Elysia finds the path by its position in the URL, so a URL built from a short Host would shift it.
    expect((await raw(f.url, 'GET /api/health HTTP/1.1\nHost: a\n')).status).toBe(200)
    // Absolute-form targets (as proxies send them) are taken by their path, on both parts of the front.
    expect((await raw(f.url, 'GET http://elsewhere/api/health HTTP/1.1\nHost: elsewhere\n')).status).toBe(200)
    const zip = await raw(f.url, 'GET http://elsewhere/api/recordings/zip/download?token=nope HTTP/1.1\nHost: elsewhere\n')
    expect(zip.status).toBe(404)
    expect(JSON.parse(zip.body).detail).toContain('token')
    expect((await raw(f.url, 'GET ftp://elsewhere/api/recordings/zip/download HTTP/1.1\nHost: elsewhere\n')).status).toBe(400)
  })

  test('stopping the service ends open event streams (the native part) too', async () => {
    const g = await startContractServer({ plugins: ['mock', 'cameras'] })
    const res = await fetch(`${g.url}/api/events`, { headers: FOLLOW_EVENTS })
    const reader = res.body!.getReader()
    await reader.read()
    await g.stop()
    const ended = await Promise.race([reader.read().then(({ done }) => done, () => true), Bun.sleep(3000).then(() => 'still open')])
    expect(ended).toBe(true)
  })

  test('a client that hangs up on the event stream is unsubscribed (the tether pulled)', async () => {
    const before = f.ctx.events.subscribers
    const controller = new AbortController()
    const res = await fetch(`${f.url}/api/events`, { signal: controller.signal, headers: FOLLOW_EVENTS })
    await res.body!.getReader().read()
    expect(f.ctx.events.subscribers).toBe(before + 1)
    controller.abort()
    await until(() => f.ctx.events.subscribers === before, 2000)
    expect(f.ctx.events.subscribers).toBe(before)
  })

  test('an event stream starts before its first event', async () => {
    const controller = new AbortController()
    const res = await fetch(`${f.url}/api/events`, { signal: controller.signal, headers: FOLLOW_EVENTS })
    const first = await res.body!.getReader().read()
    controller.abort()
    expect(new TextDecoder().decode(first.value)).toContain(': connected')
  })
})

describe('configuration and plugins', () => {
  test('flags win over PERISCOPE_* variables; bad values are refused', () => {
    const c = loadConfig(['--port', '9000', '--simulate', '--log-level=debug'], { PERISCOPE_PORT: '8000', PERISCOPE_DATA_DIR: '/var/lib/periscope', PERISCOPE_PLUGINS: 'cameras,mock' })
    expect(c).toMatchObject({ port: 9000, simulate: 'default', logLevel: 'debug', dataDir: '/var/lib/periscope', recordingsDir: '/var/lib/periscope/recordings', plugins: ['cameras', 'mock'] })
    expect(loadConfig(['--simulate=off']).simulate).toBeNull()
    expect(() => loadConfig(['--port', '70000'])).toThrow('port must be an integer from 0 to 65535')
    expect(() => loadConfig(['--frobnicate'])).toThrow('unknown option --frobnicate')
    expect(() => loadConfig([], { PERISCOPE_LOG_LEVEL: 'loud' })).toThrow('log-level')
  })

  // Its own timeout: a child Bun, under the arm64 tier's emulation beside another suite, took 30 s (of 30).
  test('--help lists every option with its variable', () => {
    const out = Bun.spawnSync([BUN, 'run', 'core/main.ts', '--help'], { cwd: join(import.meta.dir, '..', '..') })
    const text = out.stdout.toString()
    expect(out.exitCode).toBe(0)
    for (const v of ['PERISCOPE_HOST', 'PERISCOPE_PORT', 'PERISCOPE_DATA_DIR', 'PERISCOPE_RECORDINGS_DIR', 'PERISCOPE_SIMULATE', 'PERISCOPE_PLUGINS', 'PERISCOPE_LOG_LEVEL']) expect(text).toContain(v)
  }, 90_000)

  test('a third-party plugin from a module path adds a vendor camera type and a control', async () => {
    // examples/acme-plugin.ts declares its RingCam's USB ids as a leader-capable model with a vendor control
    // in code and one declared on its extension unit; it declares a simulated camera with those ids.
    const RING_CAM = 'usb-0000:00:14.0-5'
    const ringCam = await device(s, RING_CAM)
    expect(ringCam.device_type).toBe(1)
    const ring = ringCam.controls.find((c: any) => c.control_id === -100)
    expect(ring).toMatchObject({ name: 'Ring light', value: 0, flags: { control_type: 'INTEGER', min_value: 0, max_value: 100 } })
    expect(await s.call('POST', '/api/devices/set_uvc_control', { bus_info: RING_CAM, control_id: -100, value: 40 })).toMatchObject({ status: 200, body: { value: 40 } })
    expect((await device(s, RING_CAM)).controls.find((c: any) => c.control_id === -100).value).toBe(40)
    expect((await device(s, 'usb-0000:00:14.0-4')).controls.some((c: any) => c.control_id < 0)).toBe(false) // the Logitech is not Acme's
    await expect(loadPlugin('no-such-plugin')).rejects.toThrow("unknown plugin 'no-such-plugin'")
  })
})

async function until(predicate: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs
  while (!predicate()) {
    if (performance.now() > deadline) throw new Error(`not within ${timeoutMs} ms`)
    await Bun.sleep(5)
  }
}
