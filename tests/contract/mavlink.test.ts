// The MAVLink plugin's contract without video: its flags, its place in /api/health (off by default),
// a link whose peer is missing (a closed TCP port, nobody on a UDP port, a udpin port taken) that
// never blocks the API and recovers once the peer is there; and the test ground station's own codec
// (tests/mavlink-gcs.ts) against the numbers MAVLink publishes, so the integration tier's ground
// station is known to be right independently of the service's library.
import { expect, test } from 'bun:test'
import { createSocket } from 'node:dgram'
import { randomBytes } from 'node:crypto'
import { DEFAULT_PLUGINS, helpText, loadConfig, type MavlinkEndpoint } from '../../core/config'
import { readDatagram, type Refusal, Signing, StreamReader } from '../../plugins/mavlink/frames'
import { freeUdpPortPair, until, type TestServer } from '../helpers'
import { crcExtra, encode, FrameDecoder, GroundStation, MAV, MESSAGES, type Message, signingNow, x25 } from '../mavlink-gcs'
import { startContractServer } from './setup'

const PLUGINS = ['mock', 'cameras', 'preferences', 'recordings', 'mavlink']

test('--mavlink and its companions: parsed as mavlink-router writes endpoints, refused otherwise; off by default, the plugin loaded by default', () => {
  const endpoint = (kind: MavlinkEndpoint['kind'], host: string, port: number): MavlinkEndpoint => ({ kind, host, port })
  const defaults = loadConfig([])
  expect(defaults).toMatchObject({ mavlink: null, mavlinkComponentBase: 100, mavlinkSystemId: 1, mavlinkStreamAddress: null })
  expect(loadConfig(['--mavlink', 'udpout:127.0.0.1:14550']).mavlink).toEqual(endpoint('udpout', '127.0.0.1', 14550))
  expect(loadConfig(['--mavlink=udpin:0.0.0.0:14660']).mavlink).toEqual(endpoint('udpin', '0.0.0.0', 14660))
  expect(loadConfig([], { PERISCOPE_MAVLINK: 'tcpout:localhost:5777' }).mavlink).toEqual(endpoint('tcpout', 'localhost', 5777))
  expect(loadConfig(['--mavlink', 'udpout:[::1]:14550']).mavlink).toEqual(endpoint('udpout', '::1', 14550))
  expect(loadConfig(['--mavlink', 'off']).mavlink).toBeNull()
  for (const bad of ['serial:/dev/ttyACM0:115200', 'udpout:127.0.0.1', 'udpout:127.0.0.1:0', 'tcpout:host:70000', '127.0.0.1:14550', 'udpout::14550']) {
    expect(() => loadConfig(['--mavlink', bad])).toThrow('mavlink must be udpout:<host>:<port>')
  }
  expect(loadConfig(['--mavlink-component-base', '110', '--mavlink-system-id', '2', '--mavlink-stream-address', '192.168.2.2'])).toMatchObject({
    mavlinkComponentBase: 110,
    mavlinkSystemId: 2,
    mavlinkStreamAddress: '192.168.2.2',
  })
  expect(() => loadConfig(['--mavlink-component-base', '0'])).toThrow('mavlink-component-base must be an integer from 1 to 255')
  expect(() => loadConfig(['--mavlink-system-id', '256'])).toThrow('mavlink-system-id must be an integer from 1 to 255')
  for (const env of ['PERISCOPE_MAVLINK ', 'PERISCOPE_MAVLINK_COMPONENT_BASE', 'PERISCOPE_MAVLINK_SYSTEM_ID', 'PERISCOPE_MAVLINK_STREAM_ADDRESS']) expect(helpText()).toContain(env)
  expect(DEFAULT_PLUGINS).toContain('mavlink')
})

test('the ground station codec: X.25 check value, CRC_EXTRA as the MAVLink C library publishes it, frames round-trip', () => {
  // CRC-16/MCRF4XX of "123456789".
  expect(x25(Buffer.from('123456789'))).toBe(0x6f91)
  // MAVLINK_MSG_ID_<NAME>_CRC in the generated C headers of common.xml.
  const published: Record<string, number> = {
    HEARTBEAT: 50,
    COMMAND_LONG: 152,
    COMMAND_ACK: 143,
    CAMERA_INFORMATION: 92,
    CAMERA_SETTINGS: 146,
    STORAGE_INFORMATION: 179,
    CAMERA_CAPTURE_STATUS: 12,
    VIDEO_STREAM_INFORMATION: 109,
    VIDEO_STREAM_STATUS: 59,
    PARAM_EXT_REQUEST_READ: 243,
    PARAM_EXT_REQUEST_LIST: 88,
    PARAM_EXT_VALUE: 243,
    PARAM_EXT_SET: 78,
    PARAM_EXT_ACK: 132,
    GLOBAL_POSITION_INT: 104,
    CAMERA_IMAGE_CAPTURED: 133,
    SYS_STATUS: 124,
    SCALED_PRESSURE: 115,
    ATTITUDE: 39,
    VFR_HUD: 20,
    SCALED_PRESSURE2: 195,
    SCALED_PRESSURE3: 131,
  }
  expect(Object.fromEntries(MESSAGES.map((m) => [m.name, crcExtra(m)]))).toEqual(published)

  const frame = encode('VIDEO_STREAM_INFORMATION', { stream_id: 1, count: 1, framerate: 15, resolution_h: 640, uri: 'rtsp://192.168.2.2:8554/cam', encoding: 1 }, { sysid: 1, compid: 100, seq: 7 })
  expect(frame[0]).toBe(0xfd)
  const got: Message[] = []
  const decoder = new FrameDecoder()
  // Split mid-frame, with noise before: the decoder finds it and checks it.
  decoder.push(new Uint8Array([1, 2, 3, ...frame.subarray(0, 9)]), (m) => got.push(m))
  decoder.push(frame.subarray(9), (m) => got.push(m))
  expect(got).toHaveLength(1)
  expect(got[0]).toMatchObject({ name: 'VIDEO_STREAM_INFORMATION', sysid: 1, compid: 100, seq: 7, fields: { stream_id: 1, framerate: 15, resolution_h: 640, uri: 'rtsp://192.168.2.2:8554/cam', encoding: 1, name: '' } })
  const corrupt = frame.slice()
  corrupt[12] = corrupt[12]! ^ 0xff
  decoder.push(corrupt, (m) => got.push(m))
  expect(got).toHaveLength(1)
  expect(decoder.badChecksum).toBe(1)
})

test('--mavlink-signing-key: 32 bytes as hex or base64', () => {
  const key = randomBytes(32)
  expect(loadConfig(['--mavlink-signing-key', key.toString('hex')]).mavlinkSigningKey).toEqual(new Uint8Array(key))
  expect(loadConfig([], { PERISCOPE_MAVLINK_SIGNING_KEY: key.toString('base64') }).mavlinkSigningKey).toEqual(new Uint8Array(key))
  expect(loadConfig([]).mavlinkSigningKey).toBeNull()
  for (const bad of ['abc', key.toString('hex').slice(2), randomBytes(16).toString('base64'), 'not a key at all, not at all, not at all!!!!']) {
    expect(() => loadConfig(['--mavlink-signing-key', bad])).toThrow('mavlink-signing-key must be 32 bytes')
  }
  expect(helpText()).toContain('PERISCOPE_MAVLINK_SIGNING_KEY')
})

const COMMAND = { target_system: 1, target_component: 100, command: 512, param1: 259 }
const from = { sysid: 255, compid: 190, seq: 0 }

test('frames: a datagram is read on its own (a frame it cuts short never joins the next), a TCP stream keeps a cut frame for the next read', () => {
  const frame = Buffer.from(encode('COMMAND_LONG', COMMAND, from))
  const claim = Buffer.from([0xfd, 255, 0, 0, 0, 1, 1, 76, 0, 0])
  const got: Buffer[] = []
  const refused: Refusal[] = []
  const onFrame = (f: Buffer) => void got.push(Buffer.from(f))
  const onRefused = (why: Refusal) => void refused.push(why)
  // The claim alone, then the command: the command is whole.
  readDatagram(claim, onFrame, onRefused)
  readDatagram(frame, onFrame, onRefused)
  expect(got).toEqual([frame])
  expect(refused).toEqual(['truncated'])
  // The claim and the command in one datagram: the command is still found.
  readDatagram(Buffer.concat([claim, frame, frame]), onFrame, onRefused)
  expect(got).toHaveLength(3)
  // A bad checksum is refused.
  const corrupt = Buffer.from(frame)
  corrupt[12]! ^= 0xff
  readDatagram(corrupt, onFrame, onRefused)
  expect(got).toHaveLength(3)
  expect(refused).toContain('checksum')
  // A datagram full of start bytes stops being read after a few refusals.
  refused.length = 0
  readDatagram(Buffer.alloc(4000, 0xfd), onFrame, onRefused)
  expect(refused.length).toBeLessThanOrEqual(8)

  // TCP: a frame cut in three reads is one frame; junk before it is skipped.
  const stream: Buffer[] = []
  const reader = new StreamReader((f) => void stream.push(Buffer.from(f)), () => {})
  reader.write(Buffer.concat([Buffer.from([1, 2, 3]), frame.subarray(0, 5)]))
  reader.write(frame.subarray(5, 20))
  reader.write(Buffer.concat([frame.subarray(20), frame]))
  expect(stream).toEqual([frame, frame])
})

test('signing (MAVLink guide, message signing): the ground station\'s signatures verify, others and replays are refused; ours verify with its decoder', () => {
  const key = randomBytes(32)
  const ours = new Signing(key)
  const signed = (linkId: number, timestamp?: number, withKey: Uint8Array = key) => Buffer.from(encode('COMMAND_LONG', COMMAND, from, { key: withKey, linkId, timestamp }))
  const first = signed(1)
  expect(ours.verify(first)).toBe('ok')
  expect(ours.verify(first)).toBe('replayed') // the same timestamp again
  expect(ours.verify(signed(1))).toBe('ok') // a later one
  expect(ours.verify(signed(2, signingNow(), randomBytes(32)))).toBe('signature')
  expect(ours.verify(Buffer.from(encode('COMMAND_LONG', COMMAND, from)))).toBe('unsigned')
  const minuteAndAHalfAgo = (Date.now() - Date.UTC(2015, 0, 1) - 90_000) * 100
  expect(ours.verify(signed(3, minuteAndAHalfAgo))).toBe('replayed') // a new stream too far behind
  expect(ours.verify(signed(4, minuteAndAHalfAgo + 60 * 100_000))).toBe('ok')
  // A frame we sign, read by the test's independent decoder with the same key.
  const frame = encode('COMMAND_LONG', COMMAND, from)
  frame[2] = 1 // the signed flag is under the checksum: serialize with it set
  const crc = x25([...frame.subarray(1, frame.length - 2), crcExtra(MESSAGES.find((m) => m.name === 'COMMAND_LONG')!)])
  frame[frame.length - 2] = crc & 0xff
  frame[frame.length - 1] = crc >> 8
  const decoder = new FrameDecoder()
  decoder.key = key
  const got: Message[] = []
  decoder.push(ours.sign(Buffer.from(frame)), (m) => got.push(m))
  decoder.push(ours.sign(Buffer.from(frame)), (m) => got.push(m))
  expect(got.map((m) => m.signed?.valid)).toEqual([true, true])
  expect(got[1]!.signed!.timestamp).toBeGreaterThan(got[0]!.signed!.timestamp)
})

const mavlinkHealth = async (s: TestServer) => (await s.call('GET', '/api/health')).body.plugins.mavlink

/** Five API calls, each answered within a second: the link never holds the API up. */
async function apiAnswers(s: TestServer): Promise<void> {
  for (let i = 0; i < 5; i++) {
    const t = Date.now()
    expect((await s.call('GET', '/api/devices')).status).toBe(200)
    expect(Date.now() - t).toBeLessThan(1000)
  }
}

test('off without --mavlink: /api/health says so and the link is never opened', async () => {
  const s = await startContractServer({ plugins: PLUGINS })
  try {
    expect(await mavlinkHealth(s)).toEqual({ state: 'ok', detail: 'off (no --mavlink)', enabled: false })
    expect((await s.call('GET', '/api/health')).body.status).toBe('ok')
  } finally {
    await s.stop()
  }
})

test('tcpout to a closed port: degraded and retried with growing delays while the API answers; connected once a server listens', async () => {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  const startedBy = Date.now() // before the link starts, so the time measured is never less than the link's
  const s = await startContractServer({ plugins: PLUGINS, config: { mavlink: { kind: 'tcpout', host: '127.0.0.1', port } } })
  let gcs: GroundStation | null = null
  try {
    const down = await until('two retries', () => mavlinkHealth(s), (h) => h.link?.retries >= 2, 15_000)
    // Retries wait 0.5, 1, 2 … 10 s: the third cannot come before 3.5 s (at a fixed 0.5 s it would at 1.5 s).
    await until('a third retry', () => mavlinkHealth(s), (h) => h.link.retries >= 3, 15_000)
    expect(Date.now() - startedBy).toBeGreaterThan(3000)
    expect(down).toMatchObject({ state: 'degraded', enabled: true, cameras: [] })
    expect(down.detail).toContain('the MAVLink link is')
    expect(down.link.last_error).toMatch(/refused/i)
    await apiAnswers(s)
    gcs = await GroundStation.tcpServer(port)
    await until('the link up', () => mavlinkHealth(s), (h) => h.state === 'ok' && h.link.state === 'connected', 20_000)
    expect(gcs.connections).toBe(1)
    await apiAnswers(s)
  } finally {
    await s.stop()
    gcs?.close()
  }
}, 40_000)

test('udpout with nobody listening and udpin on a port already taken: the API answers, and udpin listens once the port is free', async () => {
  const taken = createSocket('udp4')
  await new Promise<void>((resolve) => taken.bind(0, '127.0.0.1', () => resolve()))
  const port = taken.address().port
  const sender = await startContractServer({ plugins: PLUGINS, config: { mavlink: { kind: 'udpout', host: '127.0.0.1', port: 9 } } })
  const listener = await startContractServer({ plugins: PLUGINS, config: { mavlink: { kind: 'udpin', host: '127.0.0.1', port } } })
  try {
    expect(await mavlinkHealth(sender)).toMatchObject({ state: 'ok', link: { state: 'sending', errors: 0 } })
    await apiAnswers(sender)
    const refused = await until('the bind refused', () => mavlinkHealth(listener), (h) => h.link?.errors >= 1, 10_000)
    expect(refused).toMatchObject({ state: 'degraded' })
    expect(refused.link.last_error).toMatch(/EADDRINUSE|in use/i)
    await apiAnswers(listener)
    await new Promise<void>((resolve) => taken.close(() => resolve()))
    await until('listening once the port is free', () => mavlinkHealth(listener), (h) => h.state === 'ok' && h.link.state === 'listening', 20_000)
  } finally {
    await sender.stop()
    await listener.stop()
  }
}, 40_000)

test('with a signing key, a signed frame stamped an hour ahead: logged once at warn (what happened, until when, what to do), and a new ground station with the right time is then refused as a replay', async () => {
  const key = randomBytes(32)
  const port = freeUdpPortPair()
  const s = await startContractServer({ plugins: PLUGINS, config: { mavlink: { kind: 'udpin', host: '127.0.0.1', port }, mavlinkSigningKey: new Uint8Array(key) } })
  const early = await GroundStation.udp()
  const honest = await GroundStation.udp()
  try {
    await until('udpin listening', () => mavlinkHealth(s), (h) => h.link?.state === 'listening', 10_000)
    const hourAhead = signingNow() + 3600 * 100_000
    early.sendTo = honest.sendTo = { address: '127.0.0.1', port }
    early.signing = { key, linkId: 1, timestamp: hourAhead }
    early.send('HEARTBEAT', { type: 6, autopilot: 8, mavlink_version: 3 })
    const warned = () => s.logs.filter((l) => String(l.msg).includes('stamped ahead'))
    await until('the warning', async () => warned().length, (n) => n > 0, 5000)
    // The same occurrence: frames that keep to the future time say nothing more.
    for (let i = 1; i <= 3; i++) {
      early.signing = { key, linkId: 1, timestamp: hourAhead + i * 100_000 }
      early.send('HEARTBEAT', { type: 6, autopilot: 8, mavlink_version: 3 })
    }
    const rejected = (await mavlinkHealth(s)).link.frames_rejected
    honest.signing = { key, linkId: 2 }
    honest.send('HEARTBEAT', { type: 6, autopilot: 8, mavlink_version: 3 })
    await until('the honest ground station refused', () => mavlinkHealth(s), (h) => h.link.frames_rejected > rejected, 5000)
    expect(warned()).toHaveLength(1)
    const [entry] = warned()
    expect(entry).toMatchObject({ level: 'warn', from: { system: 255, component: 190, link: 1 } })
    expect(entry!.ahead_s as number).toBeGreaterThan(3590)
    expect(entry!.ahead_s as number).toBeLessThan(3610)
    expect(String(entry!.detail)).toContain('refused as a replay')
    expect(String(entry!.detail)).toContain('restart Periscope')
    expect(Date.parse(String(entry!.until)) - Date.now()).toBeGreaterThan(3590_000)
  } finally {
    early.close()
    honest.close()
    await s.stop()
  }
}, 20_000)

test('WHEP is VIDEO_STREAM_TYPE 4, as common.xml says; mavlink-mappings 1.0.21 predates it, and if it gains it, it must agree', async () => {
  const { common } = await import('mavlink-mappings')
  const { VIDEO_STREAM_TYPE_WHEP } = await import('../../plugins/mavlink/messages')
  expect(Number(VIDEO_STREAM_TYPE_WHEP)).toBe(MAV.STREAM_TYPE_WHEP)
  expect((common.VideoStreamType as Record<string, unknown>).WHEP ?? MAV.STREAM_TYPE_WHEP).toBe(MAV.STREAM_TYPE_WHEP)
})

test("stream names: the camera's name and the stream's kind, within 31 bytes (QGroundControl reads the char[32] up to a NUL), cut at a character", async () => {
  const { streamName, STREAM_NAME_BYTES } = await import('../../plugins/mavlink/messages')
  const rtsp = { uri: { type: 'RTSP' as const, uri: 'rtsp://x' } }
  const whep = { uri: { type: 'WHEP' as const, uri: 'http://x' } }
  const udp = { uri: { type: 'RTPUDP' as const, uri: 'udp://x' } }
  expect(STREAM_NAME_BYTES).toBe(31)
  expect(streamName({ streamName: 'Bow camera' }, rtsp)).toBe('Bow camera RTSP')
  expect(streamName({ streamName: 'Bow camera' }, whep)).toBe('Bow camera WebRTC')
  expect(streamName({ streamName: 'Bow camera' }, udp)).toBe('Bow camera RTP')
  // Long names keep the kind, so the two streams of one camera never share a name.
  const long = 'A very long camera nickname that goes on and on'
  const names = [rtsp, whep].map((s) => streamName({ streamName: long }, s))
  expect(new Set(names).size).toBe(2)
  for (const name of names) expect(Buffer.byteLength(name)).toBeLessThanOrEqual(31)
  expect(names[1]).toEndWith(' WebRTC')
  // Multi-byte characters are never cut in half.
  const wide = streamName({ streamName: 'Kamera vorne ° ° ° ° ° ° ° ° ° ° ° °' }, whep)
  expect(Buffer.byteLength(wide)).toBeLessThanOrEqual(31)
  expect(wide).not.toContain('\ufffd')
  expect(wide).toEndWith(' WebRTC')
  expect(streamName({ streamName: '   ' }, rtsp)).toBe('Camera RTSP')
})
