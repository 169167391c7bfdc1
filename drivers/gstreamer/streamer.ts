// The Streamer backed by gst-launch-1.0 children: one supervised child per job (a group is one job).
import { KeyedSerial } from '../../core/serial'
import type { Logger } from '../../core/log'
import type { TelemetrySource } from '../../core/telemetry'
import type { DeviceRecording, Stream, StreamHub, StreamJob, StreamMember, StreamStatus, Streamer } from '../../core/types'
import { guardChildren, parentDeathPrefix } from '../../media/children'
import { freeLoopbackPorts } from '../../media/feeder'
import { MediaHub } from '../../media/hub'
import { withElements } from './elements'
import { reserveRecordingPath } from './child'
import { Recorder } from './recorder'
import type { FrameSync } from './framesync'
import { fps, sourceDescription } from './pipeline'
import { StreamRunner, type RunnerOptions } from './runner'

export interface GstStreamerOptions extends Partial<RunnerOptions> {
  log: Logger
  /**
   * 'stream_error' {bus_info, state, error, restarts}, 'frame_stats' {bus_info, num_drops} and
   * 'recording' {bus_info (the job's), members, active, file, started, bytes, error}.
   */
  emit(type: 'stream_error' | 'frame_stats' | 'recording', data: unknown): void
  frameSync?: FrameSync
  /** The vehicle's telemetry (the registry's): recordings started while an autopilot is on the link carry it as a text track. */
  telemetry?: TelemetrySource
  /** Seconds of each stream kept for the start of a recording made while streaming (0 = none; media/hub.ts PreRecordRing). */
  preRecordSeconds?: number
  /** Whether a job's stream will carry sound (plugins/audio has a source for it): its hub knows from its creation on. */
  soundExpected?: (bus_info: string) => boolean
  /** A viewer's delay (ms) past which a stream's health alert is raised (--delay-alert). */
  delayAlertMs?: number
}

const STOPPED: StreamStatus = { state: 'stopped', error: null, restarts: 0 }
const NO_RECORDING: DeviceRecording = { active: false, file: null, started: null, bytes: 0, error: null }

export class GstStreamer implements Streamer {
  readonly name = 'gstreamer'
  private runners = new Map<string, StreamRunner>()
  /** Per running job, its hub (readers read here; media/hub.ts). */
  private hubs = new Map<string, MediaHub>()
  /** Per job whose camera went away (stop with cameraLeft), its hub, readers waiting: the next start replaces it. */
  private awayHubs = new Map<string, MediaHub>()
  /** Per job, the start/stop in progress: calls for one bus_info run one after the other. */
  private readonly serials = new KeyedSerial()
  /** Per job, the recording made while it streams (recorder.ts). */
  private recorders = new Map<string, Recorder>()
  /** Per camera (member bus_info), its last recording once ended: GET /api/devices still shows where it went. */
  private lastRecording = new Map<string, DeviceRecording>()
  private readonly runnerOptions: RunnerOptions

  constructor(private readonly options: GstStreamerOptions) {
    guardChildren()
    this.runnerOptions = {
      gstLaunch: options.gstLaunch ?? 'gst-launch-1.0',
      // The kernel kills the child if the service dies, even by kill -9: no orphan, ever.
      prefix: options.prefix ?? parentDeathPrefix(),
      stallMs: options.stallMs ?? 5000,
      stableMs: options.stableMs ?? 60_000,
      maxBackoffMs: options.maxBackoffMs ?? 60_000,
      stopTimeoutMs: options.stopTimeoutMs ?? 5000,
      bitrateKbps: options.bitrateKbps,
      segments: options.segments,
    }
  }

  start(job: StreamJob): Promise<void> {
    return this.serial(job.bus_info, async () => {
      // A restart: the old hub goes quiet now and says 'replaced' once the new one listens, so its
      // readers follow the stream instead of ending.
      const previous = this.hubs.get(job.bus_info) ?? this.awayHubs.get(job.bus_info)
      this.awayHubs.delete(job.bus_info)
      await this.stopRunner(job.bus_info, 'restart')
      const log = this.options.log.child({ bus_info: job.bus_info })
      const sound = this.options.soundExpected?.(job.bus_info) ?? false
      const hub = new MediaHub({
        encoding: job.stream.encode_type === 'MJPG' ? 'JPEG' : 'H264',
        width: job.stream.width,
        height: job.stream.height,
        fps: fps(job),
        members: job.members.map((m) => m.bus_info),
        log: log.child({ part: 'hub' }),
        relay: true,
        preRecordSeconds: this.options.preRecordSeconds,
        sound,
        delayAlertMs: this.options.delayAlertMs,
      })
      try {
        await hub.listen()
      } catch (err) {
        previous?.close('the stream could not restart')
        throw err
      }
      this.hubs.set(job.bus_info, hub)
      // A RECORDING job's files carry the vehicle's telemetry too: a loopback port for their text pad.
      const textPort = job.stream.stream_type === 'RECORDING' && this.options.telemetry ? (await freeLoopbackPorts(1))[0]! : undefined
      // … and its sound, when the stream carries one as it starts (a source attached later is in the files
      // after the stream's next start).
      const soundPort = job.stream.stream_type === 'RECORDING' && sound ? (await freeLoopbackPorts(1))[0]! : undefined
      const runner = new StreamRunner(job, this.runnerOptions, {
        log,
        onState: (status) => {
          this.options.emit('stream_error', { bus_info: job.bus_info, ...status })
          this.updateFrameSync()
        },
        onDrops: (num_drops) => this.options.emit('frame_stats', { bus_info: job.bus_info, num_drops }),
      }, hub.ports, textPort !== undefined ? { source: this.options.telemetry!, port: textPort } : undefined, soundPort !== undefined ? { hub, port: soundPort } : undefined)
      this.runners.set(job.bus_info, runner)
      runner.start()
      this.updateFrameSync()
      previous?.replace(hub)
    })
  }

  stop(bus_info: string, options: { cameraLeft?: boolean } = {}): Promise<void> {
    return this.serial(bus_info, async () => {
      this.awayHubs.get(bus_info)?.close('the stream has stopped')
      this.awayHubs.delete(bus_info)
      await this.stopRunner(bus_info, options.cameraLeft ? 'left' : 'stop')
    })
  }

  status(bus_info: string): StreamStatus {
    return this.runners.get(bus_info)?.status() ?? { ...STOPPED }
  }

  frameDrops(bus_info: string): number {
    return this.runners.get(bus_info)?.drops ?? 0
  }

  live(bus_info: string): { hub: StreamHub; member: number } | null {
    for (const hub of this.hubs.values()) {
      const member = hub.memberOf(bus_info)
      if (member >= 0) return { hub, member }
    }
    return null
  }

  captureSource(member: StreamMember, stream: Stream): string[] {
    return sourceDescription(member, { stream }, 0)
  }

  captureEnv(): Record<string, string | undefined> {
    return withElements()
  }

  activeRecordings(): string[] {
    const streams = [...this.runners.values()].map((r) => r.activeRecording).filter((p): p is string => p !== null)
    return [...streams, ...[...this.recorders.values()].flatMap((r) => r.files)]
  }

  startRecording(bus_info: string): Promise<DeviceRecording | null> {
    const key = this.jobKeyOf(bus_info)
    if (!key) return Promise.resolve(null)
    return this.serial(key, async () => {
      const runner = this.runners.get(key)
      const hub = this.hubs.get(key)
      if (!runner || !hub) return null // stopped meanwhile
      const active = this.recorders.get(key)
      if (active) return active.state()
      const { job } = runner
      const path = reserveRecordingPath(job.recordings_dir, job.members[0]!.label)
      const members = job.members.map((m) => m.bus_info)
      const announce = (recorder: Recorder) => this.options.emit('recording', { bus_info: key, members, ...recorder.state() })
      const recorder = await Recorder.start(
        {
          hub,
          base: path,
          telemetry: this.options.telemetry ? { source: this.options.telemetry, streamState: () => this.status(key).state } : undefined,
          onProgress: announce,
          onEnd: (ended) => {
            if (this.recorders.get(key) === ended) this.recorders.delete(key)
            for (const member of members) this.lastRecording.set(member, ended.state())
            announce(ended)
          },
        },
        { gstLaunch: this.runnerOptions.gstLaunch, prefix: this.runnerOptions.prefix, stopTimeoutMs: this.runnerOptions.stopTimeoutMs, segments: this.runnerOptions.segments, log: this.options.log.child({ bus_info: key }) },
      )
      this.recorders.set(key, recorder)
      announce(recorder)
      return recorder.state()
    })
  }

  stopRecording(bus_info: string): Promise<DeviceRecording | null> {
    const key = this.jobKeyOf(bus_info)
    if (!key) return Promise.resolve(null)
    return this.serial(key, async () => {
      const recorder = this.recorders.get(key)
      if (!recorder) return null
      await recorder.stop()
      return recorder.state()
    })
  }

  recording(bus_info: string): DeviceRecording {
    const key = this.jobKeyOf(bus_info)
    const recorder = key ? this.recorders.get(key) : undefined
    return recorder?.state() ?? this.lastRecording.get(bus_info) ?? { ...NO_RECORDING }
  }

  /** How many recordings made while streaming run now (plugin health). */
  get recordingCount(): number {
    return this.recorders.size
  }

  /** The recorder child's pid of a job (tests and diagnostics). */
  recorderPid(bus_info: string): number | null {
    const key = this.jobKeyOf(bus_info)
    return (key && this.recorders.get(key)?.pid) || null
  }

  /** The job that streams this camera: its own, or its group's (the leader's bus_info). */
  private jobKeyOf(bus_info: string): string | null {
    for (const [key, runner] of this.runners) if (runner.job.members.some((m) => m.bus_info === bus_info)) return key
    return null
  }

  /** How many jobs are in each state (plugin health). */
  summary(): Record<string, number> {
    const counts: Record<string, number> = {}
    for (const r of this.runners.values()) counts[r.status().state] = (counts[r.status().state] ?? 0) + 1
    return counts
  }

  /** Why each failing stream fails, by the bus_info that leads it (health's detail). */
  problems(): Record<string, string> {
    const out: Record<string, string> = {}
    for (const [bus_info, r] of this.runners) {
      const { state, error } = r.status()
      if (error && (state === 'error' || state === 'backoff')) out[bus_info] = error
    }
    return out
  }

  /** The job a bus_info leads, while it runs. */
  job(bus_info: string): StreamJob | undefined {
    return this.runners.get(bus_info)?.job
  }

  /** The child's pid of a job (tests and diagnostics). */
  pid(bus_info: string): number | null {
    return this.runners.get(bus_info)?.pid ?? null
  }

  async stopAll(): Promise<void> {
    await Promise.all([...new Set([...this.runners.keys(), ...this.awayHubs.keys()])].map((bus) => this.stop(bus)))
    this.options.frameSync?.stop()
  }

  /**
   * Stops a job's child, its recording and its hub. 'restart': the hub only goes quiet (start() says
   * 'replaced'); 'left': the camera went away, the hub waits with its readers for the camera's next start.
   */
  private async stopRunner(bus_info: string, why: 'stop' | 'restart' | 'left'): Promise<void> {
    const runner = this.runners.get(bus_info)
    if (!runner) return
    this.runners.delete(bus_info)
    // The recording ends with its stream (EOS: the file is closed and kept), alongside the stream's stop.
    const recorder = this.recorders.get(bus_info)
    await Promise.all([runner.stop(), recorder?.stop()])
    const hub = this.hubs.get(bus_info)
    this.hubs.delete(bus_info)
    if (why === 'restart') hub?.silence()
    else if (why === 'left' && hub) {
      hub.away()
      this.awayHubs.set(bus_info, hub)
    } else hub?.close('the stream has stopped')
    this.updateFrameSync()
  }

  private serial<T>(bus_info: string, fn: () => Promise<T>): Promise<T> {
    return this.serials.run(bus_info, fn)
  }

  /** The board triggers the group that streams (the first, should there be several); 0 stops it. */
  private updateFrameSync(): void {
    const sync = this.options.frameSync
    if (!sync) return
    const group = [...this.runners.values()].find((r) => r.job.members.length > 1 && ['starting', 'running', 'backoff'].includes(r.status().state))
    sync.setFps(group ? fps(group.job) : 0)
  }
}
