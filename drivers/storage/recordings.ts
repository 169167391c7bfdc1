// The recordings directory: listing (with durations cached by size and mtime), safe rename and
// delete, lookup by name, disk usage. No HTTP here: failures are RecordingError with a kind the
// plugin maps to a status. Every name is checked as a plain file name and then looked up among the
// directory's own regular files (lstat, so symlinks are never followed), so no request reaches a
// file outside the directory. What is read is opened once (open()): without following a symlink, and
// checked on the descriptor, so a name swapped between the check and the read cannot point elsewhere.
import { lstat, mkdir, open as openFile, readdir, readlink, realpath, rename, unlink, type FileHandle } from 'node:fs/promises'
import { constants, realpathSync, statfsSync, type Stats } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { diskUsage, type DiskUsage } from '../../core/disk'
import type { Recording } from '../../core/types'
import { readDuration, formatDuration } from './duration'
import { hasTelemetryTrack } from './telemetry'
import { badNewNameReason, extensionOf, kindOf, RECORDING_EXTENSIONS, recordingNameOf, segmentFileName, segmentOf, unsafeNameReason } from '../../core/naming'

export type RecordingErrorKind = 'invalid' | 'not_found' | 'conflict'

export class RecordingError extends Error {
  constructor(
    readonly kind: RecordingErrorKind,
    message: string,
    /** For 'invalid': which input was refused (old_name, new_name, …) and its value. */
    readonly field?: string,
    readonly input?: unknown,
  ) {
    super(message)
    this.name = 'RecordingError'
  }
}

/** A recording file as found on disk; `identity` changes when the file is replaced, renamed over or written. */
export interface RecordingFile {
  fileName: string
  path: string
  format: string
  size: number
  mtimeMs: number
  createdMs: number
  identity: string
}

/** Same device, inode, size and mtime: the same unchanged file. */
export const fileIdentity = (s: Stats) => `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}`

export interface ListedRecording extends Recording {
  /** A still (a JPEG taken by IMAGE_START_CAPTURE or capture_still) or a recording (video, or sound alone). */
  kind: 'recording' | 'still'
  /** Present (true) only while the streamer is still writing the file. */
  in_progress?: true
  /** Present (true) only when the pilot marked the file kept: the retention policy never deletes it. */
  kept?: true
  /** Present (true) only when the file carries the vehicle's telemetry as a text track (its sidecars exist; in segments: the first does). */
  telemetry?: true
  /**
   * A recording written in segments (`<name>_seg001.mkv` …): its files in order. The recording's own
   * `path` is then `<dir>/<name>.<format>`, which names them all (no file has that name); duration and size are the sums.
   */
  segments?: ListedSegment[]
}

export interface ListedSegment {
  /** The file's name: download it alone with GET /api/recordings/{file}. */
  file: string
  duration: string
  size: string
  in_progress?: true
  kept?: true
  /** The file carries the vehicle's telemetry track: its own sidecars are at /api/recordings/{file}/telemetry.ass and .csv. */
  telemetry?: true
}

export type { DiskUsage }

/**
 * A recording opened for reading: its descriptor, and the file as the descriptor sees it (size,
 * mtime and identity from fstat, not from the name). Read it with `range`; close it when done.
 */
export interface OpenRecording {
  file: RecordingFile
  handle: FileHandle
  /** Bytes `start` to `end` (inclusive) from the descriptor; the descriptor is closed when they are read, or the reading stops. */
  range(start: number, end: number): AsyncIterable<Uint8Array>
  close(): Promise<void>
}

/**
 * O_NOFOLLOW: a symlink put in the name is refused (ELOOP), not followed. O_NONBLOCK: a FIFO put there
 * cannot hold the open (regular files read the same). O_NOCTTY: nor can a terminal become ours.
 */
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | constants.O_NOCTTY

/** A descriptor's bytes as an iterable whose return() closes it, even when it was never read. */
function rangeOf(handle: FileHandle, start: number, end: number, close: () => Promise<void>): AsyncIterable<Uint8Array> {
  return {
    [Symbol.asyncIterator]() {
      // Bun's native file reader on the descriptor (pread: the position is the slice's), about twice as fast as reads from JS.
      let chunks: AsyncIterator<Uint8Array> | null = null
      const finish = async () => {
        await chunks?.return?.()
        await close()
      }
      return {
        async next() {
          chunks ??= Bun.file(handle.fd).slice(start, end + 1).stream()[Symbol.asyncIterator]()
          try {
            const got = await chunks.next()
            if (got.done) await finish()
            return got
          } catch (e) {
            await finish()
            throw e
          }
        },
        async return() {
          await finish()
          return { done: true, value: undefined }
        },
      }
    },
  }
}

const pad = (n: number) => String(n).padStart(2, '0')
const localTime = (ms: number) => {
  const d = new Date(ms)
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
}
export const formatSize = (bytes: number) => `${(bytes / 1048576).toFixed(2)} MB`

/** File-system calls in flight at once while listing: enough to hide each call's latency. */
const PARALLEL = 16

/** The recording a segment file belongs to, as the listing names it (`<stem>.<ext>`); null for a file that is no segment. */
function groupOf(fileName: string): string | null {
  const recording = recordingNameOf(fileName)
  return recording === fileName ? null : recording
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R> | R): Promise<R[]> {
  const out = new Array<R>(items.length)
  let next = 0
  const worker = async () => {
    while (next < items.length) {
      const i = next++
      out[i] = await fn(items[i]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
  return out
}

export class RecordingStore {
  private durations = new Map<string, { key: string; seconds: number | null; telemetry?: boolean }>()
  private queue: Promise<unknown> = Promise.resolve()
  private dir: string

  /** `activePaths`: absolute paths the streamer is writing right now (none when there is no streamer). */
  constructor(
    dir: string,
    private activePaths: () => string[] = () => [],
  ) {
    this.dir = dir
  }

  get directory(): string {
    return this.dir
  }

  /** Creates the directory when missing and pins its real path (a symlinked directory is resolved once). */
  async init(): Promise<void> {
    await mkdir(this.dir, { recursive: true })
    this.dir = await realpath(this.dir)
    await this.recoverParts()
  }

  /**
   * A next segment is written as `.<name>.part` until its first bytes (drivers/gstreamer/recorder.ts); a
   * kill -9 or a power cut just then leaves one. At start (nothing records yet): one with bytes gets its
   * name (those are frames of the recording), an empty one is removed.
   */
  private async recoverParts(): Promise<void> {
    for (const entry of await readdir(this.dir, { withFileTypes: true })) {
      const name = /^\.(.+)\.part$/.exec(entry.name)?.[1]
      if (!entry.isFile() || !name || !RECORDING_EXTENSIONS.includes(extensionOf(name))) continue
      const part = join(this.dir, entry.name)
      try {
        if ((await lstat(part)).size === 0) await unlink(part)
        else if (!(await lstat(join(this.dir, name)).catch(() => null))) await rename(part, join(this.dir, name))
      } catch {
        // gone meanwhile, or not ours to change: listed by nobody (hidden) either way
      }
    }
  }

  /** File names (in this directory) being written right now. */
  inProgress(): Set<string> {
    const names = new Set<string>()
    for (const p of this.activePaths()) {
      try {
        if (realpathSync(dirname(p)) === this.dir) names.add(basename(p))
      } catch {
        // a path in a directory that is gone is not ours
      }
    }
    return names
  }

  /**
   * The file being written among `files`, by its name. When they are a segmented recording taken whole, a
   * segment of it being written counts too, though it is not on disk under its name yet (a next segment
   * is written under a hidden name until its first bytes).
   */
  private writingAmong(files: RecordingFile[], whole: boolean): string | undefined {
    const active = this.inProgress()
    const found = files.find((f) => active.has(f.fileName))
    if (found || !whole) return found?.fileName
    const groups = new Set(files.map((f) => groupOf(f.fileName)).filter((g) => g !== null))
    return [...active].find((name) => groups.has(groupOf(name)!))
  }

  /** Every recording file: regular files (not symlinks) with a recording extension. */
  async files(): Promise<RecordingFile[]> {
    const entries = await readdir(this.dir, { withFileTypes: true })
    const names = entries.filter((e) => e.isFile() && !e.name.startsWith('.') && RECORDING_EXTENSIONS.includes(extensionOf(e.name))).map((e) => e.name)
    const files = await mapLimit(names, PARALLEL, (name) => this.stat(name))
    return files.filter((f): f is RecordingFile => f !== null)
  }

  private async stat(fileName: string): Promise<RecordingFile | null> {
    const path = join(this.dir, fileName)
    try {
      const s = await lstat(path)
      if (!s.isFile()) return null
      return {
        fileName,
        path,
        format: extensionOf(fileName),
        size: s.size,
        mtimeMs: s.mtimeMs,
        createdMs: s.birthtimeMs > 0 ? s.birthtimeMs : s.mtimeMs,
        identity: fileIdentity(s),
      }
    } catch {
      return null // vanished between readdir and lstat
    }
  }

  /** The listing, newest first: one entry per recording, a segmented one with its files in `segments`. */
  async list(): Promise<ListedRecording[]> {
    const files = await this.files()
    const active = this.inProgress()
    const seen = new Set<string>()
    const seconds = await mapLimit(files, PARALLEL, (f) => (active.has(f.fileName) ? (f.mtimeMs - f.createdMs) / 1000 : this.duration(f)))
    const telemetry = await mapLimit(files, PARALLEL, (f) => this.telemetry(f))
    const out: (ListedRecording & { createdMs: number })[] = []
    const groups = new Map<string, { files: RecordingFile[]; seconds: (number | null)[]; telemetry: boolean[] }>()
    for (const [i, f] of files.entries()) {
      seen.add(f.path)
      const segment = segmentOf(f.fileName)
      if (segment) {
        const key = `${segment.stem}.${segment.ext}`
        const group = groups.get(key) ?? { files: [], seconds: [], telemetry: [] }
        group.files.push(f)
        group.seconds.push(seconds[i]!)
        group.telemetry.push(telemetry[i]!)
        groups.set(key, group)
        continue
      }
      const writing = active.has(f.fileName)
      const dot = f.fileName.lastIndexOf('.')
      const rec: ListedRecording & { createdMs: number } = {
        path: f.path,
        name: f.fileName.slice(0, dot),
        format: f.format,
        kind: kindOf(f.fileName),
        duration: formatDuration(seconds[i]!),
        size: formatSize(f.size),
        created: localTime(f.createdMs),
        createdMs: f.createdMs,
      }
      if (writing) rec.in_progress = true
      if (telemetry[i]) rec.telemetry = true
      out.push(rec)
    }
    for (const [key, group] of groups) {
      const order = group.files.map((f, i) => ({ f, s: group.seconds[i]!, t: group.telemetry[i]!, n: segmentOf(f.fileName)!.index })).sort((a, b) => a.n - b.n)
      const first = order[0]!.f
      const known = order.filter((o) => o.s !== null)
      const rec: ListedRecording & { createdMs: number } = {
        path: join(this.dir, key),
        name: key.slice(0, key.lastIndexOf('.')),
        format: first.format,
        kind: 'recording',
        duration: formatDuration(known.length ? known.reduce((sum, o) => sum + o.s!, 0) : null),
        size: formatSize(order.reduce((sum, o) => sum + o.f.size, 0)),
        created: localTime(first.createdMs),
        createdMs: first.createdMs,
        segments: order.map(({ f, s: secs, t }) => ({ file: f.fileName, duration: formatDuration(secs), size: formatSize(f.size), ...(active.has(f.fileName) && { in_progress: true as const }), ...(t && { telemetry: true as const }) })),
      }
      if ([...active].some((name) => groupOf(name) === key)) rec.in_progress = true
      if (order[0]!.t) rec.telemetry = true
      out.push(rec)
    }
    for (const path of this.durations.keys()) if (!seen.has(path)) this.durations.delete(path)
    out.sort((a, b) => b.createdMs - a.createdMs || a.name.localeCompare(b.name))
    return out.map(({ createdMs: _, ...rec }) => rec)
  }

  /** Whether a Matroska file has the telemetry track; its header does not change, so once per file. */
  private async telemetry(f: RecordingFile): Promise<boolean> {
    if (f.format !== 'mkv') return false
    const cached = this.durations.get(f.path)
    if (cached?.telemetry !== undefined) return cached.telemetry
    const found = await hasTelemetryTrack(f.path)
    // Stored beside the duration (dropped with it when the file goes); a file still without its header is asked again.
    if (cached && f.size > 0) cached.telemetry = found
    return found
  }

  private async duration(f: RecordingFile): Promise<number | null> {
    const key = `${f.size}:${f.mtimeMs}`
    const cached = this.durations.get(f.path)
    if (cached?.key === key) return cached.seconds
    const seconds = await readDuration(f.path, f.format)
    this.durations.set(f.path, { key, seconds })
    return seconds
  }

  /**
   * The file a client means by `name`: its exact file name, or its name without the extension when exactly
   * one recording has it. A recording of several segments is no one file: 409, naming them. `field` names the input in errors.
   */
  async find(name: string, field = 'name'): Promise<RecordingFile> {
    const found = await this.findAll(name, field)
    if (found.length === 1) return found[0]!
    throw new RecordingError(
      'conflict',
      `'${name}' is a recording in ${found.length} segments (${found.map((f) => f.fileName).join(', ')}): get each by its file name, or zip them (POST /api/recordings/zip/prepare)`,
    )
  }

  /**
   * Every file of the recording a client means by `name`: a file's exact name (that file alone), or a
   * recording's name with or without its extension (a segmented recording: all its segments, in order).
   */
  async findAll(name: string, field = 'name'): Promise<RecordingFile[]> {
    const why = unsafeNameReason(name)
    if (why) throw new RecordingError('invalid', why, field, name)
    const ext = extensionOf(name)
    const exact = RECORDING_EXTENSIONS.includes(ext) ? await this.stat(name) : null
    if (exact) return [exact]
    const files = await this.files()
    const stemOf = (f: RecordingFile) => f.fileName.slice(0, f.fileName.lastIndexOf('.'))
    const wanted = RECORDING_EXTENSIONS.includes(ext) ? { stem: name.slice(0, -ext.length - 1), ext } : { stem: name, ext: null }
    const segments = files
      .map((f) => ({ f, seg: segmentOf(f.fileName) }))
      .filter(({ seg }) => seg && seg.stem === wanted.stem && (wanted.ext === null || seg.ext === wanted.ext))
      .sort((a, b) => a.seg!.index - b.seg!.index)
      .map(({ f }) => f)
    const byStem = wanted.ext === null ? files.filter((f) => stemOf(f) === name) : []
    const formats = new Set(segments.map((f) => f.format))
    if (segments.length && !byStem.length && formats.size === 1) return segments
    const matches = [...byStem.map((f) => f.fileName), ...[...formats].map((e) => `${wanted.stem}.${e} (segments)`)]
    if (matches.length > 1)
      throw new RecordingError('conflict', `'${name}' matches ${matches.length} recordings (${matches.join(', ')}); give the file name with its extension`)
    if (byStem.length === 1) return byStem
    throw new RecordingError('not_found', `No recording named '${name}' in the recordings directory`)
  }

  /**
   * Opens a recording found by find() for reading, once: never through a symlink, and only if what the
   * descriptor holds is a regular file in this directory under that name (the kernel's own path for it,
   * /proc/self/fd, so a directory swapped for a symlink is caught too). Everything read comes from it.
   */
  async open(found: RecordingFile): Promise<OpenRecording> {
    const gone = () => new RecordingError('not_found', `'${found.fileName}' is no longer a recording in the recordings directory (it was replaced or removed)`)
    let handle: FileHandle
    try {
      handle = await openFile(found.path, OPEN_FLAGS)
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code
      if (code === 'ELOOP' || code === 'ENOENT' || code === 'ENXIO') throw gone()
      throw e
    }
    let closed = false
    const close = async () => {
      if (closed) return
      closed = true
      await handle.close().catch(() => {})
    }
    try {
      const s = await handle.stat()
      if (!s.isFile()) throw gone()
      const resolved = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => null)
      if (resolved !== null && resolved !== found.path) throw gone()
      const file: RecordingFile = { ...found, size: s.size, mtimeMs: s.mtimeMs, identity: fileIdentity(s) }
      return { file, handle, range: (start, end) => rangeOf(handle, start, end, close), close }
    } catch (e) {
      await close()
      throw e
    }
  }

  /** Runs rename/delete one at a time, so a check and the change it guards cannot interleave. */
  private exclusive<T>(work: () => Promise<T>): Promise<T> {
    const run = this.queue.then(work, work)
    this.queue = run.catch(() => undefined)
    return run
  }

  /**
   * Renames a recording: one file, or every segment of a segmented one (`<new stem>_seg001.mkv` …, so
   * they stay one recording). Answers the file names renamed, old to new.
   */
  async rename(oldName: string, newName: string): Promise<[string, string][]> {
    return this.exclusive(async () => {
      // Both names' syntax before either is looked up: a bad new name is a 422 even when the old one is missing.
      const oldWhy = unsafeNameReason(oldName)
      if (oldWhy) throw new RecordingError('invalid', oldWhy, 'old_name', oldName)
      const why = badNewNameReason(newName)
      if (why) throw new RecordingError('invalid', why, 'new_name', newName)
      const newExt = extensionOf(newName)
      const oldExt = extensionOf(oldName)
      if (!newExt) throw new RecordingError('invalid', `the new name has no extension; keep the recording's (${oldExt ? `'.${oldExt}'` : RECORDING_EXTENSIONS.map((e) => `.${e}`).join(', ')})`, 'new_name', newName)
      const sources = await this.findAll(oldName, 'old_name')
      const format = sources[0]!.format
      if (newExt !== format)
        throw new RecordingError('invalid', `the extension cannot change ('.${format}' to '.${newExt}')`, 'new_name', newName)
      // A segmented recording named by its recording name moves as a whole; a file named exactly moves alone.
      const whole = sources.length > 1 || sources[0]!.fileName !== oldName
      const writing = this.writingAmong(sources, whole)
      if (writing) throw new RecordingError('conflict', `'${writing}' is still being recorded; stop the recording first`)
      const newStem = newName.slice(0, -newExt.length - 1)
      const moves: [RecordingFile, string][] = sources.map((f) => {
        const seg = whole ? segmentOf(f.fileName) : null
        return [f, seg ? segmentFileName(newStem, seg.index, seg.ext) : newName]
      })
      if (moves.every(([f, to]) => f.fileName === to)) return []
      for (const [f, to] of moves) {
        const existing = await lstat(join(this.dir, to)).catch(() => null)
        // On a case-insensitive card (exFAT) the "existing" target may be the source itself: a case change.
        const sameFile = existing && (await lstat(f.path)).ino === existing.ino
        if (existing && !sameFile) throw new RecordingError('conflict', `A file named '${to}' already exists in the recordings directory`)
      }
      const done: [string, string][] = []
      for (const [f, to] of moves) {
        await rename(f.path, join(this.dir, to))
        this.durations.delete(f.path)
        done.push([f.fileName, to])
      }
      return done
    })
  }

  /** Deletes a recording (every segment of a segmented one); answers the files deleted. */
  async remove(name: string): Promise<RecordingFile[]> {
    return this.exclusive(async () => {
      const files = await this.findAll(name, 'recording_path')
      const writing = this.writingAmong(files, files.length > 1 || files[0]!.fileName !== name)
      if (writing) throw new RecordingError('conflict', `'${writing}' is still being recorded; stop the recording first`)
      for (const file of files) {
        await unlink(file.path) // unlink never follows a symlink, and findAll() only answers regular files
        this.durations.delete(file.path)
      }
      return files
    })
  }

  /**
   * Deletes one file (its exact name) unless it is being written or `allowed()` now says no; answers the
   * file deleted, or null when it was not (gone already, written, refused). For the retention policy.
   */
  async removeIf(fileName: string, allowed: () => boolean): Promise<RecordingFile | null> {
    return this.exclusive(async () => {
      const file = await this.stat(fileName)
      if (!file || this.inProgress().has(fileName) || !allowed()) return null
      await unlink(file.path)
      this.durations.delete(file.path)
      return file
    })
  }

  disk(): DiskUsage {
    return diskUsage(this.dir)
  }
}
