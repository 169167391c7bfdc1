// A recording made while streaming: a reader of the job's hub (media/hub.ts) whose RTP is fed over
// loopback (media/feeder.ts) to a supervised gst-launch-1.0 child per segment file, depayloaded and
// muxed into crash-safe Matroska (pipeline.ts buildRecorderPipeline): the camera's encoded frames as
// they are, no second encoder. The camera's child is never touched, so starting or stopping a
// recording costs the stream's viewers nothing.
//
// Segments are cut here, not by splitmuxsink (which holds back the group of pictures it collects, so a
// power cut lost a whole GOP: 1–5 s with a camera's long GOP). Near the segment's time or byte limit the
// next segment's child is started and waits, listening; at the leader's next key frame the feeds move
// to it (every packet before that key frame in the old file, it and all after in the new one; each
// follower at its own next key frame; the sound and the telemetry text with the leader), then the old
// child gets EOS and its file is pushed to the disk. Every frame is in exactly one file.
import { renameSync, statSync, unlinkSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import type { Subprocess } from 'bun'
import type { Logger } from '../../core/log'
import type { DeviceRecording, Reading, StreamHub } from '../../core/types'
import { endChild, pumpLines, spawnChild } from '../../media/children'
import { type Feed, freeLoopbackPorts, LoopbackFeeder, type SoundFeed } from '../../media/feeder'
import { MediaHub } from '../../media/hub'
import { segmentCuts } from '../../media/segment-cuts'
import { ssrcOf, startsKeyFrame, timestampOf } from '../../media/rtp'
import { DISK_FULL, segmentPath, syncProblem, syncToDisk } from './child'
import { diskFullStop } from '../../core/disk'
import { parseChildLine } from './monitor'
import { buildRecorderPipeline, DEFAULT_SEGMENTS, RECORDING_EXT, shellCommand, type SegmentLimits } from './pipeline'
import { type RecordingTelemetry, TelemetryFeed } from './telemetry-feed'

export interface RecorderOptions {
  gstLaunch: string
  /** `setpriv --pdeathsig KILL`, as for the stream's child. */
  prefix: string[]
  stopTimeoutMs: number
  /** How long a segment's child may take to listen before its start counts as failed. */
  startTimeoutMs?: number
  /** Where the recording is cut into segments (default: only before 4 GiB). */
  segments?: SegmentLimits
  log: Logger
}

/** How the camera's RTP and the recorder child meet: the hub, the file, and who to tell when it ends. */
export interface RecorderSpec {
  hub: StreamHub
  /** The recording's base path (child.ts reserveRecordingPath): its files are `<base>_seg001.mkv` … */
  base: string
  /** Called once when the recording has ended, by stop() or by itself (then `error` says why). */
  onEnd(recorder: Recorder): void
  /** Called every second while it records (bytes grow). */
  onProgress(recorder: Recorder): void
  /**
   * The vehicle's telemetry: when an autopilot is on the link as the recording starts, the file gets
   * a text track of it (TelemetryFeed); `streamState` is the camera's stream state, shown with it.
   */
  telemetry?: RecordingTelemetry
}

/**
 * How often the segment being written is pushed to the disk (fsync): a power cut (not a kill, which
 * loses nothing the child wrote) may lose what was written since, so this bounds it under the 1 s.
 */
export const SYNC_INTERVAL_MS = 500

/** How often the recorder looks whether the segment is due (its time or its bytes). */
const SEGMENT_CHECK_MS = 100
/**
 * The next segment's child is started this long before the key frame expected to cut the segment (it
 * listens in ~0.1 s here, 0.5 s loaded): every track is stamped from its RTP timestamps, so how long it
 * listens before its first frame changes nothing in the file. Without a known key-frame interval yet,
 * this long before the segment's time is up.
 */
export const SEGMENT_PREPARE_SECONDS = 1
/**
 * Byte limit: the next child starts once the segment is within this many of its largest groups of
 * pictures of the limit, and the cut is made at the key frame after it is within CUT_GOPS: the group
 * after the cut cannot pass the limit.
 */
const PREPARE_GOPS = 4
const CUT_GOPS = 2
/** A next segment's child that failed to start is tried again after this long (the current segment records on meanwhile). */
const PREPARE_RETRY_MS = 2000
/** After the last feed has moved on, the old child's last packets (already sent over loopback) are read before its EOS. */
const SEGMENT_DRAIN_MS = 150
/** A follower without a key frame this long after the leader's cut is moved anyway (its frames until the next key frame decode grey). */
const FOLLOWER_SWITCH_MS = 10_000

/** One segment file and the gst child writing it. */
class Segment {
  child!: Subprocess
  ports: number[] = []
  textPort?: number
  soundPort?: number
  lastError: string | null = null
  listening = false
  /** The child is being ended (EOS), or was: its exit is expected. */
  ending = false

  /** Written under `writing` until the cut (a listening child has opened its file, still empty); then renamed to `path`. */
  constructor(readonly index: number, readonly path: string, public writing: string) {}

  get exited(): boolean {
    return this.child.exitCode !== null || this.child.signalCode !== null
  }
}

export class Recorder {
  readonly started = new Date()
  error: string | null = null
  private feeder: LoopbackFeeder | null = null
  private feeds: Feed[] = []
  private soundFeed: SoundFeed | null = null
  private text: TelemetryFeed | null = null
  /** The file has the vehicle's telemetry as a text track (an autopilot was on the link when it started). */
  readonly withTelemetry: boolean
  private readonly withSound: boolean
  private readonly limits: SegmentLimits
  private readings: Reading[] = []
  private timer: ReturnType<typeof setInterval> | null = null
  private checker: ReturnType<typeof setInterval> | null = null
  private stopping = false
  private ended = false
  private finalBytes = 0
  /** Every segment so far, in order; the last is being written. */
  private segments: Segment[] = []
  /** The next segment's child, started ahead of the cut. */
  private next: Segment | null = null
  private preparing = false
  /** After a next child failed to start: not before this (performance.now()). */
  private prepareAfter = 0
  /** A cut was asked for and the leader's key frame not yet seen. */
  private cutting = false
  /** Old segments whose children are being ended (their muxers still write, the index at the end), and each one's closing. */
  private closing = new Map<Segment, Promise<void>>()
  /**
   * The segment's length so far, on the camera's clock (the leader's RTP timestamps: a camera slower
   * than its nominal rate makes no shorter files): the RTP timestamp its first key frame had (null: the
   * first one has none yet), and the latest seen.
   */
  private segmentStartTs: number | null = null
  private latestTs = 0
  private latestAt = 0
  private latestSsrc = -1
  /** The largest group of pictures of the leader seen (RTP bytes), and the one growing now. */
  private maxGop = 0
  private gopBytes = 0
  /** The leader's last key frame's RTP timestamp, and the interval to the one before (RTP ticks; 0: unknown). */
  private lastKeyTs: number | null = null
  private gopTicks = 0

  private constructor(private readonly spec: RecorderSpec, private readonly options: RecorderOptions) {
    this.withTelemetry = spec.telemetry?.source.current() != null
    // The sound is recorded when the stream carries one as the recording starts (an Opus track).
    this.withSound = spec.hub.hasSound
    this.limits = options.segments ?? DEFAULT_SEGMENTS
  }

  private get current(): Segment | undefined {
    return this.segments.at(-1)
  }

  /** The segment being written. */
  get path(): string {
    return this.current?.path ?? segmentPath(this.spec.base, 1)
  }

  get active(): boolean {
    return !this.ended
  }

  /** The child writing the current segment. */
  get pid(): number | null {
    return this.current?.child.pid ?? null
  }

  /**
   * Every file this recording still writes: the current segment and any old one still being closed. (The
   * current one may not have its name on disk yet: it is written under a hidden name until its first bytes.)
   */
  get files(): string[] {
    if (this.ended) return []
    return [this.path, ...[...this.closing.keys()].map((s) => s.path)]
  }

  /** Bytes of every segment together. */
  bytes(): number {
    if (this.ended) return this.finalBytes
    return this.segments.length ? this.segments.reduce((sum, s) => sum + sizeOf(s.path), 0) : 0
  }

  state(): DeviceRecording {
    // The recording's name (`<stem>.mkv`, as GET /api/recordings lists it), whichever segment is being written.
    return {
      active: this.active,
      file: `${basename(this.spec.base)}.${RECORDING_EXT}`,
      started: this.started.toISOString(),
      bytes: this.bytes(),
      error: this.error ?? (this.active ? syncProblem(this.path) : null),
      telemetry: this.withTelemetry,
    }
  }

  /** Spawns the first segment's child, waits until it listens, then feeds it each member's packets from its next key frame. */
  static async start(spec: RecorderSpec, options: RecorderOptions): Promise<Recorder> {
    const recorder = new Recorder(spec, options)
    try {
      await recorder.launch()
    } catch (err) {
      await recorder.stop(`the recorder did not start: ${(err as Error).message}`)
      throw err
    }
    return recorder
  }

  /** Starts segment `index`'s child and resolves once it listens (its ports bound). */
  private async spawnSegment(index: number): Promise<Segment> {
    const { hub } = this.spec
    const path = segmentPath(this.spec.base, index)
    // The first file is written under its name; a next one under a hidden name until the cut, so a
    // power cut before it never leaves an empty segment behind.
    const segment = new Segment(index, path, index === 1 ? path : join(dirname(path), `.${basename(path)}.part`))
    const ports = await freeLoopbackPorts(hub.members + (this.withTelemetry ? 1 : 0) + (this.withSound ? 1 : 0))
    segment.soundPort = this.withSound ? ports.pop() : undefined
    segment.textPort = this.withTelemetry ? ports.pop() : undefined
    segment.ports = ports
    const tokens = buildRecorderPipeline(hub.encoding, ports, segment.writing, { textPort: segment.textPort, soundPort: segment.soundPort })
    this.options.log.info('starting recorder', { file: path, command: shellCommand(tokens) })
    const child = (segment.child = spawnChild([this.options.gstLaunch, '-e', '-m', ...tokens], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' }, this.options.prefix))
    const onLine = (line: string) => {
      // udpsrc binds going to READY; PLAYING comes after, so then every port listens.
      if (line.startsWith('Setting pipeline to PLAYING')) segment.listening = true
      const event = parseChildLine(line)
      if (event?.kind === 'error') segment.lastError ??= event.text
      if (DISK_FULL.test(line)) segment.lastError = line.trim()
    }
    void pumpLines(child.stdout as ReadableStream<Uint8Array>, onLine)
    void pumpLines(child.stderr as ReadableStream<Uint8Array>, onLine)
    void child.exited.then(() => this.exited(segment))

    const deadline = Date.now() + (this.options.startTimeoutMs ?? 10_000)
    while (!segment.listening) {
      if (segment.exited) throw new Error(segment.lastError ?? `gst-launch-1.0 exited (${child.signalCode ?? child.exitCode})`)
      if (Date.now() > deadline) {
        segment.ending = true
        child.kill('SIGKILL')
        throw new Error('it did not listen for the stream in time')
      }
      await Bun.sleep(20)
    }
    return segment
  }

  /**
   * The feeds are made before the first child starts and hold what they take until it listens (feeder.ts
   * Feed.open): the file begins at the first key frame after the press (or with the pre-record seconds),
   * however long the child takes to start; it took over a second on a loaded machine, a whole GOP lost.
   */
  private async launch(): Promise<void> {
    const { hub } = this.spec
    const feeder = (this.feeder = new LoopbackFeeder(this.options.log))
    // The first segment's clock, its sound and its text start with its first frame: the pre-record
    // buffer's oldest, sent at once (feeder.ts), or the next key frame.
    const firstFrame = Promise.withResolvers<number>()
    for (let member = 0; member < hub.members; member++) {
      // A file that starts mid-GOP opens on grey smears: begin at the member's next key frame.
      // The stream's end or restart stops the recorder from the streamer's side (the file is closed there).
      // With a pre-record buffer (--pre-record-seconds), the file begins with the seconds before the start.
      const began = member === 0 ? (ts: number) => firstFrame.resolve(ts) : undefined
      this.feeds.push(feeder.feed(hub, member, null, { name: 'recorder', from: 'key', preRecorded: true, continuous: true, began }))
    }
    this.readings.push(...this.feeds)
    if (this.withSound && hub.members === 0) {
      // A sound-only stream (plugins/audio/sound-only.ts): no video to wait for, and no key frame to cut
      // at (its file is one segment).
      this.readings.push((this.soundFeed = feeder.feedSound(hub, null, { name: 'recorder', continuous: true })))
    } else if (this.withSound) {
      // The sound starts with the video's first frame, each packet at its own time (the pre-record
      // buffer keeps the sound of its seconds; otherwise it begins then), so the tracks start together.
      void firstFrame.promise.then((ts) => {
        if (this.stopping || this.ended) return
        this.readings.push((this.soundFeed = feeder.feedSound(hub, null, { name: 'recorder', continuous: true, behindVideo: true, soundSince: this.madeAt(ts) })))
        if (this.current?.listening && this.current.soundPort) this.soundFeed.open(this.current.soundPort)
      })
    }
    if (hub.members > 0)
      void firstFrame.promise.then((ts) => {
        this.segmentStartTs ??= ts
      })

    const first = await this.spawnSegment(1)
    this.segments.push(first)
    if (this.stopping) return
    first.ports.forEach((port, member) => this.feeds[member]?.open(port))
    if (first.soundPort) this.soundFeed?.open(first.soundPort)
    if (first.textPort !== undefined) {
      // The text starts with the file's first frame, on its clock (telemetry-feed.ts toRtp: the cues since then go at once).
      const text = (this.text = new TelemetryFeed(this.spec.telemetry!, this.options.log))
      void firstFrame.promise.then((ts) => {
        if (!this.stopping && !this.ended) text.toRtp(first.textPort!, ts, this.arrivalOf(ts))
      })
    }
    // The leader's groups of pictures, measured: how near a byte limit the next one may take the segment.
    if (hub.members > 0)
      this.readings.push(
      hub.read(0, {
        name: 'recorder-segments',
        from: 'now',
        packet: (packet) => {
          const ts = timestampOf(packet)
          const at = performance.now()
          if (ssrcOf(packet) !== this.latestSsrc && this.segmentStartTs !== null && this.latestSsrc >= 0) {
            // The camera's child restarted (a new RTP timeline): the segment's clock goes on from where it
            // was, past the time the camera was away (as the file's does: rtp.ts RtpContinuity).
            const away = Math.round((at - this.latestAt) * 90)
            this.segmentStartTs = (ts - Math.max(0, (this.latestTs - this.segmentStartTs) | 0) - away) >>> 0
          }
          this.latestSsrc = ssrcOf(packet)
          this.latestTs = ts
          this.latestAt = at
          if (startsKeyFrame(packet, hub.encoding)) {
            this.gopBytes = 0
            if (this.lastKeyTs !== null) {
              const gop = (ts - this.lastKeyTs) | 0
              if (gop > 0) this.gopTicks = gop
            }
            this.lastKeyTs = ts
          }
          this.gopBytes += packet.length
          this.maxGop = Math.max(this.maxGop, this.gopBytes)
        },
      }),
    )
    this.checker = setInterval(() => this.checkSegment(), SEGMENT_CHECK_MS)
    let ticks = 0
    this.timer = setInterval(() => {
      const current = this.current
      if (current) syncToDisk(current.path, this.options.log)
      if (++ticks % (1000 / SYNC_INTERVAL_MS) === 0) this.spec.onProgress(this)
    }, SYNC_INTERVAL_MS)
  }

  /** When the leader's frame stamped `ts` was made (performance.now()): a file's sound starts with its first frame's picture. */
  private madeAt(ts: number): number {
    const { hub } = this.spec
    return (hub instanceof MediaHub ? hub.madeAt(0, ts) : null) ?? this.arrivalOf(ts)
  }

  /** When the leader's frame stamped `ts` came (performance.now()): a file's text starts at its first frame's moment. */
  private arrivalOf(ts: number): number {
    const { hub } = this.spec
    return hub instanceof MediaHub ? hub.arrivalOf(ts) : performance.now()
  }

  /** Starts the next segment's child when the segment's end is near, and cuts once it is due and the child listens. */
  private checkSegment(): void {
    const current = this.current
    if (this.stopping || this.ended || this.cutting || !current || this.segmentStartTs === null) return
    const { seconds, bytes } = this.limits
    // Signed: the relay's thread may name the cut's key frame before this thread has seen it.
    const elapsed = Math.max(0, (this.latestTs - this.segmentStartTs) | 0) / 90_000
    const size = sizeOf(current.path)
    const near = (seconds > 0 && this.secondsToCut(seconds) <= SEGMENT_PREPARE_SECONDS) || size + PREPARE_GOPS * this.maxGop >= bytes
    const due = (seconds > 0 && this.cutIsNext(seconds, elapsed)) || size + CUT_GOPS * this.maxGop >= bytes
    if (near && !this.next && !this.preparing && performance.now() >= this.prepareAfter) void this.prepare(current.index + 1)
    if (due && this.next) this.cut(this.next)
  }

  /**
   * Whether the next key frame is the one to cut at (the first at or after `seconds`): the feeds move at
   * the next key frame after they are told. Told only well past the key frame before it (half a GOP, at
   * most 0.25 s), so a feed still sending the earlier one cannot move there.
   */
  private cutIsNext(seconds: number, elapsed: number): boolean {
    if (!this.gopTicks || this.lastKeyTs === null) return elapsed >= seconds
    const limit = (this.segmentStartTs! + seconds * 90_000) >>> 0
    const past = (this.latestTs - this.lastKeyTs) | 0
    return ((this.lastKeyTs + this.gopTicks - limit) | 0) >= 0 && past >= Math.min(this.gopTicks / 2, 22_500)
  }

  /** Seconds (camera clock) until the key frame expected to cut the segment: the first at or after `seconds` into it. */
  private secondsToCut(seconds: number): number {
    const start = this.segmentStartTs!
    const limit = (start + seconds * 90_000) >>> 0
    if (!this.gopTicks || this.lastKeyTs === null) return seconds - Math.max(0, (this.latestTs - start) | 0) / 90_000
    // The key frames go on every gopTicks from the last one seen.
    const behind = (limit - this.lastKeyTs) | 0
    const next = behind <= 0 ? this.lastKeyTs + this.gopTicks : this.lastKeyTs + Math.ceil(behind / this.gopTicks) * this.gopTicks
    return ((next - this.latestTs) | 0) / 90_000
  }

  private async prepare(index: number): Promise<void> {
    this.preparing = true
    const began = performance.now()
    try {
      const segment = await this.spawnSegment(index)
      if (this.stopping || this.ended) return void this.discard(segment)
      segmentCuts.lastStartMs = Math.round(performance.now() - began)
      this.next = segment
    } catch (err) {
      // The current segment records on; another try in a while.
      this.prepareAfter = performance.now() + PREPARE_RETRY_MS
      this.options.log.warn('the next segment of a recording did not start; the current one goes on', { file: segmentPath(this.spec.base, index), error: (err as Error).message })
    } finally {
      this.preparing = false
    }
  }

  /** Moves the leader's feed to `next` at its next key frame; the rest follow when it has moved. */
  private cut(next: Segment): void {
    this.cutting = true
    const [leader, ...followers] = this.feeds
    this.soundFeed?.cutAsked()
    leader!.retarget(next.ports[0]!, (keyTs) => {
      const at = performance.now()
      if (this.stopping || this.ended || this.next !== next) return void this.soundFeed?.cutDropped()
      const old = this.current!
      this.next = null
      this.cutting = false
      this.nameWhenWritten(next)
      this.segments.push(next)
      this.segmentStartTs = keyTs
      segmentCuts.total++
      if (next.soundPort) this.soundFeed?.cutAt(next.soundPort, keyTs)
      else this.soundFeed?.cutDropped()
      if (next.textPort !== undefined) this.text?.toRtp(next.textPort, keyTs, this.arrivalOf(keyTs))
      let waiting = followers.length
      const moved = Promise.withResolvers<void>()
      if (!waiting) moved.resolve()
      followers.forEach((feed, i) => feed.retarget(next.ports[i + 1]!, () => --waiting === 0 && moved.resolve()))
      const closed = this.closeSegment(old, moved.promise, at)
      this.closing.set(old, closed)
      void closed.finally(() => this.closing.delete(old))
    })
  }

  /**
   * The new segment takes its name once its first bytes are in it (within milliseconds of the cut), so
   * a power cut never leaves an empty `.mkv` behind (ffmpeg would call it broken).
   */
  private nameWhenWritten(segment: Segment, deadline = performance.now() + 5000): void {
    if (segment.writing === segment.path) return
    if (sizeOf(segment.writing) === 0 && performance.now() < deadline && !this.stopping) return void setTimeout(() => this.nameWhenWritten(segment, deadline), 5)
    try {
      renameSync(segment.writing, segment.path)
      segment.writing = segment.path
    } catch (err) {
      this.options.log.warn('a segment could not be given its name', { file: segment.path, error: (err as Error).message })
    }
  }

  /** Once every feed has left it: EOS to the old segment's child (its muxer writes the index), then to the disk. */
  private async closeSegment(old: Segment, moved: Promise<void>, cutAt: number): Promise<void> {
    let late: ReturnType<typeof setTimeout> | undefined
    const lateMove = new Promise<void>((resolve) => {
      late = setTimeout(() => {
        // No key frame yet: moved anyway, the new file's follower track opens on grey until its next one.
        this.options.log.warn('a follower had no key frame within 10 s of the segment cut; its feed moves now')
        for (const [i, feed] of this.feeds.entries()) if (i > 0 && this.current) feed.retarget(this.current.ports[i]!)
        resolve()
      }, FOLLOWER_SWITCH_MS)
    })
    await Promise.race([moved, lateMove])
    clearTimeout(late)
    await Bun.sleep(SEGMENT_DRAIN_MS)
    old.ending = true
    await endChild(old.child, 'SIGINT', this.options.stopTimeoutMs)
    syncToDisk(old.path, this.options.log)
    segmentCuts.lastCloseMs = Math.round(performance.now() - cutAt)
    this.options.log.info('recording segment closed', { file: old.path, next: this.current?.path })
  }

  /** A child ended: the current segment's by itself ends the recording; a prepared one is just dropped. */
  private exited(segment: Segment): void {
    if (segment.ending || this.stopping) return
    if (segment === this.next) {
      this.next = null
      if (this.cutting) {
        // The leader was about to move to it: it stays (a retarget to the current child replaces the pending one).
        this.feeds[0]?.retarget(this.current!.ports[0]!)
        this.soundFeed?.cutDropped()
        this.cutting = false
      }
      this.prepareAfter = performance.now() + PREPARE_RETRY_MS
      this.options.log.warn('the next segment of a recording stopped before its cut; another is started', { error: segment.lastError })
      return void this.discard(segment)
    }
    if (segment === this.current) void this.stop(this.endReason(segment))
  }

  /** Ends a child that never got its cut, and removes its (empty) hidden file. */
  private discard(segment: Segment): Promise<void> {
    segment.ending = true
    return endChild(segment.child, 'SIGINT', this.options.stopTimeoutMs).then(() => {
      if (segment.writing !== segment.path) removeFile(segment.writing)
    })
  }

  private endReason(segment: Segment): string {
    const code = segment.child.signalCode ?? `code ${segment.child.exitCode}`
    if (segment.lastError && DISK_FULL.test(segment.lastError)) return diskFullStop(basename(segment.path))
    return `the recorder stopped by itself (${segment.lastError ?? `gst-launch-1.0 exited, ${code}`}); ${basename(segment.path)} is kept`
  }

  /**
   * EOS to the children (the muxer closes the file), then SIGKILL after the stop timeout. The stream runs on.
   * `error`: why, when it is a failure rather than a request.
   */
  async stop(error: string | null = null): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    this.detach()
    const next = this.next
    this.next = null
    const current = this.current
    if (current) current.ending = true
    await Promise.all([...(current ? [endChild(current.child, 'SIGINT', this.options.stopTimeoutMs)] : []), ...(next ? [this.discard(next)] : []), ...this.closing.values()])
    // Stopped just after a cut: the new segment named now, or removed if nothing reached it.
    if (current && current.writing !== current.path) {
      if (sizeOf(current.writing) > 0) this.nameWhenWritten(current)
      else removeFile(current.writing)
    }
    await this.finish(error)
  }

  private detach(): void {
    for (const reading of this.readings.splice(0)) reading.close()
    this.feeds = []
    this.soundFeed = null
    for (const timer of [this.timer, this.checker]) if (timer) clearInterval(timer)
    this.timer = this.checker = null
    this.feeder?.close()
    this.feeder = null
    this.text?.close()
    this.text = null
  }

  private async finish(error: string | null): Promise<void> {
    if (this.ended) return
    this.detach()
    this.finalBytes = this.bytes()
    this.ended = true
    this.error = error
    if (error) this.options.log.warn('recording ended', { file: this.path, error })
    syncToDisk(this.path)
    // Stopped before the first key frame: an empty file is no recording.
    if (sizeOf(this.path) === 0) removeFile(this.path)
    this.spec.onEnd(this)
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0 // not created yet
  }
}

function removeFile(path: string): void {
  try {
    unlinkSync(path)
  } catch {}
}
