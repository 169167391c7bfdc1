// When each frame was made, on this machine's real-time clock, read from its RTP timestamp: a track's
// packets carry the camera's spacing in their timestamps, and the quickest of them to reach the hub
// anchors that timeline to the clock (a late packet, queued in a busy moment, never moves it). So a
// frame's time is where its camera put it, not when a busy service got round to it: the start of the
// camera-to-screen delay a viewer shows (docs/latency.md). It is the moment the frame left the camera's
// pipeline: a camera's own encoder, before that, is not in it (the simulated cameras' x264: a few ms).

/** The quickest arrival is looked for over this long, and the last two windows' kept: a drifting camera clock moves it within seconds. */
const WINDOW_MS = 2000

export class CaptureClock {
  private ssrc = -1
  private last = 0
  /** The timeline since its first packet, in the track's ticks (no wrap). */
  private extended = 0
  private windowMin = Infinity
  private previousMin = Infinity
  private windowEnd = 0

  constructor(private readonly rate: number) {}

  /** A packet of `ssrc` stamped `ts` came at `at` (ms since the Unix epoch). */
  arrived(ssrc: number, ts: number, at: number): void {
    if (ssrc !== this.ssrc) {
      // A new timeline (the camera's child restarted): anchored anew.
      this.ssrc = ssrc
      this.extended = 0
      this.windowMin = this.previousMin = Infinity
      this.windowEnd = at + WINDOW_MS
    } else this.extended += (ts - this.last) | 0
    this.last = ts
    this.windowMin = Math.min(this.windowMin, at - (this.extended * 1000) / this.rate)
    if (at >= this.windowEnd) {
      this.previousMin = this.windowMin
      this.windowMin = Infinity
      this.windowEnd = at + WINDOW_MS
    }
  }

  /** When the frame stamped `ts` (of the current timeline) was made, in ms since the Unix epoch; null before any packet. */
  capturedAt(ts: number): number | null {
    if (this.ssrc < 0) return null
    const anchor = Math.min(this.windowMin, this.previousMin)
    return anchor + ((this.extended + ((ts - this.last) | 0)) * 1000) / this.rate
  }
}
