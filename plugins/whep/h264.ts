// What a WebRTC viewer needs to know of the camera's H.264 RTP (RFC 6184) to join mid-stream: where a
// key frame starts. The streams carry SPS/PPS before every IDR (rtph264pay config-interval=-1), so a
// packet that opens with an SPS (alone, first in a STAP-A, or the start of a fragmented one) starts a
// frame the browser can decode without anything before it. (An access unit delimiter may come first in
// the STAP-A: h264parse and rtph264pay aggregate-mode=zero-latency send AUD, SPS, PPS together.)
const SPS = 7
const STAP_A = 24
const FU_A = 28

/** Offset of the RTP payload (after CSRCs and a header extension), or -1 for a packet too short. */
export function payloadOffset(packet: Uint8Array): number {
  if (packet.length < 12) return -1
  let offset = 12 + (packet[0]! & 0x0f) * 4
  if (packet[0]! & 0x10) {
    if (packet.length < offset + 4) return -1
    offset += 4 + ((packet[offset + 2]! << 8) | packet[offset + 3]!) * 4
  }
  return offset < packet.length ? offset : -1
}

/** Whether this RTP packet begins a key frame (its SPS). */
export function startsKeyFrame(packet: Uint8Array): boolean {
  const at = payloadOffset(packet)
  if (at < 0) return false
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

/** The RTP header fields a viewer follows: the SSRC changes when the camera's child restarts. */
export function rtpHeader(packet: Uint8Array): { ssrc: number; sequenceNumber: number; timestamp: number } {
  const view = new DataView(packet.buffer, packet.byteOffset, packet.byteLength)
  return { sequenceNumber: view.getUint16(2), timestamp: view.getUint32(4), ssrc: view.getUint32(8) }
}
