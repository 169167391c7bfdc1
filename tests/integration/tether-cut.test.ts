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
import { countPreviewPictures, firstPictures, openConsole, streamSmallest, waitInPage, type ConsoleSession } from './console.helpers'
import { requireGStreamer, requireRtspClients, RestartingViewer } from './gstreamer.helpers'
import { startServiceInNamespace, type LabService } from './nm/service'
import { makeTether, type Tether } from './nm/tether'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264 (WebRTC preview)
const WEBCAM = 'usb-0000:00:14.0-4' // Logitech: MJPG (MJPEG preview)
let tether: Tether
let service: LabService
let c: ConsoleSession
let rtsp: RestartingViewer | undefined
/** Inside the vehicle's own namespace: any port is free there (one chosen at run time all the same). */
const rtspPort = 18554 + (process.pid % 1000)

beforeAll(async () => {
  requireGStreamer()
  requireRtspClients()
  tether = await makeTether('cut', 0)
  c = await openConsole({
    service: async () => (service = await startServiceInNamespace(tether.vehicleNs, tether.vehicle, ['--rtsp-port', String(rtspPort)])),
    browser: () => launchBrowser({ netns: tether.pilotNs }),
  })
}, 120_000)

afterAll(async () => {
  await rtsp?.stop()
  await c?.close()
  await tether?.remove()
})

test('the tether down for 10 s: both previews are marked frozen, and they and a QGroundControl-like RTSP viewer play again within 5 s of it coming back, no reload', async () => {
  await streamSmallest(service, EHD, 'H264', 47_010)
  await streamSmallest(service, WEBCAM, 'MJPG', 47_020)
  await c.open('cameras')
  const whep = `[data-device="${EHD}"] [data-preview="whep"]`
  const mjpeg = `[data-device="${WEBCAM}"] [data-preview="mjpeg"]`
  await c.page.waitForSelector(`${whep} video`, { timeout: 20_000 })
  await c.page.waitForSelector(`${mjpeg} img`, { timeout: 20_000 })
  const { shown, plays } = await countPreviewPictures(c.page, whep, mjpeg)
  await plays('both previews playing', 30_000)
  // QGroundControl's receiver on the pilot's laptop, restarting after 2 s of silence (its RTSP Video Timeout).
  rtsp = new RestartingViewer(`rtsp://${tether.vehicle}:${rtspPort}/${EHD}`, 2_000, tether.inPilot)
  await until('the RTSP viewer decoding', async () => rtsp!.frames.length, (n) => n >= 10, 20_000)

  await tether.set('down')
  const downAt = Date.now()
  await waitInPage(c.page, 'both previews marked frozen', () => (globalThis as any).document.querySelectorAll('[data-preview][data-frozen]').length === 2, 10_000)
  // The rest of the 10 s with the tether down.
  await Bun.sleep(Math.max(0, 10_000 - (Date.now() - downAt)))
  await tether.set('up')
  const upAt = Date.now()
  // When each preview shows a picture again (polled), for the log.
  const watching = firstPictures(shown, await shown(), upAt, 6000)
  await plays('both previews playing again after the tether came back', 5_000)
  const back = await watching
  console.log(`tether cut: both previews playing again ${Date.now() - upAt} ms after the link came back (first picture: WebRTC ${back.whep} ms, MJPEG ${back.mjpeg} ms)`)
  await until('the RTSP viewer decoding again', async () => rtsp!.framesAfter(upAt), (n) => n >= 10, Math.max(1, upAt + 5_000 - Date.now()))
  console.log(`tether cut: the RTSP viewer decoding again ${rtsp.frames.find((f) => f > upAt)! - upAt} ms after the link came back (${rtsp.restarts} restarts)`)
  expect(c.errors().filter((e) => !/net::ERR_/.test(e))).toEqual([])
}, 120_000)
