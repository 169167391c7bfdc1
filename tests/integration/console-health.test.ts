// The console's banner for a stream's rate alert, in real Chromium: the service runs in this process with
// a stand-in streamer whose camera (the exploreHD) runs on a real hub the test feeds at a chosen rate.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser, Page } from 'puppeteer-core'
import { loadPlugin } from '../../core/loader'
import { createLogger } from '../../core/log'
import { MediaHub } from '../../media/hub'
import { CONTRACT_PLUGINS, EHD, Feeder, standInStreamer } from '../contract/setup'
import { startTestServer, type TestServer } from '../helpers'
import { browserPid, launchBrowser, openPage, requireChromium } from './browser'
import { waitInPage } from './console.helpers'

const FPS = 20
let s: TestServer
let hub: MediaHub
let browser: Browser
let page: Page
let feeder: Feeder | undefined

beforeAll(async () => {
  requireChromium()
  hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: FPS, members: [EHD], log: createLogger('error') })
  const plugins = [...(await Promise.all([...CONTRACT_PLUGINS, 'console'].map(loadPlugin))), standInStreamer(hub)]
  s = await startTestServer({ plugins, config: { simulate: 'default' } })
  browser = await launchBrowser()
  page = await openPage(browser, s.url)
})

afterAll(async () => {
  feeder?.stop()
  hub?.close()
  const pid = browser && browserPid(browser)
  await browser?.close()
  if (pid) expect(() => process.kill(pid, 0)).toThrow()
  await s?.stop()
})

const bannerText = () => page.evaluate(() => (globalThis as any).document.querySelector('[data-banner="stream-health"]')?.textContent ?? null)

test("a stream at half its rate shows the alert's sentence in a banner, which goes by itself when the rate is back", async () => {
  await page.goto(`${s.url}/#/cameras`, { waitUntil: 'domcontentloaded' })
  await waitInPage(page, 'the cameras page', () => (globalThis as any).document.querySelector('main[data-page="cameras"]'))
  expect(await bannerText()).toBeNull()
  feeder = new Feeder(hub, FPS / 2)
  await waitInPage(page, 'the banner', () => /video at \d+ fps of 20/.test((globalThis as any).document.querySelector('[data-banner="stream-health"]')?.textContent ?? ''), 20_000)
  expect(await bannerText()).toMatch(/^exploreHD USB Camera: video at \d+ fps of 20$/)
  // A page opened while the alert is raised shows it from GET /api/devices.
  await page.reload({ waitUntil: 'domcontentloaded' })
  await waitInPage(page, 'the banner after a reload', () => (globalThis as any).document.querySelector('[data-banner="stream-health"]'), 10_000)
  feeder.setRate(FPS)
  await waitInPage(page, 'the banner gone', () => !(globalThis as any).document.querySelector('[data-banner="stream-health"]'), 20_000)
}, 60_000)
