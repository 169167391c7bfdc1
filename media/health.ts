// A running stream's health, measured where the service sees it: at its hub (hub.ts), as each member's
// packets arrive from the camera's child. The hub's hot path only counts (a sequence check per packet, a
// clock read per frame); the figures and the alert are computed once a second by tick().
import type { HubHealth, MediaEncoding } from '../core/types'
import { endsFrame, sequenceOf, startsKeyFrame } from './rtp'

/** How often the figures are computed (ms). */
export const HEALTH_TICK_MS = 1000
/** A delivered rate below this share of the configured one is low. */
export const LOW_RATE_SHARE = 0.9
/** Whole ticks the rate must stay low (or back) before the alert is raised (or cleared): 2 s. */
export const ALERT_TICKS = 2
/** A viewer losing more than this share of the video's packets is an alert. */
export const LOSS_ALERT_SHARE = 0.05
/** A viewer's figures (its delay, its loss) count this long after it said them. */
export const VIEWER_FIGURES_MS = 2000
/** No frame for longer than this (ms) is a stall. */
export const STALL_MS = 1000
/** Upper bounds (seconds) of the frame-interval histogram's buckets: 240 fps to a 2 s stall. */
export const FRAME_INTERVAL_BUCKETS = [0.005, 0.01, 0.02, 0.034, 0.05, 0.067, 0.1, 0.2, 0.5, 1, 2] as const
/** Upper bounds (seconds) of the viewers' delay histogram's buckets: a LAN's tens of ms to a stalled link's seconds. */
export const VIEWER_DELAY_BUCKETS = [0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2, 5] as const
/** A jump in RTP sequence numbers past this is a new timeline (the child restarted), not a loss. */
const MAX_GAP = 3000

/** A histogram as Prometheus writes one: cumulative counts per upper bound (then all), their sum and count. */
export interface FrameIntervals {
  bounds: readonly number[]
  /** Cumulative: frames whose interval was at most each bound, then all of them. */
  counts: number[]
  sum: number
  count: number
}

/** Observations counted by bucket (the last past every bound), read as a cumulative histogram. */
class Buckets {
  private readonly counts: number[]
  private sum = 0

  constructor(private readonly bounds: readonly number[]) {
    this.counts = new Array<number>(bounds.length + 1).fill(0)
  }

  add(value: number): void {
    let bucket = 0
    while (bucket < this.bounds.length && value > this.bounds[bucket]!) bucket++
    this.counts[bucket]!++
    this.sum += value
  }

  read(): FrameIntervals {
    let total = 0
    const counts = this.counts.map((n) => (total += n))
    return { bounds: this.bounds, counts, sum: this.sum, count: total }
  }
}

/** One member's health: counters fed by the hub per packet, figures made by tick(). */
export class MemberHealth {
  private lost = 0
  private nextSeq = -1
  /** The next packet opens a frame (the last one ended one). */
  private opening = true
  private lastFrameAt = -1
  private lastKeyAt = -1
  private keyInterval: number | null = null
  private stalls = 0
  /** Frame intervals (s), and the delays its viewers said (s). */
  private readonly intervalBuckets = new Buckets(FRAME_INTERVAL_BUCKETS)
  private readonly delayBuckets = new Buckets(VIEWER_DELAY_BUCKETS)
  /** At the last tick: the counters, when it was, and the last frame's time then; null before the first frame's tick. */
  private mark: { frames: number; bytes: number; at: number; frameAt: number } | null = null
  private fps: number | null = null
  private bitrate: number | null = null
  private lowTicks = 0
  private okTicks = 0
  private alert = false
  /** What its viewers measured (the console's WebRTC views: delay.ts), with when (performance.now()). */
  private viewers: { at: number; delayMs: number | null; loss: number | null }[] = []
  private viewerDelay: number | null = null
  private viewerLoss: number | null = null

  constructor(
    readonly configuredFps: number,
    private readonly encoding: MediaEncoding,
    /** The hub's own counts of this member (bytes, frames), read at each tick. */
    private readonly counts: { bytes: number; frames: number },
    /** A viewer's delay (ms) past which the alert is raised (--delay-alert). */
    private readonly delayAlertMs = Infinity,
  ) {}

  /** A viewer's own figures: its camera-to-screen delay (ms) and the share of packets it lost, either unknown (null). */
  viewer(delayMs: number | null, loss: number | null, at = performance.now()): void {
    this.viewers.push({ at, delayMs, loss })
    if (this.viewers.length > 256) this.viewers.shift() // a bound: many viewers, each saying it once a second
    if (delayMs !== null) this.delayBuckets.add(delayMs / 1000)
  }

  /** The hub's hot path: one packet of this member. */
  packet(packet: Uint8Array): void {
    if (packet.length < 12) return
    const seq = sequenceOf(packet)
    if (this.nextSeq >= 0 && seq !== this.nextSeq) {
      const gap = (seq - this.nextSeq) & 0xffff
      if (gap < MAX_GAP) this.lost += gap
    }
    this.nextSeq = (seq + 1) & 0xffff
    if (this.opening) {
      this.opening = false
      if (startsKeyFrame(packet, this.encoding)) {
        const now = performance.now()
        if (this.lastKeyAt >= 0) this.keyInterval = (now - this.lastKeyAt) / 1000
        this.lastKeyAt = now
      }
    }
    if (endsFrame(packet)) {
      this.opening = true
      const now = performance.now()
      if (this.lastFrameAt >= 0) {
        const gap = (now - this.lastFrameAt) / 1000
        if (gap * 1000 > STALL_MS) this.stalls++
        this.intervalBuckets.add(gap)
      }
      this.lastFrameAt = now
    }
  }

  /**
   * Once a second: the rate delivered since the last tick (frames over the time between the last frames
   * of the two ticks, so a tick's timer jitter does not move it), the bitrate, and the alert. The first
   * tick after the first frame only sets the mark: a stream's first second is its warm-up (an encoder
   * starting up delivers in bursts), not judged. Returns whether the alert was raised or cleared.
   */
  tick(now: number): boolean {
    if (this.lastFrameAt < 0) return false
    const { frames, bytes } = this.counts
    const mark = this.mark
    this.mark = { frames, bytes, at: now, frameAt: this.lastFrameAt }
    if (!mark) return false
    const n = frames - mark.frames
    const span = this.lastFrameAt - mark.frameAt
    this.fps = n > 0 && span > 0 && !this.stalledAt(now) ? (n * 1000) / span : 0
    this.bitrate = now > mark.at ? Math.round(((bytes - mark.bytes) * 8 * 1000) / (now - mark.at)) : 0
    this.viewers = this.viewers.filter((v) => now - v.at <= VIEWER_FIGURES_MS)
    const worst = (values: (number | null)[]) => (values.some((v) => v !== null) ? Math.max(...(values.filter((v) => v !== null) as number[])) : null)
    this.viewerDelay = worst(this.viewers.map((v) => v.delayMs))
    this.viewerLoss = worst(this.viewers.map((v) => v.loss))
    if (alertParts(this.figures()!, this.delayAlertMs).length) {
      this.okTicks = 0
      if (++this.lowTicks >= ALERT_TICKS && !this.alert) return (this.alert = true)
    } else {
      this.lowTicks = 0
      if (++this.okTicks >= ALERT_TICKS && this.alert) return !(this.alert = false)
    }
    return false
  }

  /** The intervals between frames since the first: cumulative counts per bound of FRAME_INTERVAL_BUCKETS (then +Inf), their sum (s) and count. */
  intervals(): FrameIntervals {
    return this.intervalBuckets.read()
  }

  /** The delays its viewers said since the first (seconds, VIEWER_DELAY_BUCKETS), one each time a viewer said one. */
  viewerDelays(): FrameIntervals {
    return this.delayBuckets.read()
  }

  /** The stream ended: a raised alert is cleared with it (returns whether one was). */
  end(): boolean {
    return this.alert && !(this.alert = false)
  }

  private stalledAt(now: number): boolean {
    return this.lastFrameAt >= 0 && now - this.lastFrameAt > STALL_MS
  }

  figures(): HubHealth | null {
    if (this.lastFrameAt < 0) return null
    return {
      fps: this.fps === null ? null : Math.round(this.fps * 10) / 10,
      configured_fps: this.configuredFps,
      bitrate: this.bitrate,
      frames: this.counts.frames,
      lost_packets: this.lost,
      keyframe_interval: this.keyInterval === null ? null : Math.round(this.keyInterval * 1000) / 1000,
      stalls: this.stalls,
      stalled: this.stalledAt(performance.now()),
      viewer_delay_ms: this.viewerDelay === null ? null : Math.round(this.viewerDelay),
      viewer_loss: this.viewerLoss === null ? null : Math.round(this.viewerLoss * 1000) / 1000,
      alert: this.alert,
    }
  }
}

type AlertFigures = Pick<HubHealth, 'fps' | 'configured_fps' | 'viewer_delay_ms' | 'viewer_loss'>

/** What is wrong now, in words: the rate delivered below 90 %, a viewer's delay past `delayAlertMs`, a viewer losing over 5 %. */
function alertParts(h: AlertFigures, delayAlertMs: number): string[] {
  const parts: string[] = []
  if (h.fps !== null && h.fps < LOW_RATE_SHARE * h.configured_fps) parts.push(`video at ${Math.round(h.fps)} fps of ${Math.round(h.configured_fps)}`)
  if (h.viewer_delay_ms !== null && h.viewer_delay_ms > delayAlertMs) parts.push(`video ${h.viewer_delay_ms} ms behind`)
  if (h.viewer_loss !== null && h.viewer_loss > LOSS_ALERT_SHARE) parts.push(`link losing ${Math.round(h.viewer_loss * 100)} %`)
  return parts
}

/**
 * The sentence of a raised alert, as the events, the log and the console say it: what is wrong now (the
 * rate as it is when nothing is, the alert waiting its 2 s to clear).
 */
export function healthSentence(name: string, health: AlertFigures, delayAlertMs = Infinity): string {
  const parts = alertParts(health, delayAlertMs)
  return `${name}: ${parts.length ? parts.join(', ') : `video at ${Math.round(health.fps ?? 0)} fps of ${Math.round(health.configured_fps)}`}`
}

export interface HealthChange {
  /** The hub (a listener checks it is its own service's). */
  hub: unknown
  bus_info: string
  member: number
  health: HubHealth
  /** The stream stopped or restarted with the alert raised: it is cleared with it. */
  ended?: boolean
}

type HealthListener = (change: HealthChange) => void
const listeners = new Set<HealthListener>()

/** Hears every hub's alerts raised and cleared (plugins/cameras turns them into events and log lines). */
export function watchHealth(listener: HealthListener): () => void {
  listeners.add(listener)
  return () => void listeners.delete(listener)
}

/** @internal (hub.ts) */
export function healthChanged(change: HealthChange): void {
  for (const listener of listeners) {
    try {
      listener(change)
    } catch {
      // a listener's fault is its own: the others and the hub go on
    }
  }
}
