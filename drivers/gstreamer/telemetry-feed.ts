// The vehicle's telemetry into a recording child's text pad: one cue at a time to its loopback port.
// Two ways, one per kind of recording:
// - a RECORDING stream's own child (runner.ts) films and muxes in one pipeline: a cue is a plain UTF-8
//   datagram, stamped on arrival with the clock its frames are stamped with (pipeline.ts telemetryTextTokens);
// - the recorder of a running stream (recorder.ts) gets the camera's frames as RTP and stamps them from
//   their RTP timestamps, so a cue is RTP too, on the file's video clock (pipeline.ts TELEMETRY_RTP_CAPS):
//   its first cue carries the timestamp of the file's first frame, the next ones that plus the time since.
//   Stamped on arrival, the text was late by as long as a segment's child listened before its cut, and
//   early by the pre-record buffer's seconds (which reach the child in one burst).
import { createSocket, type Socket } from 'node:dgram'
import type { Logger } from '../../core/log'
import { formatTelemetryText, type TelemetrySource } from '../../core/telemetry'
import { rtpPacket } from '../../media/rtp'
import { TELEMETRY_PT, TEXT_CUE_MS } from './pipeline'

/** What a recording with telemetry reads: the vehicle's state, and the camera's stream state shown with it. */
export interface RecordingTelemetry {
  source: TelemetrySource
  streamState(): string
}

/**
 * How often the text track gets a cue while nothing changes, and how long each cue lasts in the file
 * (pipeline.ts cueDurationTokens): cues on this beat end where the next begins. matroskamux writes a
 * frame only once every pad, the text pad too, has a later buffer queued: this bounds how long video
 * waits before it reaches the disk (plus the 250 ms clusters: well within the second a kill -9 may lose).
 */
export const TEXT_INTERVAL_MS = TEXT_CUE_MS
/**
 * A beat's cue late by less than this (a busy event loop) is still stamped on the beat, and the beats
 * missed meanwhile follow at once: the cues go on ending where the next begins. Later than this, the
 * beat starts again from now (the file shows a gap rather than a burst of stale cues).
 */
const LATE_MS = 2000

/** The RTP clock of the cues: the video's (90 kHz). */
const CLOCK_PER_MS = 90

/** Where cues go: a port, and for RTP the file's video clock (a timestamp and when, performance.now(), it was). */
interface Target {
  port: number
  clock: { ts: number; at: number } | null
}

/**
 * Sends the telemetry line every TEXT_INTERVAL_MS, and at once when the armed state or the mode changes;
 * a change starts the beat again from its cue. Each cue lasts TEXT_INTERVAL_MS in the file, so on the
 * beat one ends where the next begins; only the cue before a change overlaps it (for less than a beat).
 */
export class TelemetryFeed {
  private socket: Socket | null = createSocket('udp4')
  private timer: ReturnType<typeof setTimeout> | null = null
  /** When (performance.now()) the last cue was stamped: the beat goes on from there. */
  private beatAt = 0
  private unsubscribe: () => void
  private target: Target | null = null
  private readonly ssrc = (Math.random() * 0x1_0000_0000) >>> 0
  private seq = (Math.random() * 0x10000) & 0xffff
  /** Sends not yet out, and whether the feed was closed meanwhile (the socket then closes after them). */
  private sending = 0
  private closed = false

  constructor(private readonly telemetry: RecordingTelemetry, log: Logger) {
    let warned = false
    // Loopback to a child of ours: refused while it starts or after it ended, logged once.
    this.socket!.on('error', (err) => {
      if (!warned) log.debug('telemetry feed: a send failed (the recording child is not listening)', { error: err.message })
      warned = true
    })
    this.unsubscribe = telemetry.source.onChange((change) => {
      if (change !== 'values' && this.target) this.beat(performance.now())
    })
  }

  /** Plain datagrams to `port` from now on, stamped by the child as they arrive. */
  toPlain(port: number): void {
    this.begin({ port, clock: null })
  }

  /**
   * RTP to `port` from now on, on a file's video clock: `firstTs` is the RTP timestamp of the file's first
   * frame, which came at `firstAt` (performance.now(); seconds ago for the pre-record buffer's oldest).
   * The cues since then go at once, each with the telemetry of its time. A next segment calls this again
   * with its own first frame.
   */
  toRtp(port: number, firstTs: number, firstAt: number): void {
    const now = performance.now()
    const from = Math.min(firstAt, now)
    this.target = { port, clock: { ts: firstTs, at: from } }
    // As if live: a cue every TEXT_INTERVAL_MS, and one at each change of the armed state or the mode.
    // The first at the first frame's moment, whenever that was: the child stamps the file's first cue
    // as its first frame, and the others from there by their timestamps.
    // Each change starts the beat again, as it does live.
    const toDate = Date.now() - now
    const changes = this.telemetry.source.changesSince(from + toDate).map((date) => date - toDate).sort((a, b) => a - b)
    let at = from
    this.sendAt(at, at + toDate)
    for (;;) {
      const change = changes.find((c) => c > at)
      const next = change !== undefined && change < at + TEXT_INTERVAL_MS ? change : at + TEXT_INTERVAL_MS
      if (next > now) break
      this.sendAt(next, next + toDate)
      at = next
    }
    this.beatAt = at
    this.schedule()
  }

  private begin(target: Target): void {
    this.target = target
    this.beat(performance.now()) // a muxer waits for a buffer on every pad: the first cue at once
  }

  /** A cue stamped `at`, and the beat on from there. */
  private beat(at: number): void {
    this.sendAt(at)
    this.beatAt = at
    this.schedule()
  }

  /** The next cue on the beat: an RTP one stamped on it (a timer fires late), unless it is LATE_MS behind. */
  private schedule(): void {
    if (this.timer) clearTimeout(this.timer)
    const due = this.beatAt + TEXT_INTERVAL_MS
    this.timer = setTimeout(() => {
      const now = performance.now()
      // Plain cues are stamped as they arrive: a burst of missed ones would only pile up at one moment.
      this.beat(this.target?.clock && now - due <= LATE_MS ? due : now)
    }, Math.max(0, due - performance.now()))
  }

  /**
   * The cue for the moment `at` (performance.now()), which was `date` (Date.now()): its telemetry then,
   * sent now. Without them, now.
   */
  private sendAt(at = performance.now(), date?: number): void {
    const target = this.target
    if (!target || !this.socket) return
    const { source } = this.telemetry
    const vehicle = date === undefined ? source.current() : source.at(date)
    date ??= Date.now()
    const text = Buffer.from(formatTelemetryText({ vehicle, stream: this.telemetry.streamState(), utc: new Date(date) }), 'utf8')
    if (!target.clock) return this.send(text, target.port)
    // RTP (marker: each cue is a whole buffer) and rtpgstpay's 8-byte header, all zero: no inline caps
    // (the child's caps carry them), not a fragment.
    const payload = new Uint8Array(8 + text.length)
    payload.set(text, 8)
    this.seq = (this.seq + 1) & 0xffff
    const ts = target.clock.ts + Math.round((at - target.clock.at) * CLOCK_PER_MS)
    this.send(rtpPacket(TELEMETRY_PT, this.seq, ts, this.ssrc, payload, true), target.port)
  }

  /** Sends are queued until the socket is bound, and closing it drops what is queued: it closes once they are out. */
  private send(packet: Uint8Array, port: number): void {
    const socket = this.socket!
    this.sending++
    socket.send(packet, port, '127.0.0.1', () => {
      if (--this.sending === 0 && this.closed) socket.close()
    })
  }

  /**
   * Ends the feed. The video fed until now is in the file: on a file's clock, the beats due by now whose
   * timers have not fired yet (a busy event loop) go first, or the file's last frames would show no cue.
   */
  close(): void {
    if (this.target?.clock) {
      const now = performance.now()
      const toDate = Date.now() - now
      for (let due = this.beatAt + TEXT_INTERVAL_MS; due <= now && now - due <= LATE_MS; due += TEXT_INTERVAL_MS) {
        this.sendAt(due, due + toDate)
        this.beatAt = due
      }
    }
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.unsubscribe()
    this.closed = true
    try {
      if (this.sending === 0) this.socket?.close()
    } catch {}
    this.socket = null
  }
}
