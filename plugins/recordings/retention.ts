// Runs the retention policy (drivers/storage/retention.ts) on the recordings directory: when a
// recording finishes, every `intervalSeconds`, and every WATCH_MS while something is being written and
// the free-space rule is on (statfs only, so a long mission on a small card keeps recording: the
// oldest finished file goes, never the current one). Each deletion is logged (warn: GET /api/logs),
// evented (`recording_deleted`) and remembered for GET /api/recordings/retention. Also holds the
// pilot's "kept" marks (the settings store, by file name).
import type { EventBus } from '../../core/events'
import type { Logger } from '../../core/log'
import type { SettingsStore } from '../../core/store'
import type { RecordingStore } from '../../drivers/storage/recordings'
import { DEFAULT_POLICY, GB, planRetention, type RetentionPolicy } from '../../drivers/storage/retention'

const POLICY_NAMESPACE = 'recordings.retention'
const KEPT_NAMESPACE = 'recordings.kept'
/** How often the free space is looked at while a recording is being written (ms). */
export const WATCH_MS = 2_000
/** Deletions remembered for the console (the log keeps each one too). */
export const DELETIONS_SHOWN = 50

export type DeletionCause = 'max_age' | 'min_free' | 'manual'
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

  kept(): Set<string> {
    return new Set(this.o.settings.list<boolean>(KEPT_NAMESPACE).filter((e) => e.value === true).map((e) => e.key))
  }

  setKept(fileName: string, kept: boolean): void {
    if (kept) this.o.settings.set(KEPT_NAMESPACE, fileName, true)
    else this.o.settings.delete(KEPT_NAMESPACE, fileName)
    this.o.events.emit('recording_kept', { name: fileName, kept })
    if (!kept) this.run('a kept mark removed') // the file may be what the policy needs to go now
  }

  /** A rename carries the mark; a deleted file's mark goes (best effort: a full card may refuse the write). */
  renamed(from: string, to: string): void {
    if (!this.kept().has(from)) return
    try {
      this.o.settings.set(KEPT_NAMESPACE, to, true)
      this.o.settings.delete(KEPT_NAMESPACE, from)
    } catch (e) {
      this.o.log.warn('could not carry the kept mark over a rename', { from, to, error: (e as Error).message })
    }
  }

  /** A deletion the pilot asked for: listed and evented like the policy's. */
  deleted(fileName: string, size: number, reason: DeletionCause, detail: string): void {
    if (reason === 'manual') {
      try {
        this.o.settings.delete(KEPT_NAMESPACE, fileName)
      } catch {
        // a stale mark on a name that no longer exists harms nothing
      }
    }
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
      if (e.type === 'recording' && (e.data as { active?: boolean }).active === false) this.run('a recording finished')
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
      files.map((f) => ({ fileName: f.fileName, size: f.size, mtimeMs: f.mtimeMs, kept: kept.has(f.fileName), active: active.has(f.fileName) })),
      store.disk().free,
      now,
    )
    this.lastRun = new Date(now).toISOString()
    for (const d of plan.deletions) {
      // Checked again at the moment of deletion: a mark or a recording may have started since the plan.
      const gone = await store.removeIf(d.fileName, () => !this.kept().has(d.fileName))
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
  }
}
