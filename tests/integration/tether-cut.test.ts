// The tether cut and restored (issue 33): the vehicle and the pilot's laptop are two network namespaces
// of this test's own, joined by a veth pair as a tether joins them: the service (simulated cameras) in
// the one, Chromium with the console in the other, the page loaded from the vehicle's address. The
// vehicle's end is taken down for 10 s, then up again; the console's WebRTC preview (H.264) and MJPEG
// preview (MJPG) are marked frozen while it is down and play again within 5 s of the link coming back,
// by themselves, with no reload; so does an RTSP viewer in the pilot's namespace that restarts on
// silence as QGroundControl's does (RestartingViewer).
// Prerequisites: root, iproute2, scripts/setup/chromium.sh and gstreamer.sh.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { until } from '../helpers'
import { launchBrowser } from './browser'
import { openConsole, waitInPage, type ConsoleSession } from './console.helpers'
import { requireGStreamer, requireRtspClients, RestartingViewer } from './gstreamer.helpers'
import { startServiceInNamespace, type LabService } from './nm/service'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264 (WebRTC preview)
const WEBCAM = 'usb-0000:00:14.0-4' // Logitech: MJPG (MJPEG preview)
const VEHICLE = '10.79.0.1'
const PILOT = '10.79.0.2'
const tag = `${process.pid}`.slice(-5)
const vehicleNs = `periscope-vehicle-${tag}`
const pilotNs = `periscope-pilot-${tag}`
// Interface names at most 15 characters.
const vehicleIf = `tv${tag}`
const pilotIf = `tp${tag}`

let service: LabService
let c: ConsoleSession
/** The namespaces this file made: each deleted in afterAll, a failure there named with this file. */
const made: string[] = []
let rtsp: RestartingViewer | undefined
/** Inside the vehicle's own namespace: any port is free there (one chosen at run time all the same). */
const rtspPort = 18554 + (process.pid % 1000)

async function ip(...args: string[]): Promise<void> {
  const proc = Bun.spawn(['/usr/sbin/ip', ...args], { stdout: 'ignore', stderr: 'pipe' })
  const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`ip ${args.join(' ')}: ${err.trim()}`)
}
const tether = (state: 'up' | 'down') => ip('netns', 'exec', vehicleNs, 'ip', 'link', 'set', vehicleIf, state)

beforeAll(async () => {
  requireGStreamer()
  requireRtspClients()
  if (process.getuid?.() !== 0) throw new Error('tether-cut.test.ts needs root (network namespaces)')
  for (const ns of [vehicleNs, pilotNs]) {
    await ip('netns', 'add', ns)
    made.push(ns)
  }
  await ip('link', 'add', vehicleIf, 'netns', vehicleNs, 'type', 'veth', 'peer', 'name', pilotIf, 'netns', pilotNs)
  for (const [ns, dev, address] of [[vehicleNs, vehicleIf, VEHICLE], [pilotNs, pilotIf, PILOT]] as const) {
    await ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up')
    await ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${address}/24`, 'dev', dev)
    await ip('netns', 'exec', ns, 'ip', 'link', 'set', dev, 'up')
  }
  c = await openConsole({
    service: async () => (service = await startServiceInNamespace(vehicleNs, VEHICLE, ['--rtsp-port', String(rtspPort)])),
    browser: () => launchBrowser({ netns: pilotNs }),
  })
}, 120_000)

afterAll(async () => {
  await rtsp?.stop()
  await c?.close()
  for (const ns of made.splice(0)) await ip('netns', 'del', ns)
})

const device = async (bus: string) => ((await service.call('GET', '/api/devices')).body as any[]).find((d) => d.bus_info === bus)

/** Streams `bus` in `encode` at its smallest size, 15 fps where offered, to a port on the vehicle's own loopback. */
async function stream(bus: string, encode: 'H264' | 'MJPG', port: number): Promise<void> {
  const d = await device(bus)
  const size = d.cameras.flatMap((cam: any) => cam.formats[encode] ?? []).sort((a: any, b: any) => a.width - b.width)[0]
  const interval = size.intervals.find((i: any) => i.denominator / i.numerator === 15) ?? size.intervals[0]
  const r = await service.call('POST', '/api/devices/configure_stream', { bus_info: bus, stream_type: 'UDP', encode_type: encode, stream_format: { width: size.width, height: size.height, interval }, enabled: true, endpoints: [{ host: '127.0.0.1', port }] })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  await until(`${bus} streaming ${encode}`, () => device(bus), (x) => x?.stream_status?.state === 'running', 20_000)
}

test('the tether down for 10 s: both previews are marked frozen, and they and a QGroundControl-like RTSP viewer play again within 5 s of it coming back, no reload', async () => {
  await stream(EHD, 'H264', 47_010)
  await stream(WEBCAM, 'MJPG', 47_020)
  await c.open('cameras')
  const whep = `[data-device="${EHD}"] [data-preview="whep"]`
  const mjpeg = `[data-device="${WEBCAM}"] [data-preview="mjpeg"]`
  await c.page.waitForSelector(`${whep} video`, { timeout: 20_000 })
  await c.page.waitForSelector(`${mjpeg} img`, { timeout: 20_000 })
  // Pictures each preview shows: the <video>'s presented frames, the <img>'s new pictures.
  await c.page.evaluate((whepSel: string, mjpegSel: string) => {
    const w = globalThis as any
    const shown = (w.shown = { whep: 0, mjpeg: 0 })
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
  const plays = async (what: string, timeoutMs: number) => {
    const from = await c.page.evaluate(() => ({ ...(globalThis as any).shown }))
    try {
      await c.page.waitForFunction(
        (f: { whep: number; mjpeg: number }, a: string, b: string) => {
          const w = globalThis as any
          return w.shown.whep >= f.whep + 10 && w.shown.mjpeg >= f.mjpeg + 10 && !w.document.querySelector(`${a}[data-frozen], ${b}[data-frozen]`)
        },
        { timeout: timeoutMs, polling: 50 },
        from,
        whep,
        mjpeg,
      )
    } catch (e) {
      const state = await c.page.evaluate((a: string, b: string) => [a, b].map((sel) => (globalThis as any).document.querySelector(sel)?.textContent ?? 'gone'), whep, mjpeg)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}: ${(e as Error).message}; the cards said ${JSON.stringify(state)}`)
    }
  }
  await plays('both previews playing', 30_000)
  // QGroundControl's receiver on the pilot's laptop, restarting after 2 s of silence (its RTSP Video Timeout).
  rtsp = new RestartingViewer(`rtsp://${VEHICLE}:${rtspPort}/${EHD}`, 2_000, ['/usr/sbin/ip', 'netns', 'exec', pilotNs])
  await until('the RTSP viewer decoding', async () => rtsp!.frames.length, (n) => n >= 10, 20_000)

  await tether('down')
  const downAt = Date.now()
  await waitInPage(c.page, 'both previews marked frozen', () => (globalThis as any).document.querySelectorAll('[data-preview][data-frozen]').length === 2, 10_000)
  // The rest of the 10 s with the tether down.
  await Bun.sleep(Math.max(0, 10_000 - (Date.now() - downAt)))
  await tether('up')
  const upAt = Date.now()
  // When each preview shows a picture again (polled), for the log.
  const back = { whep: 0, mjpeg: 0 }
  const from = await c.page.evaluate(() => ({ ...(globalThis as any).shown }))
  const watching = (async () => {
    while (!back.whep || !back.mjpeg) {
      const now = await c.page.evaluate(() => ({ ...(globalThis as any).shown })).catch(() => from)
      if (!back.whep && now.whep > from.whep) back.whep = Date.now() - upAt
      if (!back.mjpeg && now.mjpeg > from.mjpeg) back.mjpeg = Date.now() - upAt
      if (Date.now() - upAt > 6000) break
      await Bun.sleep(50)
    }
  })()
  await plays('both previews playing again after the tether came back', 5_000)
  await watching
  console.log(`tether cut: both previews playing again ${Date.now() - upAt} ms after the link came back (first picture: WebRTC ${back.whep} ms, MJPEG ${back.mjpeg} ms)`)
  await until('the RTSP viewer decoding again', async () => rtsp!.framesAfter(upAt), (n) => n >= 10, Math.max(1, upAt + 5_000 - Date.now()))
  console.log(`tether cut: the RTSP viewer decoding again ${rtsp.frames.find((f) => f > upAt)! - upAt} ms after the link came back (${rtsp.restarts} restarts)`)
  expect(c.errors().filter((e) => !/net::ERR_/.test(e))).toEqual([])
}, 120_000)
