// The web console's first load and its idle cost, on the real service (core/main.ts, simulated cameras):
//  1. what a first load transfers: the page, JS and CSS as sent gzipped (the service keeps each asset
//     gzipped beside its plain bytes; target ≤ 300 kB of JS gzipped), beside the API's own Swagger UI page
//     at /docs (the other page the service serves; it is sent uncompressed);
//  2. in headless Chromium, each load in a fresh browser context (empty cache): time to first paint and
//     to the camera cards shown (target ≤ 1 s), beside /docs' first paint and its operations listed;
//  3. the service's CPU while one console is open on the Cameras page and idle, against no console,
//     alternating windows (streams stopped: what a pilot leaves open between dives), and the requests the
//     page made meanwhile (it should make none: it follows /api/events and never polls).
// `bun run bench/console.bench.ts [--loads 5] [--seconds 20] [--rounds 2]`
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import type { Browser, Page } from 'puppeteer-core'
import { launchBrowser } from '../tests/integration/browser'
import { TICK, cpuTicks, freePort, numberArg, waitHttp } from './lib'

const LOADS = numberArg('loads', 5)
const SECONDS = numberArg('seconds', 20)
const ROUNDS = numberArg('rounds', 2)
const ROOT = join(import.meta.dir, '..')

const port = await freePort()
const url = `http://127.0.0.1:${port}`
const service = Bun.spawn(
  [process.execPath, join(ROOT, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(port), '--data-dir', mkdtempSync(join(tmpdir(), 'periscope-console-bench-')), '--simulate', 'default', '--rtsp-port', '0', '--log-level', 'error'],
  { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' },
)

const kB = (bytes: number) => `${(bytes / 1000).toFixed(1)} kB`
const ms = (v: number) => `${v.toFixed(0)} ms`
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/** An answer's body as sent (not decoded) when asking for gzip, and its encoding. */
async function sent(path: string): Promise<{ bytes: number; plain: number; encoding: string | null; text: string }> {
  const raw = await fetch(url + path, { headers: { 'accept-encoding': 'gzip' }, decompress: false } as RequestInit)
  const bytes = (await raw.arrayBuffer()).byteLength
  const plain = await fetch(url + path, { headers: { 'accept-encoding': 'identity' } })
  const text = await plain.text()
  return { bytes, plain: new TextEncoder().encode(text).byteLength, encoding: raw.headers.get('content-encoding'), text }
}

/** One load in a fresh context: first paint, and when `ready` first matched (ms since navigation start). */
async function load(browser: Browser, path: string, ready: string): Promise<{ paint: number; ready: number; transferred: number }> {
  const context = await browser.createBrowserContext()
  try {
    const page: Page = await context.newPage()
    await page.setViewport({ width: 1280, height: 800 })
    // Installed before the page's own scripts: notes when `ready` first appears.
    await page.evaluateOnNewDocument((selector: string) => {
      const w = globalThis as any
      new w.MutationObserver((_: unknown, observer: any) => {
        if (w.document.querySelector(selector)) {
          w.readyAt = performance.now()
          observer.disconnect()
        }
      }).observe(w.document, { childList: true, subtree: true })
    }, ready)
    await page.goto(url + path, { waitUntil: 'load' })
    await page.waitForFunction(() => (globalThis as any).readyAt !== undefined, { timeout: 30_000, polling: 20 })
    return await page.evaluate(() => {
      const w = globalThis as any
      const paint = performance.getEntriesByName('first-paint')[0]?.startTime ?? NaN
      const resources = performance.getEntriesByType('resource') as any[]
      const navigation = performance.getEntriesByType('navigation' as any)[0] as any
      const transferred = resources.reduce((sum, r) => sum + (r.initiatorType === 'fetch' || r.initiatorType === 'other' ? 0 : r.transferSize), navigation?.transferSize ?? 0)
      return { paint, ready: w.readyAt as number, transferred }
    })
  } finally {
    await context.close()
  }
}

/** Service CPU (% of one core) over SECONDS. */
async function cpuOver(seconds: number): Promise<number> {
  const t0 = cpuTicks(service.pid)
  const at = performance.now()
  await Bun.sleep(seconds * 1000)
  return ((cpuTicks(service.pid) - t0) / TICK / ((performance.now() - at) / 1000)) * 100
}

let browser: Browser | undefined
try {
  await waitHttp(`${url}/api/devices`)
  const devices = ((await (await fetch(`${url}/api/devices`)).json()) as unknown[]).length

  // 1. bytes
  const html = await sent('/')
  // Named relative to the page (so a proxy's prefix is kept): from `/`, a leading slash makes them the service's paths.
  const assets = [...html.text.matchAll(/(?:src|href)="(console\/[^"]+)"/g)].map((m) => `/${m[1]!}`)
  const js = await Promise.all(assets.filter((a) => a.endsWith('.js')).map(sent))
  const css = await Promise.all(assets.filter((a) => a.endsWith('.css')).map(sent))
  const sum = (xs: { bytes: number }[]) => xs.reduce((s, x) => s + x.bytes, 0)
  const plainSum = (xs: { plain: number }[]) => xs.reduce((s, x) => s + x.plain, 0)
  const docs = await sent('/docs')
  const docsAssets = [...docs.text.matchAll(/(?:src|href)="(\/docs\/assets\/[^"]+)"/g)].map((m) => m[1]!)
  const docsFiles = await Promise.all(docsAssets.map(sent))
  console.log(`first load of / with ${devices} simulated cameras: bytes as sent to a client that accepts gzip`)
  console.log(`  page ${kB(html.bytes)} (${html.encoding ?? 'plain'}), JS ${kB(sum(js))} gzipped (${kB(plainSum(js))} plain; target ≤ 300 kB gzipped), CSS ${kB(sum(css))} gzipped (${kB(plainSum(css))} plain)`)
  console.log(`  baseline /docs (Swagger UI, same service): page + assets ${kB(docs.bytes + sum(docsFiles))} as sent (${docsFiles.map((f) => f.encoding ?? 'plain').join(', ')}); gzip would make them ${kB(gzipSync(docs.text).byteLength + docsFiles.reduce((s, f) => s + gzipSync(Buffer.from(f.text)).byteLength, 0))}`)
  console.log(`  ratio console / docs, bytes as sent: ${((html.bytes + sum(js) + sum(css)) / (docs.bytes + sum(docsFiles))).toFixed(3)}`)

  // 2. first paint, cards shown
  browser = await launchBrowser()
  const consoleLoads: Awaited<ReturnType<typeof load>>[] = []
  const docsLoads: Awaited<ReturnType<typeof load>>[] = []
  for (let i = 0; i < LOADS; i++) {
    consoleLoads.push(await load(browser, '/#/cameras', '[data-device]'))
    docsLoads.push(await load(browser, '/docs', '.opblock'))
  }
  const row = (name: string, loads: Awaited<ReturnType<typeof load>>[], what: string) =>
    console.log(`  ${name.padEnd(8)} first paint median ${ms(median(loads.map((l) => l.paint)))} (max ${ms(Math.max(...loads.map((l) => l.paint)))}), ${what} median ${ms(median(loads.map((l) => l.ready)))} (max ${ms(Math.max(...loads.map((l) => l.ready)))}), transferred ${kB(median(loads.map((l) => l.transferred)))}`)
  console.log(`\nin headless Chromium, ${LOADS} loads each in a fresh context (no cache), ms since navigation start`)
  row('console', consoleLoads, 'camera cards shown (target ≤ 1000 ms)')
  row('/docs', docsLoads, 'operations listed')
  console.log(`  ratio console / docs: first paint ${(median(consoleLoads.map((l) => l.paint)) / median(docsLoads.map((l) => l.paint))).toFixed(2)}, ready ${(median(consoleLoads.map((l) => l.ready)) / median(docsLoads.map((l) => l.ready))).toFixed(2)}`)

  // 3. idle CPU
  console.log(`\nservice CPU (% of one core), ${SECONDS} s windows, alternating, streams stopped`)
  const none: number[] = []
  const open: number[] = []
  let requests = 0
  for (let round = 0; round < ROUNDS; round++) {
    none.push(await cpuOver(SECONDS))
    const page = await browser.newPage()
    await page.goto(`${url}/#/cameras`, { waitUntil: 'load' })
    await page.waitForSelector('[data-device]')
    await Bun.sleep(1000) // its first requests answered
    const count = () => requests++
    page.on('request', count)
    open.push(await cpuOver(SECONDS))
    page.off('request', count)
    await page.close()
  }
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
  console.log(`  no console      ${none.map((v) => v.toFixed(2)).join(', ')}  mean ${mean(none).toFixed(2)}`)
  console.log(`  one console     ${open.map((v) => v.toFixed(2)).join(', ')}  mean ${mean(open).toFixed(2)}`)
  console.log(`  difference ${(mean(open) - mean(none)).toFixed(2)} points of a core; ratio ${(mean(open) / mean(none)).toFixed(2)}; requests the idle page made: ${requests} (its event stream stays open: one keep-alive comment every 5 s)`)
  console.log('(a loaded 2-core machine: figures are upper bounds)')
} finally {
  await browser?.close().catch(() => {})
  service.kill('SIGTERM')
  await service.exited
}
