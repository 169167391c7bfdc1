// A network rollback moving the vehicle's address back (issue 33): the pilot watches through the address
// being changed, the change cuts every viewer off, nobody confirms it, and the rollback brings the old
// address back; every viewer plays again by itself within 5 s of that, with no reload. As on a vehicle:
// the service and a real NetworkManager in the lab's namespace (tests/integration/nm/lab.ts) with eth0 at
// 10.77.0.1, and the pilot's laptop in a namespace of its own holding eth0's veth peer (10.77.0.2): the
// tether. Viewers on the laptop: the console's WebRTC preview (H.264) and MJPEG preview (MJPG) in
// Chromium, and an RTSP client that restarts on silence as QGroundControl's does (RestartingViewer).
// Nothing calls the API while the change waits for its rollback: any request would keep the change.
// Prerequisites: root, scripts/setup/networkmanager.sh, chromium.sh, gstreamer.sh, rtsp.sh, recordings.sh (curl).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { until } from '../helpers'
import { launchBrowser } from './browser'
import { countPreviewPictures, firstPictures, openConsole, streamSmallest, waitInPage, type ConsoleSession } from './console.helpers'
import { requireGStreamer, requireRtspClients, RestartingViewer } from './gstreamer.helpers'
import { startNmLab, type NmLab } from './nm/lab'
import { startServiceInLab, type LabService } from './nm/service'
import { ip } from './nm/tether'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264 (WebRTC preview, RTSP)
const WEBCAM = 'usb-0000:00:14.0-4' // Logitech: MJPG (MJPEG preview)
const OLD = '10.77.0.1'
const NEW = '10.77.0.9'
const PILOT = '10.77.0.2'
/** The window the change waits in for a client: long enough for every viewer to see the cut. */
const ROLLBACK_SECONDS = 8
const pilotNs = `periscope-rollback-pilot-${process.pid}`
const inPilot = ['/usr/sbin/ip', 'netns', 'exec', pilotNs]
/** Inside the lab's namespace: any port is free there (one chosen at run time all the same). */
const rtspPort = 18554 + (process.pid % 1000)

let lab: NmLab
let pilotMade = false
let service: LabService
let c: ConsoleSession
let rtsp: RestartingViewer | undefined

beforeAll(async () => {
  requireGStreamer()
  requireRtspClients()
  lab = await startNmLab({ pairs: 1 })
  await lab.nmcli('connection', 'add', 'type', 'ethernet', 'ifname', 'eth0', 'con-name', 'static0', 'ipv4.method', 'manual', 'ipv4.addresses', `${OLD}/24`, 'ipv6.method', 'disabled', 'connection.autoconnect', 'no')
  // eth0's peer becomes the laptop's end of the tether.
  await ip('netns', 'add', pilotNs)
  pilotMade = true
  await ip('-n', lab.ns, 'link', 'set', 'eth1', 'netns', pilotNs)
  await ip('-n', pilotNs, 'link', 'set', 'lo', 'up')
  await ip('-n', pilotNs, 'addr', 'add', `${PILOT}/24`, 'dev', 'eth1')
  await ip('-n', pilotNs, 'link', 'set', 'eth1', 'up')
  await lab.nmcli('connection', 'up', 'static0')
  await until('eth0 at the old address', async () => (await lab.ipv4('eth0')).join(), (a) => a === `${OLD}/24`)
  c = await openConsole({
    service: async () => (service = await startServiceInLab(lab, OLD, ['--network-rollback', String(ROLLBACK_SECONDS), '--rtsp-port', String(rtspPort)])),
    browser: () => launchBrowser({ netns: pilotNs }),
  })
}, 180_000)

afterAll(async () => {
  await rtsp?.stop()
  await c?.close()
  // The laptop's namespace first: deleting it deletes eth1, and with it eth0, before the lab goes.
  if (pilotMade) await ip('netns', 'del', pilotNs)
  await lab?.stop()
})

test('an address change nobody confirms: every viewer is cut off, and plays again within 5 s of the rollback bringing the address back, no reload', async () => {
  await streamSmallest(service, EHD, 'H264', 47_030)
  await streamSmallest(service, WEBCAM, 'MJPG', 47_040)
  await c.open('cameras')
  const whep = `[data-device="${EHD}"] [data-preview="whep"]`
  const mjpeg = `[data-device="${WEBCAM}"] [data-preview="mjpeg"]`
  await c.page.waitForSelector(`${whep} video`, { timeout: 20_000 })
  await c.page.waitForSelector(`${mjpeg} img`, { timeout: 20_000 })
  const { shown, plays } = await countPreviewPictures(c.page, whep, mjpeg)
  await plays('both previews playing', 30_000)
  rtsp = new RestartingViewer(`rtsp://${OLD}:${rtspPort}/${EHD}`, 2_000, inPilot)
  await until('the RTSP viewer decoding', async () => rtsp!.frames.length, (n) => n >= 10, 20_000)

  // The change, as the console's Network page makes it: the active profile's address.
  const profile = ((await service.call('GET', '/api/network/connection_profiles')).body as any[]).find((p) => p.id === 'static0')
  const body = { method: 'manual', ip_addresses: [{ address: NEW, prefix: 24 }], gateway: null, dns: [], never_default: false }
  // Its answer may come only after the rollback (its source address is gone meanwhile): awaited at the end.
  const changing = service.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(profile.path)}`, body)
  await until('the new address on eth0', async () => (await lab.ipv4('eth0')).join(), (a) => a === `${NEW}/24`, 20_000)
  await waitInPage(c.page, 'both previews marked frozen', () => (globalThis as any).document.querySelectorAll('[data-preview][data-frozen]').length === 2, 10_000)
  // No client reaches the vehicle: the rollback brings the old address back.
  await until('the rollback: the old address on eth0', async () => (await lab.ipv4('eth0')).join(), (a) => a === `${OLD}/24`, (ROLLBACK_SECONDS + 30) * 1000)
  const backAt = Date.now()
  const watching = firstPictures(shown, await shown(), backAt, 6000)
  await plays('both previews playing again after the rollback', 5_000)
  const back = await watching
  console.log(`rollback: both previews playing again ${Date.now() - backAt} ms after the old address came back (first picture: WebRTC ${back.whep} ms, MJPEG ${back.mjpeg} ms)`)
  await until('the RTSP viewer decoding again', async () => rtsp!.framesAfter(backAt), (n) => n >= 10, Math.max(1, backAt + 5_000 - Date.now()))
  console.log(`rollback: the RTSP viewer decoding again ${rtsp.frames.find((f) => f > backAt)! - backAt} ms after the old address came back (${rtsp.restarts} restarts)`)

  await changing
  // The service says it rolled back, and keeps the old address.
  expect((await service.call('GET', '/api/network/rollback')).body.pending).toBeNull()
  const after = ((await service.call('GET', '/api/network/connection_profiles')).body as any[]).find((p) => p.id === 'static0')
  expect(after.ipv4_settings.ip_addresses).toEqual([{ address: OLD, prefix: 24 }])
  expect(c.errors().filter((e) => !/net::ERR_/.test(e))).toEqual([])
}, 150_000)
