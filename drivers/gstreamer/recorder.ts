// A recording made while streaming: one supervised gst-launch-1.0 child per recording, a reader of the
// job's hub (media/hub.ts). Its RTP is fed over loopback to the child's udpsrc (one per member,
// media/feeder.ts),
// depayloaded and muxed into the same crash-safe, segmented Matroska file end as a RECORDING stream (pipeline.ts):
// the camera's encoded frames as they are, no second encoder. The camera's child is never touched, so
// starting or stopping a recording costs the stream's viewers nothing.
import { statSync, unlinkSync } from 'node:fs'
import { basename } from 'node:path'
import type { Subprocess } from 'bun'
import type { Logger } from '../../core/log'
import type { DeviceRecording, Reading, StreamHub } from '../../core/types'
import { endChild, pumpLines, spawnChild } from '../../media/children'
import { freeLoopbackPorts, LoopbackFeeder } from '../../media/feeder'
import { DISK_FULL, segmentPath, syncProblem, syncToDisk } from './child'
import { parseChildLine } from './monitor'
import { buildRecorderPipeline, RECORDING_EXT, shellCommand, type SegmentLimits } from './pipeline'
import { type RecordingTelemetry, TelemetryFeed } from './telemetry-feed'

export interface RecorderOptions {
  gstLaunch: string
  /** `setpriv --pdeathsig KILL`, as for the stream's child. */
  prefix: string[]
  stopTimeoutMs: number
  /** How long the child may take to listen before the start counts as failed. */
  startTimeoutMs?: number
  /** Where the file is cut into segments (default: only before 4 GiB). */
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

export class Recorder {
  readonly started = new Date()
  error: string | null = null
  private child: Subprocess | null = null
  private feeder: LoopbackFeeder | null = null
  private text: TelemetryFeed | null = null
  /** The file has the vehicle's telemetry as a text track (an autopilot was on the link when it started). */
  readonly withTelemetry: boolean
  private readings: Reading[] = []
  private timer: ReturnType<typeof setInterval> | null = null
  private stopping = false
  private ended = false
  private lastError: string | null = null
  private finalBytes = 0
  /** The segments opened so far, in order (the child says so on its bus); the last one is being written. */
  private segments: string[] = []

  private constructor(private readonly spec: RecorderSpec, private readonly options: RecorderOptions) {
    this.withTelemetry = spec.telemetry?.source.current() != null
  }

  /** The segment being written. */
  get path(): string {
    return this.segments.at(-1) ?? segmentPath(this.spec.base, 1)
  }

  get active(): boolean {
    return !this.ended
  }

  get pid(): number | null {
    return this.child?.pid ?? null
  }

  /** Bytes of every segment together. */
  bytes(): number {
    if (this.ended) return this.finalBytes
    // The muxer finishes a segment (its index) after the next one opens: each is read again.
    return this.segments.length ? this.segments.reduce((sum, p) => sum + sizeOf(p), 0) : sizeOf(this.path)
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

  /** Spawns the child, waits until it listens, then feeds it each member's packets from its next key frame. */
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

  private async launch(): Promise<void> {
    const { hub } = this.spec
    // The sound is recorded when the stream carries one as the recording starts (an Opus track); the
    // telemetry when an autopilot is heard (a subtitle track). Each takes one more loopback port.
    const sound = hub.hasSound
    const ports = await freeLoopbackPorts(hub.members + (this.withTelemetry ? 1 : 0) + (sound ? 1 : 0))
    const soundPort = sound ? ports.pop() : undefined
    const textPort = this.withTelemetry ? ports.pop() : undefined
    const tokens = buildRecorderPipeline(hub.encoding, ports, this.spec.base, { segments: this.options.segments, textPort, soundPort })
    this.options.log.info('starting recorder', { file: this.path, command: shellCommand(tokens) })
    const child = (this.child = spawnChild([this.options.gstLaunch, '-e', '-m', ...tokens], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' }, this.options.prefix))
    let listening = false
    const onLine = (line: string) => {
      // udpsrc binds going to READY; PLAYING comes after, so then every port listens.
      if (line.startsWith('Setting pipeline to PLAYING')) listening = true
      const event = parseChildLine(line)
      if (event?.kind === 'error') this.lastError ??= event.text
      if (event?.kind === 'segment') this.nextSegment(event.path)
      if (DISK_FULL.test(line)) this.lastError = line.trim()
    }
    void pumpLines(child.stdout as ReadableStream<Uint8Array>, onLine)
    void pumpLines(child.stderr as ReadableStream<Uint8Array>, onLine)
    void child.exited.then(() => {
      if (!this.stopping) void this.finish(this.endReason())
    })

    const deadline = Date.now() + (this.options.startTimeoutMs ?? 10_000)
    while (!listening) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(this.lastError ?? `gst-launch-1.0 exited (${child.signalCode ?? child.exitCode})`)
      if (Date.now() > deadline) throw new Error('it did not listen for the stream in time')
      await Bun.sleep(20)
    }

    // The text pad's first cue before the first frame: the muxer waits for a buffer on every pad.
    if (textPort !== undefined) this.text = new TelemetryFeed(textPort, this.spec.telemetry!, this.options.log)
    const feeder = (this.feeder = new LoopbackFeeder(this.options.log))
    for (let member = 0; member < hub.members; member++) {
      // A file that starts mid-GOP opens on grey smears: begin at the member's next key frame.
      // The stream's end or restart stops the recorder from the streamer's side (the file is closed there).
      // With a pre-record buffer (--pre-record-seconds), the file begins with the seconds before the start.
      this.readings.push(feeder.feed(hub, member, ports[member]!, { name: 'recorder', from: 'key', preRecorded: true, continuous: true }))
    }
    if (soundPort && hub.members === 0) {
      // A sound-only stream (plugins/audio/sound-only.ts): no video to wait for.
      this.readings.push(feeder.feedSound(hub, soundPort, { name: 'recorder', continuous: true }))
    } else if (soundPort) {
      // The sound starts with the video's first key frame, so both tracks start together in the file.
      const watch = hub.read(0, {
        name: 'recorder-start',
        from: 'key',
        packet: () => {
          watch.close()
          if (!this.stopping && !this.ended) this.readings.push(feeder.feedSound(hub, soundPort, { name: 'recorder', continuous: true }))
        },
      })
      this.readings.push(watch)
    }
    this.timer = setInterval(() => {
      // The one before too: the muxer finishes it (its index) just after the next one opens.
      for (const path of this.segments.length ? this.segments.slice(-2) : [this.path]) syncToDisk(path, this.options.log)
      this.spec.onProgress(this)
    }, 1000)
  }

  private endReason(): string {
    const code = this.child?.signalCode ?? `code ${this.child?.exitCode}`
    if (this.lastError && DISK_FULL.test(this.lastError)) return `disk full: recording stopped, ${basename(this.path)} kept`
    return `the recorder stopped by itself (${this.lastError ?? `gst-launch-1.0 exited, ${code}`}); ${basename(this.path)} is kept`
  }

  /**
   * EOS to the child (the muxer closes the file), then SIGKILL after the stop timeout. The stream runs on.
   * `error`: why, when it is a failure rather than a request.
   */
  async stop(error: string | null = null): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    this.detach()
    if (this.child) await endChild(this.child, 'SIGINT', this.options.stopTimeoutMs)
    await this.finish(error)
  }

  private detach(): void {
    for (const reading of this.readings.splice(0)) reading.close()
    if (this.timer) clearInterval(this.timer)
    this.timer = null
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
    if (sizeOf(this.path) === 0) {
      try {
        unlinkSync(this.path)
      } catch {}
    }
    this.spec.onEnd(this)
  }

  /** The child opened its next segment: the one before is complete, push it to the disk once more. */
  private nextSegment(path: string): void {
    const previous = this.segments.at(-1)
    if (previous === path) return
    if (previous) syncToDisk(previous, this.options.log)
    this.segments.push(path)
  }
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size
  } catch {
    return 0 // not created yet
  }
}
