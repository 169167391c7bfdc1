// Runs the retention policy (drivers/storage/retention.ts) on the recordings directory: when a
// recording finishes, every `intervalSeconds`, and every WATCH_MS while something is being written and
// the free-space rule is on (statfs only, so a long mission on a small card keeps recording: the
// oldest finished file goes, never the current one). Each deletion is logged (warn: GET /api/logs),
// evented (`recording_deleted`) and remembered for GET /api/recordings/retention. Also holds the
// pilot's "kept" marks (the settings store): by file name, or by recording name (`<stem>.mkv`) for a
// segmented recording, which then covers every segment, the ones cut after the mark too. A recording
// the disk filled up under is kept by itself (said in the log and a `recording_kept` event).
import { basename } from 'node:path'
import type { EventBus } from '../../core/events'
import type { Logger } from '../../core/log'
import type { SettingsStore } from '../../core/store'
import type { RecordingStore } from '../../drivers/storage/recordings'
import { DEFAULT_POLICY, GB, planRetention, type RetentionPolicy } from '../../drivers/storage/retention'
import { DISK_FULL_STOP } from '../../core/disk'
import { recordingNameOf } from '../../core/naming'

const POLICY_NAMESPACE = 'recordings.retention'
const KEPT_NAMESPACE = 'recordings.kept'
/** How often the free space is looked at while a recording is being written (ms). */
export const WATCH_MS = 2_000
/** Deletions remembered for the console (the log keeps each one too). */
export const DELETIONS_SHOWN = 50

export type DeletionCause = 'max_age' | 'min_free' | 'manual'

/** Whether a file is kept: marked itself, or the recording it is a segment of is. */
export const isKept = (kept: Set<string>, fileName: string) => kept.has(fileName) || kept.has(recordingNameOf(fileName))
export interface DeletionRecord {
  name: string
  size: number
  reason: DeletionCause
  detail: string
  time: string
}

export class Retention {
  private deletions: DeletionRecord[] = []
  private running: Promise<void> | null = null
  private again = false
  private timers: ReturnType<typeof setInterval>[] = []
  private unsubscribe: (() => void) | null = null
  private lastRun: string | null = null
  private shortBytes = 0
  /** Marks the settings store could not save (a full card holding it): held for as long as the service runs. */
  private held = new Set<string>()

  constructor(
    private readonly o: {
      settings: SettingsStore
      events: EventBus
      log: Logger
      /** The recordings directory, or a throw when it is unavailable. */
      store: () => Promise<RecordingStore>
      intervalSeconds: number
    },
  ) {}

  policy(): RetentionPolicy {
    return { ...DEFAULT_POLICY, ...this.o.settings.get<RetentionPolicy>(POLICY_NAMESPACE, 'policy') }
  }

  /** Saves (throws when the settings store cannot: 507) and applies at once. */
  setPolicy(policy: RetentionPolicy): void {
    this.o.settings.set(POLICY_NAMESPACE, 'policy', policy)
    this.o.log.info('retention policy saved', { ...policy })
    this.o.events.emit('retention_updated', this.state(null))
    this.run('policy saved')
  }

  /** The policy, the disk's free bytes (null when unknown), the last pass and the recent deletions, newest first. */
  state(free: number | null) {
    return { ...this.policy(), free, short_bytes: this.shortBytes, last_run: this.lastRun, deletions: [...this.deletions].reverse() }
  }

  /** The marks: file names, and recording names (`<stem>.mkv`) that cover every segment. Read with isKept(). */
  kept(): Set<string> {
    const marks = new Set(this.o.settings.list<boolean>(KEPT_NAMESPACE).filter((e) => e.value === true).map((e) => e.key))
    for (const name of this.held) marks.add(name)
    return marks
  }

  /**
   * Marks (or unmarks) `name`: a file, or a segmented recording by its recording name, which then covers
   * every segment, those cut later included. Unmarking a recording also takes off its segments' own marks.
   */
  setKept(name: string, kept: boolean, segments: string[] = []): void {
    if (kept) this.o.settings.set(KEPT_NAMESPACE, name, true)
    else for (const key of [name, ...segments]) this.o.settings.delete(KEPT_NAMESPACE, key)
    if (!kept) this.held.delete(name)
    this.o.events.emit('recording_kept', { name, kept })
    if (!kept) this.run('a kept mark removed') // the file may be what the policy needs to go now
  }

  /** A rename carries the mark, the file's own and its recording's (best effort: a full card may refuse the write). */
  renamed(from: string, to: string): void {
    const kept = this.kept()
    for (const [a, b] of [[from, to], [recordingNameOf(from), recordingNameOf(to)]] as const) {
      if (!kept.has(a) || a === b) continue
      try {
        this.o.settings.set(KEPT_NAMESPACE, b, true)
        this.o.settings.delete(KEPT_NAMESPACE, a)
      } catch (e) {
        this.o.log.warn('could not carry the kept mark over a rename', { from: a, to: b, error: (e as Error).message })
      }
      if (this.held.delete(a)) this.held.add(b)
    }
  }

  /** A mark whose recording is gone (deleted whole by the pilot): dropped, best effort. */
  forget(name: string): void {
    this.held.delete(name)
    try {
      this.o.settings.delete(KEPT_NAMESPACE, name)
    } catch {
      // a stale mark on a name that no longer exists harms nothing
    }
  }

  /**
   * A recording the disk filled up under is what the pilot was filming when it stopped: kept, so the
   * policy never makes room by deleting it unseen. Said at warn and as a `recording_kept` event; the
   * pilot takes the mark off to let it go. Held in memory when the settings store cannot be written.
   */
  private keepStoppedByFullDisk(name: string): void {
    if (this.kept().has(name)) return
    try {
      this.o.settings.set(KEPT_NAMESPACE, name, true)
    } catch {
      this.held.add(name)
    }
    const detail = `${name} was stopped by a full disk: it is kept, so the retention policy never deletes it; take the mark off (DELETE /api/recordings/${name}/keep) to let it`
    this.o.log.warn('a recording stopped by a full disk is kept', { file: name, detail })
    this.o.events.emit('recording_kept', { name, kept: true, reason: 'disk_full', detail })
  }

  /** A deletion the pilot asked for: listed and evented like the policy's. */
  deleted(fileName: string, size: number, reason: DeletionCause, detail: string): void {
    if (reason === 'manual') this.forget(fileName)
    const record: DeletionRecord = { name: fileName, size, reason, detail, time: new Date().toISOString() }
    this.deletions.push(record)
    if (this.deletions.length > DELETIONS_SHOWN) this.deletions.shift()
    // The policy's deletions at warn (also a `log` event): a file went without anyone asking now.
    const fields = { file: fileName, reason, detail, size }
    if (reason === 'manual') this.o.log.info('recording deleted', fields)
    else this.o.log.warn('recording deleted by the retention policy', fields)
    this.o.events.emit('recording_deleted', record)
  }

  start(): void {
    this.timers.push(setInterval(() => this.run('periodic'), this.o.intervalSeconds * 1000))
    this.timers.push(setInterval(() => void this.watch(), WATCH_MS))
    this.unsubscribe = this.o.events.subscribe((e) => {
      // A recording made while streaming ends ('recording'), or a RECORDING stream fails ('stream_error'): the disk may have filled up.
      const data = e.data as { active?: boolean; error?: unknown }
      const full = (e.type === 'recording' || e.type === 'stream_error') && typeof data.error === 'string' ? DISK_FULL_STOP.exec(data.error) : null
      if (full) this.keepStoppedByFullDisk(recordingNameOf(basename(full[1]!)))
      if ((e.type === 'recording' && data.active === false) || full) this.run('a recording finished')
    })
    this.run('start')
  }

  async stop(): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    this.timers = []
    this.unsubscribe?.()
    await this.running
  }

  /** While something is being written: a pass as soon as the disk goes below the free-space rule. */
  private async watch(): Promise<void> {
    const p = this.policy()
    if (!p.enabled || p.min_free_gb <= 0 || this.running) return
    try {
      const store = await this.o.store()
      if (store.inProgress().size && store.disk().free < p.min_free_gb * GB) this.run('free space below the minimum while recording')
    } catch {
      // the directory is unavailable: its health says so
    }
  }

  /** One pass at a time; a request during a pass runs one more after it. Resolves when done. */
  run(trigger: string): Promise<void> {
    if (this.running) {
      this.again = true
      return this.running
    }
    this.running = this.pass(trigger)
      .catch((e) => this.o.log.warn('retention pass failed', { trigger, error: (e as Error).message }))
      .finally(() => {
        this.running = null
        if (this.again) {
          this.again = false
          void this.run('again')
        }
      })
    return this.running
  }

  private async pass(trigger: string): Promise<void> {
    // last_run is when the pass read its policy: a client that set a policy at T and sees last_run ≥ T
    // knows a pass under it is done (taken after the store's awaits, a pass under the old one passed for it).
    const began = Date.now()
    const policy = this.policy()
    if (!policy.enabled) {
      this.shortBytes = 0
      return
    }
    const store = await this.o.store()
    const files = await store.files()
    const active = store.inProgress()
    const kept = this.kept()
    const now = Date.now()
    const plan = planRetention(
      policy,
      files.map((f) => ({ fileName: f.fileName, size: f.size, mtimeMs: f.mtimeMs, kept: isKept(kept, f.fileName), active: active.has(f.fileName) })),
      store.disk().free,
      now,
    )
    for (const d of plan.deletions) {
      // Checked again at the moment of deletion: a mark or a recording may have started since the plan.
      const gone = await store.removeIf(d.fileName, () => !isKept(this.kept(), d.fileName))
      if (gone) this.deleted(d.fileName, gone.size, d.reason, d.detail)
    }
    const short = plan.shortBytes > 0
    if (short && this.shortBytes === 0)
      this.o.log.warn('the retention policy cannot keep enough space free: the rest is kept or being written', {
        trigger,
        min_free_gb: policy.min_free_gb,
        missing_bytes: plan.shortBytes,
      })
    this.shortBytes = plan.shortBytes
    // Set once the pass is done, to when it began: its deletions are made.
    this.lastRun = new Date(began).toISOString()
  }
}
