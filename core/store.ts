// Settings store: SQLite (bun:sqlite) in WAL mode in the data dir. Values are JSON under
// (namespace, key); each write is its own transaction, so a kill -9 leaves the last committed state.
// The schema is versioned with PRAGMA user_version; MIGRATIONS[i] takes version i to i + 1.
import { Database } from 'bun:sqlite'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'

const MIGRATIONS: string[] = [
  `CREATE TABLE settings (
     namespace TEXT NOT NULL,
     key TEXT NOT NULL,
     value TEXT NOT NULL,
     updated_at TEXT NOT NULL,
     PRIMARY KEY (namespace, key)
   ) WITHOUT ROWID`,
]

export class SettingsStore {
  private constructor(private readonly db: Database) {}

  static open(dataDir: string): SettingsStore {
    mkdirSync(dataDir, { recursive: true })
    const db = new Database(join(dataDir, 'periscope.sqlite'), { create: true, strict: true })
    db.exec('PRAGMA journal_mode = WAL')
    db.exec('PRAGMA synchronous = FULL') // a setting acknowledged over HTTP survives a power cut
    db.exec('PRAGMA busy_timeout = 5000')
    const store = new SettingsStore(db)
    store.migrate()
    return store
  }

  get version(): number {
    return (this.db.query('PRAGMA user_version').get() as { user_version: number }).user_version
  }

  private migrate(): void {
    const from = this.version
    if (from > MIGRATIONS.length) {
      throw new Error(`settings database has schema version ${from}, newer than this Periscope (${MIGRATIONS.length}); refusing to touch it`)
    }
    for (let v = from; v < MIGRATIONS.length; v++) {
      this.db.transaction(() => {
        this.db.exec(MIGRATIONS[v]!)
        this.db.exec(`PRAGMA user_version = ${v + 1}`)
      })()
    }
  }

  get<T>(namespace: string, key: string): T | undefined {
    const row = this.db.query('SELECT value FROM settings WHERE namespace = ? AND key = ?').get(namespace, key) as { value: string } | null
    return row ? (JSON.parse(row.value) as T) : undefined
  }

  set(namespace: string, key: string, value: unknown): void {
    this.db
      .query(
        `INSERT INTO settings (namespace, key, value, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
      )
      .run(namespace, key, JSON.stringify(value), new Date().toISOString())
  }

  delete(namespace: string, key: string): void {
    this.db.query('DELETE FROM settings WHERE namespace = ? AND key = ?').run(namespace, key)
  }

  list<T>(namespace: string): { key: string; value: T }[] {
    const rows = this.db.query('SELECT key, value FROM settings WHERE namespace = ? ORDER BY key').all(namespace) as { key: string; value: string }[]
    return rows.map((r) => ({ key: r.key, value: JSON.parse(r.value) as T }))
  }

  /** Runs several writes atomically. */
  transaction<T>(fn: () => T): T {
    return this.db.transaction(fn)()
  }

  close(): void {
    this.db.close()
  }
}
