// The web console behind a real reverse proxy that serves it under a path prefix it strips, as BlueOS
// shows an extension's page (http://blueos.local/extensionv2/periscope/ → the service's `/`): Debian's
// nginx (nginx.helpers.ts, the location block the README documents) in front of the real service
// (simulated cameras, real GStreamer), in real Chromium. The page is named `localhost` through the
// proxy while the service sees 127.0.0.1 (nginx's upstream), so a link written on the service's host
// would show. Every request the page makes stays under the prefix; each change is checked on the
// service directly (GET), not through the proxy.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { CID } from '../../drivers/mock/cameras'
import { listenEvents, until } from '../helpers'
import { openConsole, waitInPage, type ConsoleSession } from './console.helpers'
import { press, typeInto } from './console-page.helpers'
import { requireGStreamer } from './gstreamer.helpers'
import { scrape } from './metrics.helpers'
import { startReverseProxy, type ReverseProxy } from './nginx.helpers'

const PREFIX = '/extensionv2/periscope/'
/** A second way in: the page served at a path without its final slash (no nginx redirect there). */
const BARE = '/bare'
/**
 * A third: nginx's defaults (buffering on, HTTP/1.0 to the upstream), which hold back even the event
 * stream's headers unless the answer turns buffering off itself.
 */
const BUFFERED = '/buffered/'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264 (WHEP preview)
const WEBCAM = 'usb-0000:00:14.0-4' // Logitech, MJPG (MJPEG preview)

let c: ConsoleSession
let proxy: ReverseProxy
/** Every URL the page asked for, from the start. */
const requested: string[] = []
/** Every answer the page got: "METHOD url status". */
const answered: string[] = []
/** Lines of nginx's access log before the console's first page (the helpers' own checks). */
let logStart = 0

beforeAll(async () => {
  requireGStreamer()
  c = await openConsole({
    front: async (service) => {
      const upstream = service.url
      proxy = await startReverseProxy({
        upstream,
        prefix: PREFIX,
        host: 'localhost',
        more: `location = ${BARE} { proxy_pass ${upstream}/; }
    location ${BARE}/ { proxy_pass ${upstream}/; }
    location ${BUFFERED} { proxy_pass ${upstream}/; }`,
      })
      return proxy
    },
  })
  logStart = proxy.answered().length
  c.page.on('request', (r) => void requested.push(r.url()))
  c.page.on('response', (r) => void answered.push(`${r.request().method()} ${r.url()} ${r.status()}`))
}, 60_000)
afterAll(() => c?.close())

const card = (bus: string) => `[data-device="${bus}"]`
const device = async (bus: string) => ((await c.service.call('GET', '/api/devices')).body as any[]).find((d) => d.bus_info === bus)
const viewers = async (bus_info: string, protocol: 'whep' | 'mjpeg') => (await scrape(c.origin)).m.value('periscope_viewers', { bus_info, protocol }) ?? 0
/** The page's requests that left the prefix (a URL resolved from the host's root). */
const outsidePrefix = () => requested.filter((u) => u.startsWith('http') && !u.startsWith(c.pageUrl))

/** Runs the camera's stream (UDP to loopback) in `encode` at its smallest size, until it runs; through the service directly. */
async function stream(bus: string, encode: 'H264' | 'MJPG', enabled = true): Promise<void> {
  const d = await device(bus)
  const size = d.cameras.flatMap((cam: any) => cam.formats[encode] ?? []).sort((a: any, b: any) => a.width - b.width)[0]
  const r = await c.service.call('POST', '/api/devices/configure_stream', {
    bus_info: bus,
    stream_type: 'UDP',
    encode_type: encode,
    stream_format: { width: size.width, height: size.height, interval: size.intervals[0] },
    enabled,
    endpoints: d.stream.endpoints.length ? d.stream.endpoints : [{ host: '127.0.0.1', port: 5600 }],
  })
  expect(r.status).toBe(200)
  if (enabled) await until(`${bus} streaming ${encode}`, () => device(bus), (x) => x.stream_status?.state === 'running' && Boolean(encode === 'H264' ? x.watch?.whep : x.watch?.mjpeg), 20_000)
}

test('through nginx at /extensionv2/periscope/: every page loads with no console error, and nothing is asked outside the prefix', async () => {
  expect(c.pageUrl).toBe(`${proxy.origin}${PREFIX}`)
  for (const name of ['cameras', 'recordings', 'network', 'preferences', 'status'] as const) {
    await c.open(name)
    await waitInPage(c.page, `the ${name} page's content`, () => (globalThis as any).document.querySelector('main [data-cards] .card, main table, main form, main dl, main [data-error], main p.muted'))
  }
  await c.open('cameras')
  await c.page.waitForSelector(card(WEBCAM))
  await c.screenshot('proxy-cameras')
  expect(c.errors()).toEqual([])
  // The only refusals: the network page's, when this machine has no NetworkManager (the page says why).
  expect(c.refusals.filter((r) => !new URL(r.url).pathname.startsWith(`${PREFIX}api/network/`))).toEqual([])
  // Its assets, the API and the event stream all came through the prefix, and nginx saw nothing else.
  expect(outsidePrefix()).toEqual([])
  expect(requested.some((u) => /\/extensionv2\/periscope\/console\/app\.[a-z0-9]+\.js$/.test(u))).toBe(true)
  expect(requested).toContain(`${c.pageUrl}api/events`)
  expect(proxy.answered().slice(logStart).filter((line) => !line.split(' ')[1]!.startsWith(PREFIX))).toEqual([])
}, 120_000)

test('a control changed through the proxy lands in the service (read there directly), and shows after a reload', async () => {
  await c.open('cameras')
  const section = `${card(WEBCAM)} details[data-section="controls"]`
  await c.page.waitForSelector(section)
  await c.page.$eval(section, (d: any) => void (d.open = true))
  const brightness = `${card(WEBCAM)} [data-control="${CID.BRIGHTNESS}"]`
  const before = (await device(WEBCAM)).controls.find((x: any) => x.control_id === CID.BRIGHTNESS).value
  const wanted = before === 23 ? 24 : 23
  try {
    await typeInto(c.page, `${brightness} input[type=number]`, String(wanted), 'Enter')
    await until('the brightness in the service', () => device(WEBCAM), (d) => d.controls.find((x: any) => x.control_id === CID.BRIGHTNESS).value === wanted)
    await c.page.waitForSelector(`${brightness}[data-value="${wanted}"]`)
    await c.open('cameras')
    await c.page.waitForSelector(section)
    await c.page.$eval(section, (d: any) => void (d.open = true))
    await c.page.waitForSelector(`${brightness}[data-value="${wanted}"]`)
    expect(answered).toContain(`POST ${c.pageUrl}api/devices/set_uvc_control 200`)
    expect(c.errors()).toEqual([])
  } finally {
    await c.service.call('POST', '/api/devices/set_uvc_control', { bus_info: WEBCAM, control_id: CID.BRIGHTNESS, value: before })
  }
}, 60_000)

test('live updates through the proxy (/api/events unbuffered): an unplugged camera\'s card leaves within 1 s, and comes back', async () => {
  await c.open('cameras')
  await c.page.waitForSelector(card(WEBCAM))
  try {
    expect((await c.service.call('POST', '/api/mock/unplug', { bus_info: WEBCAM })).status).toBe(200)
    await c.page.waitForSelector(card(WEBCAM), { hidden: true, timeout: 1000 })
    expect((await c.service.call('POST', '/api/mock/plug', { bus_info: WEBCAM })).status).toBe(200)
    await c.page.waitForSelector(card(WEBCAM), { timeout: 1000 })
  } finally {
    if (!(await device(WEBCAM))) await c.service.call('POST', '/api/mock/plug', { bus_info: WEBCAM })
  }
  expect(c.errors()).toEqual([])
}, 30_000)

test('a WHEP preview through the proxy decodes frames; its session is ended under the prefix; the copyable URLs are the ones that work from here', async () => {
  const whepUrl = `${c.pageUrl}api/streams/${encodeURIComponent(EHD)}/whep`
  try {
    await stream(EHD, 'H264')
    await c.open('cameras')
    await waitInPage(c.page, 'WebRTC frames decoded in the exploreHD preview', () => Number((globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-1"] [data-preview="whep"]')?.getAttribute('data-frames-decoded')) > 0, 20_000)
    expect(answered).toContain(`POST ${whepUrl} 201`)
    await until('the page counted as a WebRTC viewer', () => viewers(EHD, 'whep'), (n) => n === 1, 10_000)

    // Shown for copying: the WHEP URL the page itself used, and RTSP on the host the page was loaded
    // from (the service wrote both on its own host, 127.0.0.1, which nginx sent it).
    const shown = await c.page.$$eval(`${card(EHD)} [data-watch-links] code`, (codes: any[]) => codes.map((e) => e.textContent))
    const own = (await device(EHD)).watch
    const rtsp = new URL(own.rtsp)
    expect(rtsp.hostname).toBe('127.0.0.1')
    // Cockpit's signalling first: on the HTTP port here (--cockpit-port off), so under the prefix as WHEP is.
    expect(shown).toEqual([whepUrl.replace(/^http/, 'ws').replace(/api\/streams\/.*$/, 'api/cockpit/signalling'), `rtsp://localhost:${rtsp.port}${rtsp.pathname}`, whepUrl])

    // The card's preview off: the session the service named by an absolute path (its Location) is
    // ended under the prefix, and the service counts no viewer (long before its idle timeout).
    await press(c.page, `${card(EHD)} button[data-action="card-preview"]`)
    await until('the WHEP session ended', async () => answered.find((a) => a.startsWith(`DELETE ${whepUrl}/`)), (a) => a !== undefined, 10_000)
    expect(answered.find((a) => a.startsWith(`DELETE ${whepUrl}/`))).toMatch(/ 20[04]$/)
    await until('no WebRTC viewer left', () => viewers(EHD, 'whep'), (n) => n === 0, 10_000)
    expect(outsidePrefix()).toEqual([])
    expect(c.errors()).toEqual([])
  } finally {
    await c.page.evaluate(() => (globalThis as any).localStorage.clear()).catch(() => {})
    await stream(EHD, 'H264', false)
  }
}, 90_000)

test('an MJPEG preview through the proxy shows pictures (the multipart answer is not held by nginx)', async () => {
  try {
    await stream(WEBCAM, 'MJPG')
    await c.open('cameras')
    await waitInPage(c.page, 'the webcam MJPEG preview showing', () => ((globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-4"] [data-preview="mjpeg"] img')?.naturalWidth ?? 0) > 0, 20_000)
    expect(requested).toContain(`${c.pageUrl}api/streams/${encodeURIComponent(WEBCAM)}/mjpeg`)
    await until('the page counted as an MJPEG viewer', () => viewers(WEBCAM, 'mjpeg'), (n) => n === 1, 10_000)
    // Its answer tells a buffering nginx not to hold it back, as the event stream's does (the last test).
    const direct = new AbortController()
    const res = await fetch(`${c.origin}/api/streams/${encodeURIComponent(WEBCAM)}/mjpeg`, { signal: direct.signal })
    expect(res.headers.get('x-accel-buffering')).toBe('no')
    direct.abort()
    expect(outsidePrefix()).toEqual([])
    expect(c.errors()).toEqual([])
  } finally {
    await c.open('status')
    await stream(WEBCAM, 'MJPG', false)
  }
}, 60_000)

test('loaded without the final slash: nginx redirects at the documented prefix; where a proxy serves the page there, the page moves itself to `…/`', async () => {
  const noSlash = await fetch(`${proxy.origin.replace('localhost', '127.0.0.1')}${PREFIX.slice(0, -1)}`, { redirect: 'manual' })
  expect(noSlash.status).toBe(301)
  expect(new URL(noSlash.headers.get('location')!, proxy.origin).pathname).toBe(PREFIX)

  const before = c.errors().length
  await c.page.goto(`${proxy.origin}${BARE}#/cameras`, { waitUntil: 'domcontentloaded' })
  await c.page.waitForSelector(card(WEBCAM), { timeout: 15_000 })
  expect(await c.page.evaluate(() => (globalThis as any).location.href)).toBe(`${proxy.origin}${BARE}/#/cameras`)
  // No error at its new place (the inline script that moved it is allowed by the page's CSP: a
  // refused one would be logged as an error, and the page would not have moved).
  expect(c.errors().slice(before)).toEqual([])
}, 30_000)

test("the service's endless answers turn nginx's buffering off themselves (X-Accel-Buffering): events arrive at once through a default location", async () => {
  const events = listenEvents(`${proxy.origin.replace('localhost', '127.0.0.1')}${BUFFERED}api/events`)
  try {
    const res = await Promise.race([events.ready, Bun.sleep(5000).then(() => Promise.reject(new Error('no answer to GET /api/events through the buffering location within 5 s: nginx holds it')))])
    expect(res.status).toBe(200)
    expect((await c.service.call('POST', '/api/mock/unplug', { bus_info: WEBCAM })).status).toBe(200)
    const at = performance.now()
    await until('device_removed through the buffered location', async () => events.events.find((e) => e.type === 'device_removed'), (e) => e !== undefined, 1000)
    expect(performance.now() - at).toBeLessThanOrEqual(1000)
  } finally {
    events.close()
    if (!(await device(WEBCAM))) await c.service.call('POST', '/api/mock/plug', { bus_info: WEBCAM })
  }
}, 30_000)
