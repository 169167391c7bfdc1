// Structured logs: one JSON object per line on stderr, so journald and jq both read them.
import type { LogLevel } from './config'

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 }

export interface Logger {
  /** Whether a level is written, so callers can skip building fields nobody reads. */
  enabled(level: LogLevel): boolean
  debug(msg: string, fields?: Record<string, unknown>): void
  info(msg: string, fields?: Record<string, unknown>): void
  warn(msg: string, fields?: Record<string, unknown>): void
  error(msg: string, fields?: Record<string, unknown>): void
  child(fields: Record<string, unknown>): Logger
}

export function createLogger(level: LogLevel, base: Record<string, unknown> = {}, write: (line: string) => void = (line) => void process.stderr.write(line + '\n')): Logger {
  const emit = (lvl: LogLevel, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < RANK[level]) return
    const entry: Record<string, unknown> = { time: new Date().toISOString(), level: lvl, msg, ...base, ...fields }
    if (entry.err instanceof Error) entry.err = { name: entry.err.name, message: entry.err.message, stack: entry.err.stack }
    write(JSON.stringify(entry))
  }
  return {
    enabled: (lvl) => RANK[lvl] >= RANK[level],
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(level, { ...base, ...fields }, write),
  }
}
