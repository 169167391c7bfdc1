// Settings store: SQLite (bun:sqlite) in WAL mode in the data dir. Values are JSON under
// (namespace, key); each write is its own transaction, so a kill -9 leaves the last committed state.
// A full or read-only disk answers writes with 507 and never keeps the service from starting.
// The schema is versioned with PRAGMA user_version; MIGRATIONS[i] takes version i to i + 1.
import { Database } from 'bun:sqlite'
import { accessSync, constants, existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs'
import { join } from 'node:path'
import { HttpError } from './errors'

const MIGRATIONS: string[] = [
  `CREATE TABLE settings (
     namespace TEXT NOT NULL,
     key TEXT NOT NULL,
     value TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (namespace, key)
   ) WITHOUT ROWID`,
]

const schemaVersion = (db: Database) => (db.query('PRAGMA user_version').get() as { user_version: number }).user_version

function migrate(db: Database): void {
  const from = schemaVersion(db)
  if (from > MIGRATIONS.length) {
    throw new Error(`settings database has schema version ${from}, newer than this Periscope (${MIGRATIONS.length}); refusing to touch it`)
  }
  for (let v = from; v < MIGRATIONS.length; v++) {
    db.transaction(() => {
      db.exec(MIGRATIONS[v]!)
      db.exec(`PRAGMA user_version = ${v + 1}`)
    })()
  }
}

/**
 * The saved settings as a copy in memory, for a card SQLite cannot open: WAL must create its index file
 * even to read, which a full or read-only card refuses. Changes still in the WAL after a crash are not
 * in it (after a crash the index file exists, so a full card opens normally). Empty when there is none.
 */
function savedSnapshot(dataDir: string): Database {
  try {
    const bytes = new Uint8Array(readFileSync(join(dataDir, 'periscope.sqlite')))
    if (bytes.length >= 100) {
      bytes[18] = 1 // the header's WAL read/write versions back to 1: a memory database has no WAL
      bytes[19] = 1
      return Database.deserialize(bytes)
    }
  } catch {
    // no database yet, or unreadable: the defaults
  }
  return new Database(':memory:', { strict: true })
}

/** The errno names of a disk that cannot take a write, as the file system calls report them. */
const DISK_ERRNOS = ['EROFS', 'ENOSPC', 'EDQUOT', 'EIO', 'EACCES', 'EPERM']

/** SQLite's (or the file system's) answer when the disk cannot take a write (full, failing, read-only, or not ours to write). */
function storageFailure(e: unknown): boolean {
  const code = String((e as { code?: unknown })?.code ?? '')
  return code === 'SQLITE_FULL' || ['SQLITE_IOERR', 'SQLITE_READONLY', 'SQLITE_CANTOPEN'].some((c) => code.startsWith(c)) || DISK_ERRNOS.includes(code)
}

const corrupt = (e: unknown) => /^SQLITE_(NOTADB|CORRUPT)/.test(String((e as { code?: unknown })?.code ?? ''))

/** Renames the database and its WAL files aside with a timestamp; answers the new name of the database. */
function setAside(dataDir: string): string {
  const stamp = new Date().toISOString().replace(/[:.]/g, '-')
  const kept = join(dataDir, `periscope.sqlite.damaged-${stamp}`)
  for (const suffix of ['', '-wal', '-shm']) {
    const from = join(dataDir, `periscope.sqlite${suffix}`)
    if (existsSync(from)) renameSync(from, kept + suffix)
  }
  return kept
}

export class SettingsStore {
  /** Why the last write failed (a full or read-only disk), until one succeeds; null when all is well. */
  problem: string | null = null
  /** Something the pilot should know since start (a damaged database set aside); null when nothing. */
  notice: string | null = null

  private constructor(
    private db: Database,
    private readonly dataDir: string,
    /** False while the settings are a copy in memory: the database could not be opened for writing. */
    private persistent: boolean,
  ) {}

  /**
   * Opens the settings in `dataDir`. A full or read-only card must not keep the service from starting
   * (the pilot needs it to delete recordings): the settings are then read as saved, and writes answer
   * 507 until there is room again.
   */
  static open(dataDir: string): SettingsStore {
    let db: Database | null = null
    try {
      mkdirSync(dataDir, { recursive: true }) // a read-only card refuses even this (EROFS) when the directory is new
      db = SettingsStore.connect(dataDir)
      const store = new SettingsStore(db, dataDir, true)
      migrate(store.db)
      const check = (store.db.query('PRAGMA quick_check').get() as { quick_check: string }).quick_check
      if (check !== 'ok') throw Object.assign(new Error(`settings database damaged: ${check}`), { code: 'SQLITE_CORRUPT' })
      return store
    } catch (e) {
      db?.close()
      if (corrupt(e)) {
        // A card that lied about a flush can leave a damaged file. The vehicle must still come up: the
        // file is kept beside (for recovery by hand) and the service starts from first-seen defaults.
        let kept: string
        try {
          kept = setAside(dataDir)
        } catch (renameError) {
          if (!storageFailure(renameError)) throw renameError
          // Not even a rename (a read-only card): defaults in memory, the damaged file left where it is.
          const store = new SettingsStore(new Database(':memory:', { strict: true }), dataDir, false)
          migrate(store.db)
          store.problem = store.explain(renameError)
          store.notice = `The settings database is damaged (${(e as Error).message}) and could not be set aside; Periscope started from defaults`
          return store
        }
        const store = SettingsStore.open(dataDir)
        store.notice = `The settings database was damaged (${(e as Error).message}); it is kept as ${kept} and Periscope started from defaults`
        return store
      }
      if (!storageFailure(e)) throw e
      const store = new SettingsStore(savedSnapshot(dataDir), dataDir, false)
      migrate(store.db)
      store.problem = store.explain(e)
      return store
    }
  }

  private static connect(dataDir: string): Database {
    const db = new Database(join(dataDir, 'periscope.sqlite'), { create: true, strict: true })
    try {
      db.exec('PRAGMA journal_mode = WAL')
      db.exec('PRAGMA synchronous = FULL') // a setting acknowledged over HTTP survives a power cut
      db.exec('PRAGMA busy_timeout = 5000')
      return db
    } catch (e) {
      db.close()
      throw e
    }
  }

  /** Why the disk refused (`refusal`: the error, when it names the reason), in words a pilot can act on. */
  private explain(refusal?: unknown): string {
    const where = `the disk holding Periscope's settings (${this.dataDir})`
    let code = String((refusal as { code?: unknown })?.code ?? '')
    if (!DISK_ERRNOS.includes(code)) {
      try {
        accessSync(this.dataDir, constants.W_OK)
      } catch (e) {
        code = String((e as NodeJS.ErrnoException).code)
      }
    }
    if (code === 'EROFS') return `Not saved: ${where} is read-only (a card remounted read-only after errors?)`
    if (code === 'EACCES' || code === 'EPERM') return `Not saved: ${where} is not writable by Periscope's user`
    if (code === 'EIO') return `Not saved: ${where} fails to write (EIO: a failing card?)`
    return `Not saved: ${where} is full. Free some space (delete recordings) and try again`
  }

  private checkedAt = 0

  /** For /api/health: degraded while settings cannot be saved, or after a damaged database was set aside. */
  health(): { state: 'ok' | 'degraded'; detail?: string } {
    this.recheck()
    const detail = [this.problem, this.notice].filter(Boolean).join('. ')
    return detail ? { state: 'degraded', detail } : { state: 'ok' }
  }

  /**
   * After a refused write, looks again (at most once a second) whether the disk takes a write now, with
   * one that changes nothing, so `problem` clears when the pilot deletes a recording, not at the next save.
   */
  private recheck(): void {
    if (!this.problem || Date.now() - this.checkedAt < 1000) return
    this.checkedAt = Date.now()
    try {
      this.write(() => this.db.exec(`PRAGMA user_version = ${schemaVersion(this.db)}`))
    } catch {
      // still refused: `problem` says why
    }
  }

  /** Runs a write; a full or read-only disk becomes a 507 whose detail says what to do. */
  private write<T>(fn: () => T): T {
    if (!this.persistent) this.reopen()
    try {
      const result = fn()
      this.problem = null
      return result
    } catch (e) {
      if (!storageFailure(e)) throw e
      this.problem = this.explain(e)
      throw new HttpError(507, this.problem)
    }
  }

  /** The settings were a copy in memory because the database could not be opened: try again, there may be room now. */
  private reopen(): void {
    let db: Database | null = null
    try {
      mkdirSync(this.dataDir, { recursive: true }) // missing when a read-only card refused it at start
      db = SettingsStore.connect(this.dataDir)
      migrate(db)
    } catch (e) {
      db?.close()
      if (!storageFailure(e)) throw e
      this.problem = this.explain(e)
      throw new HttpError(507, this.problem)
    }
    this.db.close()
    this.db = db
    this.persistent = true
  }

  get version(): number {
    return schemaVersion(this.db)
  }

  get<T>(namespace: string, key: string): T | undefined {
    const row = this.db.query('SELECT value FROM settings WHERE namespace = ? AND key = ?').get(namespace, key) as { value: string } | null
    return row ? (JSON.parse(row.value) as T) : undefined
  }

  set(namespace: string, key: string, value: unknown): void {
    this.write(() =>
      this.db
        .query(
          `INSERT INTO settings (namespace, key, value, updated_at) VALUES (?, ?, ?, ?)
           ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
        )
        .run(namespace, key, JSON.stringify(value), new Date().toISOString()),
    )
  }

  delete(namespace: string, key: string): void {
    this.write(() => this.db.query('DELETE FROM settings WHERE namespace = ? AND key = ?').run(namespace, key))
  }

  list<T>(namespace: string): { key: string; value: T }[] {
    const rows = this.db.query('SELECT key, value FROM settings WHERE namespace = ? ORDER BY key').all(namespace) as { key: string; value: string }[]
    return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as T }))
  }

  /** Runs several writes atomically. */
  transaction<T>(fn: () => T): T {
    return this.write(() => this.db.transaction(fn)())
  }

  close(): void {
    this.db.close()
  }
}
