// Sound-only streams: a sound source that belongs to no camera (a hydrophone) streamed on its own. One
// per source, keyed by the source's id and saved: its UDP endpoints (Opus RTP at each endpoint's own port,
// nothing else goes there), enabled or not, rate, gain and mute. While enabled it has a media hub of its own
// with no video member and the sound as its one track (media/hub.ts), so RTSP serves it like a camera's
// stream (rtsp://<host>:<port>/sound/<source id>), the recorder writes it (Matroska, one Opus track), and
// the console listens to it over WHEP. The sound's child is the camera streams' one (drivers/gstreamer/audio.ts).
import type { DeviceRecording, Endpoint, StreamHub } from '../../core/types'
import type { Logger } from '../../core/log'
import { KeyedSerial } from '../../core/serial'
import type { SettingsStore } from '../../core/store'
import { reserveRecordingPath } from '../../drivers/gstreamer/child'
import { Recorder } from '../../drivers/gstreamer/recorder'
import { MediaHub } from '../../media/hub'


export const SOUND_ONLY_NS = 'audio.sound_only'
/** The most sound-only streams at once (each is a child process and a hub). */
export const MAX_SOUND_ONLY = 8

/** What is saved per sound-only stream (by its source's id). */
export interface SoundOnlySettings {
  endpoints: Endpoint[]
  enabled: boolean
  rate: number | null
  gain_db: number
  muted: boolean
}

/** The part of a sound child this module needs (plugins/audio/index.ts Running). */
export interface SoundRun {
  runner: { state: 'off' | 'starting' | 'running' | 'gone' | 'backoff' | 'error'; error: string | null; start(): void }
  timeline: { start(): void }
  key: string
  level: { peak_db: number; rms_db: number } | null
}

export interface SoundOnlyDeps<R extends SoundRun> {
  log: Logger
  store: SettingsStore
  recordingsDir: () => string
  gstLaunch: string | null
  prefix: string[]
  startSound(spec: { id: string; settings: Pick<SoundOnlySettings, 'rate' | 'gain_db' | 'muted'>; key: string; skipped: string[]; about: Record<string, string | boolean>; endpoints: () => Endpoint[]; send: (packet: Uint8Array) => void }): Promise<R>
  stopSound(run: R): Promise<void>
  emit(type: 'audio_state' | 'recording', data: unknown): void
}

export type SoundOnlyRecording = DeviceRecording


export class SoundOnlyStreams<R extends SoundRun> {
  private readonly runs = new Map<string, { run: R; hub: MediaHub }>()
  private readonly recorders = new Map<string, Recorder>()
  private readonly lastRecording = new Map<string, SoundOnlyRecording>()
  /** One reconcile at a time per stream, as for the cameras' sound. */
  private readonly reconciles = new KeyedSerial()

  constructor(private readonly deps: SoundOnlyDeps<R>) {}

  /** The saved settings of one sound-only stream (undefined: there is none). */
  settings(source: string): SoundOnlySettings | undefined {
    return this.deps.store.get<SoundOnlySettings>(SOUND_ONLY_NS, source)
  }

  /** Every saved sound-only stream, by its source's id. */
  all(): { key: string; value: SoundOnlySettings }[] {
    return this.deps.store.list<SoundOnlySettings>(SOUND_ONLY_NS)
  }

  save(source: string, settings: SoundOnlySettings | null): void {
    if (settings) this.deps.store.set(SOUND_ONLY_NS, source, settings)
    else this.deps.store.delete(SOUND_ONLY_NS, source)
  }

  /** Brings one stream in line with its saved settings, after any reconcile of it still running. */
  schedule(source: string): Promise<void> {
    return this.reconciles.run(source, () => this.reconcile(source, this.settings(source) ?? null)).catch((err) => this.deps.log.warn('sound-only reconcile failed', { source, err }))
  }

  runsNow(): R[] {
    return [...this.runs.values()].map((r) => r.run)
  }

  run(source: string): R | undefined {
    return this.runs.get(source)?.run
  }

  /** The hub of a running sound-only stream (RTSP, WHEP and the recorder read it). */
  hub(source: string): StreamHub | null {
    return this.runs.get(source)?.hub ?? null
  }

  /** Every sound-only stream that runs now, with its hub. */
  live(): { source: string; hub: StreamHub }[] {
    return [...this.runs].map(([source, { hub }]) => ({ source, hub }))
  }

  /** Starts, restarts or stops one sound-only stream so that it matches its settings (null: none). */
  private async reconcile(source: string, settings: SoundOnlySettings | null): Promise<void> {
    const current = this.runs.get(source)
    const wanted = settings?.enabled && this.deps.gstLaunch ? settings : null
    const key = JSON.stringify(wanted)
    if (current && current.run.key === key) return
    if (current) await this.end(source, 'the sound-only stream was changed or stopped')
    if (!wanted) return
    const hub = new MediaHub({ encoding: 'H264', width: 0, height: 0, fps: 0, members: [], log: this.deps.log.child({ sound_only: source }), sound: true })
    const run = await this.deps.startSound({
      id: source,
      settings: wanted,
      key,
      skipped: [],
      about: { source, sound_only: true },
      endpoints: () => wanted.endpoints,
      send: (packet) => hub.sendSound(packet),
    })
    this.runs.set(source, { run, hub })
    run.runner.start()
    run.timeline.start()
    // Readers that follow audio_state (RTSP's mounts) add this hub now.
    this.deps.emit('audio_state', { source, sound_only: true, state: run.runner.state, error: null })
  }

  private async end(source: string, reason: string): Promise<void> {
    const current = this.runs.get(source)
    if (!current) return
    this.runs.delete(source)
    await this.stopRecording(source)
    current.hub.close(reason)
    await this.deps.stopSound(current.run)
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.runs.keys()].map((source) => this.end(source, 'the service is stopping')))
  }

  recording(source: string): SoundOnlyRecording | null {
    const recorder = this.recorders.get(source)
    return recorder ? recorder.state() : (this.lastRecording.get(source) ?? null)
  }

  /** The files being written now (the recordings plugin keeps them from deletion and retention). */
  activeRecordings(): string[] {
    return [...this.recorders.values()].map((r) => r.path)
  }

  /** Starts recording a running sound-only stream (null: it does not run); an active one is answered as it is. */
  async startRecording(source: string, label: string): Promise<SoundOnlyRecording | null> {
    const live = this.runs.get(source)
    if (!live || !this.deps.gstLaunch) return null
    const active = this.recorders.get(source)
    if (active) return active.state()
    const announce = (recorder: Recorder) => this.deps.emit('recording', { source, sound_only: true, ...recorder.state() })
    const recorder = await Recorder.start(
      {
        hub: live.hub,
        base: reserveRecordingPath(this.deps.recordingsDir(), label),
        onProgress: announce,
        onEnd: (ended) => {
          if (this.recorders.get(source) === ended) this.recorders.delete(source)
          this.lastRecording.set(source, ended.state())
          announce(ended)
        },
      },
      { gstLaunch: this.deps.gstLaunch, prefix: this.deps.prefix, stopTimeoutMs: 5000, log: this.deps.log.child({ sound_only: source }) },
    )
    this.recorders.set(source, recorder)
    announce(recorder)
    return recorder.state()
  }

  async stopRecording(source: string): Promise<SoundOnlyRecording | null> {
    const recorder = this.recorders.get(source)
    if (!recorder) return null
    await recorder.stop()
    return recorder.state()
  }
}
