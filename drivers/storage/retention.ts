// Retention, the pure policy: given the recordings (size, when each was last written, kept, being
// written) and the disk's free bytes, which to delete and why. No I/O here (plugins/recordings runs it,
// deletes, logs and events each deletion); tested in tests/contract/retention.test.ts.

export interface RetentionPolicy {
  /** Off by default: nothing is ever deleted unless the pilot turns it on. */
  enabled: boolean
  /** Keep at least this many GB (1 GB = 2^30 bytes) free; 0 = no free-space rule. */
  min_free_gb: number
  /** Delete finished recordings last written more than this many days ago; 0 = no age rule. */
  max_age_days: number
}

export const DEFAULT_POLICY: RetentionPolicy = { enabled: false, min_free_gb: 0, max_age_days: 0 }

export const GB = 1024 ** 3
export const DAY_MS = 86_400_000

/**
 * A file last written this recently counts as being written, whatever the streamer says: a recorder
 * that is starting has created its file before the streamer lists its path.
 */
export const RECENT_WRITE_MS = 10_000

export interface RetentionCandidate {
  fileName: string
  size: number
  /** When the file was last written: a finished recording's end. Its age, and the order (oldest first). */
  mtimeMs: number
  kept: boolean
  /** Being written now (a stream's or a record-while-streaming job's file). */
  active: boolean
}

export type DeletionReason = 'max_age' | 'min_free'

export interface PlannedDeletion {
  fileName: string
  size: number
  reason: DeletionReason
  /** One sentence for the log, the event and the console. */
  detail: string
}

export interface RetentionPlan {
  deletions: PlannedDeletion[]
  /** Bytes still missing to reach min_free_gb after every deletion allowed (kept and active files stay): 0 when met. */
  shortBytes: number
}

/** Under a GB in MB, so a small card's figure still reads. */
const amount = (bytes: number) => (bytes < GB ? `${(bytes / 1024 ** 2).toFixed(1)} MB` : `${(bytes / GB).toFixed(2)} GB`)
const days = (ms: number) => `${(ms / DAY_MS).toFixed(1)} days`

/** Which recordings to delete, oldest first; never a kept one, never one being (or just) written. */
export function planRetention(policy: RetentionPolicy, files: RetentionCandidate[], freeBytes: number, nowMs: number): RetentionPlan {
  if (!policy.enabled) return { deletions: [], shortBytes: 0 }
  const deletable = files
    .filter((f) => !f.kept && !f.active && nowMs - f.mtimeMs >= RECENT_WRITE_MS)
    .sort((a, b) => a.mtimeMs - b.mtimeMs || a.fileName.localeCompare(b.fileName))
  const deletions: PlannedDeletion[] = []
  let free = freeBytes
  const rest: RetentionCandidate[] = []
  for (const f of deletable) {
    const age = nowMs - f.mtimeMs
    if (policy.max_age_days > 0 && age > policy.max_age_days * DAY_MS) {
      deletions.push({ fileName: f.fileName, size: f.size, reason: 'max_age', detail: `last written ${days(age)} ago, beyond the ${policy.max_age_days}-day limit` })
      free += f.size
    } else rest.push(f)
  }
  const want = policy.min_free_gb * GB
  if (want <= 0) return { deletions, shortBytes: 0 }
  for (const f of rest) {
    if (free >= want) break
    deletions.push({ fileName: f.fileName, size: f.size, reason: 'min_free', detail: `${amount(free)} free, below the ${policy.min_free_gb} GB to keep free; the oldest finished recording goes first` })
    free += f.size
  }
  // Whole bytes: the policy's GB may be a fraction, and the API answers an integer.
  return { deletions, shortBytes: Math.max(0, Math.ceil(want - free)) }
}
