// Cockpit's WebRTC signalling with a real browser: the whole service (core/main.ts, simulated cameras,
// GStreamer) and headless Chromium running the protocol as Cockpit's signaller.ts/session.ts do
// (./cockpit-client.ts). Proves: the own port and the HTTP path both serve it, availableStreams lists
// the running H.264 camera by nickname with its size, the browser decodes its frames at that size,
// endSession and a closed socket end the session, a stopped stream makes the service ask endSession
// while an unplugged camera's session waits for it and plays again,
// WHEP and Cockpit sessions share --max-viewers, `watch.cockpit` gives the address, a stream with sound
// is heard (Opus, in the media stream Cockpit's widget plays) and one without is offered video only,
// and the extras' widget page plays framed on another origin.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Browser } from 'puppeteer-core'
import { freeTcpPort, until } from '../helpers'
import { launchBrowser, openPage, openSession, videoStats, watch } from './browser'
import { closeSocket, endCockpitSession, offerSdp, openCockpitSession, receivedBy, soundStats } from './cockpit-client'
import { requireGStreamer } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

let service: Service
let browser: Browser
const cockpitPort = freeTcpPort()
beforeAll(async () => {
  requireGStreamer()
  // --client-limits off: one browser here fills a camera's every place (the service-wide --max-viewers);
  // each client's share of them is tests/contract/webrtc-doors.test.ts's.
  service = await startService({ args: ['--cockpit-port', String(cockpitPort), '--whep-idle-timeout', '5', '--max-viewers', '2', '--client-limits', 'off'] })
  browser = await launchBrowser()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await service?.kill()
})

const health = async () => (await service.call('GET', '/api/health')).body.plugins.cockpit
const device = async (bus_info: string) => (await service.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === bus_info)

/** A simulated single camera with an H.264 node, streaming H.264 at 640 wide or less under `nickname`. */
async function streaming(nickname: string): Promise<{ bus_info: string; width: number; height: number }> {
  const { body } = await service.call('GET', '/api/devices')
  for (const d of body) {
    if (d.leader || d.followers?.length) continue
    const size = (d.cameras ?? []).flatMap((c: any) => c.formats?.H264 ?? []).find((s: any) => s.width <= 640)
    if (!size) continue
    expect((await service.call('POST', '/api/devices/set_nickname', { bus_info: d.bus_info, nickname })).status).toBe(200)
    const interval = size.intervals.find((i: any) => i.denominator / i.numerator === 15) ?? size.intervals[0]
    const r = await service.call('POST', '/api/devices/configure_stream', {
      bus_info: d.bus_info,
      stream_type: 'UDP',
      stream_format: { width: size.width, height: size.height, interval },
      encode_type: 'H264',
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port: d.stream.endpoints?.[0]?.port ?? 47000 }],
    })
    expect(r.status).toBe(200)
    await until('the stream running', () => device(d.bus_info), (x) => x?.stream_status?.state === 'running', 20_000)
    return { bus_info: d.bus_info, width: size.width, height: size.height }
  }
  throw new Error('no simulated single camera streams H.264 at 640 wide or less')
}

test("Cockpit's flow on the own port: the camera listed by nickname, its frames decoded at its size; endSession ends the session", async () => {
  const cam = await streaming('Front')
  expect((await device(cam.bus_info)).watch.cockpit).toBe(`ws://127.0.0.1:${cockpitPort}`)
  const page = await openPage(browser, service.url)
  try {
    const opened = await openCockpitSession(page, `ws://127.0.0.1:${cockpitPort}`, 'Front', 'a')
    const entry = opened.streams.find((s) => s.name === 'Front')!
    expect(entry).toMatchObject({ encode: 'H264', width: cam.width, height: cam.height, created: null })
    expect(entry.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(Number(entry.interval)).toBeGreaterThan(0)
    expect(entry.source).toBeString()
    const v = await watch(page, 'a', (x) => x.framesDecoded > 0 && x.width > 0, 20_000)
    console.log(`cockpit: first decoded frame ${Math.round(v.firstFrameMs!)} ms after the session started (${cam.width}x${cam.height})`)
    expect([v.width, v.height]).toEqual([cam.width, cam.height])
    await watch(page, 'a', (x) => x.framesDecoded > v.framesDecoded + 10, 10_000)
    expect((await health()).sessions).toBe(1)
    await endCockpitSession(page, 'a', opened)
    await until('the session ended', health, (h) => h.sessions === 0 && h.ended.deleted >= 1, 10_000)
    await watch(page, 'a', (x) => x.state === 'closed' || x.state === 'failed' || x.state === 'disconnected', 40_000)
  } finally {
    await page.close()
  }
}, 120_000)

test('the HTTP path serves it too; a closed socket ends its session; a stopped stream makes the service ask endSession', async () => {
  const cam = await streaming('Down')
  const page = await openPage(browser, service.url)
  const path = `${service.url.replace('http:', 'ws:')}/api/cockpit/signalling`
  try {
    await openCockpitSession(page, path, 'Down', 'b')
    await watch(page, 'b', (x) => x.framesDecoded > 0, 20_000)
    const before = (await health()).ended.disconnected
    await closeSocket(page, 'b')
    await until('the session ended with its socket', health, (h) => h.sessions === 0 && h.ended.disconnected === before + 1, 10_000)

    const opened = await openCockpitSession(page, path, 'Down', 'c')
    await watch(page, 'c', (x) => x.framesDecoded > 0, 20_000)
    expect((await service.call('POST', '/api/devices/unconfigure_stream', { bus_info: cam.bus_info })).status).toBe(200)
    const asked = await until('endSession from the service', () => receivedBy(page, 'c'), (ms) => ms.some((m) => m.type === 'question' && m.content.type === 'endSession'), 20_000)
    const end = asked.find((m) => m.type === 'question' && m.content.type === 'endSession').content.content
    expect(end).toMatchObject({ session_id: opened.sessionId, consumer_id: opened.consumerId, producer_id: opened.producerId })
    expect(end.reason).toContain('stopped')
    expect((await health()).sessions).toBe(0)
    expect((await device(cam.bus_info)).watch.cockpit).toBeNull()
  } finally {
    await page.close()
  }
}, 120_000)

test("a stream with sound: Cockpit's session gets its Opus sound beside the video, in the one media stream the widget plays; without sound, the offer has no audio section", async () => {
  const cam = await streaming('Sound')
  const attach = (source: string | null) => service.call('POST', '/api/audio/attach', { bus_info: cam.bus_info, source })
  const sound = async () => ((await service.call('GET', '/api/audio/streams')).body as any[]).find((a) => a.bus_info === cam.bus_info)
  const ws = `ws://127.0.0.1:${cockpitPort}`
  const page = await openPage(browser, service.url)
  try {
    // The simulated hydrophone (pink noise), whichever camera this is.
    expect((await attach('sim:hydrophone')).status).toBe(200)
    await until('the sound running', sound, (a) => a?.state === 'running', 30_000)
    const opened = await openCockpitSession(page, ws, 'Sound', 'snd')
    // The video section first (Cockpit's one recvonly video transceiver takes it), then the sound's.
    const offer = await offerSdp(page, 'snd')
    expect(offer.match(/^m=\w+/gm)).toEqual(['m=video', 'm=audio'])
    expect(offer).toMatch(/a=rtpmap:\d+ opus\/48000\/2/)
    await watch(page, 'snd', (v) => v.framesDecoded > 0, 20_000)
    // Cockpit's widget element is muted (Chromium then plays nothing out, and counts no energy): the
    // pilot's unmuted <audio> of the same track shows the sound decodes to something heard.
    await page.evaluate(() => {
      const w = globalThis as any
      const audio = w.document.createElement('audio')
      audio.autoplay = true
      audio.srcObject = new w.MediaStream(w.mediaStreams.snd.getAudioTracks())
      w.document.body.appendChild(audio)
    })
    const heard = await until('Opus packets played', () => soundStats(page, 'snd'), (a) => a.packets > 50 && a.energy > 0, 30_000)
    expect(heard.mimeType).toBe('audio/opus')
    expect(heard.tracks).toEqual({ video: 1, audio: 1 })
    await endCockpitSession(page, 'snd', opened)

    expect((await attach(null)).status).toBe(200)
    await until('no sound', sound, (a) => a === undefined || a.state === 'off', 30_000)
    await openCockpitSession(page, ws, 'Sound', 'mute')
    expect((await offerSdp(page, 'mute')).match(/^m=\w+/gm)).toEqual(['m=video'])
    await watch(page, 'mute', (v) => v.framesDecoded > 0, 20_000)
    expect((await soundStats(page, 'mute')).tracks).toEqual({ video: 1, audio: 0 })
  } finally {
    await page.close()
    await attach('auto')
  }
}, 120_000)

test("an unplugged camera: its session waits past the idle timeout, unasked to end, and plays again on the same connection once the camera is back (Cockpit's own code never asks again after an endSession)", async () => {
  const cam = await streaming('Away')
  const page = await openPage(browser, service.url)
  try {
    await openCockpitSession(page, `ws://127.0.0.1:${cockpitPort}`, 'Away', 'u')
    await watch(page, 'u', (x) => x.framesDecoded > 10, 20_000)
    expect((await service.call('POST', '/api/mock/unplug', { bus_info: cam.bus_info })).status).toBe(200)
    await until('the camera gone', () => device(cam.bus_info), (d) => d === undefined, 10_000)
    // Away for longer than --whep-idle-timeout (5 s here): the browser is still heard from, so its session stays.
    const away = Date.now()
    const held = await until('the idle timeout passed with the camera away', async () => ({ sessions: (await health()).sessions, for: Date.now() - away }), (x) => x.sessions !== 1 || x.for > 7_000, 15_000)
    expect(held.sessions).toBe(1)
    expect((await service.call('POST', '/api/mock/plug', { bus_info: cam.bus_info })).status).toBe(200)
    await until('the stream running again', () => device(cam.bus_info), (d) => d?.stream_status?.state === 'running', 20_000)
    const back = await videoStats(page, 'u')
    await watch(page, 'u', (x) => x.framesDecoded > back.framesDecoded + 10 && x.state === 'connected', 20_000)
    expect((await receivedBy(page, 'u')).filter((m) => m.type === 'question' && m.content.type === 'endSession')).toEqual([])
    expect((await health()).sessions).toBe(1)
  } finally {
    await page.close()
  }
  await until('the session ended with its page', health, (h) => h.sessions === 0, 10_000)
}, 120_000)

test('WHEP and Cockpit sessions share --max-viewers (2 here): the third viewer of a camera is refused with a sentence', async () => {
  const cam = await streaming('Side')
  const page = await openPage(browser, service.url)
  try {
    const whep = await openSession(page, `/api/streams/${encodeURIComponent(cam.bus_info)}/whep`, 'w')
    expect(whep.status).toBe(201)
    await openCockpitSession(page, `ws://127.0.0.1:${cockpitPort}`, 'Side', 'd')
    await watch(page, 'd', (x) => x.framesDecoded > 0, 20_000)
    const third = await openCockpitSession(page, `ws://127.0.0.1:${cockpitPort}`, 'Side', 'e').catch((e: Error) => e)
    expect(third).toBeInstanceOf(Error)
    const errors = (await receivedBy(page, 'e')).filter((m) => m.type === 'error')
    expect(errors.map((m) => m.content.detail)).toEqual([expect.stringContaining('--max-viewers')])
    // And the other way: WHEP counts Cockpit's session too.
    const moreWhep = await openSession(page, `/api/streams/${encodeURIComponent(cam.bus_info)}/whep`, 'w2')
    expect(moreWhep.status).toBe(503)
    expect(moreWhep.detail).toContain('WHEP and Cockpit')
  } finally {
    await page.close()
  }
}, 120_000)

test("the extras' widget page plays its camera framed in an iframe on another origin (as Cockpit shows it); the page's one session ends when it goes", async () => {
  const cam = await streaming('Widget')
  const extras = (await service.call('GET', '/cockpit_extras.json')).body
  const widget = extras.widgets.find((w: any) => w.iframeUrl === `/widget/${encodeURIComponent(cam.bus_info)}`)
  expect(widget).toBeDefined()
  // Another origin (127.0.0.2) frames the widget, as Cockpit's iframe widget does.
  const host = Bun.serve({
    hostname: '127.0.0.2',
    port: 0,
    fetch: () => new Response(`<!doctype html><iframe id="w" src="${service.url}${widget.iframeUrl}" allow="camera; autoplay" style="width:640px;height:480px"></iframe>`, { headers: { 'content-type': 'text/html' } }),
  })
  const page = await browser.newPage()
  try {
    await page.goto(`http://127.0.0.2:${host.port}/`, { waitUntil: 'domcontentloaded' })
    const frame = await until('the widget frame', async () => page.frames().find((f) => f.url().includes('/widget/')), (f) => f !== undefined, 10_000)
    // Loopback candidates need the fake camera granted in the frame (tests/integration/browser.ts); the player retries every 2 s until then.
    await frame!.waitForSelector('#video')
    const granted = await frame!.evaluate(async () => {
      try {
        const stream = await (globalThis as any).navigator.mediaDevices.getUserMedia({ video: true })
        for (const track of stream.getTracks()) track.stop()
        return 'ok'
      } catch (err) {
        return String(err)
      }
    })
    expect(granted).toBe('ok')
    const playing = () => frame!.evaluate(() => {
      const v = (globalThis as any).document.getElementById('video')
      return { width: v.videoWidth as number, height: v.videoHeight as number, frames: (v.getVideoPlaybackQuality?.().totalVideoFrames ?? 0) as number, status: (globalThis as any).document.getElementById('status').textContent as string }
    })
    const first = await until('the widget decoding', playing, (v) => v.frames > 0 && v.width > 0, 30_000)
    expect([first.width, first.height]).toEqual([cam.width, cam.height])
    await until('frames going on', playing, (v) => v.frames > first.frames + 10, 10_000)
    const whep = async () => (await service.call('GET', '/api/health')).body.plugins.whep.sessions
    // A WHEP viewer of an earlier test (its page closed) is reaped within the idle timeout.
    await until("the widget's one WHEP session", whep, (n) => n === 1, 20_000)
    await page.close()
    await until("the widget's session ended with its page", whep, (n) => n === 0, 40_000)
  } finally {
    if (!page.isClosed()) await page.close()
    host.stop(true)
  }
}, 120_000)
