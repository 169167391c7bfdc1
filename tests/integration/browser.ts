// Headless Chromium for the integration tests (Debian's /usr/bin/chromium, scripts/setup/chromium.sh,
// driven by puppeteer-core: no browser is downloaded). `withPage(origin, fn)` launches a browser, opens
// a page on the service's origin (so fetch() and <img src> are same-origin), runs fn, and closes it.
//
// Network safety: loopback only. Chromium offers only its default route's address to a page without
// camera permission; openPage grants it (a fake camera, opened once and closed) so WebRTC enumerates
// every interface, loopback included (a test-only switch), and never hides addresses behind mDNS names
// (whose multicast queries would leave the machine). The service on 127.0.0.1 answers with a loopback
// candidate only and pairs only with loopback candidates; no page configures a STUN server.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import puppeteer, { type Browser, type Page } from 'puppeteer-core'

export const CHROMIUM = '/usr/bin/chromium'

/** Fails (never skips) when Chromium is missing, naming the setup script. */
export function requireChromium(): void {
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/setup/chromium.sh (apt-get install chromium)`)
}

/**
 * Chromium, headless. With `netns`, inside that network namespace (one the test created: its pages reach
 * the addresses inside it only), started through `ip netns exec` and driven over a pipe, since its
 * DevTools port would be in the namespace too.
 */
export async function launchBrowser(options: { netns?: string } = {}): Promise<Browser> {
  requireChromium()
  let executablePath = CHROMIUM
  if (options.netns) {
    const dir = mkdtempSync(join(tmpdir(), 'periscope-chromium-'))
    executablePath = join(dir, 'chromium-in-netns')
    // exec all the way down: the pid puppeteer holds is Chromium's own.
    writeFileSync(executablePath, `#!/bin/sh\nexec /usr/sbin/ip netns exec '${options.netns}' ${CHROMIUM} "$@"\n`, { mode: 0o755 })
  }
  const browser = await puppeteer.launch({
    executablePath,
    pipe: Boolean(options.netns),
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
  if (executablePath !== CHROMIUM) browser.once('disconnected', () => rmSync(dirname(executablePath), { recursive: true, force: true }))
  return browser
}

/** A page on `origin` (the service's), so the page's fetch() and <img> talk to the service same-origin. */
export async function openPage(browser: Browser, origin: string): Promise<Page> {
  const page = await browser.newPage()
  page.on('console', (message) => {
    if (process.env.PERISCOPE_TEST_LOG === '1') process.stderr.write(`[chromium] ${message.text()}\n`)
  })
  // Any page of the service will do; /openapi.json is always there and small enough.
  await page.goto(`${origin}/openapi.json`, { waitUntil: 'domcontentloaded' })
  // Only a loopback origin is a secure context over plain http, so only there is a camera to grant; a
  // page on another address (a network namespace's) needs no loopback candidate either.
  if (!/^(127\.|localhost$|\[::1\]$)/.test(new URL(origin).hostname)) return page
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

export interface Opened { status: number; location?: string; detail?: string; postedAt: number }

// ---- a WHEP client in the page (the integration tests and bench/whep.bench.ts) ----

/** In the page: an RTCPeerConnection (recvonly video, no ICE servers), the offer POSTed, the answer set. */
export async function openSession(page: Page, path: string, key: string): Promise<Opened> {
  return page.evaluate(
    async (path: string, key: string) => {
      const w = globalThis as any // the page's window (this project's tsconfig has no DOM types)
      w.pcs ??= {}
      const pc = new w.RTCPeerConnection({ iceServers: [] })
      w.pcs[key] = pc
      pc.addTransceiver('video', { direction: 'recvonly' })
      pc.ontrack = (e: any) => {
        const video = w.document.createElement('video')
        video.muted = true
        video.autoplay = true
        video.srcObject = e.streams[0] ?? new w.MediaStream([e.track])
        w.document.body.appendChild(video)
      }
      await pc.setLocalDescription(await pc.createOffer())
      await new Promise<void>((resolve) => {
        if (pc.iceGatheringState === 'complete') return resolve()
        pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve())
        setTimeout(resolve, 3000)
      })
      const postedAt = performance.now()
      w.postedAt ??= {}
      w.postedAt[key] = postedAt
      const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: pc.localDescription!.sdp })
      const text = await res.text()
      if (res.status !== 201) return { status: res.status, detail: JSON.parse(text).detail, postedAt }
      await pc.setRemoteDescription({ type: 'answer', sdp: text })
      return { status: 201, location: res.headers.get('location') ?? undefined, postedAt }
    },
    path,
    key,
  )
}

export interface Video {
  framesDecoded: number
  width: number
  height: number
  state: string
  firstFrameMs: number | null
  /** Mean time a frame waited in the browser's jitter buffer, and mean decode time (ms). */
  jitterBufferMs: number
  decodeMs: number
}

/** The session's inbound video as getStats() shows it; firstFrameMs = first decoded frame after the POST. */
export async function videoStats(page: Page, key: string): Promise<Video> {
  return page.evaluate(async (key: string) => {
    const w = globalThis as any
    const pc = w.pcs[key]
    let video = { framesDecoded: 0, width: 0, height: 0, jitterBufferMs: 0, decodeMs: 0 }
    ;(await pc.getStats()).forEach((s: any) => {
      if (s.type !== 'inbound-rtp' || s.kind !== 'video') return
      const decoded = s.framesDecoded ?? 0
      video = {
        framesDecoded: decoded,
        width: s.frameWidth ?? 0,
        height: s.frameHeight ?? 0,
        jitterBufferMs: s.jitterBufferEmittedCount ? (1000 * s.jitterBufferDelay) / s.jitterBufferEmittedCount : 0,
        decodeMs: decoded ? (1000 * (s.totalDecodeTime ?? 0)) / decoded : 0,
      }
    })
    w.firstFrameAt ??= {}
    if (video.framesDecoded > 0) w.firstFrameAt[key] ??= performance.now()
    const first = w.firstFrameAt[key]
    return { ...video, state: pc.connectionState, firstFrameMs: first === undefined ? null : first - w.postedAt[key] }
  }, key)
}

/** Polls getStats() often (so the first frame's time is seen to within ~20 ms) until `done`. */
export async function watch(page: Page, key: string, done: (v: Video) => boolean, timeoutMs: number): Promise<Video> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await videoStats(page, key)
    if (done(v)) return v
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for the browser's video; last: ${JSON.stringify(v)}`)
    await Bun.sleep(20)
  }
}

// ---- an <img> in the page (the MJPEG route: `multipart/x-mixed-replace`, which <img> shows natively) ----

/**
 * Adds `<img src=path>` to the page and waits until it shows a picture (a multipart stream fires no
 * load event per part, so this polls naturalWidth); returns its natural size. Fails, saying so, when
 * nothing shows within `timeoutMs`.
 */
export async function showImage(page: Page, path: string, timeoutMs = 10_000): Promise<{ width: number; height: number }> {
  return page.evaluate(
    async (path: string, timeoutMs: number) => {
      const w = globalThis as any
      const img = w.document.createElement('img')
      img.src = path
      w.document.body.appendChild(img)
      const deadline = Date.now() + timeoutMs
      while (!(img.naturalWidth > 0)) {
        if (Date.now() > deadline) throw new Error(`<img src="${path}"> showed nothing within ${timeoutMs} ms (complete=${img.complete})`)
        await new Promise((r) => setTimeout(r, 20))
      }
      return { width: img.naturalWidth as number, height: img.naturalHeight as number }
    },
    path,
    timeoutMs,
  )
}

/**
 * In the page: a WHEP session whose offer has the sections `kinds` in that order ('audio', 'video' as
 * recvonly transceivers, 'data' a data channel) under `bundlePolicy`; what openSession returns, and the
 * error setRemoteDescription threw, if any. Its video shows in videoStats(page, key).
 */
export async function openOffer(page: Page, path: string, key: string, kinds: ('audio' | 'video' | 'data')[], bundlePolicy: 'balanced' | 'max-bundle' | 'max-compat'): Promise<Opened & { error?: string }> {
  return page.evaluate(
    async (path: string, key: string, kinds: string[], bundlePolicy: string) => {
      const w = globalThis as any
      w.pcs ??= {}
      const pc = new w.RTCPeerConnection({ iceServers: [], bundlePolicy })
      w.pcs[key] = pc
      for (const kind of kinds) {
        if (kind === 'data') pc.createDataChannel('chat')
        else pc.addTransceiver(kind, { direction: 'recvonly' })
      }
      pc.ontrack = (e: any) => {
        if (e.track.kind !== 'video') return
        const video = w.document.createElement('video')
        video.muted = true
        video.autoplay = true
        video.srcObject = new w.MediaStream([e.track])
        w.document.body.appendChild(video)
      }
      await pc.setLocalDescription(await pc.createOffer())
      await new Promise<void>((resolve) => {
        if (pc.iceGatheringState === 'complete') return resolve()
        pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve())
        setTimeout(resolve, 3000)
      })
      const postedAt = performance.now()
      w.postedAt ??= {}
      w.postedAt[key] = postedAt
      const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: pc.localDescription!.sdp })
      const text = await res.text()
      if (res.status !== 201) return { status: res.status, detail: JSON.parse(text).detail, postedAt }
      try {
        await pc.setRemoteDescription({ type: 'answer', sdp: text })
      } catch (err) {
        return { status: 201, location: res.headers.get('location') ?? undefined, postedAt, error: String(err) }
      }
      return { status: 201, location: res.headers.get('location') ?? undefined, postedAt }
    },
    path,
    key,
    kinds,
    bundlePolicy,
  )
}
