// Zip jobs: prepare() stats the chosen recordings and runs one background pass that computes their
// CRC-32s (cached by file identity, so a second zip of the same files is instant); download() then
// streams the archive laid out by planZip() straight from the recordings: no temporary copy on disk,
// memory flat, and an exact length known before the first byte.
//
// A recording renamed, deleted or rewritten after prepare() is caught before the response starts
// (identity check → ZipError 'changed') or, if it happens mid-transfer, by the identity check as
// each file's turn comes and by the length and CRC re-computed while streaming: the transfer is then
// cut short, so no client mistakes it for a complete archive.
import type { Static } from '@sinclair/typebox'
import { open } from 'node:fs/promises'
// zlib's CRC-32 folds with carry-less multiplies: about 12× Bun.hash.crc32 here (10 vs 123 ms for 512 MiB).
import { crc32 } from 'node:zlib'
import type { ZipStatusModel } from '../../core/schemas'
import { fileIdentity, type OpenRecording, type RecordingFile } from './recordings'
import { planZip, type ZipPlan } from './zip'

/** A job's state as the API reports it, without the links the recordings plugin adds. */
export type ZipStatus = Omit<Static<typeof ZipStatusModel>, 'status_url' | 'download_url'>
export type ZipState = ZipStatus['state']

export class ZipError extends Error {
  constructor(
    readonly kind: 'not_found' | 'changed' | 'cancelled' | 'failed' | 'busy',
    message: string,
  ) {
    super(message)
    this.name = 'ZipError'
  }
}

interface Job {
  token: string
  files: RecordingFile[]
  state: ZipState
  bytesDone: number
  bytesTotal: number
  plan: ZipPlan | null
  downloaded: number
  activeDownloads: number
  error: string | null
  expiresAt: number
  abort: AbortController
  prepared: Promise<void>
  lastEmit: number
}

const CHUNK = 1 << 20 // 1 MiB reads for the CRC pass: full disk speed, one buffer reused
const GC_EVERY = 64 << 20
const MAX_JOBS = 64 // live tokens: a client looping on prepare cannot grow the job table without bound

/** Where CRC-32s are remembered, by file identity: in memory by default, or somewhere that survives a restart. */
export interface CrcMemory {
  get(identity: string): number | undefined
  set(identity: string, crc: number): void
}

export interface ZipJobsOptions {
  ttlSeconds: number
  crcs?: CrcMemory
  /** Progress and state changes (throttled to a few per second per job). */
  onProgress?: (status: ZipStatus) => void
}

export class ZipJobs {
  private jobs = new Map<string, Job>()
  private crcs: CrcMemory
  /** CRC passes run one at a time: parallel passes would only make an SD card seek. */
  private passes: Promise<unknown> = Promise.resolve()
  private sweeper: ReturnType<typeof setInterval>

  constructor(private options: ZipJobsOptions) {
    this.crcs = options.crcs ?? boundedMap(10_000)
    this.sweeper = setInterval(() => this.sweep(), 1000)
    this.sweeper.unref?.()
  }

  /** Starts the background pass over `files` (already resolved, deduplicated) and answers the token. */
  prepare(files: RecordingFile[]): ZipStatus {
    if (this.jobs.size >= MAX_JOBS) throw new ZipError('busy', `${MAX_JOBS} zip jobs exist already; cancel some or let their tokens expire`)
    const token = crypto.randomUUID().replaceAll('-', '')
    const job: Job = {
      token,
      files,
      state: 'preparing',
      bytesDone: 0,
      bytesTotal: files.reduce((n, f) => n + f.size, 0),
      plan: null,
      downloaded: 0,
      activeDownloads: 0,
      error: null,
      expiresAt: Date.now() + this.options.ttlSeconds * 1000,
      abort: new AbortController(),
      prepared: Promise.resolve(),
      lastEmit: 0,
    }
    this.jobs.set(token, job)
    const pass = this.passes.then(() => this.computeCrcs(job))
    this.passes = pass.catch(() => undefined)
    job.prepared = pass.then(
      (crcs) => {
        job.plan = planZip(files.map((f, i) => ({ name: f.fileName, size: f.size, crc32: crcs[i]!, mtimeMs: f.mtimeMs })))
        this.setState(job, 'ready')
      },
      (e: Error) => {
        if (job.state !== 'cancelled') {
          job.error = e.message
          this.setState(job, 'failed')
        }
      },
    )
    job.prepared.catch(() => undefined)
    this.emit(job, true)
    return this.status(token)
  }

  status(token: string): ZipStatus {
    const job = this.job(token)
    return {
      token: job.token,
      state: job.state,
      files: job.files.map((f) => f.fileName),
      bytes_done: job.bytesDone,
      bytes_total: job.bytesTotal,
      archive_size: job.plan?.size ?? null,
      downloaded: job.downloaded,
      error: job.error,
      expires_at: new Date(job.expiresAt).toISOString(),
    }
  }

  /** Stops the job's pass and any download of it; the token then answers 'cancelled' until it expires. */
  cancel(token: string): ZipStatus {
    const job = this.job(token)
    job.abort.abort()
    job.error = 'cancelled by request'
    this.setState(job, 'cancelled')
    return this.status(token)
  }

  /**
   * Waits for the job to be ready, checks every file is still the one prepared, and answers the
   * exact length and the byte stream. `signal` is the client's: a hang-up ends the reads.
   * `current` re-stats a file by name (null when it is gone); `open` opens one for reading
   * (RecordingStore.open: never through a symlink), and every byte of it is read from that descriptor.
   */
  async download(
    token: string,
    current: (fileName: string) => Promise<RecordingFile | null>,
    open: (file: RecordingFile) => Promise<OpenRecording>,
    signal?: AbortSignal,
  ): Promise<{ size: number; body: AsyncGenerator<Uint8Array> }> {
    const job = this.job(token)
    await job.prepared
    if (job.state === 'cancelled') throw new ZipError('cancelled', 'This zip job was cancelled; prepare a new one')
    if (!job.plan) throw new ZipError('failed', `This zip job failed: ${job.error}`)
    for (const f of job.files) {
      const now = await current(f.fileName)
      if (!now || now.identity !== f.identity) {
        throw new ZipError('changed', `The recording '${f.fileName}' was renamed, deleted or changed after the zip was prepared; prepare a new zip`)
      }
    }
    return { size: job.plan.size, body: this.stream(job, job.plan, open, signal) }
  }

  stop(): void {
    clearInterval(this.sweeper)
    for (const job of this.jobs.values()) job.abort.abort()
    this.jobs.clear()
  }

  private job(token: string): Job {
    const job = this.jobs.get(token)
    if (!job) throw new ZipError('not_found', 'Unknown or expired zip token; prepare a new zip')
    return job
  }

  private sweep(): void {
    const now = Date.now()
    for (const [token, job] of this.jobs) {
      if (job.state === 'preparing' || job.activeDownloads > 0 || job.expiresAt > now) continue
      job.abort.abort()
      this.jobs.delete(token)
    }
  }

  private setState(job: Job, state: ZipState): void {
    job.state = state
    job.expiresAt = Date.now() + this.options.ttlSeconds * 1000
    this.emit(job, true)
  }

  private emit(job: Job, force = false): void {
    const now = Date.now()
    if (!this.options.onProgress || (!force && now - job.lastEmit < 250)) return
    job.lastEmit = now
    this.options.onProgress(this.status(job.token))
  }

  private async computeCrcs(job: Job): Promise<number[]> {
    const crcs: number[] = []
    const buffer = new Uint8Array(CHUNK)
    for (const f of job.files) {
      if (job.abort.signal.aborted) throw new Error('cancelled')
      const cached = this.crcs.get(f.identity)
      if (cached !== undefined) {
        crcs.push(cached)
        job.bytesDone += f.size
        this.emit(job)
        continue
      }
      const fh = await open(f.path, 'r')
      try {
        const s = await fh.stat()
        if (fileIdentity(s) !== f.identity) throw new Error(`'${f.fileName}' changed while the zip was being prepared`)
        let crc = 0
        for (let position = 0; position < f.size;) {
          if (job.abort.signal.aborted) throw new Error('cancelled')
          const { bytesRead } = await fh.read(buffer, 0, Math.min(CHUNK, f.size - position), position)
          if (bytesRead === 0) throw new Error(`'${f.fileName}' became shorter while the zip was being prepared`)
          crc = crc32(buffer.subarray(0, bytesRead), crc)
          position += bytesRead
          job.bytesDone += bytesRead
          this.emit(job)
        }
        crcs.push(crc)
        try {
          this.crcs.set(f.identity, crc)
        } catch {
          // A full card cannot take the remembered CRC; that costs a second pass next time, not this zip.
        }
      } finally {
        await fh.close()
      }
    }
    return crcs
  }

  private async *stream(job: Job, plan: ZipPlan, open: (file: RecordingFile) => Promise<OpenRecording>, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
    job.activeDownloads++
    job.downloaded = 0
    this.setState(job, 'downloading')
    let failure: Error | null = null
    let streamed = 0 // file bytes of this download, for the GC rhythm
    try {
      for (let i = 0; i < plan.entries.length; i++) {
        const entry = plan.entries[i]!
        const file = job.files[i]!
        yield entry.localHeader
        job.downloaded += entry.localHeader.length
        const opened = await open(file).catch(() => null)
        if (!opened) throw new ZipError('changed', `'${file.fileName}' was renamed, deleted or replaced during the download`)
        if (opened.file.identity !== file.identity) {
          await opened.close()
          throw new ZipError('changed', `'${file.fileName}' was replaced or changed during the download`)
        }
        // Read from the descriptor checked above (Bun's native reader); the length and CRC checks
        // below still catch a file rewritten in place.
        let crc = 0
        let sent = 0
        for await (const chunk of opened.range(0, file.size - 1)) {
          if (job.abort.signal.aborted || signal?.aborted) throw new ZipError('cancelled', 'the download was cancelled')
          sent += chunk.length
          if (sent > file.size) throw new ZipError('changed', `'${file.fileName}' grew during the download`)
          crc = crc32(chunk, crc)
          job.downloaded += chunk.length
          streamed += chunk.length
          this.emit(job)
          // Chunks are garbage once written, but the heap grows before it is collected: a full
          // collection every 64 MiB (a few ms) keeps the service under 110 MB RSS while zipping 10 GiB (128 MiB
          // went past 120 MB once downloads ran through node:http).
          if (Math.floor(streamed / GC_EVERY) !== Math.floor((streamed - chunk.length) / GC_EVERY)) Bun.gc(true)
          yield chunk
        }
        if (sent !== file.size) throw new ZipError('changed', `'${file.fileName}' became shorter during the download`)
        if (crc >>> 0 !== entry.source.crc32 >>> 0) throw new ZipError('changed', `'${file.fileName}' changed after the zip was prepared (CRC mismatch)`)
      }
      yield plan.trailer
      job.downloaded += plan.trailer.length
    } catch (e) {
      failure = e as Error
      throw e // cuts the response short: the client sees an incomplete transfer
    } finally {
      job.activeDownloads--
      if (job.state !== 'cancelled') {
        // A client that hung up or was cancelled leaves the job ready for another try; a changed file fails it.
        const failed = failure !== null && !(failure instanceof ZipError && failure.kind === 'cancelled')
        job.error = failure ? `download failed: ${failure.message}` : null
        this.setState(job, failed ? 'failed' : 'ready')
      }
    }
  }
}

/** An in-memory CrcMemory that forgets its oldest entries past `limit`. */
function boundedMap(limit: number): CrcMemory {
  const map = new Map<string, number>()
  return {
    get: (id) => map.get(id),
    set: (id, crc) => {
      map.set(id, crc)
      if (map.size > limit) map.delete(map.keys().next().value!)
    },
  }
}
