// A live view's camera-to-screen delay, from the frames it shows (docs/latency.md). WebRTC: the browser
// gives each shown frame's RTP timestamp and when it is on the screen (requestVideoFrameCallback); the
// service says when the frame stamped so was made, on the vehicle's clock (GET on the WHEP session: its
// newest frame's timestamp and capture time); that same request gives this page's clock against the
// vehicle's (the answer's time against the request's midpoint, from the quickest of the last few: within
// half a round trip). MJPEG: each part says when its frame was made and when it left the vehicle; the
// quickest part's way sets the clock (so the figure leaves out that much of the link's one-way time).
// The figure shown is the median of the last second's frames.

/** What GET on a WHEP session answers (core/schemas.ts WhepTimingModel). */
export interface WhepTiming {
  rtp_timestamp: number | null
  captured_at: number | null
  clock_rate: number
  server_time: number
}

/**
 * Clock readings kept (one a second): the quickest of them (the least round trip) sets the offset. A
 * minute of them: with 8, once in CI the figure went 30 ms off the truth after 8 s, likely as the quick
 * reading aged out during a busy spell and a slow, lopsided one (its request waiting on the vehicle's
 * busy thread, its answer not) set the clock. Two clocks drift apart by a few ms a minute at most.
 */
const READINGS = 60
/** MJPEG parts kept: the quickest of them sets the clock. */
const PARTS = 32
/** The figure is over the frames shown in this last stretch. */
const WINDOW_MS = 1000
/** A frame more than this late, or shown before it was made, is a stale timing (a restart), not a delay. */
const SANE_MS = 60_000

/** Timing answers kept: a frame is placed by each, and the median taken (one answer off by a frame moves nothing). */
const TIMINGS = 5

export class ViewerDelay {
  private timings: { rtp: number; capturedAt: number; rate: number }[] = []
  private readings: { roundTrip: number; offset: number }[] = []
  /** MJPEG: the vehicle's clock minus this page's, less each part's way here, for the last parts. */
  private partOffsets: number[] = []
  private shown: { at: number; ms: number }[] = []

  /** The session answered `body` to a request sent at `sent` and answered at `received` (ms since the epoch, this page's clock). */
  answered(body: WhepTiming, sent: number, received: number): void {
    const roundTrip = received - sent
    this.readings.push({ roundTrip, offset: body.server_time - (sent + received) / 2 })
    if (this.readings.length > READINGS) this.readings.shift()
    if (body.rtp_timestamp !== null && body.captured_at !== null) {
      this.timings.push({ rtp: body.rtp_timestamp, capturedAt: body.captured_at, rate: body.clock_rate })
      if (this.timings.length > TIMINGS) this.timings.shift()
    }
  }

  /** An MJPEG part left the vehicle at `sentAt` (its clock) and was here whole at `receivedAt` (this page's). */
  partCame(sentAt: number, receivedAt: number): void {
    this.partOffsets.push(sentAt - receivedAt)
    if (this.partOffsets.length > PARTS) this.partOffsets.shift()
  }

  /**
   * The vehicle's clock minus this page's (ms), and the round trip it was read over (null: read from
   * MJPEG parts, one way); null before the first reading.
   */
  clock(): { offset: number; roundTrip: number | null } | null {
    if (this.readings.length) return this.readings.reduce((best, r) => (r.roundTrip < best.roundTrip ? r : best))
    if (this.partOffsets.length) return { offset: Math.max(...this.partOffsets), roundTrip: null }
    return null
  }

  /**
   * A WebRTC frame stamped `rtp` is on the screen at `at` (ms since the epoch, this page's clock): made
   * when the last answers say, their median (a camera's restart makes a new timeline: its old answers
   * place the frame far off, and are outvoted once most are new).
   */
  frame(rtp: number, at: number): void {
    if (!this.timings.length) return
    const made = this.timings.map((t) => t.capturedAt + (((rtp - t.rtp) | 0) * 1000) / t.rate).sort((a, b) => a - b)
    this.made(made[Math.floor(made.length / 2)]!, at)
  }

  /** A frame made at `madeAt` (the vehicle's clock) is on the screen at `at` (this page's). */
  made(madeAt: number, at: number): void {
    const clock = this.clock()
    if (!clock) return
    const ms = at + clock.offset - madeAt
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
