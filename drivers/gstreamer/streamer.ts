// The Streamer backed by gst-launch-1.0 children: one supervised child per job (a group is one job).
import type { Logger } from '../../core/log'
import type { LiveTap, StreamJob, StreamStatus, Streamer } from '../../core/types'
import { guardChildren } from './children'
import type { FrameSync } from './framesync'
import { fps } from './pipeline'
import { StreamRunner, type RunnerOptions } from './runner'
import { RtpTap } from './tap'

export interface GstStreamerOptions extends Partial<RunnerOptions> {
  log: Logger
  /** 'stream_error' {bus_info, state, error, restarts} and 'frame_stats' {bus_info, num_drops}. */
  emit(type: 'stream_error' | 'frame_stats', data: unknown): void
  frameSync?: FrameSync
}

const STOPPED: StreamStatus = { state: 'stopped', error: null, restarts: 0 }

export class GstStreamer implements Streamer {
  readonly name = 'gstreamer'
  private runners = new Map<string, StreamRunner>()
  /** Per running job, its live tap (viewers subscribe here; tap.ts). */
  private taps = new Map<string, RtpTap>()
  /** Per job, the start/stop in progress: calls for one bus_info run one after the other. */
  private pending = new Map<string, Promise<void>>()
  private readonly runnerOptions: RunnerOptions

  constructor(private readonly options: GstStreamerOptions) {
    guardChildren()
    const setpriv = Bun.which('setpriv')
    this.runnerOptions = {
      gstLaunch: options.gstLaunch ?? 'gst-launch-1.0',
      // The kernel kills the child if the service dies, even by kill -9: no orphan, ever.
      prefix: options.prefix ?? (setpriv ? [setpriv, '--pdeathsig', 'KILL'] : []),
      stallMs: options.stallMs ?? 5000,
      stableMs: options.stableMs ?? 60_000,
      maxBackoffMs: options.maxBackoffMs ?? 60_000,
      stopTimeoutMs: options.stopTimeoutMs ?? 5000,
      bitrateKbps: options.bitrateKbps,
    }
  }

  start(job: StreamJob): Promise<void> {
    return this.serial(job.bus_info, async () => {
      await this.stopRunner(job.bus_info)
      const log = this.options.log.child({ bus_info: job.bus_info })
      const tap = await RtpTap.open(job)
      this.taps.set(job.bus_info, tap)
      const runner = new StreamRunner(job, this.runnerOptions, {
        log,
        onState: (status) => {
          this.options.emit('stream_error', { bus_info: job.bus_info, ...status })
          this.updateFrameSync()
        },
        onDrops: (num_drops) => this.options.emit('frame_stats', { bus_info: job.bus_info, num_drops }),
      }, tap.ports)
      this.runners.set(job.bus_info, runner)
      runner.start()
      this.updateFrameSync()
    })
  }

  stop(bus_info: string): Promise<void> {
    return this.serial(bus_info, () => this.stopRunner(bus_info))
  }

  status(bus_info: string): StreamStatus {
    return this.runners.get(bus_info)?.status() ?? { ...STOPPED }
  }

  frameDrops(bus_info: string): number {
    return this.runners.get(bus_info)?.drops ?? 0
  }

  live(bus_info: string): { tap: LiveTap; member: number } | null {
    for (const [key, tap] of this.taps) {
      const member = this.runners.get(key)?.job.members.findIndex((m) => m.bus_info === bus_info) ?? -1
      if (member >= 0) return { tap, member }
    }
    return null
  }

  activeRecordings(): string[] {
    return [...this.runners.values()].map((r) => r.activeRecording).filter((p): p is string => p !== null)
  }

  /** How many jobs are in each state (plugin health). */
  summary(): Record<string, number> {
    const counts: Record<string, number> = {}
    for (const r of this.runners.values()) counts[r.status().state] = (counts[r.status().state] ?? 0) + 1
    return counts
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
    await Promise.all([...this.runners.keys()].map((bus) => this.stop(bus)))
    this.options.frameSync?.stop()
  }

  private async stopRunner(bus_info: string): Promise<void> {
    const runner = this.runners.get(bus_info)
    if (!runner) return
    this.runners.delete(bus_info)
    await runner.stop()
    this.taps.get(bus_info)?.close()
    this.taps.delete(bus_info)
    this.updateFrameSync()
  }

  private serial(bus_info: string, fn: () => Promise<void>): Promise<void> {
    const next = (this.pending.get(bus_info) ?? Promise.resolve()).then(fn, fn)
    const settled = next.catch(() => {})
    this.pending.set(bus_info, settled)
    void settled.then(() => this.pending.get(bus_info) === settled && this.pending.delete(bus_info))
    return next
  }

  /** The board triggers the group that streams (the first, should there be several); 0 stops it. */
  private updateFrameSync(): void {
    const sync = this.options.frameSync
    if (!sync) return
    const group = [...this.runners.values()].find((r) => r.job.members.length > 1 && ['starting', 'running', 'backoff'].includes(r.status().state))
    sync.setFps(group ? fps(group.job) : 0)
  }
}
