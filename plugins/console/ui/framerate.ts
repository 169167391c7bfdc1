// A frame rate measured over a window, from a decoder's running count of frames (WebRTC's
// framesDecoded). Not from the first second: a WebRTC session starts with the stream's latest group of
// pictures sent at once, so a naive count just after load shows a burst (40 fps on a 30 fps stream).

export class FrameRate {
  private samples: { at: number; frames: number }[] = []
  private firstFrameAt: number | null = null

  /**
   * @param windowMs the rate is frames over (at least) this long
   * @param settleMs the window starts no earlier than this long after the first decoded frame, past the
   *   start-up burst
   */
  constructor(
    private readonly windowMs = 2000,
    private readonly settleMs = 1000,
  ) {}

  /** Adds the decoder's total count at `at` (ms); answers frames per second over the last full window, or null until there is one. */
  add(at: number, frames: number): number | null {
    const last = this.samples.at(-1)
    if (frames === 0 || (last && frames < last.frames)) {
      // Nothing decoded yet, or the count restarted (a new session): start again.
      this.samples = []
      this.firstFrameAt = frames === 0 ? null : at
      if (frames === 0) return null
    }
    this.firstFrameAt ??= at
    if (at - this.firstFrameAt < this.settleMs) return null
    this.samples.push({ at, frames })
    // Keep the newest sample that is at least a window old as the window's start, and those after it.
    while (this.samples.length > 1 && at - this.samples[1]!.at >= this.windowMs) this.samples.shift()
    const start = this.samples[0]!
    if (at - start.at < this.windowMs) return null
    return ((frames - start.frames) * 1000) / (at - start.at)
  }
}
