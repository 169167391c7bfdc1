// MAVLink frames out of bytes, checked before anything trusts them: the checksum (CRC_EXTRA of a known
// message), then, when the link has a signing key, the MAVLink 2 signature and its timestamp. A UDP
// datagram is read on its own (what it leaves unfinished is dropped with it, so one sender's bytes can
// never join another's); a TCP connection has its own StreamReader. node-mavlink's splitter is not used:
// it keeps one buffer for everything written to it and waits for as many bytes as any start byte claims.
import { createHash, timingSafeEqual } from 'node:crypto'
import { MSG_ID_MAGIC_NUMBER, x25crc } from 'mavlink-mappings'
import { MavLinkPacket, MavLinkProtocolV1, MavLinkProtocolV2 } from 'node-mavlink'

const V1 = 0xfe
const V2 = 0xfd
const SIGNED = 0x01
const SIGNATURE_LENGTH = 13
/** The longest frame: MAVLink 2 header, 255 bytes of payload, checksum and signature. */
export const MAX_FRAME = 10 + 255 + 2 + SIGNATURE_LENGTH

/** A datagram with this many bad frame starts is not read further (the rest is garbage or an attack). */
const MAX_REFUSALS_PER_DATAGRAM = 8

/** Why bytes were not taken as a frame (counted in the link's status). */
export type Refusal = 'checksum' | 'unknown' | 'truncated' | 'unsigned' | 'signature' | 'replayed'

const frameLength = (bytes: Buffer, at: number): number => {
  if (bytes[at] === V1) return 6 + bytes[at + 1]! + 2
  return 10 + bytes[at + 1]! + 2 + (bytes[at + 2]! & SIGNED ? SIGNATURE_LENGTH : 0)
}

/** The checksum of the frame at 0..length (without its signature) against the message's CRC_EXTRA. */
function checksum(frame: Buffer): 'ok' | 'checksum' | 'unknown' {
  const v2 = frame[0] === V2
  const msgid = v2 ? frame.readUIntLE(7, 3) : frame[5]!
  const magic = MSG_ID_MAGIC_NUMBER[msgid]
  if (magic === undefined || magic === null) return 'unknown'
  const end = (v2 ? 10 : 6) + frame[1]!
  return x25crc(frame.subarray(0, end + 2), 1, 2, magic) === frame.readUInt16LE(end) ? 'ok' : 'checksum'
}

/**
 * Splits `bytes` into checked frames from the first start byte on. `whole` (a datagram): a frame that
 * claims more bytes than there are is refused and the search goes on after its start byte. Otherwise (a
 * stream) it returns where the unread tail begins, a frame begun but not complete, for the next read.
 */
function split(bytes: Buffer, whole: boolean, onFrame: (frame: Buffer) => void, onRefused: (why: Refusal) => void): number {
  let at = 0
  let refusals = 0
  const refuse = (why: Refusal) => {
    onRefused(why)
    refusals++
  }
  while (at < bytes.length) {
    // A datagram of start bytes would cost a checksum over up to 280 bytes each: give up on it early.
    if (whole && refusals >= MAX_REFUSALS_PER_DATAGRAM) return bytes.length
    const v1 = bytes.indexOf(V1, at)
    const v2 = bytes.indexOf(V2, at)
    const start = v1 < 0 ? v2 : v2 < 0 ? v1 : Math.min(v1, v2)
    if (start < 0) return bytes.length
    const length = bytes.length - start < 3 ? Infinity : frameLength(bytes, start)
    if (bytes.length - start < length) {
      if (!whole) return start
      refuse('truncated')
      at = start + 1
      continue
    }
    const frame = bytes.subarray(start, start + length)
    const check = checksum(frame)
    if (check === 'ok') {
      onFrame(frame)
      at = start + length
    } else {
      refuse(check)
      // The start byte may have been one inside other data (and the length it claims a lie): look again one byte on.
      at = start + 1
    }
  }
  return at
}

/** One UDP datagram, on its own: its frames; a frame it leaves unfinished is refused, never kept for the next. */
export function readDatagram(bytes: Buffer, onFrame: (frame: Buffer) => void, onRefused: (why: Refusal) => void): void {
  split(bytes, true, onFrame, onRefused)
}

/** One TCP connection's bytes: a frame cut between reads is completed by the next; never more than one frame is held. */
export class StreamReader {
  private held: Buffer = Buffer.alloc(0)

  constructor(
    private readonly onFrame: (frame: Buffer) => void,
    private readonly onRefused: (why: Refusal) => void,
  ) {}

  write(chunk: Buffer): void {
    const bytes = this.held.length ? Buffer.concat([this.held, chunk]) : chunk
    const rest = split(bytes, false, this.onFrame, this.onRefused)
    // Copied: a subarray would keep the whole chunk alive. At most MAX_FRAME - 1 bytes by construction.
    this.held = Buffer.from(bytes.subarray(rest))
  }
}

/** The frame as node-mavlink's packet, for the service (which reads payloads with node-mavlink's tables). */
export function packet(frame: Buffer): MavLinkPacket {
  const protocol = frame[0] === V2 ? new MavLinkProtocolV2() : new MavLinkProtocolV1()
  const header = protocol.header(frame)
  const signature = protocol instanceof MavLinkProtocolV2 ? protocol.signature(frame, header) : null
  return new MavLinkPacket(frame, header, protocol.payload(frame), protocol.crc(frame), protocol, signature)
}

/** A verified signed frame stamped more than a minute ahead of the wall clock: who sent it, how far ahead, and until when new streams are refused. */
export interface SigningAhead {
  aheadMs: number
  system: number
  component: number
  link: number
  /** When the wall clock reaches the frame's time (ISO 8601). */
  until: string
}

/** MAVLink signing's clock: 10 µs units since 2015-01-01 00:00 GMT. */
const SIGNING_EPOCH_MS = Date.UTC(2015, 0, 1)
const wallTimestamp = () => (Date.now() - SIGNING_EPOCH_MS) * 100
/** A new stream's first frame may be this far behind our clock (one minute, as MAVLink's own library allows). */
const MAX_BEHIND = 60 * 100_000
/** Streams (system, component, link id) whose last timestamp is remembered; the oldest is forgotten past this. */
const MAX_STREAMS = 256

/**
 * MAVLink 2 message signing (mavlink.io guide, "Message Signing"): the trailer is a link id, a 48-bit
 * timestamp and the first 6 bytes of SHA-256(key + header + payload + CRC + link id + timestamp).
 * Incoming: signed with our key, and each stream's timestamps only go up (a replay is refused), a new
 * stream's no more than a minute behind our clock. Outgoing: every frame signed, timestamps increasing.
 */
export class Signing {
  private clock = wallTimestamp()
  private streams = new Map<string, number>()

  /**
   * `onAhead`: told once each time a verified frame takes this clock more than a minute past the wall
   * clock (a sender's clock set wrong). From then on, until the wall clock gets there, a new stream stamped
   * with the right time is more than a minute behind and refused as a replay: new ground stations are
   * locked out. Told again only after the wall clock has caught up.
   */
  constructor(
    private readonly key: Uint8Array,
    private readonly linkId = 0,
    private readonly onAhead: (ahead: SigningAhead) => void = () => {},
  ) {}

  private digest(signedPart: Buffer): Buffer {
    return createHash('sha256').update(this.key).update(signedPart).digest().subarray(0, 6)
  }

  /** Whether a checked frame may be used. */
  verify(frame: Buffer): 'ok' | Refusal {
    if (frame[0] !== V2 || !(frame[2]! & SIGNED)) return 'unsigned'
    const trailer = frame.length - SIGNATURE_LENGTH
    if (!timingSafeEqual(this.digest(frame.subarray(0, trailer + 7)), frame.subarray(trailer + 7))) return 'signature'
    const timestamp = frame.readUIntLE(trailer + 1, 6)
    const stream = `${frame[5]}/${frame[6]}/${frame[trailer]}`
    const last = this.streams.get(stream)
    if (last !== undefined ? timestamp <= last : timestamp < Math.max(this.clock, wallTimestamp()) - MAX_BEHIND) return 'replayed'
    this.streams.delete(stream)
    this.streams.set(stream, timestamp)
    if (this.streams.size > MAX_STREAMS) this.streams.delete(this.streams.keys().next().value!)
    const wall = wallTimestamp()
    const wasAhead = this.clock - wall > MAX_BEHIND
    this.clock = Math.max(this.clock, timestamp)
    if (!wasAhead && this.clock - wall > MAX_BEHIND) this.onAhead({ aheadMs: Math.round((this.clock - wall) / 100), system: frame[5]!, component: frame[6]!, link: frame[trailer]!, until: new Date(SIGNING_EPOCH_MS + this.clock / 100).toISOString() })
    return 'ok'
  }

  /** A MAVLink 2 frame serialized with the signed flag set (it is under the checksum), with its signature appended. */
  sign(frame: Buffer): Buffer {
    this.clock = Math.max(this.clock + 1, wallTimestamp())
    const out = Buffer.alloc(frame.length + SIGNATURE_LENGTH)
    frame.copy(out)
    out[frame.length] = this.linkId
    out.writeUIntLE(this.clock, frame.length + 1, 6)
    this.digest(out.subarray(0, frame.length + 7)).copy(out, frame.length + 7)
    return out
  }
}
