// Structured logs: one JSON object per line on stderr, so journald and jq both read them. Every entry
// written is also handed to the logger's subscribers: the app keeps the recent ones in a LogRing for
// GET /api/logs and the `log` event, so a pilot sees why a stream failed without a shell.
import type { LogLevel } from './config'

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error']
const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }

/** Whether `level` is at least as severe as `floor`. */
export const atLeast = (level: LogLevel, floor: LogLevel): boolean => RANK[level] >= RANK[floor]

/** One entry as written: its level, time and message, and the whole JSON line. */
export interface LogRecord {
  level: LogLevel
  time: string
  msg: string
  line: string
}

export interface Logger {
  /** Whether a level is written, so callers can skip building fields nobody reads. */
  enabled(level: LogLevel): boolean
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
  child(fields: Record<string, unknown>): Logger
  /** Every entry this logger or any logger of its family (parent, children) writes from now on; returns the unsubscribe. */
  subscribe(listener: (record: LogRecord) => void): () => void
}

export function createLogger(level: LogLevel, base: Record<string, unknown> = {}, write: (line: string) => void = (line) => void process.stderr.write(line + '\n')): Logger {
  return familyMember(level, base, write, new Set())
}

function familyMember(level: LogLevel, base: Record<string, unknown>, write: (line: string) => void, listeners: Set<(record: LogRecord) => void>): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < RANK[level]) return
    const time = new Date().toISOString()
    const entry: Record<string, unknown> = { time, level: lvl, msg, ...base, ...fields }
    // A field named like these must not disguise the entry (the key order stays: time, level, msg first).
    Object.assign(entry, { time, level: lvl, msg })
    if (entry.err instanceof Error) entry.err = { name: entry.err.name, message: entry.err.message, stack: entry.err.stack }
    const line = serialise(entry)
    write(line)
    for (const listener of listeners) {
      try {
        listener({ level: lvl, time, msg, line })
      } catch {
        // A subscriber's failure must not break the caller that logs.
      }
    }
  }
  return {
    enabled: (lvl) => RANK[lvl] >= RANK[level],
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => familyMember(level, { ...base, ...fields }, write, listeners),
    subscribe(listener) {
      listeners.add(listener)
      return () => void listeners.delete(listener)
    },
  }
}

/** JSON of an entry; one whose fields cannot be written (a BigInt, a cycle) keeps its message and says so. */
function serialise(entry: Record<string, unknown>): string {
  try {
    return JSON.stringify(entry)
  } catch (e) {
    return JSON.stringify({ time: entry.time, level: entry.level, msg: entry.msg, log_error: `fields not serialisable: ${(e as Error).message}` })
  }
}

/** One entry as GET /api/logs and the `log` event give it. */
export interface LogEntry {
  /** Increasing from 1 for each entry of this service run: pass the last one seen as `since`. */
  seq: number
  time: string
  level: LogLevel
  msg: string
  /** Everything else the entry carries: the plugin, the bus_info, the reason, the error's name and message, … */
  fields: Record<string, unknown>
}

export interface LogQuery {
  /** Only entries after this seq (the oldest first); without it, the newest. */
  since?: number
  /** Only entries at this level or above. */
  level?: LogLevel
  limit: number
}

interface Slot {
  seq: number
  level: LogLevel
  line: string
}

/** A fixed-size buffer that forgets its oldest item for each new one past `capacity`. */
class Circular<T> {
  private items: T[] = []
  private start = 0

  constructor(private readonly capacity: number) {}

  push(item: T): void {
    if (this.items.length < this.capacity) this.items.push(item)
    else {
      this.items[this.start] = item
      this.start = (this.start + 1) % this.capacity
    }
  }

  /** Oldest first. */
  toArray(): T[] {
    return this.start === 0 ? this.items.slice() : [...this.items.slice(this.start), ...this.items.slice(0, this.start)]
  }
}

/** Longer lines are kept as their time, level and message only: the ring's memory stays bounded. */
const MAX_LINE = 16 << 10

/**
 * The most recent log entries, in memory: the last `capacity` at warn and above, and apart from them the
 * last `capacity` below, so a busy client's request lines never push out the failure a pilot looks for.
 */
export class LogRing {
  private readonly serious: Circular<Slot>
  private readonly routine: Circular<Slot>
  private lastSeq = 0

  constructor(readonly capacity = 1000) {
    this.serious = new Circular(capacity)
    this.routine = new Circular(capacity)
  }

  /** The newest seq given so far (0 before any entry). */
  get newest(): number {
    return this.lastSeq
  }

  /** Keeps the record; answers its seq. */
  add(record: LogRecord): number {
    const seq = ++this.lastSeq
    const line = record.line.length <= MAX_LINE ? record.line : JSON.stringify({ time: record.time, level: record.level, msg: record.msg, truncated_bytes: record.line.length })
    ;(atLeast(record.level, 'warn') ? this.serious : this.routine).push({ seq, level: record.level, line })
    return seq
  }

  /**
   * Entries matching the query, oldest first: after `since` the oldest `limit` ones (paging forward
   * skips none), else the newest `limit`. `next_since` is what to pass as `since` to continue: the last
   * entry given when more wait, else the newest seq (smaller than `since` after a service restart).
   */
  query({ since, level, limit }: LogQuery): { entries: LogEntry[]; next_since: number } {
    const matching = mergeBySeq(this.serious.toArray(), this.routine.toArray()).filter(
      (slot) => (since === undefined || slot.seq > since) && (level === undefined || atLeast(slot.level, level)),
    )
    const chosen = since === undefined ? matching.slice(-limit) : matching.slice(0, limit)
    const cut = since !== undefined && matching.length > limit
    return { entries: chosen.map(toEntry), next_since: cut ? chosen.at(-1)!.seq : this.lastSeq }
  }

  /** One record as an entry (the `log` event's data). */
  static entry(seq: number, record: LogRecord): LogEntry {
    return toEntry({ seq, level: record.level, line: record.line })
  }
}

function mergeBySeq(a: Slot[], b: Slot[]): Slot[] {
  const out: Slot[] = []
  let i = 0
  let j = 0
  while (i < a.length || j < b.length) out.push(j >= b.length || (i < a.length && a[i]!.seq < b[j]!.seq) ? a[i++]! : b[j++]!)
  return out
}

function toEntry(slot: Slot): LogEntry {
  const { time, level: _level, msg, ...fields } = JSON.parse(slot.line) as Record<string, unknown>
  // The stack names the service's files: for the shell's log, not for every API client.
  if (fields.err && typeof fields.err === 'object') delete (fields.err as Record<string, unknown>).stack
  return { seq: slot.seq, time: String(time), level: slot.level, msg: String(msg), fields }
}
