// A MAVLink ground station for the tests, independent of the service's node-mavlink: MAVLink 2
// framing and the X.25 checksum written here from the MAVLink documentation, and the few messages the
// camera protocol uses written from common.xml (mavlink/mavlink, message_definitions/v1.0). Each
// message's CRC_EXTRA is computed from those field lists (the generator's rule), and the contract test
// checks them against the values the MAVLink C library publishes, so a field list copied wrong fails.
import { createHash } from 'node:crypto'
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram'
import { createServer, type Server, type Socket as TcpSocket } from 'node:net'

type FieldType = 'uint8_t' | 'int8_t' | 'uint16_t' | 'int16_t' | 'uint32_t' | 'int32_t' | 'uint64_t' | 'float' | 'char' | 'uint8_t_mavlink_version'
interface FieldDef {
  type: FieldType
  name: string
  /** Array length (char[n] is a string, uint8_t[n] a byte array). */
  length?: number
  extension?: boolean
}
interface MessageDef {
  id: number
  name: string
  fields: FieldDef[]
}

/** "uint8_t[32] vendor_name" lists, in common.xml's order; '||' starts the extensions. */
function message(id: number, name: string, spec: string): MessageDef {
  let extension = false
  const fields: FieldDef[] = []
  for (const item of spec.split(',').map((s) => s.trim())) {
    if (item === '||') {
      extension = true
      continue
    }
    const m = /^(\w+)(?:\[(\d+)\])? (\w+)$/.exec(item)
    if (!m) throw new Error(`bad field '${item}' in ${name}`)
    fields.push({ type: m[1] as FieldType, name: m[3]!, ...(m[2] ? { length: Number(m[2]) } : {}), extension })
  }
  return { id, name, fields }
}

export const MESSAGES: MessageDef[] = [
  message(0, 'HEARTBEAT', 'uint8_t type, uint8_t autopilot, uint8_t base_mode, uint32_t custom_mode, uint8_t system_status, uint8_t_mavlink_version mavlink_version'),
  // The autopilot's telemetry (tests/mavlink-autopilot.ts sends it), common.xml.
  message(
    1,
    'SYS_STATUS',
    'uint32_t onboard_control_sensors_present, uint32_t onboard_control_sensors_enabled, uint32_t onboard_control_sensors_health, uint16_t load, uint16_t voltage_battery, int16_t current_battery, int8_t battery_remaining, uint16_t drop_rate_comm, uint16_t errors_comm, uint16_t errors_count1, uint16_t errors_count2, uint16_t errors_count3, uint16_t errors_count4, ||, uint32_t onboard_control_sensors_present_extended, uint32_t onboard_control_sensors_enabled_extended, uint32_t onboard_control_sensors_health_extended',
  ),
  message(29, 'SCALED_PRESSURE', 'uint32_t time_boot_ms, float press_abs, float press_diff, int16_t temperature, ||, int16_t temperature_press_diff'),
  message(30, 'ATTITUDE', 'uint32_t time_boot_ms, float roll, float pitch, float yaw, float rollspeed, float pitchspeed, float yawspeed'),
  message(74, 'VFR_HUD', 'float airspeed, float groundspeed, int16_t heading, uint16_t throttle, float alt, float climb'),
  message(137, 'SCALED_PRESSURE2', 'uint32_t time_boot_ms, float press_abs, float press_diff, int16_t temperature, ||, int16_t temperature_press_diff'),
  message(143, 'SCALED_PRESSURE3', 'uint32_t time_boot_ms, float press_abs, float press_diff, int16_t temperature, ||, int16_t temperature_press_diff'),
  message(33, 'GLOBAL_POSITION_INT', 'uint32_t time_boot_ms, int32_t lat, int32_t lon, int32_t alt, int32_t relative_alt, int16_t vx, int16_t vy, int16_t vz, uint16_t hdg'),
  message(76, 'COMMAND_LONG', 'uint8_t target_system, uint8_t target_component, uint16_t command, uint8_t confirmation, float param1, float param2, float param3, float param4, float param5, float param6, float param7'),
  message(77, 'COMMAND_ACK', 'uint16_t command, uint8_t result, ||, uint8_t progress, int32_t result_param2, uint8_t target_system, uint8_t target_component'),
  message(
    259,
    'CAMERA_INFORMATION',
    'uint32_t time_boot_ms, uint8_t[32] vendor_name, uint8_t[32] model_name, uint32_t firmware_version, float focal_length, float sensor_size_h, float sensor_size_v, uint16_t resolution_h, uint16_t resolution_v, uint8_t lens_id, uint32_t flags, uint16_t cam_definition_version, char[140] cam_definition_uri, ||, uint8_t gimbal_device_id, uint8_t camera_device_id',
  ),
  message(260, 'CAMERA_SETTINGS', 'uint32_t time_boot_ms, uint8_t mode_id, ||, float zoomLevel, float focusLevel, uint8_t camera_device_id'),
  message(
    261,
    'STORAGE_INFORMATION',
    'uint32_t time_boot_ms, uint8_t storage_id, uint8_t storage_count, uint8_t status, float total_capacity, float used_capacity, float available_capacity, float read_speed, float write_speed, ||, uint8_t type, char[32] name, uint8_t storage_usage',
  ),
  message(262, 'CAMERA_CAPTURE_STATUS', 'uint32_t time_boot_ms, uint8_t image_status, uint8_t video_status, float image_interval, uint32_t recording_time_ms, float available_capacity, ||, int32_t image_count, uint8_t camera_device_id'),
  message(
    263,
    'CAMERA_IMAGE_CAPTURED',
    'uint32_t time_boot_ms, uint64_t time_utc, uint8_t camera_id, int32_t lat, int32_t lon, int32_t alt, int32_t relative_alt, float[4] q, int32_t image_index, int8_t capture_result, char[205] file_url',
  ),
  message(
    269,
    'VIDEO_STREAM_INFORMATION',
    'uint8_t stream_id, uint8_t count, uint8_t type, uint16_t flags, float framerate, uint16_t resolution_h, uint16_t resolution_v, uint32_t bitrate, uint16_t rotation, uint16_t hfov, char[32] name, char[160] uri, ||, uint8_t encoding, uint8_t camera_device_id',
  ),
  // The extended parameter protocol (QGroundControl reads and sets a camera definition's parameters with it).
  message(320, 'PARAM_EXT_REQUEST_READ', 'uint8_t target_system, uint8_t target_component, char[16] param_id, int16_t param_index'),
  message(321, 'PARAM_EXT_REQUEST_LIST', 'uint8_t target_system, uint8_t target_component'),
  message(322, 'PARAM_EXT_VALUE', 'char[16] param_id, char[128] param_value, uint8_t param_type, uint16_t param_count, uint16_t param_index'),
  message(323, 'PARAM_EXT_SET', 'uint8_t target_system, uint8_t target_component, char[16] param_id, char[128] param_value, uint8_t param_type'),
  message(324, 'PARAM_EXT_ACK', 'char[16] param_id, char[128] param_value, uint8_t param_type, uint8_t param_result'),
  message(270, 'VIDEO_STREAM_STATUS', 'uint8_t stream_id, uint16_t flags, float framerate, uint16_t resolution_h, uint16_t resolution_v, uint32_t bitrate, uint16_t rotation, uint16_t hfov, ||, uint8_t camera_device_id'),
]

/** The enum values the tests use (common.xml, minimal.xml). */
export const MAV = {
  TYPE_CAMERA: 30,
  AUTOPILOT_INVALID: 8,
  CMD_REQUEST_MESSAGE: 512,
  CMD_REQUEST_CAMERA_INFORMATION: 521,
  CMD_REQUEST_CAMERA_SETTINGS: 522,
  CMD_REQUEST_STORAGE_INFORMATION: 525,
  CMD_REQUEST_CAMERA_CAPTURE_STATUS: 527,
  CMD_SET_CAMERA_MODE: 530,
  CMD_IMAGE_START_CAPTURE: 2000,
  CMD_VIDEO_START_CAPTURE: 2500,
  CMD_VIDEO_STOP_CAPTURE: 2501,
  CMD_REQUEST_VIDEO_STREAM_INFORMATION: 2504,
  RESULT_ACCEPTED: 0,
  RESULT_DENIED: 2,
  RESULT_UNSUPPORTED: 3,
  RESULT_FAILED: 4,
  CAP_CAPTURE_VIDEO: 1,
  CAP_CAPTURE_IMAGE: 2,
  CAP_HAS_MODES: 4,
  CAP_CAN_CAPTURE_IMAGE_IN_VIDEO_MODE: 8,
  CAP_CAN_CAPTURE_VIDEO_IN_IMAGE_MODE: 16,
  CAMERA_MODE_IMAGE: 0,
  CAMERA_MODE_VIDEO: 1,
  CAMERA_MODE_IMAGE_SURVEY: 2,
  CAP_HAS_VIDEO_STREAM: 256,
  STREAM_TYPE_RTSP: 0,
  STREAM_TYPE_RTPUDP: 1,
  STREAM_TYPE_WHEP: 4, // VIDEO_STREAM_TYPE_WHEP (common.xml since 2025)
  STREAM_STATUS_RUNNING: 1,
  ENCODING_H264: 1,
  STORAGE_STATUS_READY: 2,
  PARAM_EXT_TYPE_UINT8: 1,
  PARAM_EXT_TYPE_INT32: 6,
  PARAM_ACK_ACCEPTED: 0,
  PARAM_ACK_VALUE_UNSUPPORTED: 1,
  PARAM_ACK_FAILED: 2,
} as const

const SIZE: Record<FieldType, number> = { uint8_t: 1, int8_t: 1, char: 1, uint8_t_mavlink_version: 1, uint16_t: 2, int16_t: 2, uint32_t: 4, int32_t: 4, uint64_t: 8, float: 4 }

/** CRC-16/MCRF4XX, MAVLink's "X.25" checksum. */
export function x25(bytes: Iterable<number>, crc = 0xffff): number {
  for (const byte of bytes) {
    let tmp = (byte ^ crc) & 0xff
    tmp = (tmp ^ (tmp << 4)) & 0xff
    crc = ((crc >> 8) ^ (tmp << 8) ^ (tmp << 3) ^ (tmp >> 4)) & 0xffff
  }
  return crc
}

/** Fields in the order they travel: the base fields by type size, largest first (stable), then the extensions as declared. */
export function wireOrder(def: MessageDef): FieldDef[] {
  const base = def.fields.filter((f) => !f.extension)
  const sorted = base.map((f, i) => ({ f, i })).sort((a, b) => SIZE[b.f.type] - SIZE[a.f.type] || a.i - b.i).map(({ f }) => f)
  return [...sorted, ...def.fields.filter((f) => f.extension)]
}

/** The generator's CRC_EXTRA: X.25 over "NAME ", then each base field's "type name " (and its array length), folded to a byte. */
export function crcExtra(def: MessageDef): number {
  const text = (s: string) => [...Buffer.from(s, 'ascii')]
  let crc = x25(text(def.name + ' '))
  for (const field of wireOrder(def).filter((f) => !f.extension)) {
    crc = x25(text(`${field.type === 'uint8_t_mavlink_version' ? 'uint8_t' : field.type} ${field.name} `), crc)
    if (field.length) crc = x25([field.length], crc)
  }
  return (crc & 0xff) ^ (crc >> 8)
}

const byId = new Map(MESSAGES.map((m) => [m.id, m]))
const byName = new Map(MESSAGES.map((m) => [m.name, m]))
const payloadLength = (def: MessageDef) => def.fields.reduce((n, f) => n + SIZE[f.type] * (f.length ?? 1), 0)

export type Fields = Record<string, number | string | number[]>

function writeField(view: DataView, at: number, type: FieldType, value: number): void {
  if (type === 'float') view.setFloat32(at, value, true)
  else if (type === 'uint64_t') view.setBigUint64(at, BigInt(value), true)
  else if (type === 'uint32_t') view.setUint32(at, value, true)
  else if (type === 'int32_t') view.setInt32(at, value, true)
  else if (type === 'uint16_t') view.setUint16(at, value, true)
  else if (type === 'int16_t') view.setInt16(at, value, true)
  else if (type === 'int8_t') view.setInt8(at, value)
  else view.setUint8(at, value)
}

function readField(view: DataView, at: number, type: FieldType): number {
  if (type === 'float') return view.getFloat32(at, true)
  if (type === 'uint64_t') return Number(view.getBigUint64(at, true))
  if (type === 'uint32_t') return view.getUint32(at, true)
  if (type === 'int32_t') return view.getInt32(at, true)
  if (type === 'uint16_t') return view.getUint16(at, true)
  if (type === 'int16_t') return view.getInt16(at, true)
  if (type === 'int8_t') return view.getInt8(at)
  return view.getUint8(at)
}

/**
 * MAVLink 2 message signing, from the MAVLink guide (guide/message_signing.html): a 13-byte trailer of
 * link id, a 48-bit timestamp (10 µs units since 2015-01-01 GMT) and the first 6 bytes of
 * SHA-256(secret key + header + payload + CRC + link id + timestamp); incompat flag 0x01 marks it.
 */
export interface Signing {
  key: Uint8Array
  linkId: number
  /** The timestamp to sign with; by default now (and always later than the last one used). */
  timestamp?: number
}
const SIGNING_EPOCH_MS = Date.UTC(2015, 0, 1)
let lastTimestamp = 0
export const signingNow = () => (lastTimestamp = Math.max(lastTimestamp + 1, (Date.now() - SIGNING_EPOCH_MS) * 100))

function signature(key: Uint8Array, signedPart: Uint8Array): Uint8Array {
  return createHash('sha256').update(key).update(signedPart).digest().subarray(0, 6)
}

/** One MAVLink 2 frame (signed when `signing` is given), its payload's trailing zeros cut as MAVLink 2 requires (the first byte stays). */
export function encode(name: string, fields: Fields, from: { sysid: number; compid: number; seq: number }, signing?: Signing): Uint8Array {
  const def = byName.get(name)
  if (!def) throw new Error(`unknown message ${name}`)
  const payload = new Uint8Array(payloadLength(def))
  const view = new DataView(payload.buffer)
  let at = 0
  for (const field of wireOrder(def)) {
    const value = fields[field.name] ?? 0
    if (field.length && SIZE[field.type] > 1) {
      ;(value as number[]).forEach((v, i) => i < field.length! && writeField(view, at + i * SIZE[field.type], field.type, v))
    } else if (field.length) {
      const bytes = typeof value === 'string' ? Buffer.from(value, 'utf8') : (value as number[])
      for (let i = 0; i < Math.min(field.length, (bytes as ArrayLike<number>).length); i++) payload[at + i] = (bytes as ArrayLike<number>)[i]!
    } else writeField(view, at, field.type, Number(value))
    at += SIZE[field.type] * (field.length ?? 1)
  }
  let length = payload.length
  while (length > 1 && payload[length - 1] === 0) length--
  const frame = new Uint8Array(10 + length + 2 + (signing ? 13 : 0))
  frame.set([0xfd, length, signing ? 1 : 0, 0, from.seq & 0xff, from.sysid, from.compid, def.id & 0xff, (def.id >> 8) & 0xff, def.id >> 16], 0)
  frame.set(payload.subarray(0, length), 10)
  const crc = x25([...frame.subarray(1, 10 + length), crcExtra(def)])
  frame[10 + length] = crc & 0xff
  frame[11 + length] = crc >> 8
  if (signing) {
    const at = 12 + length
    frame[at] = signing.linkId
    Buffer.from(frame.buffer, frame.byteOffset).writeUIntLE(signing.timestamp ?? signingNow(), at + 1, 6)
    frame.set(signature(signing.key, frame.subarray(0, at + 7)), at + 7)
  }
  return frame
}

export interface Message {
  name: string
  sysid: number
  compid: number
  seq: number
  fields: Fields
  /** When it arrived (Date.now()). */
  at: number
  /** Signed frames: the trailer's link id and timestamp, and whether the signature matched the decoder's key. */
  signed?: { linkId: number; timestamp: number; valid: boolean }
}

/** Reads MAVLink 2 frames out of a byte stream; frames of other messages, bad checksums and MAVLink 1 are counted and skipped. */
export class FrameDecoder {
  private buffer = new Uint8Array(0)
  skipped = 0
  badChecksum = 0
  /** The key signed frames are checked with (none: a signed frame is reported with valid = false). */
  key: Uint8Array | null = null

  push(chunk: Uint8Array, onMessage: (m: Message) => void): void {
    const joined = new Uint8Array(this.buffer.length + chunk.length)
    joined.set(this.buffer)
    joined.set(chunk, this.buffer.length)
    let at = 0
    while (true) {
      const start = joined.indexOf(0xfd, at)
      if (start < 0) {
        at = joined.length
        break
      }
      if (joined.length - start < 12) {
        at = start
        break
      }
      const length = joined[start + 1]!
      const signed = (joined[start + 2]! & 1) === 1
      const total = 10 + length + 2 + (signed ? 13 : 0)
      if (joined.length - start < total) {
        at = start
        break
      }
      const id = joined[start + 7]! | (joined[start + 8]! << 8) | (joined[start + 9]! << 16)
      const def = byId.get(id)
      if (!def) {
        this.skipped++
        at = start + total
        continue
      }
      const crc = x25([...joined.subarray(start + 1, start + 10 + length), crcExtra(def)])
      if (crc !== (joined[start + 10 + length]! | (joined[start + 11 + length]! << 8))) {
        this.badChecksum++
        at = start + 1
        continue
      }
      const payload = new Uint8Array(payloadLength(def))
      payload.set(joined.subarray(start + 10, start + 10 + length))
      const view = new DataView(payload.buffer)
      const fields: Fields = {}
      let offset = 0
      for (const field of wireOrder(def)) {
        if (field.length && SIZE[field.type] > 1) {
          fields[field.name] = Array.from({ length: field.length }, (_, i) => readField(view, offset + i * SIZE[field.type], field.type))
        } else if (field.length) {
          const bytes = payload.subarray(offset, offset + field.length)
          if (field.type === 'char') {
            const end = bytes.indexOf(0)
            fields[field.name] = Buffer.from(end < 0 ? bytes : bytes.subarray(0, end)).toString('utf8')
            // param_value is bytes typed by param_type, not text: kept whole as well.
            fields[`${field.name}_bytes`] = [...bytes]
          } else fields[field.name] = [...bytes]
        } else fields[field.name] = readField(view, offset, field.type)
        offset += SIZE[field.type] * (field.length ?? 1)
      }
      const m: Message = { name: def.name, sysid: joined[start + 5]!, compid: joined[start + 6]!, seq: joined[start + 4]!, fields, at: Date.now() }
      if (signed) {
        const trailer = start + 12 + length
        const got = joined.subarray(trailer + 7, trailer + 13)
        const valid = this.key !== null && Buffer.from(signature(this.key, joined.subarray(start, trailer + 7))).equals(got)
        m.signed = { linkId: joined[trailer]!, timestamp: Buffer.from(joined.buffer, joined.byteOffset).readUIntLE(trailer + 1, 6), valid }
      }
      onMessage(m)
      at = start + total
    }
    this.buffer = joined.slice(at)
  }
}

/** A PARAM_EXT value as QGroundControl writes it in param_value: the value's little-endian bytes (MAV_PARAM_EXT_TYPE UINT8 or INT32). */
export function paramValueBytes(value: number, type: number): number[] {
  const bytes = Buffer.alloc(4)
  if (type === MAV.PARAM_EXT_TYPE_INT32) bytes.writeInt32LE(value)
  else if (type === MAV.PARAM_EXT_TYPE_UINT8) return [value & 0xff]
  else throw new Error(`param type ${type} not written by this ground station`)
  return [...bytes]
}

/** param_value's bytes read back as `type`. */
export function paramValue(m: Message): number {
  const bytes = Buffer.from(m.fields.param_value_bytes as number[])
  if (m.fields.param_type === MAV.PARAM_EXT_TYPE_INT32) return bytes.readInt32LE(0)
  if (m.fields.param_type === MAV.PARAM_EXT_TYPE_UINT8) return bytes.readUInt8(0)
  throw new Error(`param type ${m.fields.param_type} not read by this ground station`)
}

/** uint8_t[n] text (vendor_name, model_name) up to its first NUL. */
export const bytesText = (bytes: number[]) => Buffer.from(bytes.slice(0, bytes.indexOf(0) < 0 ? bytes.length : bytes.indexOf(0))).toString('utf8')

const GCS = { sysid: 255, compid: 190 } // QGroundControl's own ids

/**
 * A ground station on loopback: `udp()` binds a UDP port (the service's `udpout` sends there, and it
 * answers where the service's frames came from, or `sendTo` an address: the service's `udpin` port);
 * `tcpServer()` listens for the service's `tcpout`. It records every message, and asks cameras as
 * QGroundControl does (COMMAND_LONG from 255/190).
 */
export class GroundStation {
  readonly messages: Message[] = []
  readonly decoder = new FrameDecoder()
  private seq = 0
  private waiters = new Set<() => void>()
  private udpSocket: UdpSocket | null = null
  private tcpServerSocket: Server | null = null
  private tcpPeer: TcpSocket | null = null
  /** UDP: where the service's frames come from (answers go there unless sendTo says otherwise). */
  private serviceAddress: RemoteInfo | null = null
  sendTo: { address: string; port: number } | null = null
  /** Set: every frame sent is signed with it (and the decoder checks the service's signatures with its key). */
  signing: Signing | null = null
  port = 0
  /** TCP connections the service made. */
  connections = 0

  private onBytes = (chunk: Uint8Array) => this.decoder.push(chunk, (m) => {
    this.messages.push(m)
    for (const wake of this.waiters) wake()
  })

  static async udp(port = 0): Promise<GroundStation> {
    const gcs = new GroundStation()
    const socket = createSocket('udp4')
    gcs.udpSocket = socket
    socket.on('message', (chunk, from) => {
      gcs.serviceAddress = from
      gcs.onBytes(chunk)
    })
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject)
      socket.bind(port, '127.0.0.1', () => resolve())
    })
    gcs.port = socket.address().port
    return gcs
  }

  static async tcpServer(port = 0): Promise<GroundStation> {
    const gcs = new GroundStation()
    const server = createServer((peer) => {
      gcs.connections++
      gcs.tcpPeer?.destroy()
      gcs.tcpPeer = peer
      peer.on('data', (chunk: Buffer) => gcs.onBytes(chunk))
      peer.on('error', () => {})
    })
    gcs.tcpServerSocket = server
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(port, '127.0.0.1', () => resolve())
    })
    gcs.port = (server.address() as { port: number }).port
    return gcs
  }

  /** Sends as the ground station, or as `from` (another component of the link: the vehicle's autopilot). */
  send(name: string, fields: Fields, from: { sysid: number; compid: number } = GCS): Uint8Array {
    const frame = encode(name, fields, { ...from, seq: this.seq++ }, this.signing ?? undefined)
    this.sendRaw(frame)
    return frame
  }

  /** Bytes as they are (a replayed frame, junk). */
  sendRaw(frame: Uint8Array): void {
    if (this.tcpPeer) {
      this.tcpPeer.write(frame)
      return
    }
    const to = this.sendTo ?? (this.serviceAddress ? { address: this.serviceAddress.address, port: this.serviceAddress.port } : null)
    if (!to || !this.udpSocket) throw new Error('the ground station has nobody to send to yet')
    this.udpSocket.send(frame, to.port, to.address)
  }

  /** The first message from now on (or already received, with `since` = 0) that matches; fails after `timeoutMs`. */
  async next(what: string, match: (m: Message) => boolean, timeoutMs = 10_000, since = this.messages.length): Promise<Message> {
    const deadline = Date.now() + timeoutMs
    let checked = since
    while (true) {
      for (; checked < this.messages.length; checked++) if (match(this.messages[checked]!)) return this.messages[checked]!
      const left = deadline - Date.now()
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (${this.messages.length} messages received, ${this.decoder.badChecksum} bad checksums)`)
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer)
          this.waiters.delete(wake)
          resolve()
        }
        const timer = setTimeout(wake, Math.min(left, 250))
        this.waiters.add(wake)
      })
    }
  }

  /** Heartbeats seen from camera components: compid → the latest. */
  cameraHeartbeats(since = 0): Map<number, Message> {
    const out = new Map<number, Message>()
    for (const m of this.messages.slice(since)) if (m.name === 'HEARTBEAT' && m.fields.type === MAV.TYPE_CAMERA) out.set(m.compid, m)
    return out
  }

  /** COMMAND_LONG to one camera (sysid 1 unless said), and its COMMAND_ACK. */
  async command(compid: number, command: number, params: number[] = [], options: { sysid?: number; confirmation?: number; timeoutMs?: number } = {}): Promise<{ ack: Message; sentAt: number }> {
    const since = this.messages.length
    const fields: Fields = { target_system: options.sysid ?? 1, target_component: compid, command, confirmation: options.confirmation ?? 0 }
    params.forEach((value, i) => (fields[`param${i + 1}`] = value))
    this.send('COMMAND_LONG', fields)
    const ack = await this.next(
      `COMMAND_ACK of command ${command} from component ${compid}`,
      (m) => m.name === 'COMMAND_ACK' && m.compid === compid && m.fields.command === command,
      options.timeoutMs ?? 10_000,
      since,
    )
    return { ack, sentAt: since }
  }

  /** MAV_CMD_REQUEST_MESSAGE for `name` (param2: its index), then that message from the same camera. */
  async request(compid: number, name: string, index = 0): Promise<Message> {
    const def = byName.get(name)!
    const { ack, sentAt } = await this.command(compid, MAV.CMD_REQUEST_MESSAGE, [def.id, index])
    if (ack.fields.result !== MAV.RESULT_ACCEPTED) throw new Error(`${name} request refused: result ${ack.fields.result}`)
    return this.next(`${name} from component ${compid}`, (m) => m.name === name && m.compid === compid, 10_000, sentAt)
  }

  /** TCP: hangs up on the service (a router restarting); the server stays, so the service connects again. */
  dropConnection(): void {
    this.tcpPeer?.destroy()
    this.tcpPeer = null
  }

  close(): void {
    this.udpSocket?.close()
    this.udpSocket = null
    this.tcpPeer?.destroy()
    this.tcpServerSocket?.close()
    this.tcpServerSocket = null
  }
}
