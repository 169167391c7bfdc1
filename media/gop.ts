// A stream member's last group of pictures, kept where its packets pass: the hub (main thread) for WHEP,
// snapshots and MJPEG, and the relay's thread (relay-worker.ts) for the RTSP server's clients, so a
// viewer that arrives between two key frames starts at once on a whole picture.
import { sequenceOf, ssrcOf, startsKeyFrame } from './rtp'

/**
 * The most a kept group of pictures holds; a longer one (a camera with a long GOP, a high bitrate) is
 * dropped and nothing is kept until the next key frame. Software H.264 at 1080p30 with a key frame every
 * second is ~0.8 MB in ~600 packets; a viewer is sent the whole group at once when it joins.
 */
const GOP_MAX_BYTES = 3 << 20
const GOP_MAX_PACKETS = 2500

/**
 * One member's packets from its latest key frame on, with no gap: a lost packet, a new SSRC (the
 * camera's child restarted) or a group past the bounds empties it until the next key frame.
 */
export class GopCache {
  private packets: Uint8Array[] = []
  private bytes = 0

  push(packet: Uint8Array): void {
    if (startsKeyFrame(packet, 'H264')) {
      this.packets = [packet]
      this.bytes = packet.length
      return
    }
    const last = this.packets.at(-1)
    if (!last) return
    const follows = packet.length >= 12 && sequenceOf(packet) === ((sequenceOf(last) + 1) & 0xffff) && ssrcOf(packet) === ssrcOf(last)
    if (!follows || this.packets.length >= GOP_MAX_PACKETS || this.bytes + packet.length > GOP_MAX_BYTES) {
      this.packets = []
      this.bytes = 0
      return
    }
    this.packets.push(packet)
    this.bytes += packet.length
  }

  /** A copy of the list (the packets themselves are shared). */
  get gop(): Uint8Array[] {
    return this.packets.slice()
  }
}
