// The Cameras page's live preview in real Chromium against the real service (simulated cameras, real
// GStreamer), started with --max-viewers 1 so a live view can really be refused: another client (a
// second page of the browser) takes the one place, and the card falls back to snapshots that refresh
// and says why. The previews switch (all cards, and one card) stops every WHEP, MJPEG and snapshot
// request, as the service's own viewer counts (/metrics) and the page's requests show, across a reload.
// The WebRTC preview comes back by itself: a picture that stops moving is marked frozen within 1 s, and
// after the browser slept (its processes stopped) past the service's idle timeout, it plays again. So
// does the MJPEG preview, which asks for its stream again when no picture came for 2 s.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Page } from 'puppeteer-core'
import { freeTcpPort, until } from '../helpers'
import { browserPid, openPage, openSession, showImage } from './browser'
import { openConsole, waitInPage, type ConsoleSession } from './console.helpers'
import { press } from './console-page.helpers'
import { gstChildrenOf, requireGStreamer } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'
import { descendants } from '../leaks'
import { scrape } from './metrics.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264 (WHEP preview)
const WEBCAM = 'usb-0000:00:14.0-4' // Logitech, MJPG (MJPEG preview)

let c: ConsoleSession

const card = (bus: string) => `[data-device="${bus}"]`
const device = async (bus: string) => ((await c.service.call('GET', '/api/devices')).body as any[]).find((d) => d.bus_info === bus)

/** The service's own count of a camera's viewers over `protocol` (whep, mjpeg). */
async function viewers(bus_info: string, protocol: 'whep' | 'mjpeg'): Promise<number> {
  return (await scrape(c.origin)).m.value('periscope_viewers', { bus_info, protocol }) ?? 0
}

/** Runs the camera's stream (UDP to loopback) in `encode` at its smallest size (15 fps if offered), until it runs. */
async function stream(bus: string, encode: 'H264' | 'MJPG'): Promise<void> {
  const d = await device(bus)
  const size = d.cameras.flatMap((cam: any) => cam.formats[encode] ?? []).sort((a: any, b: any) => a.width - b.width)[0]
  const interval = size.intervals.find((i: any) => i.denominator / i.numerator === 15) ?? size.intervals[0]
  const r = await c.service.call('POST', '/api/devices/configure_stream', {
    bus_info: bus,
    stream_type: 'UDP',
    encode_type: encode,
    stream_format: { width: size.width, height: size.height, interval },
    enabled: true,
    endpoints: d.stream.endpoints.length ? d.stream.endpoints : [{ host: '127.0.0.1', port: 5600 }],
  })
  expect(r.status).toBe(200)
  await until(`${bus} streaming ${encode}`, () => device(bus), (x) => x.stream_status?.state === 'running' && Boolean(encode === 'H264' ? x.watch?.whep : x.watch?.mjpeg), 20_000)
}

async function stopStream(bus: string): Promise<void> {
  const d = await device(bus)
  if (!d?.stream.enabled) return
  await c.service.call('POST', '/api/devices/configure_stream', { bus_info: bus, stream_type: d.stream.stream_type, encode_type: d.stream.encode_type, stream_format: { width: d.stream.width, height: d.stream.height, interval: d.stream.interval }, enabled: false, endpoints: d.stream.endpoints })
}

/**
 * Checks the card shows snapshots in place of its live view, saying `why`: a picture the browser decoded,
 * then another (a new request and a new capture), each a whole JPEG when fetched again independently.
 */
async function expectSnapshotFallback(bus: string, why: string): Promise<void> {
  const hint = `${card(bus)} [data-preview-fallback]`
  await c.page.waitForSelector(hint, { timeout: 20_000 })
  expect(await c.page.$eval(hint, (e: any) => e.textContent)).toContain(why)
  const img = `${card(bus)} [data-preview="snapshot"] img`
  const decoded = (after: string | null) =>
    c.page.waitForFunction(
      (sel: string, previous: string | null) => {
        const i = (globalThis as any).document.querySelector(sel)
        return i && i.complete && i.naturalWidth > 0 && i.currentSrc !== previous ? i.currentSrc : false
      },
      { timeout: 20_000, polling: 100 },
      img,
      after,
    )
  const first = (await (await decoded(null)).jsonValue()) as string
  const second = (await (await decoded(first)).jsonValue()) as string
  expect(second).not.toBe(first)
  expect(new URL(second).pathname).toBe(new URL((await device(bus)).watch.snapshot).pathname)
  // The picture is a whole JPEG (SOI … EOI), and each refresh is a new capture of the camera.
  const captures: string[] = []
  for (const src of [first, second]) {
    const res = await fetch(src)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('image/jpeg')
    const bytes = new Uint8Array(await res.arrayBuffer())
    expect([bytes[0], bytes[1], bytes.at(-2), bytes.at(-1)]).toEqual([0xff, 0xd8, 0xff, 0xd9])
    captures.push(res.headers.get('x-capture-id') ?? '')
  }
  expect(await c.page.$eval(img, (i: any) => i.naturalWidth)).toBeGreaterThan(0)
  expect(await c.page.$(`${card(bus)} [data-preview="whep"], ${card(bus)} [data-preview="mjpeg"]`)).toBeNull()
}

/** Processes a test stops (SIGSTOP) and continues (SIGCONT), each continued again in its `finally`. */
class Stopped {
  private pids: number[] = []

  stop(...pids: number[]): void {
    for (const pid of pids) {
      process.kill(pid, 'SIGSTOP')
      this.pids.push(pid)
    }
  }

  resume(): void {
    for (const pid of this.pids.splice(0)) {
      try {
        process.kill(pid, 'SIGCONT')
      } catch {} // gone meanwhile (a stream restarted)
    }
  }
}

/** A second page in the same browser: the other viewer that takes the camera's one place. */
async function otherViewer(): Promise<Page> {
  return openPage(c.browser, c.origin)
}

describe('with --max-viewers 1', () => {
  // Each block closes its own console, whatever order the hooks of the two blocks run in.
  let own: ConsoleSession | undefined
  beforeAll(async () => {
    requireGStreamer()
    own = c = await openConsole({ args: ['--max-viewers', '1'] })
  }, 60_000)
  afterAll(() => own?.close())

  test('WHEP refused (503: the camera already has its one WebRTC viewer): the card shows refreshed snapshots and says why', async () => {
    let other: Page | undefined
    let held: string | undefined
    try {
      await c.open('status') // no preview open while the other viewer takes the place
      await stream(EHD, 'H264')
      other = await otherViewer()
      const whep = new URL((await device(EHD)).watch.whep).pathname
      const holder = await openSession(other, whep, 'holder')
      expect(holder.status).toBe(201)
      held = holder.location
      expect(await viewers(EHD, 'whep')).toBe(1)
      // What the service says to one more viewer (a real offer, from the other page): the sentence the card must show.
      const refused = await openSession(other, whep, 'one-too-many')
      expect(refused.status).toBe(503)
      const why = refused.detail!
      expect(why).toContain('--max-viewers')

      await c.open('cameras')
      await expectSnapshotFallback(EHD, why)
      await c.screenshot('cameras-preview-fallback')
      // The page's offer was among the refused, and the one viewer is still the other page.
      expect(c.refusals.some((r) => r.method === 'POST' && new URL(r.url).pathname === whep && r.status === 503)).toBe(true)
      expect(await viewers(EHD, 'whep')).toBe(1)
      expect(c.errors()).toEqual([])
    } finally {
      // Ended, not left to time out: the next test needs the camera's one place.
      if (held) await fetch(new URL(held, c.origin), { method: 'DELETE' })
      await other?.close()
      await stopStream(EHD)
    }
  }, 90_000)

  test('MJPEG refused (503: the camera already has its one MJPEG viewer): the card shows refreshed snapshots and says why; with no newer one (the service stopped for seconds), how old the one shown is, and no camera restarted for it', async () => {
    let other: Page | undefined
    const stopped = new Stopped()
    try {
      await c.open('status') // no preview open while the other viewer takes the place
      await stream(WEBCAM, 'MJPG')
      other = await otherViewer()
      const mjpeg = new URL((await device(WEBCAM)).watch.mjpeg).pathname
      await showImage(other, mjpeg, 15_000)
      await until('the other page counted as the MJPEG viewer', () => viewers(WEBCAM, 'mjpeg'), (n) => n === 1)
      const refused = await fetch(`${c.origin}${mjpeg}`)
      expect(refused.status).toBe(503)
      const why = ((await refused.json()) as { detail: string }).detail

      await c.open('cameras')
      await expectSnapshotFallback(WEBCAM, why)
      expect(await viewers(WEBCAM, 'mjpeg')).toBe(1)

      // The service stopped (a vehicle's computer that does not answer for seconds): no newer snapshot
      // comes, and the card says how old the one it shows is. Continued, the snapshots go on, and its
      // watchdog's first (late) tick did not take the silence for a stalled camera: no restart.
      const restarts = (await device(WEBCAM)).stream_status.restarts
      stopped.stop(c.service.proc.pid)
      const old = `${card(WEBCAM)} [data-preview="snapshot"][data-frozen] [data-preview-state]`
      await c.page.waitForSelector(old, { timeout: 15_000 })
      expect(await c.page.$eval(old, (e: any) => e.textContent)).toMatch(/^snapshot \d+ s old/)
      stopped.resume()
      // (Polled: waitForSelector, waiting on mutations, missed the attribute going in this test.)
      await waitInPage(c.page, 'the snapshot preview unmarked', () => (globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-4"] [data-preview="snapshot"]:not([data-frozen])'), 20_000)
      // Three of the watchdog's once-a-second ticks since it went on, the first of them late.
      await Bun.sleep(3000)
      const after = (await device(WEBCAM)).stream_status
      expect([after.state, after.restarts], `the camera's stream after the service was stopped for seconds: ${after.last_error ?? ''}`).toEqual(['running', restarts])
      expect(c.errors()).toEqual([])
    } finally {
      stopped.resume()
      await other?.close()
      await stopStream(WEBCAM)
    }
  }, 90_000)

  test('a reload gives the WebRTC place back as the page goes (and the next page makes sure): with --max-viewers 1 the reloaded card plays again, not snapshots', async () => {
    // A failure says what the card showed, what the page was refused and what the service counted
    // (a pair of suites once saw no frame in 20 s here, with nothing else to go on).
    const framesDecoded = () =>
      waitInPage(c.page, 'WebRTC frames decoded in the exploreHD preview', () => Number((globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-1"] [data-preview="whep"]')?.getAttribute('data-frames-decoded')) > 0, 20_000).catch(async (e) => {
        const shown = await c.page.$eval(card(EHD), (el: any) => [...el.querySelectorAll('[data-preview]')].map((p: any) => `${p.getAttribute('data-preview')}${p.hasAttribute('data-frozen') ? ' (frozen)' : ''}: ${p.textContent.trim().slice(0, 120)}`).join(' | ')).catch(() => 'no card')
        const whepRefusals = c.refusals.filter((r) => r.url.includes('/whep')).map((r) => `${r.method} ${r.status}`)
        const stream = (await device(EHD))?.stream_status
        throw new Error(`${(e as Error).message}\n  the card: ${shown}\n  WHEP refusals: ${whepRefusals.join(', ') || 'none'}; the service's WHEP viewers: ${await viewers(EHD, 'whep')}; the stream: ${stream?.state} ${stream?.last_error ?? ''}`)
      })
    const refused = () => c.refusals.filter((r) => r.url.endsWith('/whep') && r.status === 503).length
    const refusedBefore = refused() // the first test's own
    try {
      await c.open('status')
      await stream(EHD, 'H264')
      await c.open('cameras')
      await framesDecoded()
      await until('the page counted as the one viewer', () => viewers(EHD, 'whep'), (n) => n === 1)
      await c.open('cameras') // a reload: no cleanup of the page runs
      await framesDecoded()
      expect(await c.page.$(`${card(EHD)} [data-preview-fallback]`)).toBeNull()
      expect(await viewers(EHD, 'whep')).toBe(1)
      expect(refused()).toBe(refusedBefore)
      // The page's own DELETE as it goes may come after the next page's offer, or not at all (here: it
      // is dropped): the next page ends the tab's old session before it offers, and plays.
      await c.page.evaluate(() => {
        const w = globalThis as any
        const send = w.fetch
        w.fetch = (url: unknown, init?: { keepalive?: boolean }) => (init?.keepalive ? Promise.resolve(new w.Response(null, { status: 204 })) : send(url, init))
      })
      await c.open('cameras')
      await framesDecoded()
      expect(await c.page.$(`${card(EHD)} [data-preview-fallback]`)).toBeNull()
      expect(await viewers(EHD, 'whep')).toBe(1)
      expect(refused()).toBe(refusedBefore)
      expect(c.errors()).toEqual([])
    } finally {
      await c.open('status')
      await stopStream(EHD)
    }
  }, 90_000)
})

/** Requests the page makes for previews (WHEP offers and sessions, MJPEG, snapshots), from now on. */
function watchPreviewRequests(): { seen: string[]; stop(): void } {
  const seen: string[] = []
  const listener = (r: any) => /\/api\/streams\/[^/]+\/(whep|mjpeg|snapshot\.jpg)/.test(r.url()) && seen.push(`${r.method()} ${r.url()}`)
  c.page.on('request', listener)
  return { seen, stop: () => c.page.off('request', listener) }
}

describe('the previews switch', () => {
  // The default --max-viewers: a reload's new preview never waits for the old one's place to free.
  let own: ConsoleSession | undefined
  beforeAll(async () => {
    requireGStreamer()
    own = c = await openConsole()
  }, 60_000)
  afterAll(() => own?.close())

  test('previews off (all, then one card): no WHEP, MJPEG or snapshot request and no viewer, kept across a reload; back on, they play', async () => {
    const whepShows = () => waitInPage(c.page, 'WebRTC frames decoded in the exploreHD preview', () => Number((globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-1"] [data-preview="whep"]')?.getAttribute('data-frames-decoded')) > 0, 20_000)
    const mjpegShows = () => waitInPage(c.page, 'the webcam MJPEG preview showing', () => ((globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-4"] [data-preview="mjpeg"] img')?.naturalWidth ?? 0) > 0, 20_000)
    const previewsSwitch = 'button[data-action="previews"]'
    try {
      await stream(EHD, 'H264')
      await stream(WEBCAM, 'MJPG')
      await c.open('cameras')
      await whepShows()
      await mjpegShows()
      await until('both viewers counted', async () => [await viewers(EHD, 'whep'), await viewers(WEBCAM, 'mjpeg')].join(), (v) => v === '1,1', 15_000)
      expect(await c.page.$eval(previewsSwitch, (b: any) => b.getAttribute('aria-checked'))).toBe('true')

      // All off, from the keyboard: the service's viewers go, the cards say so.
      await press(c.page, previewsSwitch)
      await c.page.waitForSelector(`${card(EHD)} [data-preview="off"]`)
      await c.page.waitForSelector(`${card(WEBCAM)} [data-preview="off"]`)
      expect(await c.page.$eval(previewsSwitch, (b: any) => b.getAttribute('aria-checked'))).toBe('false')
      await until('no viewer left', async () => [await viewers(EHD, 'whep'), await viewers(WEBCAM, 'mjpeg')].join(), (v) => v === '0,0', 15_000)
      // Both themes show the switch's state (screenshots).
      const theme = await c.page.$eval(':root', (e: any) => e.dataset.theme as string)
      await c.screenshot(`cameras-previews-off-${theme}`)
      const other = theme === 'dark' ? 'light' : 'dark'
      await press(c.page, 'button.theme')
      await c.page.waitForSelector(`:root[data-theme="${other}"]`)
      await c.screenshot(`cameras-previews-off-${other}`)

      // Kept across a reload: the cards come with no preview request at all.
      const requests = watchPreviewRequests()
      try {
        await c.open('cameras')
        await c.page.waitForSelector(`${card(EHD)} [data-preview="off"]`)
        await c.page.waitForSelector(`${card(WEBCAM)} [data-preview="off"]`)
        // A window of observation (absence cannot be waited for): longer than the 3 s snapshot refresh.
        await Bun.sleep(4000)
        expect(requests.seen).toEqual([])
      } finally {
        requests.stop()
      }
      expect(await c.page.evaluate(() => (globalThis as any).localStorage.getItem('periscope.previews'))).toBe('off')
      expect([await viewers(EHD, 'whep'), await viewers(WEBCAM, 'mjpeg')]).toEqual([0, 0])

      // On again, then off for the exploreHD's card alone: the webcam plays on, the exploreHD asks nothing.
      await press(c.page, previewsSwitch)
      await whepShows()
      await mjpegShows()
      await press(c.page, `${card(EHD)} button[data-action="card-preview"]`)
      await c.page.waitForSelector(`${card(EHD)} [data-preview="off"]`)
      await until('the exploreHD viewer gone, the webcam one kept', async () => [await viewers(EHD, 'whep'), await viewers(WEBCAM, 'mjpeg')].join(), (v) => v === '0,1', 15_000)
      const ehdRequests = watchPreviewRequests()
      try {
        await c.open('cameras')
        await c.page.waitForSelector(`${card(EHD)} [data-preview="off"]`)
        await mjpegShows()
        await Bun.sleep(4000) // a window of observation, as above
        expect(ehdRequests.seen.filter((r) => r.includes(encodeURIComponent(EHD)) || r.includes(EHD))).toEqual([])
        expect(ehdRequests.seen.some((r) => r.includes('/mjpeg'))).toBe(true)
      } finally {
        ehdRequests.stop()
      }
      expect(await viewers(EHD, 'whep')).toBe(0)

      // Shown again from its card: it plays.
      await press(c.page, `${card(EHD)} button[data-action="card-preview"]`)
      await whepShows()
      await until('the exploreHD viewer back', () => viewers(EHD, 'whep'), (n) => n === 1, 15_000)
      expect(c.errors()).toEqual([])
    } finally {
      await c.page.evaluate(() => (globalThis as any).localStorage.clear()).catch(() => {})
      await stopStream(EHD)
      await stopStream(WEBCAM)
    }
  }, 120_000)
})

/**
 * In the page, the exploreHD preview's own record, independent of the card's code: each frame its
 * <video> shows (requestVideoFrameCallback), and each time the card's frozen mark came or went, with the
 * sentence and the time of the last frame shown before it.
 */
async function recordPicture(): Promise<void> {
  await c.page.evaluate((sel: string) => {
    const w = globalThis as any
    const box = w.document.querySelector(sel)
    const video = box.querySelector('video')
    const rec = (w.picture = { frames: 0, lastFrame: 0, marks: [] as { frozen: boolean; at: number; lastFrame: number; text: string }[], said: [] as string[] })
    const shown = () => {
      rec.frames++
      rec.lastFrame = w.performance.now()
      video.requestVideoFrameCallback(shown)
    }
    video.requestVideoFrameCallback(shown)
    new w.MutationObserver(() => {
      const text = box.querySelector('[data-preview-state]')?.textContent
      if (text && rec.said.at(-1) !== text) rec.said.push(text)
      const frozen = box.hasAttribute('data-frozen')
      if (rec.marks.at(-1)?.frozen === frozen || (!frozen && !rec.marks.length)) return
      rec.marks.push({ frozen, at: w.performance.now(), lastFrame: rec.lastFrame, text: box.querySelector('[data-preview-state]')?.textContent ?? '' })
    }).observe(box, { attributes: true, subtree: true, childList: true, characterData: true })
  }, `${card(EHD)} [data-preview="whep"]`)
}

/**
 * Waits until the exploreHD card's <video> (whichever element is there: a new one after a remount) has
 * shown `n` frames since this call and the card marks nothing frozen; resolves with when that was.
 */
async function playsAgain(what: string, timeoutMs: number, n = 10): Promise<number> {
  const from = await c.page.evaluate(() => (globalThis as any).performance.now())
  try {
    await c.page.waitForFunction(
      (sel: string, least: number, since: number) => {
        const w = globalThis as any
        const box = w.document.querySelector(sel)
        const video = box?.querySelector('video')
        if (!video || box.hasAttribute('data-frozen')) return false
        if (!video.shownAt) {
          video.shownAt = [] as number[]
          const shown = (now: number) => {
            video.shownAt = [...video.shownAt.slice(-99), now]
            video.requestVideoFrameCallback(shown)
          }
          video.requestVideoFrameCallback(shown)
        }
        return video.shownAt.filter((t: number) => t > since).length >= least
      },
      { timeout: timeoutMs, polling: 50 },
      `${card(EHD)} [data-preview="whep"]`,
      n,
      from,
    )
  } catch (e) {
    const said = await c.page.$eval(card(EHD), (e: any) => e.querySelector('[data-preview-state]')?.textContent ?? '').catch(() => '')
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${(e as Error).message}; the card said ${JSON.stringify(said)}`)
  }
  return Date.now()
}

type Mark = { frozen: boolean; at: number; lastFrame: number; text: string }
const picture = () => c.page.evaluate(() => (globalThis as any).picture as { frames: number; lastFrame: number; marks: Mark[]; said: string[] })

/** Waits until the preview plays: `n` more frames shown, and no frozen mark on the card. */
async function plays(what: string, timeoutMs: number, n = 10): Promise<void> {
  const from = (await picture()).frames
  try {
    await c.page.waitForFunction(
      (least: number, sel: string) => {
        const w = globalThis as any
        return w.picture.frames >= least && !w.document.querySelector(sel)
      },
      { timeout: timeoutMs, polling: 50 },
      from + n,
      `${card(EHD)} [data-preview="whep"][data-frozen]`,
    )
  } catch (e) {
    throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${(e as Error).message}; the card said ${JSON.stringify((await picture()).said)}`)
  }
}

describe('the live previews come back by themselves', () => {
  // A short idle timeout (the flag's least is 1 s): the service ends a silent viewer's session soon, and
  // the browser stopped that long (3 s and more) looks asleep to the page, as a laptop's lid would.
  let own: ConsoleSession | undefined
  beforeAll(async () => {
    requireGStreamer()
    own = c = await openConsole({ args: ['--whep-idle-timeout', '3'] })
  }, 60_000)
  afterAll(() => own?.close())

  test('frames stop (the camera paused): marked frozen within 1 s, saying so, and unmarked when they return; the browser asleep past the idle timeout: plays again within 5 s, no reload', async () => {
    const stopped = new Stopped()
    try {
      await stream(EHD, 'H264')
      await c.open('cameras')
      await c.page.waitForSelector(`${card(EHD)} [data-preview="whep"] video`)
      await recordPicture()
      await plays('the exploreHD preview playing', 20_000)
      await until('the page counted as a viewer', () => viewers(EHD, 'whep'), (n) => n === 1)
      await c.page.evaluate(() => ((globalThis as any).sameDocument = true)) // gone at any reload

      // The camera's child paused: no new frame. The card says so within 1 s of the last frame shown.
      const camera = gstChildrenOf(c.service.proc.pid)
      expect(camera.length).toBe(1)
      stopped.stop(camera[0]!)
      await waitInPage(c.page, 'the frozen mark', () => (globalThis as any).picture.marks.some((m: Mark) => m.frozen), 10_000)
      const frozen = (await picture()).marks.find((m) => m.frozen)!
      console.log(`console preview: frozen mark ${Math.round(frozen.at - frozen.lastFrame)} ms after the last frame shown: "${frozen.text}"`)
      // 1 s, and some room for a loaded machine's late timers.
      expect(frozen.at - frozen.lastFrame).toBeLessThanOrEqual(1250)
      expect(frozen.text).toContain('video frozen')
      expect(await c.page.$eval(`${card(EHD)} [data-preview="whep"] .overlay`, (e: any) => e.textContent)).toContain('frozen')
      stopped.resume()
      await plays('the preview playing again once the camera goes on', 10_000)
      expect((await picture()).marks.at(-1)?.frozen).toBe(false)

      // The browser asleep (every process of it stopped) past --whep-idle-timeout: the service ends the
      // silent session. Continued, the page notices, ends it, offers again and plays, with no reload.
      const browser = browserPid(c.browser)!
      const chromium = [browser, ...descendants(browser).map((p) => p.pid)]
      stopped.stop(...chromium)
      await until('the service ended the silent viewer', () => viewers(EHD, 'whep'), (n) => n === 0, 20_000)
      const continued = Date.now()
      stopped.resume()
      // A new session (the service counts its viewer again), then frames of it: frames the browser held
      // from before it stopped would show for a moment, and do not count.
      const within = continued + 5_000
      await until('the page offered again', () => viewers(EHD, 'whep'), (n) => n === 1, 5_000)
      await plays('the preview playing again after the browser slept', Math.max(within - Date.now(), 1))
      console.log(`console preview: playing again ${Date.now() - continued} ms after the browser continued`)
      expect(await c.page.evaluate(() => (globalThis as any).sameDocument)).toBe(true)
      // Marked frozen as it woke, and saying it reconnects, then unmarked.
      const { marks, said } = await picture()
      expect(marks.filter((m) => m.frozen).length).toBe(2)
      expect(marks.at(-1)?.frozen).toBe(false)
      expect(said).toContain('video frozen — reconnecting (1st try)')
      expect(await viewers(EHD, 'whep')).toBe(1) // the new session only
      expect(c.errors()).toEqual([])
    } finally {
      stopped.resume()
      await c.open('status').catch(() => {})
      await stopStream(EHD)
    }
  }, 120_000)
  test('the camera unplugged: the card says so; plugged back, and after a stream restart, the preview plays again within 5 s of the stream running, no reload', async () => {
    try {
      await stream(EHD, 'H264')
      await c.open('cameras')
      await playsAgain('the exploreHD preview playing', 20_000)
      await c.page.evaluate(() => ((globalThis as any).sameDocument = true)) // gone at any reload

      expect((await c.service.call('POST', '/api/mock/unplug', { bus_info: EHD })).status).toBe(200)
      // Its card stays where the pilot looks, saying so, with no last frame left as if live.
      const unpluggedAt = Date.now()
      await c.page.waitForFunction((sel: string) => (globalThis as any).document.querySelector(sel)?.textContent.includes('camera unplugged'), { timeout: 10_000, polling: 50 }, `[data-unplugged="${EHD}"] [data-preview-state]`)
      console.log(`console preview: "camera unplugged" on the card ${Date.now() - unpluggedAt} ms after the unplug`)
      expect(await c.page.$(`${card(EHD)} video`)).toBeNull()
      expect((await c.service.call('POST', '/api/mock/plug', { bus_info: EHD })).status).toBe(200)
      await until('the stream running again', () => device(EHD), (d) => d.stream_status?.state === 'running', 20_000)
      const back = Date.now()
      const played = await playsAgain('the preview playing after the camera came back', 5_000)
      expect(await c.page.$(`[data-unplugged="${EHD}"]`)).toBeNull()
      console.log(`console preview: playing ${played - back} ms after the plugged-back camera's stream ran`)

      const restarted = await c.service.call('POST', '/api/devices/restart_stream', { bus_info: EHD })
      expect(restarted.status).toBe(200)
      await until('the restarted stream running', () => device(EHD), (d) => d.stream_status?.state === 'running', 20_000)
      const again = Date.now()
      const replayed = await playsAgain('the preview playing after the stream restarted', 5_000)
      console.log(`console preview: playing ${replayed - again} ms after the restarted stream ran`)
      expect(await c.page.evaluate(() => (globalThis as any).sameDocument)).toBe(true)
      expect(c.errors()).toEqual([])
    } finally {
      await c.service.call('POST', '/api/mock/plug', { bus_info: EHD }).catch(() => {})
      await c.open('status').catch(() => {})
      await stopStream(EHD)
    }
  }, 120_000)

  test('the MJPEG preview: frames stop (the camera paused): marked frozen within 1 s; silent for 2 s, asked for again, saying so; frames back, it plays again, one viewer', async () => {
    const stopped = new Stopped()
    const box = `${card(WEBCAM)} [data-preview="mjpeg"]`
    try {
      await stream(WEBCAM, 'MJPG')
      await c.open('cameras')
      await c.page.waitForSelector(`${box} img`)
      // Each picture the card shows (a new src on its <img>), and each mark and sentence on the card.
      await c.page.evaluate((sel: string) => {
        const w = globalThis as any
        const el = w.document.querySelector(sel)
        const rec = (w.mjpeg = { frames: 0, lastFrame: 0, marks: [] as Mark[], said: [] as string[] })
        new w.MutationObserver((changes: any[]) => {
          const root = w.document.querySelector(sel)
          if (changes.some((m) => m.type === 'attributes' && m.attributeName === 'src' && m.target.tagName === 'IMG')) {
            rec.frames++
            rec.lastFrame = w.performance.now()
          }
          const text = root?.querySelector('[data-preview-state]')?.textContent
          if (text && rec.said.at(-1) !== text) rec.said.push(text)
          const frozen = Boolean(root?.hasAttribute('data-frozen'))
          if (rec.marks.at(-1)?.frozen === frozen || (!frozen && !rec.marks.length)) return
          rec.marks.push({ frozen, at: w.performance.now(), lastFrame: rec.lastFrame, text: text ?? '' })
        }).observe(el, { attributes: true, subtree: true, childList: true, characterData: true })
      }, box)
      const seen = () => c.page.evaluate(() => (globalThis as any).mjpeg as { frames: number; lastFrame: number; marks: Mark[]; said: string[] })
      const playing = async (what: string, timeoutMs: number) => {
        const from = (await seen()).frames
        try {
          await c.page.waitForFunction((least: number, sel: string) => (globalThis as any).mjpeg.frames >= least && !(globalThis as any).document.querySelector(`${sel}[data-frozen]`), { timeout: timeoutMs, polling: 50 }, from + 10, box)
        } catch (e) {
          throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${(e as Error).message}; the card said ${JSON.stringify((await seen()).said)}`)
        }
      }
      await playing('the webcam preview playing', 20_000)
      await until('the page counted as the MJPEG viewer', () => viewers(WEBCAM, 'mjpeg'), (n) => n === 1)

      const camera = gstChildrenOf(c.service.proc.pid)
      expect(camera.length, 'the camera child alone').toBe(1)
      stopped.stop(camera[0]!)
      await waitInPage(c.page, 'the frozen mark', () => (globalThis as any).mjpeg.marks.some((m: Mark) => m.frozen), 10_000)
      const frozen = (await seen()).marks.find((m) => m.frozen)!
      console.log(`console MJPEG preview: frozen mark ${Math.round(frozen.at - frozen.lastFrame)} ms after the last picture shown: "${frozen.text}"`)
      expect(frozen.at - frozen.lastFrame, 'ms from the last picture to the frozen mark').toBeLessThanOrEqual(1250)
      expect(frozen.text).toContain('video frozen')
      expect(await c.page.$eval(`${box} .overlay`, (e: any) => e.textContent)).toContain('frozen')
      // No picture for 2 s: the answer is let go and the stream asked for again, the card saying so.
      await waitInPage(c.page, 'the card saying it reconnects', () => (globalThis as any).mjpeg.said.some((t: string) => t.includes('reconnecting (1st try)')), 10_000)
      stopped.resume()
      await playing('the webcam preview playing again once the camera goes on', 15_000)
      expect((await seen()).marks.at(-1)?.frozen).toBe(false)
      // The answers let go are gone from the service's count: this page is one viewer.
      await until('one MJPEG viewer', () => viewers(WEBCAM, 'mjpeg'), (n) => n === 1, 10_000)
      expect(c.errors()).toEqual([])
    } finally {
      stopped.resume()
      await c.open('status').catch(() => {})
      await stopStream(WEBCAM)
    }
  }, 120_000)
})

describe('the WebRTC preview after the service was killed', () => {
  // The service killed (-9) and started again where it was, as its supervisor (systemd, BlueOS) would:
  // the same port, the same settings, so the stream runs again at its start.
  const port = freeTcpPort()
  const args = ['--whep-idle-timeout', '3']
  let own: ConsoleSession | undefined
  beforeAll(async () => {
    requireGStreamer()
    own = c = await openConsole({ service: () => startService({ port, args }) })
  }, 60_000)
  let restarted: Service | undefined
  afterAll(async () => {
    await restarted?.kill() // the session's close stops the service it started, which is the killed one
    await own?.close()
  })

  test('kill -9 of the service: the card says "vehicle not answering"; started again, the preview plays within 5 s of the stream running, no reload', async () => {
    await stream(EHD, 'H264')
    await c.open('cameras')
    await playsAgain('the exploreHD preview playing', 20_000)
    await c.page.evaluate(() => ((globalThis as any).sameDocument = true)) // gone at any reload

    const killed = Date.now()
    await c.service.kill()
    await c.page.waitForFunction((sel: string) => (globalThis as any).document.querySelector(sel)?.textContent.includes('vehicle not answering'), { timeout: 10_000, polling: 50 }, `${card(EHD)} [data-preview-state]`)
    console.log(`console preview: "vehicle not answering" ${Date.now() - killed} ms after the kill`)

    c.service = restarted = await startService({ port, args, dataDir: c.service.dataDir })
    await until('the stream running again at the start', () => device(EHD), (d) => d?.stream_status?.state === 'running', 30_000)
    const running = Date.now()
    const played = await playsAgain('the preview playing after the service came back', 5_000)
    console.log(`console preview: playing ${played - running} ms after the restarted service's stream ran (${played - killed} ms after the kill)`)
    expect(await c.page.evaluate(() => (globalThis as any).sameDocument)).toBe(true)
  }, 120_000)
})

/**
 * In the page, the truth of each picture `sel` (a <video> or an <img>) shows: when it is on the screen
 * (the page's clock is this machine's) less the capture time painted in it (docs/latency.md), read as
 * tests/timecode.ts reads it (each cell's centre, luma ≥ 200 a 1, ≤ 50 a 0). A video's frames as it
 * presents them (requestVideoFrameCallback), an image's at the first animation frame that shows a new
 * code (to within one 60 Hz frame). Kept in the page's `truth`.
 */
function recordTruth(sel: string): Promise<void> {
  return c.page.evaluate((sel: string) => {
    const w = globalThis as any
    const el = w.document.querySelector(sel)
    const video = el.tagName === 'VIDEO'
    const canvas = w.document.createElement('canvas')
    const ctx = canvas.getContext('2d', { willReadFrequently: true })
    const truth = (w.truth = [] as { at: number; ms: number }[])
    let last: number | null = null
    const read = (at: number) => {
      const [width, height] = video ? [el.videoWidth, el.videoHeight] : [el.naturalWidth, el.naturalHeight]
      if (!width) return
      if (canvas.width !== width) [canvas.width, canvas.height] = [width, 1]
      ctx.drawImage(el, 0, Math.floor(height / 32), width, 1, 0, 0, width, 1)
      const px = ctx.getImageData(0, 0, width, 1).data
      let code: number | null = 0
      for (let i = 0; i < 48 && code !== null; i++) {
        const x = Math.floor(((i + 0.5) * width) / 48)
        const y = 16 + ((0.299 * px[4 * x] + 0.587 * px[4 * x + 1] + 0.114 * px[4 * x + 2]) * 219) / 255
        code = y >= 200 ? code * 2 + 1 : y <= 50 ? code * 2 : null
      }
      if (code !== null && (video || code !== last)) truth.push({ at, ms: at - code })
      last = code
    }
    if (video) {
      const onFrame = (_now: number, meta: any) => {
        read(performance.timeOrigin + meta.expectedDisplayTime)
        el.requestVideoFrameCallback(onFrame)
      }
      el.requestVideoFrameCallback(onFrame)
    } else {
      const onFrame = (t: number) => {
        read(performance.timeOrigin + t)
        w.requestAnimationFrame(onFrame)
      }
      w.requestAnimationFrame(onFrame)
    }
  }, sel)
}

/** The median truth (recordTruth) of the pictures shown in the second before `at`: a figure's own second. */
function truthBefore(at: number): Promise<number | null> {
  return c.page.evaluate((until: number) => {
    const recent = ((globalThis as any).truth as { at: number; ms: number }[]).filter((t) => t.at <= until && until - t.at <= 1000).map((t) => t.ms).sort((a, b) => a - b)
    return recent.length ? recent[Math.floor(recent.length / 2)]! : null
  }, at)
}

describe("the pilot's view and the delay on the picture", () => {
  let own: ConsoleSession | undefined
  beforeAll(async () => {
    requireGStreamer()
    own = c = await openConsole()
  }, 60_000)
  afterAll(() => own?.close())

  test("the WebRTC preview shows its camera-to-screen delay each second, within 15 ms (or 15 %) of the truth read from the picture's time code, and its loss, jitter and round trip", async () => {
    try {
      await stream(EHD, 'H264')
      await c.open('cameras')
      const box = `${card(EHD)} [data-preview="whep"]`
      await c.page.waitForSelector(`${box} video`)
      await recordTruth(`${box} video`)
      const figure = () => c.page.$eval(`${box} .figures`, (e: any) => ({ at: Number(e.dataset.at), delay: e.dataset.delayMs, loss: e.dataset.loss, roundTrip: e.dataset.roundTripMs, text: e.textContent }))
      await waitInPage(c.page, 'a delay on the picture', () => (globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-1"] [data-preview="whep"] .figures[data-delay-ms]:not([data-delay-ms=""])'), 20_000)
      // Five figures, a second apart, each beside the median truth of the same second's frames.
      const pairs: { shown: number; truth: number }[] = []
      for (let i = 0; i < 5; i++) {
        await Bun.sleep(1000)
        const shown = await figure()
        const truth = await truthBefore(shown.at)
        expect(truth, 'frames whose time code was read').not.toBeNull()
        pairs.push({ shown: Number(shown.delay), truth: truth! })
        expect(shown.text).toContain('ms behind')
        expect(shown.loss).toBe('0.000')
        expect(Number(shown.roundTrip)).toBeLessThan(100)
      }
      console.log(`console preview: delay shown / truth (ms): ${pairs.map((p) => `${p.shown}/${p.truth.toFixed(1)}`).join('  ')}`)
      for (const p of pairs) expect(Math.abs(p.shown - p.truth), `shown ${p.shown} ms, truth ${p.truth.toFixed(1)} ms`).toBeLessThanOrEqual(Math.max(15, 0.15 * p.truth))

      // The session's timing, as the page reads it, in its documented shape (an own session of another page).
      const other = await openPage(c.browser, c.origin)
      try {
        const opened = await openSession(other, new URL((await device(EHD)).watch.whep).pathname, 'timing')
        expect(opened.status).toBe(201)
        const timing: any = await until('a frame sent to the session', async () => (await fetch(new URL(opened.location!, c.origin))).json(), (t: any) => t.rtp_timestamp !== null, 10_000)
        expect(Number.isInteger(timing.rtp_timestamp)).toBe(true)
        expect(timing.clock_rate).toBe(90_000)
        expect(Math.abs(timing.server_time - Date.now())).toBeLessThan(1000)
        expect(timing.server_time - timing.captured_at).toBeGreaterThanOrEqual(0)
        expect(timing.server_time - timing.captured_at).toBeLessThan(1000)
        await fetch(new URL(opened.location!, c.origin), { method: 'DELETE' })
        expect((await fetch(new URL(opened.location!, c.origin))).status).toBe(404)
      } finally {
        await other.close()
      }
      expect(c.errors()).toEqual([])
    } finally {
      await c.open('status').catch(() => {})
      await stopStream(EHD)
    }
  }, 90_000)
  test("the MJPEG preview shows its camera-to-screen delay each second, within 15 ms (or 15 %) of the truth read from the picture's time code", async () => {
    try {
      await stream(WEBCAM, 'MJPG')
      await c.open('cameras')
      const box = `${card(WEBCAM)} [data-preview="mjpeg"]`
      await c.page.waitForSelector(`${box} img`)
      await recordTruth(`${box} img`)
      await waitInPage(c.page, 'a delay on the MJPEG picture', () => (globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-4"] [data-preview="mjpeg"] .figures[data-delay-ms]:not([data-delay-ms=""])'), 20_000)
      const pairs: { shown: number; truth: number }[] = []
      for (let i = 0; i < 5; i++) {
        await Bun.sleep(1000)
        const shown = await c.page.$eval(`${box} .figures`, (e: any) => ({ at: Number(e.dataset.at), delay: Number(e.dataset.delayMs) }))
        const truth = await truthBefore(shown.at)
        expect(truth, 'pictures whose time code was read').not.toBeNull()
        pairs.push({ shown: shown.delay, truth: truth! })
      }
      console.log(`console preview: MJPEG delay shown / truth (ms): ${pairs.map((p) => `${p.shown}/${p.truth.toFixed(1)}`).join('  ')}`)
      for (const p of pairs) expect(Math.abs(p.shown - p.truth), `shown ${p.shown} ms, truth ${p.truth.toFixed(1)} ms`).toBeLessThanOrEqual(Math.max(15, 0.15 * p.truth))
      expect(c.errors()).toEqual([])
    } finally {
      await c.open('status').catch(() => {})
      await stopStream(WEBCAM)
    }
  }, 90_000)

  test("the pilot's view: every streaming camera's picture fills the window, in a grid or one alone by the keyboard, each with its name, figures and health", async () => {
    try {
      await stream(EHD, 'H264')
      await stream(WEBCAM, 'MJPG')
      await c.open('pilot')
      await waitInPage(
        c.page,
        'both pictures playing in the grid',
        () => {
          const tiles = [...(globalThis as any).document.querySelectorAll('[data-pilot="grid"] .pilot-tile')] as any[]
          const playing = (t: any) => {
            const v = t.querySelector('video')
            const i = t.querySelector('[data-preview="mjpeg"] img')
            return (v && v.readyState >= 2 && v.videoWidth > 0) || (i && i.naturalWidth > 0)
          }
          return tiles.length === 2 && tiles.every(playing)
        },
        30_000,
      )
      const tiles = () =>
        c.page.$$eval('.pilot-tile:not([hidden])', (els: any[]) =>
          els.map((e) => {
            const r = e.getBoundingClientRect()
            return { bus: e.dataset.tile as string, width: r.width, height: r.height, title: e.querySelector('.pilot-title strong').textContent as string, health: e.querySelector('[data-health]')?.textContent as string | undefined }
          }),
        )
      const view = await c.page.evaluate(() => ({ width: (globalThis as any).innerWidth as number, height: (globalThis as any).innerHeight as number }))
      const grid = await tiles()
      expect(grid.map((t) => t.bus)).toEqual([EHD, WEBCAM])
      // Side by side, the window's width between them (the console's cards were ~280 px wide).
      expect(grid[0]!.width + grid[1]!.width).toBeGreaterThan(0.9 * view.width)
      for (const t of grid) expect(t.title).toMatch(/^\d\. \S/)
      // The health under each picture, read again every second: the rate delivered once a whole second was.
      await until('the health of both streams', tiles, (ts) => ts.every((t) => /^\d+ of \d+ fps · .*bit\/s · .*dropped · \d+ lost · \d+ stalls?$/.test(t.health ?? '')), 10_000)
      await until('the WebRTC picture\'s figures', () => c.page.$eval('[data-tile="usb-0000:00:14.0-1"] .overlay', (e: any) => e.textContent as string), (t) => /ms behind/.test(t), 10_000)
      await c.screenshot('pilot-grid')

      // 2: the webcam alone, filling the view; → the next (the exploreHD); G: the grid again.
      await c.page.keyboard.press('2')
      await waitInPage(c.page, 'the webcam alone', () => (globalThis as any).document.querySelector('[data-pilot="alone"] [data-tile="usb-0000:00:14.0-4"]'), 5_000)
      const [alone] = await tiles()
      expect(alone!.width).toBeGreaterThan(0.95 * view.width)
      expect(alone!.height).toBeGreaterThan(0.8 * view.height)
      await c.page.keyboard.press('ArrowRight')
      await waitInPage(c.page, 'the exploreHD alone', () => (globalThis as any).document.querySelector('[data-pilot="alone"] [data-tile="usb-0000:00:14.0-1"]:not([hidden]) video'), 5_000)
      // Still its own session, playing at once: no session ended for a switch, nor a frozen mark.
      const ended = async () => (await c.service.call('GET', '/api/health')).body.plugins.whep.ended as Record<string, number>
      const endedBefore = await ended()
      await c.page.evaluate(() => {
        const video = (globalThis as any).document.querySelector('[data-tile="usb-0000:00:14.0-1"] video')
        video.shownSince = 0
        const shown = () => {
          video.shownSince++
          video.requestVideoFrameCallback(shown)
        }
        video.requestVideoFrameCallback(shown)
      })
      await waitInPage(c.page, 'the exploreHD alone playing', () => {
        const box = (globalThis as any).document.querySelector('[data-tile="usb-0000:00:14.0-1"] [data-preview="whep"]')
        return box && !box.hasAttribute('data-frozen') && box.querySelector('video').shownSince >= 5
      }, 5_000)
      await c.screenshot('pilot-alone')
      await c.page.keyboard.press('g')
      await waitInPage(c.page, 'the grid again', () => (globalThis as any).document.querySelectorAll('[data-pilot="grid"] .pilot-tile:not([hidden])').length === 2, 5_000)
      expect(await ended()).toEqual(endedBefore)
      // F: the browser's full screen, and F again to leave it.
      await c.page.keyboard.press('f')
      await waitInPage(c.page, 'full screen', () => (globalThis as any).document.fullscreenElement !== null, 5_000)
      await c.page.keyboard.press('f')
      await waitInPage(c.page, 'full screen left', () => (globalThis as any).document.fullscreenElement === null, 5_000)
      expect(c.errors()).toEqual([])
    } finally {
      await c.open('status').catch(() => {})
      await stopStream(EHD)
      await stopStream(WEBCAM)
    }
  }, 90_000)
})

describe('an alert on the delay', () => {
  // Any delay is past 1 ms: the preview's own figures raise the stream's alert, as a lagging link would.
  let own: ConsoleSession | undefined
  beforeAll(async () => {
    requireGStreamer()
    own = c = await openConsole({ args: ['--delay-alert', '1'] })
  }, 60_000)
  afterAll(() => own?.close())

  test("a WebRTC preview's delay past --delay-alert for 2 s: the stream's alert (the banner and the API) says how far behind; the preview gone, it clears by itself", async () => {
    try {
      await stream(EHD, 'H264')
      await c.open('cameras')
      const banner = () => c.page.$eval('[data-banner="stream-health"]', (e: any) => e.textContent as string).catch(() => '')
      await until('the banner', banner, (t) => / ms behind$/.test(t), 20_000)
      const text = await banner()
      expect(text).toMatch(/^exploreHD USB Camera: video \d+ ms behind$/)
      const health = (await device(EHD)).stream_status.health
      expect(health.alert).toBe(text)
      expect(health.viewer_delay_ms).toBeGreaterThan(1)
      expect(health.viewer_delay_ms).toBeLessThan(1000)
      // No viewer says a delay any more (the preview's page is another): cleared by itself.
      await c.open('status')
      await until('the alert cleared', () => device(EHD), (d) => d.stream_status.health?.alert === null && d.stream_status.health?.viewer_delay_ms === null, 15_000)
      await waitInPage(c.page, 'the banner gone', () => !(globalThis as any).document.querySelector('[data-banner="stream-health"]'), 10_000)
      expect(c.errors()).toEqual([])
    } finally {
      await c.open('status').catch(() => {})
      await stopStream(EHD)
    }
  }, 90_000)
})
