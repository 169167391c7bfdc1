// The one RTP reader of the media plane: header fields, where the payload starts, and where a decoder
// can start (a key frame). Every reader of a hub, the GOP cache and the reader queues use these, so a
// packet is understood the same way on every path (WHEP, RTSP, MJPEG, the recorder).
//
// Our streams carry SPS/PPS before every IDR (rtph264pay config-interval=-1), so an H.264 packet that
// opens with an SPS (alone, anywhere in a STAP-A after an access unit delimiter, or the start of a
// fragmented one) starts a frame a decoder needs nothing before. A JPEG (RFC 2435) starts at the
// fragment with offset 0: every JPEG frame stands alone.

/** What a hub carries: H.264 (payload type 96, RFC 6184) or JPEG (payload type 26, RFC 2435); its sound Opus (111, RFC 7587). */
export type MediaEncoding = 'H264' | 'JPEG' | 'OPUS'

const SPS = 7
const STAP_A = 24
const FU_A = 28

/** Offset of the RTP payload (after CSRCs and a header extension), or -1 for a packet too short to have one. */
export function payloadOffset(packet: Uint8Array): number {
  if (packet.length < 12) return -1
  let offset = 12 + (packet[0]! & 0x0f) * 4
  if (packet[0]! & 0x10) {
    if (packet.length < offset + 4) return -1
    offset += 4 + ((packet[offset + 2]! << 8) | packet[offset + 3]!) * 4
  }
  return offset < packet.length ? offset : -1
}

export const sequenceOf = (packet: Uint8Array): number => (packet[2]! << 8) | packet[3]!
export const timestampOf = (packet: Uint8Array): number => ((packet[4]! << 24) | (packet[5]! << 16) | (packet[6]! << 8) | packet[7]!) >>> 0
export const ssrcOf = (packet: Uint8Array): number => ((packet[8]! << 24) | (packet[9]! << 16) | (packet[10]! << 8) | packet[11]!) >>> 0
/** The RTP marker bit: the packet ends a frame (an H.264 access unit, RFC 6184; a JPEG, RFC 2435). */
export const endsFrame = (packet: Uint8Array): boolean => packet.length > 1 && (packet[1]! & 0x80) !== 0

/** The RTP header fields a viewer follows: the SSRC changes when the camera's child restarts. */
/** An RTP packet (version 2, no CSRC or extension) of `payload`; `marker`: the last packet of a frame or buffer. */
export function rtpPacket(pt: number, seq: number, ts: number, ssrc: number, payload: Uint8Array, marker = false): Uint8Array {
  const out = new Uint8Array(12 + payload.length)
  const view = new DataView(out.buffer)
  out[0] = 0x80
  out[1] = (marker ? 0x80 : 0) | pt
  view.setUint16(2, seq & 0xffff)
  view.setUint32(4, ts >>> 0)
  view.setUint32(8, ssrc >>> 0)
  out.set(payload, 12)
  return out
}

export function rtpHeader(packet: Uint8Array): { ssrc: number; sequenceNumber: number; timestamp: number } {
  return { sequenceNumber: sequenceOf(packet), timestamp: timestampOf(packet), ssrc: ssrcOf(packet) }
}

/**
 * A kept group of pictures (a hub's lastGop) to send a new viewer at once: copies whose frames are one
 * RTP tick apart, the last keeping its own timestamp, so the viewer decodes them all at once (its first
 * picture whole, and the latest) and goes on live, on the stream's timeline. (The packets are shared
 * with the hub's other readers: never rewritten in place.)
 */
export function compressedGroup(gop: readonly Uint8Array[]): Uint8Array[] {
  if (!gop.length) return []
  const frames = new Set(gop.map(timestampOf)).size
  const newest = timestampOf(gop.at(-1)!)
  let frame = -1
  let previous: number | null = null
  return gop.map((packet) => {
    const timestamp = timestampOf(packet)
    if (timestamp !== previous) frame++
    previous = timestamp
    const copy = new Uint8Array(packet) // a copy (a Buffer's slice() would be a view of the shared bytes)
    new DataView(copy.buffer, copy.byteOffset, copy.byteLength).setUint32(4, (newest - (frames - 1 - frame)) >>> 0)
    return copy
  })
}

/** Whether this RTP packet opens a frame a decoder can start from: H.264 its SPS, JPEG its first fragment. */
export function startsKeyFrame(packet: Uint8Array, encoding: MediaEncoding = 'H264'): boolean {
  const at = payloadOffset(packet)
  if (at < 0) return false
  if (encoding === 'OPUS') return true // every Opus packet decodes on its own
  if (encoding === 'JPEG') return packet.length >= at + 4 && packet[at + 1] === 0 && packet[at + 2] === 0 && packet[at + 3] === 0
  const type = packet[at]! & 0x1f
  if (type === SPS) return true
  if (type === STAP_A) {
    for (let nal = at + 1; nal + 2 < packet.length; nal += 2 + ((packet[nal]! << 8) | packet[nal + 1]!)) {
      if ((packet[nal + 2]! & 0x1f) === SPS) return true
    }
    return false
  }
  if (type === FU_A) return at + 1 < packet.length && (packet[at + 1]! & 0x80) !== 0 && (packet[at + 1]! & 0x1f) === SPS
  return false
}

/**
 * Rewrites a stream's RTP so that a new timeline (the camera's child restarted: a new SSRC, sequence
 * numbers and timestamps) continues the old one: sequence numbers without a jump, and timestamps as far
 * after its last packet as the camera was away (in whole frames, at least one). A receiver that stamps
 * frames from RTP timestamps alone (the recorder) sees one stream, still in step with the sound and the
 * telemetry text, which went on meanwhile (squeezing the absence out put them late by as much).
 * Packets of the first timeline pass unchanged (the same objects); rewritten ones are copies.
 */
export class RtpContinuity {
  private ssrc = -1
  private seqOffset = 0
  private tsOffset = 0
  private lastSeq = -1
  private lastTs = 0
  private lastAt = 0

  constructor(
    private readonly frameTicks: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  next(packet: Uint8Array): Uint8Array {
    if (packet.length < 12) return packet
    const ssrc = ssrcOf(packet)
    const at = this.now()
    if (this.ssrc !== -1 && ssrc !== this.ssrc) {
      const away = Math.max(1, Math.round(((at - this.lastAt) * 90) / this.frameTicks)) * this.frameTicks
      this.seqOffset = (this.lastSeq + 1 - sequenceOf(packet)) & 0xffff
      this.tsOffset = (this.lastTs + away - timestampOf(packet)) >>> 0
    }
    this.lastAt = at
    this.ssrc = ssrc
    const seq = (sequenceOf(packet) + this.seqOffset) & 0xffff
    const ts = (timestampOf(packet) + this.tsOffset) >>> 0
    this.lastSeq = seq
    this.lastTs = ts
    if (this.seqOffset === 0 && this.tsOffset === 0) return packet
    const out = packet.slice()
    const view = new DataView(out.buffer, out.byteOffset, out.byteLength)
    view.setUint16(2, seq)
    view.setUint32(4, ts)
    return out
  }
}
