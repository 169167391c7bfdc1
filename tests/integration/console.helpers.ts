// The web console in real Chromium against the real service (core/main.ts, simulated cameras, real
// GStreamer): `openConsole()` starts both, collects what the page logs as errors, and saves a
// screenshot per page under .tmp/artifacts/console/. Loopback only: the service listens on 127.0.0.1.
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Browser, Page } from 'puppeteer-core'
import { launchBrowser, openPage } from './browser'
import { until } from '../helpers'
import { startService, type Service } from './service.helpers'

export const ARTIFACTS = join(import.meta.dir, '../../.tmp/artifacts/console')

export const CONSOLE_PAGES = ['cameras', 'pilot', 'recordings', 'network', 'preferences', 'status'] as const
export type ConsolePage = (typeof CONSOLE_PAGES)[number]

/** An answer of 400 or more that the page received (Chromium also logs each as a console error). */
export interface Refusal {
  method: string
  url: string
  status: number
}

export interface ConsoleSession {
  service: Service
  browser: Browser
  page: Page
  /** http://127.0.0.1:<port>: the service's own origin (where the tests check the API independently). */
  origin: string
  /** Where the browser opens the console: the service's `/`, or the front's URL with its prefix. */
  pageUrl: string
  /** Console errors and uncaught exceptions, less Chromium's line for each refused request (those are in `refusals`). */
  errors(): string[]
  refusals: Refusal[]
  /** Opens a page of the console (a full load) and waits until it is drawn. */
  open(name: ConsolePage): Promise<void>
  /** Saves a PNG of the viewport as .tmp/artifacts/console/<name>.png and returns its path. */
  screenshot(name: string): Promise<string>
  close(): Promise<void>
}

export interface ConsoleOptions {
  /** More flags for the service (`--token`, `--simulate fleet`). */
  args?: string[]
  viewport?: { width: number; height: number }
  /** Starts the service another way (inside the NetworkManager lab's namespace); `args` is then unused. */
  service?: () => Promise<Service>
  /** Launches the browser another way (inside that namespace). */
  browser?: () => Promise<Browser>
  /** A reverse proxy in front of the service (nginx.helpers.ts): the page is opened through it. */
  front?: (service: Service) => Promise<Front>
}

/** What stands between the browser and the service. */
export interface Front {
  /** The page's URL through it (ending in `/`). */
  pageUrl: string
  stop(): Promise<void>
}

export async function openConsole(options: ConsoleOptions = {}): Promise<ConsoleSession> {
  const service = await (options.service ?? (() => startService({ args: options.args })))()
  let browser: Browser | undefined
  let front: Front | undefined
  try {
    front = await options.front?.(service)
    const pageUrl = front?.pageUrl ?? `${service.url}/`
    browser = await (options.browser ?? launchBrowser)()
    // openPage grants the fake camera that lets WebRTC offer loopback candidates (the preview), on the
    // page's own origin and prefix.
    const page = await openPage(browser, pageUrl.replace(/\/$/, ''))
    await page.setViewport(options.viewport ?? { width: 1280, height: 800 })
    const logged: { text: string; url: string }[] = []
    const refusals: Refusal[] = []
    page.on('console', (message) => {
      if (message.type() === 'error') logged.push({ text: message.text(), url: message.location()?.url ?? '' })
    })
    page.on('pageerror', (error) => logged.push({ text: `uncaught: ${(error as Error).message ?? error}`, url: '' }))
    page.on('response', (response) => {
      if (response.status() >= 400) refusals.push({ method: response.request().method(), url: response.url(), status: response.status() })
    })
    const refused = (entry: { text: string; url: string }) => /^Failed to load resource: the server responded with a status of \d+/.test(entry.text) && refusals.some((r) => r.url === entry.url)
    const session: ConsoleSession = {
      service,
      browser,
      page,
      origin: service.url,
      pageUrl,
      refusals,
      errors: () => logged.filter((entry) => !refused(entry)).map((entry) => entry.text),
      async open(name) {
        await page.goto(`${pageUrl}#/${name}`, { waitUntil: 'domcontentloaded' })
        // A hash change alone would not reload: a reload makes each open a first load.
        await page.reload({ waitUntil: 'domcontentloaded' })
        await page.waitForSelector(`main[data-page="${name}"] h1`, { timeout: 15_000 })
      },
      async screenshot(name) {
        mkdirSync(ARTIFACTS, { recursive: true })
        const path = join(ARTIFACTS, `${name}.png`)
        await page.screenshot({ path: path as `${string}.png` })
        return path
      },
      async close() {
        await browser?.close().catch(() => {})
        await front?.stop()
        await service.kill()
      },
    }
    return session
  } catch (e) {
    await browser?.close().catch(() => {})
    await front?.stop()
    await service.kill()
    throw e
  }
}

/** Waits until `fn` (run in the page) returns something truthy; fails naming what it waited for. */
export async function waitInPage(page: Page, what: string, fn: () => unknown, timeoutMs = 10_000): Promise<void> {
  try {
    await page.waitForFunction(fn, { timeout: timeoutMs, polling: 50 })
  } catch (e) {
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${(e as Error).message}`)
  }
}

/** The pictures each of two previews has shown so far. */
export interface PreviewPictures {
  whep: number
  mjpeg: number
}

/**
 * Counts, in the page and independently of the cards' code, the pictures a WebRTC preview (`whep`, the
 * selector of its `[data-preview]` box: each frame its <video> presents, a remounted <video> too) and an
 * MJPEG preview (`mjpeg`: each new picture its <img> is given) show. `plays` waits until each has shown
 * 10 more and neither box is marked frozen; `shown` reads the counts.
 */
export async function countPreviewPictures(page: Page, whep: string, mjpeg: string): Promise<{ shown(): Promise<PreviewPictures>; plays(what: string, timeoutMs: number): Promise<void> }> {
  await page.evaluate((whepSel: string, mjpegSel: string) => {
    const w = globalThis as any
    const shown = (w.previewPictures = { whep: 0, mjpeg: 0 })
    const watchVideo = () => {
      const video = w.document.querySelector(`${whepSel} video`)
      if (video && !video.counted) {
        video.counted = true
        const frame = () => {
          shown.whep++
          video.requestVideoFrameCallback(frame)
        }
        video.requestVideoFrameCallback(frame)
      }
    }
    watchVideo()
    new w.MutationObserver((changes: any[]) => {
      watchVideo()
      if (changes.some((m) => m.type === 'attributes' && m.attributeName === 'src' && m.target.closest?.(mjpegSel))) shown.mjpeg++
    }).observe(w.document.body, { attributes: true, subtree: true, childList: true })
  }, whep, mjpeg)
  const shown = () => page.evaluate(() => ({ ...(globalThis as any).previewPictures }) as PreviewPictures)
  return {
    shown,
    async plays(what, timeoutMs) {
      const from = await shown()
      try {
        await page.waitForFunction(
          (f: PreviewPictures, a: string, b: string) => {
            const w = globalThis as any
            return w.previewPictures.whep >= f.whep + 10 && w.previewPictures.mjpeg >= f.mjpeg + 10 && !w.document.querySelector(`${a}[data-frozen], ${b}[data-frozen]`)
          },
          { timeout: timeoutMs, polling: 50 },
          from,
          whep,
          mjpeg,
        )
      } catch (e) {
        const state = await page.evaluate((a: string, b: string) => [a, b].map((sel) => (globalThis as any).document.querySelector(sel)?.textContent ?? 'gone'), whep, mjpeg).catch(() => [])
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${(e as Error).message}; the cards said ${JSON.stringify(state)}`)
      }
    },
  }
}

/** Polls `shown` until each preview has shown a picture past `from` (or `giveUpMs` passed): ms after `since` for each, 0 for none. */
export async function firstPictures(shown: () => Promise<PreviewPictures>, from: PreviewPictures, since: number, giveUpMs: number): Promise<PreviewPictures> {
  const back = { whep: 0, mjpeg: 0 }
  while ((!back.whep || !back.mjpeg) && Date.now() - since <= giveUpMs) {
    const now = await shown().catch(() => from)
    if (!back.whep && now.whep > from.whep) back.whep = Date.now() - since
    if (!back.mjpeg && now.mjpeg > from.mjpeg) back.mjpeg = Date.now() - since
    await Bun.sleep(50)
  }
  return back
}

/**
 * Streams `bus` in `encode` at its smallest size, 15 fps where offered, over UDP to `port` on the
 * service's own loopback, and waits until it runs.
 */
export async function streamSmallest(service: Pick<Service, 'call'>, bus: string, encode: 'H264' | 'MJPG', port: number): Promise<void> {
  const device = async () => ((await service.call('GET', '/api/devices')).body as any[]).find((d) => d.bus_info === bus)
  const d = await device()
  const size = d.cameras.flatMap((cam: any) => cam.formats[encode] ?? []).sort((a: any, b: any) => a.width - b.width)[0]
  const interval = size.intervals.find((i: any) => i.denominator / i.numerator === 15) ?? size.intervals[0]
  const r = await service.call('POST', '/api/devices/configure_stream', { bus_info: bus, stream_type: 'UDP', encode_type: encode, stream_format: { width: size.width, height: size.height, interval }, enabled: true, endpoints: [{ host: '127.0.0.1', port }] })
  if (r.status !== 200) throw new Error(`configure_stream ${bus} ${encode}: ${r.status} ${JSON.stringify(r.body)}`)
  await until(`${bus} streaming ${encode}`, device, (x) => x?.stream_status?.state === 'running', 20_000)
}
