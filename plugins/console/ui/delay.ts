// A WebRTC view's camera-to-screen delay, from the frames it shows: the browser gives each shown frame's
// RTP timestamp and when it is on the screen (requestVideoFrameCallback); the service says when the frame
// stamped so was made, on the vehicle's clock (GET on the WHEP session: its newest frame's timestamp and
// capture time); that same request gives this page's clock against the vehicle's (the answer's time
// against the request's midpoint, from the quickest of the last few: within half a round trip). The
// figure shown is the median of the last second's frames (docs/latency.md).

/** What GET on a WHEP session answers (core/schemas.ts WhepTimingModel). */
export interface WhepTiming {
  rtp_timestamp: number | null
  captured_at: number | null
  clock_rate: number
  server_time: number
}

/** Clock readings kept: the quickest of them (the least round trip) sets the offset. */
const READINGS = 8
/** The figure is over the frames shown in this last stretch. */
const WINDOW_MS = 1000
/** A frame more than this late, or shown before it was made, is a stale timing (a restart), not a delay. */
const SANE_MS = 60_000

export class ViewerDelay {
  private timing: { rtp: number; capturedAt: number; rate: number } | null = null
  private readings: { roundTrip: number; offset: number }[] = []
  private shown: { at: number; ms: number }[] = []

  /** The session answered `body` to a request sent at `sent` and answered at `received` (ms since the epoch, this page's clock). */
  answered(body: WhepTiming, sent: number, received: number): void {
    const roundTrip = received - sent
    this.readings.push({ roundTrip, offset: body.server_time - (sent + received) / 2 })
    if (this.readings.length > READINGS) this.readings.shift()
    if (body.rtp_timestamp !== null && body.captured_at !== null) this.timing = { rtp: body.rtp_timestamp, capturedAt: body.captured_at, rate: body.clock_rate }
  }

  /** The vehicle's clock minus this page's (ms), and the round trip it was read over; null before the first answer. */
  clock(): { offset: number; roundTrip: number } | null {
    if (!this.readings.length) return null
    return this.readings.reduce((best, r) => (r.roundTrip < best.roundTrip ? r : best))
  }

  /** A frame stamped `rtp` is on the screen at `at` (ms since the epoch, this page's clock). */
  frame(rtp: number, at: number): void {
    const clock = this.clock()
    const timing = this.timing
    if (!clock || !timing) return
    const made = timing.capturedAt + (((rtp - timing.rtp) | 0) * 1000) / timing.rate
    const ms = at + clock.offset - made
    if (ms < -WINDOW_MS || ms > SANE_MS) return
    this.shown.push({ at, ms })
    while (this.shown.length && at - this.shown[0]!.at > WINDOW_MS) this.shown.shift()
  }

  /** The median delay (ms) of the frames shown in the last second before `now`, or null when none. */
  figure(now: number): number | null {
    const recent = this.shown.filter((s) => now - s.at <= WINDOW_MS).map((s) => s.ms)
    if (!recent.length) return null
    recent.sort((a, b) => a - b)
    return recent[Math.floor(recent.length / 2)]!
  }
}
