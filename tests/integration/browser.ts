// Headless Chromium for the integration tests (Debian's /usr/bin/chromium, scripts/setup/chromium.sh,
// driven by puppeteer-core: no browser is downloaded). `withPage(origin, fn)` launches a browser, opens
// a page on the service's origin (so fetch() and <img src> are same-origin), runs fn, and closes it.
//
// Network safety: loopback only. Chromium offers only its default route's address to a page without
// camera permission; openPage grants it (a fake camera, opened once and closed) so WebRTC enumerates
// every interface, loopback included (a test-only switch), and never hides addresses behind mDNS names
// (whose multicast queries would leave the machine). The service on 127.0.0.1 answers with a loopback
// candidate only and pairs only with loopback candidates; no page configures a STUN server.
import { existsSync } from 'node:fs'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'

export const CHROMIUM = '/usr/bin/chromium'

/** Fails (never skips) when Chromium is missing, naming the setup script. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/setup/chromium.sh (apt-get install chromium)`)
}

export async function launchBrowser(): Promise<Browser> {
  requireChromium()
  return puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--allow-loopback-in-peer-connection',
      '--disable-features=WebRtcHideLocalIpsWithMdns',
      '--autoplay-policy=no-user-gesture-required',
      '--use-fake-ui-for-media-stream',
      '--use-fake-device-for-media-stream',
      '--no-first-run',
      '--no-default-browser-check',
    ],
    protocolTimeout: 60_000,
  })
}

/** A page on `origin` (the service's), so the page's fetch() and <img> talk to the service same-origin. */
export async function openPage(browser: Browser, origin: string): Promise<Page> {
  const page = await browser.newPage()
  page.on('console', (message) => {
    if (process.env.PERISCOPE_TEST_LOG === '1') process.stderr.write(`[chromium] ${message.text()}\n`)
  })
  // Any page of the service will do; /openapi.json is always there and small enough.
  await page.goto(`${origin}/openapi.json`, { waitUntil: 'domcontentloaded' })
  const granted = await page.evaluate(async () => {
    try {
      const stream = await (globalThis as any).navigator.mediaDevices.getUserMedia({ video: true }) // the page's (no DOM types here)
      for (const track of stream.getTracks()) track.stop()
      return 'ok'
    } catch (err) {
      return String(err)
    }
  })
  if (granted !== 'ok') throw new Error(`Chromium refused the fake camera that lets WebRTC offer loopback candidates: ${granted}`)
  return page
}

/** Launch, open a page on `origin`, run `fn`, and always close the browser. */
export async function withPage<T>(origin: string, fn: (page: Page, browser: Browser) => Promise<T>): Promise<T> {
  const browser = await launchBrowser()
  try {
    const page = await openPage(browser, origin)
    return await fn(page, browser)
  } finally {
    await browser.close()
  }
}

/** The browser's process id, to check it is gone after close. */
export const browserPid = (browser: Browser): number | undefined => browser.process()?.pid
