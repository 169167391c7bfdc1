// The supervisor of one stream job: one gst-launch-1.0 child for the job (the whole group), restarted
// with backoff 1, 2, 4 … 60 s after an error, an unexpected exit or a stall (no buffer at any member's
// monitor for 5 s), the backoff forgotten after a stable minute. A vanished V4L2 device parks the job
// until its node returns, instead of a restart storm. A full disk ends a recording for good.
import { existsSync } from 'node:fs'
import type { Subprocess } from 'bun'
import type { Logger } from '../../core/log'
import type { Reading, StreamHub, StreamJob, StreamState, StreamStatus } from '../../core/types'
import { gapFrames, lostFrames, outOfStep, parseChildLine } from './monitor'
import { buildPipeline, shellCommand, type SegmentLimits } from './pipeline'
import { TelemetryFeed } from './telemetry-feed'
import type { TelemetrySource } from '../../core/telemetry'
import { children, endChild, pumpLines, spawnChild } from '../../media/children'
import { withElements } from './elements'
import { LoopbackFeeder } from '../../media/feeder'
import { BUSY, describeHolders, holdersOf } from './holders'
import { DISK_FULL, reserveRecordingPath, segmentPath, syncProblem, syncToDisk } from './child'
import { diskFullStop } from '../../core/disk'
import { LateTicks } from '../../core/late-ticks'

export interface RunnerOptions {
  gstLaunch: string
  /** Prepended to the child's command line; the streamer puts `setpriv --pdeathsig KILL` here. */
  prefix: string[]
  stallMs: number
  stableMs: number
  maxBackoffMs: number
  stopTimeoutMs: number
  bitrateKbps?: number
  /** Where a RECORDING stream's file is cut into segments (pipeline.ts). */
  segments?: SegmentLimits
}

export interface RunnerHooks {
  log: Logger
  /** State changes and failures, as the 'stream_error' event's data. */
  onState(status: StreamStatus): void
  onDrops(drops: number): void
}

export class StreamRunner {
  private state: StreamState = 'stopped'
  private error: string | null = null
  private restarts = 0
  private failures = 0
  private wanted = false
  private child: Subprocess | null = null
  private generation = 0
  /** The recording's base path (child.ts reserveRecordingPath), and the segment being written (from the child's bus). */
  private recording: string | null = null
  private segment: string | null = null
  /** Per member, when its progressreport last posted (ms); 0 = not yet. */
  private aliveAt: number[] = []
  private spawnedAt = 0
  private runningSince = 0
  private lost = 0
  private unpaired = 0
  /** The first error of this run: the cause; later ones ("pipeline doesn't want to preroll") are its echoes. */
  private lastError: string | null = null
  private stderrTail: string[] = []
  private timer: ReturnType<typeof setTimeout> | null = null
  private watchdog: ReturnType<typeof setInterval> | null = null
  /** The watchdog's ticks, once a second: one 2 s after the last came late. */
  private readonly ticks = new LateTicks(2000)
  private dropsReported = -1
  private readonly frameNs: number
  /** The running RECORDING child's telemetry text (when an autopilot was heard as it started). */
  private textFeed: TelemetryFeed | null = null
  /** The running RECORDING child's sound: the hub's, fed to its sound pad (with silence when there is none). */
  private soundFeed: { feeder: LoopbackFeeder; reading: Reading } | null = null

  /**
   * `tapPorts`: per member, the loopback port of the job's hub (media/hub.ts), which outlives child restarts.
   * `telemetry`: for a RECORDING job, the vehicle's telemetry and the port of its file's text pad: each
   * file started while an autopilot is heard gets the text track (telemetry-feed.ts).
   * `sound`: for a RECORDING job whose stream carries sound (plugins/audio), its hub and the port of its
   * file's sound pad: the files get the Opus track.
   */
  constructor(
    readonly job: StreamJob,
    private readonly options: RunnerOptions,
    private readonly hooks: RunnerHooks,
    private readonly tapPorts?: number[],
    private readonly telemetry?: { source: TelemetrySource; port: number },
    private readonly sound?: { hub: StreamHub; port: number },
  ) {
    this.frameNs = (1e9 * job.stream.interval.numerator) / job.stream.interval.denominator
  }

  status(): StreamStatus {
    const file = this.activeRecording
    return { state: this.state, error: this.error ?? (file ? syncProblem(file) : null), restarts: this.restarts }
  }

  get drops(): number {
    return this.lost + this.unpaired
  }

  /** The file (segment) the child is writing, while it runs. */
  get activeRecording(): string | null {
    return this.child && this.recording ? this.segment ?? segmentPath(this.recording, 1) : null
  }

  get pid(): number | null {
    return this.child?.pid ?? null
  }

  start(): void {
    this.wanted = true
    this.hooks.onDrops(0)
    this.dropsReported = 0
    this.launch()
    this.watchdog = setInterval(() => this.tick(), 1000)
  }

  async stop(): Promise<void> {
    this.wanted = false
    this.clearTimers()
    await this.endChild(this.options.stopTimeoutMs)
    this.setState('stopped', null)
  }

  private clearTimers(): void {
    if (this.timer) clearTimeout(this.timer)
    if (this.watchdog) clearInterval(this.watchdog)
    this.timer = this.watchdog = null
  }

  private missingDevice(): string | null {
    for (const m of this.job.members) if (m.source.kind === 'v4l2' && !existsSync(m.source.device)) return m.source.device
    return null
  }

  private launch(): void {
    this.timer = null
    if (!this.wanted) return
    const missing = this.missingDevice()
    if (missing) return this.waitForDevice(missing)
    const { stream } = this.job
    this.recording = this.segment = null
    if (stream.stream_type === 'RECORDING' && stream.encode_type !== 'NONE') {
      const dir = this.job.recordings_dir
      try {
        this.recording = reserveRecordingPath(dir, this.job.members[0]!.label)
      } catch (err) {
        return this.failure(`cannot create the recordings directory ${dir}: ${(err as Error).message}`)
      }
    }
    this.closeFeeds()
    const textPort = this.recording && this.telemetry?.source.current() ? this.telemetry.port : undefined
    const soundPort = this.recording ? this.sound?.port : undefined
    let tokens: string[] | null
    try {
      tokens = buildPipeline(this.job, { recordingPath: this.recording ?? undefined, segments: this.options.segments, bitrateKbps: this.options.bitrateKbps, tapPorts: this.tapPorts, textPort, soundPort })
    } catch (err) {
      this.wanted = false
      return this.setState('error', (err as Error).message)
    }
    if (!tokens) return this.setState('stopped', null) // NONE streams nothing

    const generation = ++this.generation
    this.lastError = null
    this.stderrTail = []
    this.aliveAt = this.job.members.map(() => 0)
    this.spawnedAt = Date.now()
    this.hooks.log.info('starting pipeline', { bus_info: this.job.bus_info, command: shellCommand(tokens) })
    try {
      // -e: SIGINT sends EOS so the muxer closes the file; -m: bus messages, which monitor.ts reads.
      // withElements: a simulated camera's source paints its time code with our own element.
      this.child = spawnChild([this.options.gstLaunch, '-e', '-m', ...tokens], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe', env: withElements() }, this.options.prefix)
    } catch (err) {
      this.child = null
      return this.failure(`cannot run ${this.options.gstLaunch}: ${(err as Error).message}`)
    }
    const child = this.child
    // Sent from now on: the first cues reach a child still starting and are lost, the next ones are not.
    if (textPort !== undefined) {
      this.textFeed = new TelemetryFeed({ source: this.telemetry!.source, streamState: () => this.state }, this.hooks.log)
      this.textFeed.toPlain(textPort)
    }
    if (soundPort !== undefined) {
      const feeder = new LoopbackFeeder(this.hooks.log)
      this.soundFeed = { feeder, reading: feeder.feedSound(this.sound!.hub, soundPort, { name: 'recording', continuous: true }) }
    }
    this.setState('starting', null)
    void pumpLines(child.stdout as ReadableStream<Uint8Array>, (line) => generation === this.generation && this.onLine(line))
    void pumpLines(child.stderr as ReadableStream<Uint8Array>, (line) => generation === this.generation && this.onStderr(line))
    void child.exited.then((code) => {
      if (generation !== this.generation) return
      this.child = null
      this.closeFeeds()
      if (!this.wanted) return
      this.failure(this.lastError ?? `gst-launch-1.0 exited unexpectedly (${child.signalCode ?? `code ${code}`})`)
    })
  }

  private onLine(line: string): void {
    const event = parseChildLine(line)
    if (!event) return
    if (event.kind === 'alive') {
      this.aliveAt[event.member] = Date.now()
      if (this.state === 'starting' && this.aliveAt.every((t) => t > 0)) {
        this.runningSince = Date.now()
        this.setState('running', null)
      }
    } else if (event.kind === 'gap') {
      this.unpaired += outOfStep(gapFrames(event.deltaNs, this.frameNs), this.job.members.length)
    } else if (event.kind === 'lost') {
      this.lost += lostFrames(event.durationNs, this.frameNs)
    } else if (event.kind === 'segment') {
      this.segment = event.path
    } else {
      this.lastError ??= event.text
    }
  }

  private onStderr(line: string): void {
    if (!line.trim()) return
    this.stderrTail = [...this.stderrTail.slice(-9), line]
    const event = parseChildLine(line)
    if (event?.kind === 'error') this.lastError ??= event.text
    // The useful part of a write error is on the "Additional debug info" line.
    if (DISK_FULL.test(line)) this.lastError = line.trim()
  }

  private tick(): void {
    const now = Date.now()
    // A late tick (the service was busy or stopped) has not read the alive messages that wait: no verdict.
    if (this.ticks.late(now)) return
    // Every member must deliver: a silent follower stalls its group as surely as a silent leader.
    const quietSince = Math.min(...this.aliveAt.map((t) => t || this.spawnedAt))
    if (this.child && (this.state === 'starting' || this.state === 'running') && now - quietSince > this.options.stallMs) {
      this.hooks.log.warn('pipeline stalled', { bus_info: this.job.bus_info })
      this.lastError = `stalled: no buffers for ${Math.round(this.options.stallMs / 1000)} s`
      this.child.kill('SIGKILL') // a stalled pipeline ignores EOS; the recording survives a kill by design
    }
    if (this.state === 'running' && this.failures > 0 && now - this.runningSince >= this.options.stableMs) this.failures = 0
    const drops = this.drops
    if (drops !== this.dropsReported) {
      this.dropsReported = drops
      this.hooks.onDrops(drops)
    }
    const file = this.activeRecording
    if (file) syncToDisk(file, this.hooks.log)
  }

  private failure(reason: string): void {
    if (!this.wanted) return
    this.hooks.log.warn('pipeline failed', { bus_info: this.job.bus_info, reason, stderr: this.stderrTail })
    if (this.recording && DISK_FULL.test(reason)) {
      this.wanted = false
      this.clearTimers()
      return this.setState('error', diskFullStop(this.segment ?? segmentPath(this.recording, 1)))
    }
    const missing = this.missingDevice()
    if (missing) return this.waitForDevice(missing)
    const busy = reason.match(BUSY)?.[1]
    if (busy && this.waitForRelease(busy)) return
    this.failures++
    this.restarts++
    const delay = Math.min(this.options.maxBackoffMs, 1000 * 2 ** (this.failures - 1))
    this.setState('backoff', `${reason}; restarting in ${delay / 1000} s`)
    this.timer = setTimeout(() => this.launch(), delay)
  }

  private waitForDevice(device: string): void {
    this.setState('error', `device ${device} is gone; the stream resumes when it returns`)
    const poll = () => {
      if (!this.wanted) return
      if (this.missingDevice()) this.timer = setTimeout(poll, 1000)
      else this.launch()
    }
    this.timer = setTimeout(poll, 1000)
  }

  /**
   * Another process streams the node: say which, and start once it let go (checked every second). False
   * when no holder can be seen (another PID namespace): the ordinary backoff retries then.
   */
  private waitForRelease(device: string): boolean {
    const others = () => holdersOf(device, children)
    const holders = others()
    if (!holders.length) return false
    this.hooks.log.warn('device in use by another process', { bus_info: this.job.bus_info, device, holders })
    this.setState('error', `device ${device} is in use by ${describeHolders(holders)}; the stream starts when it is released`)
    const poll = () => {
      this.timer = null
      if (!this.wanted) return
      const now = others()
      if (!now.length) return this.launch()
      this.setState('error', `device ${device} is in use by ${describeHolders(now)}; the stream starts when it is released`)
      this.timer = setTimeout(poll, 1000)
    }
    this.timer = setTimeout(poll, 1000)
    return true
  }

  private setState(state: StreamState, error: string | null): void {
    if (state === this.state && error === this.error) return
    this.state = state
    this.error = error
    this.hooks.onState(this.status())
  }

  /**
   * A recording gets EOS first (SIGINT with -e) so the muxer closes the file, then SIGKILL after the
   * timeout. RTP has no end-of-stream to send, so a UDP child is simply terminated: a faster restart.
   */
  private async endChild(timeoutMs: number): Promise<void> {
    const child = this.child
    this.generation++ // the old child's output and exit no longer concern us
    this.child = null
    this.closeFeeds()
    if (child) await endChild(child, this.recording ? 'SIGINT' : 'SIGTERM', timeoutMs)
  }

  private closeFeeds(): void {
    this.textFeed?.close()
    this.textFeed = null
    this.soundFeed?.reading.close()
    this.soundFeed?.feeder.close()
    this.soundFeed = null
  }
}
