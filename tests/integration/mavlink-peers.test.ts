// MAVLink peers, each on its own (issue 25, items 4 and 5), over `udpin` in the whole service, seen by
// ground stations that share no code with it (tests/mavlink-gcs.ts): a datagram that claims a longer
// frame than it holds cannot swallow the next one; a sender is a peer only after a valid frame; a ground
// station restarted on a new port is answered at once and its old port is dropped; with a signing key,
// unsigned, wrongly signed and replayed frames are refused and the cameras' own frames are signed.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { randomBytes } from 'node:crypto'
import { createSocket, type Socket } from 'node:dgram'
import { until } from '../helpers'
import { GroundStation, MAV, type Message } from '../mavlink-gcs'
import { freePort, requireGStreamer } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

const WEBCAM = 'usb-0000:00:14.0-4' // MJPG only: the lightest stream

const services: Service[] = []
const sockets: { close(): void }[] = []
beforeAll(() => requireGStreamer())
afterAll(async () => {
  for (const s of sockets) s.close()
  for (const s of services) await s.kill()
})

async function udpSocket(): Promise<Socket> {
  const socket = createSocket('udp4')
  socket.on('error', () => {})
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()))
  sockets.push(socket)
  return socket
}

/** A port nobody holds now. */
async function silentUdpPort(): Promise<number> {
  const socket = createSocket('udp4')
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()))
  const { port } = socket.address()
  await new Promise<void>((resolve) => socket.close(() => resolve()))
  return port
}

async function station(servicePort: number): Promise<GroundStation> {
  const gcs = await GroundStation.udp()
  gcs.sendTo = { address: '127.0.0.1', port: servicePort }
  sockets.push(gcs)
  return gcs
}

const mavlinkHealth = async (s: Service) => (await s.call('GET', '/api/health')).body.plugins.mavlink
const heartbeatFrom = (compid: number) => (m: Message) => m.name === 'HEARTBEAT' && m.compid === compid
const gcsHeartbeat = (gcs: GroundStation) => gcs.send('HEARTBEAT', { type: 6, autopilot: MAV.AUTOPILOT_INVALID, system_status: 4, mavlink_version: 3 })

/** A service on udpin with the webcam streaming to a loopback port; answers it, its MAVLink port and the camera's component id. */
async function udpinService(args: string[] = []): Promise<{ s: Service; port: number; compid: number }> {
  const port = await silentUdpPort()
  const s = await startService({ args: ['--mavlink', `udpin:127.0.0.1:${port}`, '--rtsp-port', '0', ...args] })
  services.push(s)
  const r = await s.call('POST', '/api/devices/configure_stream', {
    bus_info: WEBCAM,
    stream_type: 'UDP',
    stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
    encode_type: 'MJPG',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  const health = await until('the webcam on the MAVLink link', () => mavlinkHealth(s), (h) => h?.cameras?.some((c: any) => c.bus_info === WEBCAM), 30_000)
  await until('listening', () => mavlinkHealth(s), (h) => h.link.state === 'listening', 10_000)
  return { s, port, compid: health.cameras.find((c: any) => c.bus_info === WEBCAM).component_id }
}

/** CAMERA_INFORMATION asked for and its ACK and message received within `timeoutMs`: true, else false. */
async function answered(gcs: GroundStation, compid: number, timeoutMs: number): Promise<boolean> {
  try {
    const since = gcs.messages.length
    const { ack } = await gcs.command(compid, MAV.CMD_REQUEST_MESSAGE, [259], { timeoutMs })
    if (ack.fields.result !== MAV.RESULT_ACCEPTED) return false
    await gcs.next('CAMERA_INFORMATION', (m) => m.name === 'CAMERA_INFORMATION' && m.compid === compid, timeoutMs, since)
    return true
  } catch {
    return false
  }
}

test('udpin: a 10-byte datagram claiming a 255-byte frame before each of 50 commands leaves all 50 answered; its sender is no peer and hears nothing', async () => {
  const { s, port, compid } = await udpinService()
  const gcs = await station(port)
  gcsHeartbeat(gcs)
  await gcs.next('a camera heartbeat once heard', heartbeatFrom(compid), 10_000)

  const attacker = await udpSocket()
  let heard = 0
  attacker.on('message', () => heard++)
  // MAVLink 2 start, payload length 255, then 8 bytes: a frame that would need 257 more.
  const claim = Buffer.from([0xfd, 255, 0, 0, 0, 1, 1, 76, 0, 0])
  let ok = 0
  for (let i = 0; i < 50; i++) {
    attacker.send(claim, port, '127.0.0.1')
    if (await answered(gcs, compid, 3000)) ok++
  }
  expect(ok).toBe(50)
  // A heartbeat's worth of time later, the sender that never sent a valid frame still hears nothing.
  const since = gcs.messages.length
  await gcs.next('one more camera heartbeat', heartbeatFrom(compid), 5000, since)
  expect(heard).toBe(0)
  const health = await mavlinkHealth(s)
  expect(health.link.peers).toEqual([`127.0.0.1:${gcs.port}`])
  expect(health.link.frames_rejected).toBeGreaterThanOrEqual(50)
  const metrics = await (await fetch(`${s.url}/metrics`)).text()
  expect(Number(/periscope_limit_hits_total\{limit="mavlink_frame_truncated"\} (\d+)/.exec(metrics)?.[1])).toBeGreaterThanOrEqual(50)
}, 240_000)

test('udpin: a ground station restarted on a new port is answered 50 of 50 at once, and its old port is dropped', async () => {
  const { s, port, compid } = await udpinService()
  const first = await station(port)
  gcsHeartbeat(first)
  await first.next('a camera heartbeat', heartbeatFrom(compid), 10_000)
  expect(await answered(first, compid, 5000)).toBe(true)
  const oldPort = first.port
  first.close() // its port dies: what the service sends there now draws ICMP port unreachable

  const second = await station(port)
  let ok = 0
  for (let i = 0; i < 50; i++) {
    if (i % 10 === 0) gcsHeartbeat(second) // about once a second, as QGroundControl does
    if (await answered(second, compid, 2000)) ok++
  }
  expect(ok).toBe(50)
  const dropped = await until('the old port dropped', () => mavlinkHealth(s), (h) => !h.link.peers.includes(`127.0.0.1:${oldPort}`), 20_000)
  expect(dropped.link.peers).toEqual([`127.0.0.1:${second.port}`])
}, 240_000)

test('udpin with a signing key: unsigned, wrongly signed and replayed frames are refused; signed ones answered, and the cameras sign theirs', async () => {
  const key = randomBytes(32)
  const { s, port, compid } = await udpinService(['--mavlink-signing-key', key.toString('hex')])

  // Unsigned: no peer, nothing heard.
  const unsigned = await station(port)
  gcsHeartbeat(unsigned)
  unsigned.send('COMMAND_LONG', { target_system: 1, target_component: compid, command: MAV.CMD_REQUEST_MESSAGE, param1: 259 })
  // Signed with another key: the same.
  const forger = await station(port)
  forger.signing = { key: randomBytes(32), linkId: 1 }
  gcsHeartbeat(forger)
  forger.send('COMMAND_LONG', { target_system: 1, target_component: compid, command: MAV.CMD_REQUEST_MESSAGE, param1: 259 })
  await until('both refused', () => mavlinkHealth(s), (h) => h.link.frames_rejected >= 4, 10_000)

  // Signed with the key: a peer, answered, and every frame from the cameras carries a valid signature.
  const pilot = await station(port)
  pilot.signing = { key, linkId: 2 }
  pilot.decoder.key = key
  gcsHeartbeat(pilot)
  await pilot.next('a camera heartbeat', heartbeatFrom(compid), 10_000)
  expect(await answered(pilot, compid, 5000)).toBe(true)
  expect(pilot.messages.length).toBeGreaterThan(0)
  expect(pilot.messages.every((m) => m.signed?.valid === true)).toBe(true)
  // Timestamps from one camera only go up.
  const stamps = pilot.messages.filter((m) => m.compid === compid).map((m) => m.signed!.timestamp)
  expect(stamps.every((t, i) => i === 0 || t > stamps[i - 1]!)).toBe(true)

  // A replay of a frame already accepted (same timestamp) is refused: no second ACK.
  const request = pilot.send('COMMAND_LONG', { target_system: 1, target_component: compid, command: MAV.CMD_REQUEST_MESSAGE, param1: 259 })
  await pilot.next('the ACK', (m) => m.name === 'COMMAND_ACK' && m.compid === compid, 5000)
  const before = (await mavlinkHealth(s)).link.frames_rejected
  const since = pilot.messages.length
  pilot.sendRaw(request)
  await until('the replay refused', () => mavlinkHealth(s), (h) => h.link.frames_rejected > before, 10_000)
  // A fresh request after the replay is answered; the replay drew no ACK of its own in between.
  expect(await answered(pilot, compid, 5000)).toBe(true)
  expect(pilot.messages.slice(since).filter((m) => m.name === 'COMMAND_ACK').length).toBe(1)
  // A timestamp more than a minute old on a new link id is refused too.
  const stale = { key, linkId: 9, timestamp: (Date.now() - Date.UTC(2015, 0, 1) - 120_000) * 100 }
  pilot.signing = stale
  const beforeStale = (await mavlinkHealth(s)).link.frames_rejected
  gcsHeartbeat(pilot)
  await until('the stale frame refused', () => mavlinkHealth(s), (h) => h.link.frames_rejected > beforeStale, 10_000)

  // Neither the unsigned sender nor the forger ever became a peer or heard a frame.
  const health = await mavlinkHealth(s)
  expect(health.link.peers).toEqual([`127.0.0.1:${pilot.port}`])
  expect(health.link.signing).toBe(true)
  expect(unsigned.messages).toEqual([])
  expect(forger.messages).toEqual([])
}, 120_000)

// The timeout is a flag, lowered here to 3 s (10 s by default): a peer dropped once unheard for it and not
// before, and heard again from its next frame, shows at 3 s as at 10 (three of QGroundControl's 1 s heartbeats missed).
const PEER_TIMEOUT_S = 3
test(`udpin: a ground station that falls silent (its port still open) is dropped after --mavlink-peer-timeout (${PEER_TIMEOUT_S} s), and is a peer again from its next frame`, async () => {
  const { s, port, compid } = await udpinService(['--mavlink-peer-timeout', String(PEER_TIMEOUT_S)])
  const gcs = await station(port)
  gcsHeartbeat(gcs)
  await gcs.next('a camera heartbeat', heartbeatFrom(compid), 10_000)
  const heardAt = Date.now()
  const gone = await until('the silent peer dropped', () => mavlinkHealth(s), (h) => h.link.peers.length === 0, 30_000)
  expect(Date.now() - heardAt).toBeGreaterThanOrEqual((PEER_TIMEOUT_S - 1) * 1000)
  expect(gone.link.state).toBe('listening')
  const since = gcs.messages.length
  gcsHeartbeat(gcs)
  await gcs.next('heartbeats again', heartbeatFrom(compid), 10_000, since)
  expect((await mavlinkHealth(s)).link.peers).toEqual([`127.0.0.1:${gcs.port}`])
}, 90_000)
