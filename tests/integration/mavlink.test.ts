// The MAVLink camera protocol (plugins/mavlink) in the whole service (core/main.ts, simulated cameras,
// real GStreamer and RTSP server), seen by a ground station that shares no code with it
// (tests/mavlink-gcs.ts: its own framing and checksums from common.xml). Each running stream is a
// camera component with its own heartbeat; its information, its stream's RTSP URI (which ffprobe
// plays), its storage and capture status answer; a capture started and stopped over MAVLink is a
// recording in GET /api/recordings; an unplugged camera leaves the link within 3 s and comes back with
// its id. udpout, udpin and tcpout each carry it; a peer that is not there blocks nothing.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createSocket } from 'node:dgram'
import { VERSION } from '../../core/version'
import { until } from '../helpers'
import { bytesText, GroundStation, MAV, type Message } from '../mavlink-gcs'
import { ffprobe, freePort, freeTcpPort, requireGStreamer } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264
const WEBCAM = 'usb-0000:00:14.0-4' // Logitech webcam: MJPG only

const services: Service[] = []
const stations: GroundStation[] = []
beforeAll(() => requireGStreamer())
afterAll(async () => {
  for (const gcs of stations) gcs.close()
  for (const service of services) await service.kill()
})

async function service(mavlink: string, rtspPort = freeTcpPort()): Promise<Service> {
  const s = await startService({ args: ['--mavlink', mavlink, '--rtsp-port', String(rtspPort)] })
  services.push(s)
  return s
}

function station(gcs: GroundStation): GroundStation {
  stations.push(gcs)
  return gcs
}

/** A UDP port nobody listens on now (bound, then let go). */
async function silentUdpPort(): Promise<number> {
  const socket = createSocket('udp4')
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()))
  const { port } = socket.address()
  await new Promise<void>((resolve) => socket.close(() => resolve()))
  return port
}

/** Configures and starts a UDP stream to a loopback port (nobody needs to listen); answers that port. */
async function stream(s: Service, bus_info: string, encode_type: 'H264' | 'MJPG', width: number, height: number): Promise<number> {
  const port = freePort()
  const r = await s.call('POST', '/api/devices/configure_stream', {
    bus_info,
    stream_type: 'UDP',
    stream_format: { width, height, interval: { numerator: 1, denominator: 15 } },
    encode_type,
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port }],
  })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  return port
}

const mavlinkHealth = async (s: Service) => (await s.call('GET', '/api/health')).body.plugins.mavlink
/** The component id the service gave a camera (GET /api/health), once it has one. */
async function componentOf(s: Service, bus_info: string, timeoutMs = 30_000): Promise<number> {
  const health = await until(`${bus_info} on the MAVLink link`, () => mavlinkHealth(s), (h) => h?.cameras?.some((c: any) => c.bus_info === bus_info), timeoutMs)
  return health.cameras.find((c: any) => c.bus_info === bus_info).component_id
}
const device = async (s: Service, bus_info: string) => (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === bus_info)
const heartbeatFrom = (compid: number) => (m: Message) => m.name === 'HEARTBEAT' && m.compid === compid

test('udpout: heartbeats per camera, information, the RTSP URI, storage, a capture that is a recording, unplug and replug', async () => {
  // The ground station is not there yet: the service runs, sends into the void, and answers its API.
  const port = await silentUdpPort()
  const s = await service(`udpout:127.0.0.1:${port}`)
  const off = await mavlinkHealth(s)
  expect(off).toMatchObject({ state: 'ok', enabled: true, system_id: 1, component_base: 100, stream_address: '127.0.0.1', cameras: [] })
  expect(off.link).toMatchObject({ endpoint: `udpout:127.0.0.1:${port}`, state: 'sending' })

  await stream(s, EHD, 'H264', 640, 480)
  await stream(s, WEBCAM, 'MJPG', 640, 480)
  const ehd = await componentOf(s, EHD)
  const webcam = await componentOf(s, WEBCAM)
  expect(new Set([ehd, webcam]).size).toBe(2)
  for (const id of [ehd, webcam]) expect(id >= 100 && id <= 105).toBe(true)
  await until('frames sent with nobody listening', () => mavlinkHealth(s), (h) => h.link.frames_sent >= 4)
  const t = Date.now()
  expect((await s.call('GET', '/api/devices')).status).toBe(200)
  expect(Date.now() - t).toBeLessThan(2000)

  const gcs = station(await GroundStation.udp(port))
  const first = await gcs.next('a heartbeat from the exploreHD', heartbeatFrom(ehd))
  expect(first.sysid).toBe(1)
  expect(first.fields).toMatchObject({ type: MAV.TYPE_CAMERA, autopilot: MAV.AUTOPILOT_INVALID, mavlink_version: 3 })
  await gcs.next('a heartbeat from the webcam', heartbeatFrom(webcam))
  // About one a second from each: three more within five seconds.
  const since = gcs.messages.length
  await gcs.next('3 more exploreHD heartbeats', (m) => heartbeatFrom(ehd)(m) && gcs.messages.slice(since).filter(heartbeatFrom(ehd)).length >= 3, 10_000, since)
  expect(gcs.decoder.badChecksum).toBe(0)

  // CAMERA_INFORMATION, by MAV_CMD_REQUEST_MESSAGE and by the older MAV_CMD_REQUEST_CAMERA_INFORMATION.
  const info = await gcs.request(ehd, 'CAMERA_INFORMATION')
  expect(bytesText(info.fields.vendor_name as number[])).toBe('DeepWater Exploration')
  expect(bytesText(info.fields.model_name as number[])).toBe('exploreHD')
  expect(info.fields).toMatchObject({ resolution_h: 1920, resolution_v: 1080, cam_definition_uri: `${s.url}/api/streams/${EHD}/camera.xml` }) // tests/integration/mavlink-params.test.ts reads it
  expect((info.fields.flags as number) & MAV.CAP_HAS_VIDEO_STREAM).toBe(MAV.CAP_HAS_VIDEO_STREAM)
  expect((info.fields.flags as number) & MAV.CAP_CAPTURE_VIDEO).toBe(MAV.CAP_CAPTURE_VIDEO)
  const [major, minor, patch] = VERSION.split('.').map(Number)
  expect(info.fields.firmware_version).toBe(major! | (minor! << 8) | (patch! << 16))
  const legacy = await gcs.command(webcam, MAV.CMD_REQUEST_CAMERA_INFORMATION, [1])
  expect(legacy.ack.fields).toMatchObject({ result: MAV.RESULT_ACCEPTED, target_system: 255, target_component: 190 })
  const webcamInfo = await gcs.next('the webcam CAMERA_INFORMATION', (m) => m.name === 'CAMERA_INFORMATION' && m.compid === webcam, 10_000, legacy.sentAt)
  expect(bytesText(webcamInfo.fields.vendor_name as number[])).toBe('Logitech')

  // VIDEO_STREAM_INFORMATION: the camera's RTSP mount, as its device's watch.rtsp says, and it plays.
  const watched = await until('the RTSP mount', () => device(s, EHD), (d) => typeof d?.watch?.rtsp === 'string', 30_000)
  const video = await until('VIDEO_STREAM_INFORMATION with the RTSP URI', () => gcs.request(ehd, 'VIDEO_STREAM_INFORMATION', 1), (m) => m.fields.type === MAV.STREAM_TYPE_RTSP)
  expect(video.fields).toMatchObject({ uri: watched.watch.rtsp, stream_id: 1, count: 2, resolution_h: 640, resolution_v: 480, encoding: MAV.ENCODING_H264, name: 'exploreHD USB Camera RTSP', flags: MAV.STREAM_STATUS_RUNNING })
  // Stream 2: the same camera over WHEP (VIDEO_STREAM_TYPE_WHEP), its device's watch.whep.
  const whep = await gcs.request(ehd, 'VIDEO_STREAM_INFORMATION', 2)
  expect(whep.fields).toMatchObject({ uri: watched.watch.whep, stream_id: 2, count: 2, type: MAV.STREAM_TYPE_WHEP, name: 'exploreHD USB Camera WebRTC', resolution_h: 640, encoding: MAV.ENCODING_H264, flags: MAV.STREAM_STATUS_RUNNING })
  const offer = await fetch(whep.fields.uri as string, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: 'v=0' })
  expect(offer.status).toBe(400) // the WHEP endpoint itself, refusing a malformed offer in the contract's shape
  expect(((await offer.json()) as { detail: unknown }).detail).toBeString()
  expect(video.fields.uri).toMatch(/^rtsp:\/\/127\.0\.0\.1:\d+\/usb-0000:00:14\.0-1$/)
  expect(video.fields.framerate).toBeCloseTo(15, 5)
  const probed = await ffprobe(video.fields.uri as string, 'tcp')
  expect(probed.streams[0], probed.error).toMatchObject({ codec_name: 'h264', width: 640, height: 480 })
  const mjpg = await until('the webcam stream information with its RTSP URI', () => gcs.request(webcam, 'VIDEO_STREAM_INFORMATION'), (m) => m.fields.type === MAV.STREAM_TYPE_RTSP)
  expect(mjpg.fields).toMatchObject({ uri: (await device(s, WEBCAM)).watch.rtsp, count: 1, resolution_h: 640, resolution_v: 480, encoding: 0 }) // MJPG: no WHEP
  // VIDEO_STREAM_STATUS carries the bitrate measured at the stream's tap.
  const status = await until('VIDEO_STREAM_STATUS with a measured bitrate', () => gcs.request(ehd, 'VIDEO_STREAM_STATUS'), (m) => (m.fields.bitrate as number) > 10_000, 15_000)
  expect(status.fields).toMatchObject({ stream_id: 1, flags: MAV.STREAM_STATUS_RUNNING, resolution_h: 640, resolution_v: 480 })

  // STORAGE_INFORMATION: the recordings disk, as GET /api/recordings/disk gives it.
  const storage = await gcs.request(ehd, 'STORAGE_INFORMATION')
  const disk = (await s.call('GET', '/api/recordings/disk')).body
  const MiB = 1 << 20
  expect(storage.fields).toMatchObject({ storage_id: 1, storage_count: 1, status: MAV.STORAGE_STATUS_READY })
  expect(storage.fields.total_capacity as number).toBeCloseTo(disk.total / MiB, 0)
  expect(Math.abs((storage.fields.available_capacity as number) - disk.free / MiB)).toBeLessThan(64) // others write to this disk meanwhile

  // Refusals: a message the camera does not send, a command it does not know, a stream id it does not have (1 is RTSP, 2 WHEP).
  expect((await gcs.command(ehd, MAV.CMD_REQUEST_MESSAGE, [24])).ack.fields.result).toBe(MAV.RESULT_DENIED)
  expect((await gcs.command(ehd, 2003)).ack.fields.result).toBe(MAV.RESULT_UNSUPPORTED)
  expect((await gcs.command(ehd, MAV.CMD_REQUEST_MESSAGE, [269, 3])).ack.fields.result).toBe(MAV.RESULT_DENIED)

  // A capture: start (status once a second), it is a recording in progress; stop, it is a finished file.
  const idle = await gcs.request(ehd, 'CAMERA_CAPTURE_STATUS')
  expect(idle.fields).toMatchObject({ video_status: 0, recording_time_ms: 0 })
  const start = await gcs.command(ehd, MAV.CMD_VIDEO_START_CAPTURE, [0, 1, 0])
  expect(start.ack.fields.result).toBe(MAV.RESULT_ACCEPTED)
  const recording = (await device(s, EHD)).recording
  expect(recording).toMatchObject({ active: true, error: null })
  // Its first segment's file is there once the first whole group of pictures is (docs/recordings.md).
  await until('the recording in progress in the list', () => s.call('GET', '/api/recordings'), (r) => r.body.find((x: any) => `${x.name}.${x.format}` === recording.file)?.in_progress === true, 10_000)
  await gcs.next('capture status showing 1.5 s of recording', (m) => m.name === 'CAMERA_CAPTURE_STATUS' && m.compid === ehd && m.fields.video_status === 1 && (m.fields.recording_time_ms as number) >= 1500, 15_000, start.sentAt)
  expect((await gcs.command(ehd, MAV.CMD_VIDEO_START_CAPTURE, [0, 0, 0])).ack.fields.result).toBe(MAV.RESULT_DENIED) // already recording
  const stop = await gcs.command(ehd, MAV.CMD_VIDEO_STOP_CAPTURE, [0, 0])
  expect(stop.ack.fields.result).toBe(MAV.RESULT_ACCEPTED)
  await gcs.next('capture status back to idle', (m) => m.name === 'CAMERA_CAPTURE_STATUS' && m.compid === ehd && m.fields.video_status === 0, 10_000, stop.sentAt)
  const done = (await s.call('GET', '/api/recordings')).body.find((r: any) => `${r.name}.${r.format}` === recording.file)
  expect(done).toBeDefined()
  expect(done.in_progress).toBeUndefined()
  expect((await device(s, EHD)).recording).toMatchObject({ active: false, file: recording.file })
  expect((await device(s, EHD)).recording.bytes).toBeGreaterThan(1000)
  expect((await gcs.command(ehd, MAV.CMD_VIDEO_STOP_CAPTURE, [0, 0])).ack.fields.result).toBe(MAV.RESULT_DENIED) // nothing to stop

  // Unplugged: the webcam's heartbeats stop within 3 s (seen over 3.5 s of the exploreHD's), and its component goes.
  expect((await s.call('POST', '/api/mock/unplug', { bus_info: WEBCAM })).status).toBe(200)
  const unpluggedAt = Date.now()
  await gcs.next('an exploreHD heartbeat 3.5 s after the unplug', (m) => heartbeatFrom(ehd)(m) && m.at > unpluggedAt + 3500, 15_000)
  const late = gcs.messages.filter((m) => heartbeatFrom(webcam)(m) && m.at > unpluggedAt + 3000)
  expect(late).toEqual([])
  expect((await mavlinkHealth(s)).cameras.map((c: any) => c.bus_info)).toEqual([EHD])
  // Plugged back: its stream resumes and it is back on the link with the same component id.
  expect((await s.call('POST', '/api/mock/plug', { bus_info: WEBCAM })).status).toBe(200)
  const replugged = gcs.messages.length
  expect(await componentOf(s, WEBCAM)).toBe(webcam)
  await gcs.next('the webcam heartbeat again', heartbeatFrom(webcam), 30_000, replugged)

  // A stream stopped: its camera leaves the link too.
  expect((await s.call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD })).status).toBe(200)
  await until('the exploreHD off the link', () => mavlinkHealth(s), (h) => !h.cameras.some((c: any) => c.bus_info === EHD))
  const stoppedAt = Date.now()
  await gcs.next('a webcam heartbeat 2.5 s later', (m) => heartbeatFrom(webcam)(m) && m.at > stoppedAt + 2500, 15_000)
  expect(gcs.messages.filter((m) => heartbeatFrom(ehd)(m) && m.at > stoppedAt + 200)).toEqual([])
  expect(gcs.decoder.badChecksum).toBe(0)
}, 180_000)

test('tcpout: a closed port is retried with backoff while the API answers; the link comes up when the server does, and again after a drop', async () => {
  const port = freeTcpPort()
  const s = await service(`tcpout:127.0.0.1:${port}`)
  await stream(s, WEBCAM, 'MJPG', 640, 480)
  const down = await until('two failed connects', () => mavlinkHealth(s), (h) => h.link.retries >= 2, 20_000)
  expect(down).toMatchObject({ state: 'degraded', enabled: true })
  expect(down.link.state).toMatch(/^(connecting|reconnecting)$/)
  expect(down.link.last_error).toMatch(/ECONNREFUSED|refused/i)
  expect((await s.call('GET', '/api/health')).body.status).toBe('degraded')
  for (let i = 0; i < 5; i++) {
    const t = Date.now()
    expect((await s.call('GET', '/api/devices')).status).toBe(200)
    expect(Date.now() - t).toBeLessThan(2000)
  }
  const compid = await componentOf(s, WEBCAM)

  const gcs = station(await GroundStation.tcpServer(port))
  await gcs.next('a heartbeat over TCP', heartbeatFrom(compid), 20_000)
  expect((await until('the link up', () => mavlinkHealth(s), (h) => h.state === 'ok')).link.state).toBe('connected')
  const video = await gcs.request(compid, 'VIDEO_STREAM_INFORMATION')
  expect(video.fields.resolution_h).toBe(640)

  // The ground station drops the connection: the service connects again by itself.
  gcs.dropConnection()
  const dropped = gcs.messages.length
  await until('a second connection', async () => gcs.connections, (n) => n >= 2, 20_000)
  await gcs.next('heartbeats on the new connection', heartbeatFrom(compid), 10_000, dropped)
  expect(gcs.decoder.badChecksum).toBe(0)
}, 120_000)

test('udpin: the service answers the ground station that spoke to it; with RTSP off the stream is its RTP/UDP destination', async () => {
  const port = await silentUdpPort()
  const s = await service(`udpin:127.0.0.1:${port}`, 0)
  const rtpPort = await stream(s, WEBCAM, 'MJPG', 640, 480)
  const compid = await componentOf(s, WEBCAM)
  expect((await mavlinkHealth(s)).link).toMatchObject({ state: 'listening', peers: [] })

  const gcs = station(await GroundStation.udp())
  gcs.sendTo = { address: '127.0.0.1', port }
  gcs.send('HEARTBEAT', { type: 6, autopilot: MAV.AUTOPILOT_INVALID, system_status: 4, mavlink_version: 3 }) // MAV_TYPE_GCS
  await gcs.next('a camera heartbeat once heard', heartbeatFrom(compid), 10_000)
  const health = await mavlinkHealth(s)
  expect(health.link).toMatchObject({ state: 'connected', peers: [`127.0.0.1:${gcs.port}`] })
  expect(health.ground_station).toMatchObject({ system_id: 255, component_id: 190 })
  const info = await gcs.request(compid, 'CAMERA_INFORMATION')
  expect(bytesText(info.fields.model_name as number[])).toBe('HD Webcam C270')
  const video = await gcs.request(compid, 'VIDEO_STREAM_INFORMATION')
  expect(video.fields).toMatchObject({ type: MAV.STREAM_TYPE_RTPUDP, uri: `udp://127.0.0.1:${rtpPort}`, resolution_h: 640, resolution_v: 480 })
}, 90_000)

/**
 * Whether QGroundControl's photo button sends MAV_CMD_IMAGE_START_CAPTURE, by its own code
 * (mavlink/qgroundcontrol): src/FlightMap/Widgets/PhotoVideoControl.qml calls takePhoto() only when
 * cameraMode is CAM_MODE_PHOTO (in video mode the same button toggles recording), and only HAS_MODES
 * shows the photo/video switch that gets there (setCameraModePhoto: MAV_CMD_SET_CAMERA_MODE);
 * src/Camera/VehicleCameraControl.cc takePhoto() then needs capturesPhotos() (CAPTURE_IMAGE), not
 * (video mode without CAN_CAPTURE_IMAGE_IN_VIDEO_MODE), and photoCaptureStatus() PHOTO_CAPTURE_IDLE,
 * which is CAMERA_CAPTURE_STATUS.image_status (UNDEFINED until one comes; handleCaptureStatus);
 * cameraMode is CAMERA_SETTINGS.mode_id (handleSettings; CAM_MODE_PHOTO 0, CAM_MODE_VIDEO 1).
 */
function qgcTakePhotoSends(info: Message, settings: Message, capture: Message | null): boolean {
  const flags = info.fields.flags as number
  const cameraMode = settings.fields.mode_id as number
  const photoStatus = capture && (capture.fields.image_status as number) < 4 ? (capture.fields.image_status as number) : 255
  if (!(flags & MAV.CAP_CAPTURE_IMAGE)) return false
  if (cameraMode === MAV.CAMERA_MODE_VIDEO && !(flags & MAV.CAP_CAN_CAPTURE_IMAGE_IN_VIDEO_MODE)) return false
  return photoStatus === 0
}
/** The button itself (PhotoVideoControl.qml toggleShooting): takePhoto in photo mode, recording otherwise. */
const qgcButtonTakesPhoto = (info: Message, settings: Message, capture: Message | null) =>
  settings.fields.mode_id === MAV.CAMERA_MODE_IMAGE && qgcTakePhotoSends(info, settings, capture)

test("QGroundControl's photo button: the flags and modes its code needs, stills in either mode, two streams named apart", async () => {
  const gcs = station(await GroundStation.udp())
  const s = await service(`udpout:127.0.0.1:${gcs.port}`)
  await stream(s, EHD, 'H264', 640, 480)
  const compid = await componentOf(s, EHD)
  await gcs.next('a camera heartbeat', heartbeatFrom(compid), 15_000, 0)

  const info = await gcs.request(compid, 'CAMERA_INFORMATION')
  const flags = info.fields.flags as number
  for (const flag of [MAV.CAP_CAPTURE_IMAGE, MAV.CAP_HAS_MODES, MAV.CAP_CAN_CAPTURE_IMAGE_IN_VIDEO_MODE, MAV.CAP_CAN_CAPTURE_VIDEO_IN_IMAGE_MODE, MAV.CAP_CAPTURE_VIDEO]) {
    expect(flags & flag).toBe(flag)
  }
  // Video mode at first: the button records, and takePhoto (its conditions) would still send.
  const video = await gcs.request(compid, 'CAMERA_SETTINGS')
  expect(video.fields.mode_id).toBe(MAV.CAMERA_MODE_VIDEO)
  const capture = await gcs.request(compid, 'CAMERA_CAPTURE_STATUS')
  expect(capture.fields.image_status).toBe(0)
  expect(qgcTakePhotoSends(info, video, null)).toBe(false) // before any capture status, QGC holds it back
  expect(qgcTakePhotoSends(info, video, capture)).toBe(true)
  expect(qgcButtonTakesPhoto(info, video, capture)).toBe(false)

  // A still asked for in video mode, as QGC's takePhoto sends it (param3 = 1 image): accepted and taken.
  const shot = await gcs.command(compid, MAV.CMD_IMAGE_START_CAPTURE, [0, 0, 1])
  expect(shot.ack.fields.result).toBe(MAV.RESULT_ACCEPTED)
  const captured = await gcs.next('CAMERA_IMAGE_CAPTURED', (m) => m.name === 'CAMERA_IMAGE_CAPTURED' && m.compid === compid, 30_000, shot.sentAt)
  expect(captured.fields.capture_result).toBe(1)
  expect((await gcs.request(compid, 'CAMERA_CAPTURE_STATUS')).fields).toMatchObject({ image_status: 0, image_count: 1 })

  // The pilot's switch to photo mode (setCameraModePhoto): accepted, and CAMERA_SETTINGS says so at once.
  const toImage = await gcs.command(compid, MAV.CMD_SET_CAMERA_MODE, [0, MAV.CAMERA_MODE_IMAGE])
  expect(toImage.ack.fields.result).toBe(MAV.RESULT_ACCEPTED)
  const announced = await gcs.next('CAMERA_SETTINGS after the switch', (m) => m.name === 'CAMERA_SETTINGS' && m.compid === compid, 10_000, toImage.sentAt)
  expect(announced.fields.mode_id).toBe(MAV.CAMERA_MODE_IMAGE)
  const image = await gcs.request(compid, 'CAMERA_SETTINGS')
  expect(image.fields.mode_id).toBe(MAV.CAMERA_MODE_IMAGE)
  expect(qgcButtonTakesPhoto(info, image, await gcs.request(compid, 'CAMERA_CAPTURE_STATUS'))).toBe(true)
  // A survey mode is not offered; back to video.
  expect((await gcs.command(compid, MAV.CMD_SET_CAMERA_MODE, [0, MAV.CAMERA_MODE_IMAGE_SURVEY])).ack.fields.result).toBe(MAV.RESULT_DENIED)
  expect((await gcs.command(compid, MAV.CMD_SET_CAMERA_MODE, [0, MAV.CAMERA_MODE_VIDEO])).ack.fields.result).toBe(MAV.RESULT_ACCEPTED)
  expect((await gcs.request(compid, 'CAMERA_SETTINGS')).fields.mode_id).toBe(MAV.CAMERA_MODE_VIDEO)

  // Two streams, two names: QGC lists them by name and plays the one whose name was picked.
  const rtsp = await until('the RTSP stream', () => gcs.request(compid, 'VIDEO_STREAM_INFORMATION', 1), (m) => m.fields.type === MAV.STREAM_TYPE_RTSP, 30_000)
  const whep = await gcs.request(compid, 'VIDEO_STREAM_INFORMATION', 2)
  expect(whep.fields.type).toBe(MAV.STREAM_TYPE_WHEP)
  expect(rtsp.fields.name).not.toBe(whep.fields.name)
  for (const name of [rtsp.fields.name, whep.fields.name] as string[]) {
    expect(name.startsWith('exploreHD USB Camera ')).toBe(true)
    expect(Buffer.byteLength(name)).toBeLessThanOrEqual(31) // NUL-ended in the char[32]
  }
  expect(gcs.decoder.badChecksum).toBe(0)
}, 120_000)

test('kill -9 of the service, started again where it was: each camera is back on the link within 5 s of its stream running, with the same component id and stream information', async () => {
  const port = await silentUdpPort()
  const gcs = station(await GroundStation.udp(port))
  const rtspPort = freeTcpPort()
  const httpPort = freeTcpPort()
  const args = ['--mavlink', `udpout:127.0.0.1:${port}`, '--rtsp-port', String(rtspPort)]
  const first = await startService({ port: httpPort, args })
  services.push(first)
  await stream(first, EHD, 'H264', 640, 480)
  await stream(first, WEBCAM, 'MJPG', 640, 480)
  const ids: Record<string, number> = { [EHD]: await componentOf(first, EHD), [WEBCAM]: await componentOf(first, WEBCAM) }
  const infoOf = async (compid: number) => (await until(`stream information from ${compid}`, () => gcs.request(compid, 'VIDEO_STREAM_INFORMATION', 1), (m) => m.fields.type === MAV.STREAM_TYPE_RTSP, 20_000)).fields
  const before: Record<string, Awaited<ReturnType<typeof infoOf>>> = { [EHD]: await infoOf(ids[EHD]!), [WEBCAM]: await infoOf(ids[WEBCAM]!) }

  await first.kill()
  const killedAt = Date.now()
  const again = await startService({ port: httpPort, args, dataDir: first.dataDir })
  services.push(again)
  for (const bus of [EHD, WEBCAM]) {
    await until(`${bus} streaming again`, () => device(again, bus), (d) => d?.stream_status?.state === 'running', 30_000)
    const running = Date.now()
    expect(await componentOf(again, bus, 5_000)).toBe(ids[bus]!)
    const beat = await gcs.next(`a heartbeat from ${bus} after the restart`, (m) => heartbeatFrom(ids[bus]!)(m) && m.at > Math.max(running, killedAt), 5_000)
    console.log(`mavlink recovery: ${bus} heartbeating ${beat.at - running} ms after its stream ran again`)
    const info = await infoOf(ids[bus]!)
    expect({ uri: info.uri, name: info.name, resolution_h: info.resolution_h, encoding: info.encoding }).toEqual({ uri: before[bus]!.uri, name: before[bus]!.name, resolution_h: before[bus]!.resolution_h, encoding: before[bus]!.encoding })
  }
  expect(gcs.decoder.badChecksum).toBe(0)
}, 120_000)
