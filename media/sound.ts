// A stream's sound as its hub's readers get it: one continuous Opus RTP timeline (one SSRC, sequence
// numbers without a jump) across restarts of the sound's child, with silence while there is no sound
// (its card is unplugged, its child restarts). A muxer waits for every track, so a recording whose
// sound stopped would stop too; a WebRTC or RTSP track that goes quiet is taken for a stall.
import { LateTicks } from '../core/late-ticks'
import { rtpPacket } from './rtp'

const OPUS_CLOCK = 48_000
/** One 20 ms Opus frame of silence (TOC 0xF8: CELT, full band, 20 ms, mono; then the coded silence). */
export const OPUS_SILENCE = new Uint8Array([0xf8, 0xff, 0xfe])
export const FRAME_MS = 20
/**
 * No packet from the child for this long: silence fills in. Long beside the child's 20 ms, so a busy
 * event loop (the packets wait in the socket) is not taken for an absence and filled with silence.
 */
export const SILENCE_AFTER_MS = 500
/**
 * A tick of the fill timer this long after the one before came late (core/late-ticks.ts): the sound
 * that came meanwhile waits in the socket. Filled then, the gap would get silence and the waiting sound
 * would follow it, the whole track as much later than the video.
 */
export const LATE_TICK_MS = 100
const PT = 111

export class SoundTimeline {
  private readonly ssrc = (Math.random() * 0x1_0000_0000) >>> 0
  private seq = (Math.random() * 0x10000) & 0xffff
  /** RTP time (48 kHz) of the next packet, and when that was (ms). */
  private ts = (Math.random() * 0x1_0000_0000) >>> 0
  private lastAt = 0
  /** The child's SSRC and the offset that maps its timestamps onto ours. */
  private childSsrc = -1
  private offset = 0
  private timer: Timer | null = null
  /** Silence is being sent (no packet for SILENCE_AFTER_MS): on every FRAME_MS until one comes. */
  private filling = false
  private readonly ticks = new LateTicks(LATE_TICK_MS)

  constructor(
    /** Each packet out, with its moment (performance.now()'s clock): when it came, or where silence stands. */
    private readonly send: (packet: Uint8Array, at: number) => void,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.lastAt = now()
  }

  /** Fills silence in while no packet comes (every FRAME_MS). */
  start(): void {
    this.lastAt = this.now()
    this.timer ??= setInterval(() => this.fill(), FRAME_MS)
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  /**
   * Sound that came earlier (a pre-record buffer's: each packet with when it came, performance.now()),
   * sent now, each packet at its own time from `since` on; silence from `since` to the first one. (A
   * muxer starts a track with its first packet: the silence keeps it beside the video's first frame.)
   */
  replay(since: number, kept: { at: number; packet: Uint8Array }[]): void {
    this.childSsrc = -1
    this.lastAt = since - FRAME_MS // the first frame of silence at `since`
    const first = kept[0]?.at ?? this.now()
    while (this.lastAt + 2 * FRAME_MS <= first) this.silence()
    for (const { at, packet } of kept) this.packet(packet, at)
  }

  /** A packet of the sound's child (that came at `at`: now): restamped onto the continuous timeline. */
  packet(packet: Uint8Array, at = this.now()): void {
    if (packet.length < 12) return
    const view = new DataView(packet.buffer, packet.byteOffset, packet.byteLength)
    const ssrc = view.getUint32(8)
    const ts = view.getUint32(4)
    if (ssrc !== this.childSsrc) {
      // A new child: its first packet goes on at its moment on our clock, never over the last one sent
      // (a moment is when the packet was made, which can be a little before the silence sent last).
      this.childSsrc = ssrc
      this.offset = (this.expectedTs(Math.max(at, this.lastAt + FRAME_MS)) - ts) >>> 0
    }
    const out = new Uint8Array(packet)
    const o = new DataView(out.buffer)
    o.setUint16(2, this.nextSeq())
    this.ts = (ts + this.offset) >>> 0
    o.setUint32(4, this.ts)
    o.setUint32(8, this.ssrc)
    this.lastAt = at
    this.filling = false
    this.send(out, at)
  }

  /**
   * Silence for each 20 ms without a packet, once none came for SILENCE_AFTER_MS (then until one comes);
   * nothing on a tick that came late (LATE_TICK_MS).
   */
  fill(): void {
    const at = this.now()
    if (this.ticks.late(at)) return
    if (at - this.lastAt < (this.filling ? FRAME_MS : SILENCE_AFTER_MS)) return
    this.filling = true
    this.childSsrc = -1 // whatever comes next starts anew
    let frames = Math.floor((at - this.lastAt) / FRAME_MS)
    if (frames > 10) {
      // Far behind (the gap before filling, a stalled event loop): the clock moves on, without a burst.
      this.ts = (this.ts + ((frames - 1) * OPUS_CLOCK * FRAME_MS) / 1000) >>> 0
      this.lastAt += (frames - 1) * FRAME_MS
      frames = 1
    }
    while (frames-- > 0) this.silence()
  }

  /** One frame of silence, FRAME_MS after the last packet. */
  private silence(): void {
    this.ts = (this.ts + (OPUS_CLOCK * FRAME_MS) / 1000) >>> 0
    this.lastAt += FRAME_MS
    this.send(rtpPacket(PT, this.nextSeq(), this.ts, this.ssrc, OPUS_SILENCE), this.lastAt)
  }

  private expectedTs(at: number): number {
    return (this.ts + Math.round(((at - this.lastAt) * OPUS_CLOCK) / 1000)) >>> 0
  }

  private nextSeq(): number {
    this.seq = (this.seq + 1) & 0xffff
    return this.seq
  }
}

/**
 * The longest a file's sound waits for its video (SoundBehindVideo): past it, a camera that is away or
 * stalled does not stop the sound (the muxer waits for every track).
 */
export const HOLD_BEHIND_VIDEO_MS = 5000

/**
 * A file's sound let out no further than its video has come: a packet goes once the leader's newest
 * frame was made at or after the packet's moment (both on performance.now()'s clock: hub.capturedAt).
 * A camera's encoder lagging under load delivers its frames late while the sound comes on time: sent as
 * it came, a segment's sound ran past its last frame by the lag (0.7 s on a loaded machine) and sat that
 * much late of its picture. A cut (the recorder's next segment) moves the sound at the key frame's
 * moment: what was made before it goes to the old file, the rest to the new one.
 */
export class SoundBehindVideo {
  private held: { at: number; packet: Uint8Array }[] = []
  private videoAt = -Infinity
  /** A cut asked for and not made: nothing goes past where the video was then. */
  private cap = Infinity

  constructor(
    private readonly send: (packet: Uint8Array) => void,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** A packet of sound made at `at`. */
  packet(packet: Uint8Array, at: number): void {
    this.held.push({ at, packet })
    this.release()
  }

  /** The leader's newest frame was made at `at`. */
  video(at: number): void {
    if (at > this.videoAt) this.videoAt = at
    this.release()
  }

  /** A cut is asked for: its key frame, and so its moment, comes later. */
  cutAsked(): void {
    this.cap = this.videoAt
  }

  /** The cut is at `at`: the sound made before it goes where the sound went so far, then `move()`, then the rest as the video comes. */
  cutAt(at: number, move: () => void): void {
    this.sendWhile((p) => p.at < at)
    move()
    this.cutDropped()
  }

  /** The cut asked for is not made. */
  cutDropped(): void {
    this.cap = Infinity
    this.release()
  }

  private release(): void {
    const bound = Math.min(this.videoAt, this.cap)
    const stale = this.now() - HOLD_BEHIND_VIDEO_MS
    this.sendWhile((p) => p.at <= bound || p.at < stale)
  }

  private sendWhile(ready: (p: { at: number }) => boolean): void {
    let n = 0
    while (n < this.held.length && ready(this.held[n]!)) this.send(this.held[n++]!.packet)
    if (n) this.held.splice(0, n)
  }
}
