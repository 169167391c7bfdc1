// The console plugin's HTTP side: the page at `/` and its hashed, gzipped assets, open without the
// token, never in the way of the API (405, 404 JSON); without the plugin `/` is the API's 404.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { gunzipSync } from 'node:zlib'
import { DEFAULT_PLUGINS } from '../../core/config'
import type { TestServer } from '../helpers'
import { CONTRACT_PLUGINS, startContractServer } from './setup'

let s: TestServer
beforeAll(async () => {
  s = await startContractServer({ plugins: [...CONTRACT_PLUGINS, 'console'], config: { token: 'sesame' } })
})
afterAll(() => s.stop())

/** The page's assets as it names them: relative (`console/…`), so that a proxy's prefix is kept. */
const assetsOf = (html: string) => [...html.matchAll(/(?:src|href)="(console\/[^"]+)"/g)].map((m) => m[1]!)

test('loaded by default', () => {
  expect(DEFAULT_PLUGINS).toContain('console')
})

test('`/` is the page, naming its script and styles by content hash; no token needed to read it', async () => {
  const res = await fetch(`${s.url}/`)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8')
  expect(res.headers.get('cache-control')).toBe('no-cache')
  const html = await res.text()
  expect(html).toStartWith('<!doctype html>')
  const assets = assetsOf(html)
  expect(assets.filter((a) => /^console\/app\.[a-z0-9]+\.js$/.test(a))).toHaveLength(1)
  expect(assets.filter((a) => /^console\/app\.[a-z0-9]+\.css$/.test(a))).toHaveLength(1)
  // No CDN: nothing but the page's own assets (and the favicon stand-in, so no request 404s).
  expect(html).not.toMatch(/https?:\/\//)
  // Nothing named from the host's root, which behind a proxy's prefix is not the service.
  expect(html).not.toMatch(/(?:src|href)="\//)
})

test("the page's one inline script (to `…/prefix/` when loaded without the final slash) is allowed by its hash, and nothing else inline", async () => {
  const res = await fetch(`${s.url}/`)
  const html = await res.text()
  const inline = [...html.matchAll(/<script>([^<]*)<\/script>/g)].map((m) => m[1]!)
  expect(inline).toHaveLength(1)
  const hash = `'sha256-${createHash('sha256').update(inline[0]!).digest('base64')}'`
  const scriptSrc = res.headers.get('content-security-policy')!.split(';').map((d) => d.trim()).find((d) => d.startsWith('script-src '))
  expect(scriptSrc).toBe(`script-src 'self' ${hash}`)
})

test('assets: plain or gzipped as asked, cached for good, HEAD with the length', async () => {
  const html = await (await fetch(`${s.url}/`)).text()
  for (const path of assetsOf(html).map((a) => `/${a}`)) {
    const plain = await fetch(s.url + path, { headers: { 'accept-encoding': 'identity' } })
    expect(plain.status).toBe(200)
    expect(plain.headers.get('content-encoding')).toBeNull()
    expect(plain.headers.get('cache-control')).toBe('public, max-age=31536000, immutable')
    expect(plain.headers.get('content-type')).toMatch(path.endsWith('.js') ? /^text\/javascript/ : /^text\/css/)
    const bytes = new Uint8Array(await plain.arrayBuffer())
    expect(bytes.byteLength).toBeGreaterThan(1000)
    // Read raw (fetch would decode it): the gzipped body is the same bytes, smaller.
    const zipped = await fetch(s.url + path, { headers: { 'accept-encoding': 'gzip' }, decompress: false } as RequestInit)
    expect(zipped.headers.get('content-encoding')).toBe('gzip')
    expect(zipped.headers.get('vary')).toBe('accept-encoding')
    const raw = new Uint8Array(await zipped.arrayBuffer())
    expect(raw.byteLength).toBeLessThan(bytes.byteLength)
    expect(new Uint8Array(gunzipSync(raw))).toEqual(bytes)
    const head = await fetch(s.url + path, { method: 'HEAD', headers: { 'accept-encoding': 'identity' } })
    expect(head.status).toBe(200)
    expect(head.headers.get('content-length')).toBe(String(bytes.byteLength))
  }
})

test('the API is untouched: an unknown asset and unknown paths are JSON 404s, other methods 405, API changes still need the token', async () => {
  expect(await s.call('GET', '/console/app.nothere.js')).toMatchObject({ status: 404, body: { detail: expect.stringContaining('reload the page') } })
  expect(await s.call('GET', '/console/..%2Fbundle.ts')).toMatchObject({ status: 404 })
  expect(await s.call('GET', '/nothing-here')).toMatchObject({ status: 404, body: { detail: 'Not Found' } })
  const post = await s.call('POST', '/', {})
  expect(post.status).toBe(405)
  expect(post.headers.get('allow')).toBe('GET, HEAD')
  expect(await s.call('POST', '/api/devices/restart_stream', { bus_info: 'x' })).toMatchObject({ status: 401 })
  expect((await s.call('GET', '/api/devices')).status).toBe(200)
})

test('documented in the OpenAPI document', async () => {
  const doc = (await s.call('GET', '/openapi.json')).body
  expect(Object.keys(doc.paths['/'])).toEqual(['get'])
  expect(doc.paths['/'].get.responses['200'].content['text/html']).toBeDefined()
  expect(doc.paths['/console/{file}'].get.responses['404']).toBeDefined()
})

test('without the console plugin, `/` is the API\'s 404 JSON', async () => {
  const bare = await startContractServer()
  try {
    expect(await bare.call('GET', '/')).toMatchObject({ status: 404, body: { detail: 'Not Found' } })
    expect((await bare.call('GET', '/console/app.js')).status).toBe(404)
  } finally {
    await bare.stop()
  }
})

test('hostile asset names are answered, never a 500, always JSON with a detail', async () => {
  // ('..' alone is not sent: fetch resolves '/console/..' to '/', the page.)
  const noise = ['%', '%00', '%25', '%2F', '%C0%AF', '%zz', '..%2F..%2Fpackage.json', 'a'.repeat(3000), '%F0%9F%98%80', 'app.js%00.css']
  for (const name of noise) {
    for (const method of ['GET', 'HEAD']) {
      const res = await fetch(`${s.url}/console/${name}`, { method })
      expect([name, [404, 422].includes(res.status)]).toEqual([name, true])
      if (method === 'GET') expect(typeof ((await res.json()) as { detail: unknown }).detail).not.toBe('undefined')
    }
  }
})
