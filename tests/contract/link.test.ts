// The link test's doors (plugins/link): what the console's "Test the tether" times. The bytes asked for
// and no more, an upload read and counted, and every bound: the size (422, 413), one transfer at a time
// per client (429), the vehicle's own pages only (403), and a scanner's bare GET ended at once (422).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { MAX_DOWNLOAD_BYTES, MAX_UPLOAD_BYTES } from '../../plugins/link'
import type { TestServer } from '../helpers'
import { startContractServer } from './setup'

let s: TestServer
beforeAll(async () => {
  s = await startContractServer({ plugins: ['link'] })
})
afterAll(() => s?.stop())

test("ping: the vehicle's clock, at once", async () => {
  const r = await s.call('GET', '/api/link/ping')
  expect(r.status).toBe(200)
  expect(Math.abs(r.body.server_time - Date.now())).toBeLessThan(1000)
})

test('download: exactly the bytes asked for, incompressible, not cached', async () => {
  const res = await fetch(`${s.url}/api/link/download?bytes=${3 * 256 * 1024 + 5}`)
  expect(res.status).toBe(200)
  expect(res.headers.get('cache-control')).toBe('no-store')
  const bytes = new Uint8Array(await res.arrayBuffer())
  expect(bytes.length).toBe(3 * 256 * 1024 + 5)
  // Random bytes: gzip makes them no smaller.
  expect(Bun.gzipSync(bytes).length).toBeGreaterThan(bytes.length * 0.99)
})

test('upload: the body is read and counted, not kept; past the bound, 413', async () => {
  const r = await fetch(`${s.url}/api/link/upload`, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: new Uint8Array(5 << 20) })
  expect(r.status).toBe(200)
  // Timed from its first chunk to its last: what came after the first, and how long it took.
  const answer = (await r.json()) as { bytes: number; timed_bytes: number; seconds: number }
  expect(answer.bytes).toBe(5 << 20)
  expect(answer.timed_bytes).toBeLessThan(answer.bytes)
  expect(answer.timed_bytes).toBeGreaterThan(0)
  expect(answer.seconds).toBeGreaterThanOrEqual(0)
  const big = await fetch(`${s.url}/api/link/upload`, { method: 'POST', body: new Uint8Array(MAX_UPLOAD_BYTES + 1) })
  expect([413]).toContain(big.status)
})

test("the bounds: a size past the most or none (a scanner's bare GET) is 422 at once; one transfer at a time per client (429); a page of another site is refused (403)", async () => {
  expect((await fetch(`${s.url}/api/link/download?bytes=${MAX_DOWNLOAD_BYTES + 1}`)).status).toBe(422)
  const bare = await fetch(`${s.url}/api/link/download`, { signal: AbortSignal.timeout(2000) })
  expect(bare.status).toBe(422)
  await bare.text()
  // A download left unread holds the client's one transfer: a second is refused until it ends.
  const held = new AbortController()
  const first = await fetch(`${s.url}/api/link/download?bytes=${MAX_DOWNLOAD_BYTES}`, { signal: held.signal })
  expect(first.status).toBe(200)
  const second = await fetch(`${s.url}/api/link/download?bytes=1000`)
  expect(second.status).toBe(429)
  expect(((await second.json()) as { detail: string }).detail).toContain('One link test transfer at a time')
  held.abort()
  await first.body?.cancel().catch(() => {})
  const after = await (async () => {
    for (let i = 0; i < 100; i++) {
      const r = await fetch(`${s.url}/api/link/download?bytes=1000`)
      if (r.status !== 429) return r
      await r.text()
      await Bun.sleep(50)
    }
    throw new Error('the held transfer was never released')
  })()
  expect(after.status).toBe(200)
  expect((await after.arrayBuffer()).byteLength).toBe(1000)
  for (const site of ['cross-site', 'same-site']) {
    const r = await fetch(`${s.url}/api/link/download?bytes=1000`, { headers: { 'sec-fetch-site': site } })
    expect(r.status).toBe(403)
  }
  expect((await fetch(`${s.url}/api/link/download?bytes=1000`, { headers: { 'sec-fetch-site': 'same-origin' } })).status).toBe(200)
  // The client's bucket: a few tests at once, then one every 10 s (429 with Retry-After).
  let limited: Response | undefined
  for (let i = 0; i < 10 && !limited; i++) {
    const r = await fetch(`${s.url}/api/link/download?bytes=1000`)
    if (r.status === 429) limited = r
    else await r.arrayBuffer()
  }
  expect(limited).toBeDefined()
  expect(Number(limited!.headers.get('retry-after'))).toBeGreaterThan(0)
  expect(((await limited!.json()) as { detail: string }).detail).toContain('Too many link test transfers')
})
