// Recordings: list, rename, delete, download (with Range), disk usage, zip downloads of a
// selection (background CRC pass, then a streamed ZIP64-correct archive with an exact length), and
// retention (an opt-in policy that deletes the oldest finished recordings; files marked kept stay).
// Reads config.recordingsDir; the streamer (when present) says which files are still being written.
import { Elysia, t } from 'elysia'
import { existsSync } from 'node:fs'
import { HttpError, LimitError, RequestValidationError, conflict, notFound, valueError } from '../../core/errors'
import { hangUpSignal, isHead, streamResponse } from '../../core/front'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { typed } from '../../core/validation'
import { DiskModel, KeptModel, RecordingModel, RetentionPolicyModel, RetentionStateModel, ZipStatusModel } from '../../core/schemas'
import { RecordingError, RecordingStore, type RecordingFile } from '../../drivers/storage/recordings'
import { ZipError, ZipJobs } from '../../drivers/storage/zipjobs'
import { readTextTrack, toAss, toCsv } from '../../drivers/storage/telemetry'
import { isKept, Retention } from './retention'
import { MAX_NAME_BYTES, NEW_RECORDING_NAME_PATTERN, RECORDING_NAME_PATTERN, recordingNameOf, timestamp } from '../../core/naming'

const RecordingList = t.Array(RecordingModel, {
  description: "Newest first. A recording still being written also carries `in_progress: true`; one the pilot marked kept, `kept: true`; one with the vehicle's telemetry as a subtitle track, `telemetry: true` (its sidecars: GET /api/recordings/{name}/telemetry.ass and .csv).",
})

// What the store refuses (core/naming.ts), said in the document so clients never send it.
const RecordingName = t.String({
  minLength: 1,
  maxLength: MAX_NAME_BYTES,
  pattern: RECORDING_NAME_PATTERN,
  examples: ['exploreHD_2026-11-22_14-38-36.mkv', 'exploreHD_2026-11-22_14-38-36'],
  description: `a recording's file name, with or without its extension: no separators, no leading dot, no '..', no control characters; at most ${MAX_NAME_BYTES} bytes in UTF-8`,
})
const NewRecordingName = t.String({
  minLength: 1,
  maxLength: MAX_NAME_BYTES,
  pattern: NEW_RECORDING_NAME_PATTERN,
  examples: ['dive-42.mkv', 'wreck survey 2.mkv'],
  description: `the new file name with the same extension: as a recording name, and none of : * ? " < > |, no space at either end; at most ${MAX_NAME_BYTES} bytes in UTF-8`,
})
const TokenParam = t.String({ minLength: 1, examples: ['0123456789abcdef0123456789abcdef'] })
const ZipRequest = t.Array(RecordingName, { minItems: 1 })
const ZipDownloadQuery = t.Object({ token: TokenParam })

const CRC_NAMESPACE = 'recordings.crc32'

const MIME: Record<string, string> = {
  mp4: 'video/mp4',
  m4v: 'video/mp4',
  mov: 'video/quicktime',
  mkv: 'video/x-matroska',
  webm: 'video/webm',
  avi: 'video/x-msvideo',
  jpg: 'image/jpeg',
}

/** Content-Disposition with an ASCII fallback and the exact UTF-8 name (RFC 6266 / 5987). */
function disposition(kind: 'inline' | 'attachment', fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\]/g, '_')
  return `${kind}; filename="${fallback}"; filename*=UTF-8''${encodeURIComponent(fileName)}`
}

/** RecordingError / ZipError / errno → the HTTP error model. Anything else is rethrown (a bug → 500). */
function httpError(e: unknown): unknown {
  if (e instanceof RecordingError) {
    if (e.kind === 'invalid') return valueError(['path', e.field ?? 'name'], e.message, e.input)
    return e.kind === 'not_found' ? notFound(e.message) : conflict(e.message)
  }
  if (e instanceof ZipError) return e.kind === 'not_found' ? notFound(e.message) : conflict(e.message)
  const code = (e as NodeJS.ErrnoException)?.code
  if (code === 'ENOENT') return notFound('The recording is gone (it was renamed or deleted meanwhile)')
  if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return new HttpError(502, `The recordings file system refused (${code}): ${(e as Error).message}`)
  return e
}

const mapped = async <T>(work: () => Promise<T> | T): Promise<T> => {
  try {
    return await work()
  } catch (e) {
    throw httpError(e)
  }
}

/**
 * Serves one recording with single-range support (206/416); `?download=true` or /download makes it an
 * attachment. The file is opened once (RecordingStore.open: no symlink followed) and every byte comes
 * from that descriptor, which closes when the answer is sent or the client leaves.
 */
async function serveFile(store: RecordingStore, found: RecordingFile, request: Request, attachment: boolean): Promise<Response> {
  const opened = await store.open(found)
  const { file } = opened
  const headers: Record<string, string> = {
    'content-type': MIME[file.format] ?? 'application/octet-stream',
    'content-disposition': disposition(attachment ? 'attachment' : 'inline', file.fileName),
    'accept-ranges': 'bytes',
    'last-modified': new Date(file.mtimeMs).toUTCString(),
  }
  const range = request.headers.get('range')
  const m = range ? /^bytes=(\d*)-(\d*)$/.exec(range.trim()) : null
  if (!m || (m[1] === '' && m[2] === '')) return streamResponse(opened.range(0, file.size - 1), { headers: { ...headers, 'content-length': String(file.size) } })
  let start: number
  let end: number
  if (m[1] === '') {
    start = Math.max(0, file.size - Number(m[2]))
    end = file.size - 1
  } else {
    start = Number(m[1])
    end = m[2] === '' ? file.size - 1 : Math.min(Number(m[2]), file.size - 1)
  }
  if (start >= file.size || start > end) {
    await opened.close()
    return new Response(JSON.stringify({ detail: `Range '${range}' is outside the recording (${file.size} bytes)` }), {
      status: 416,
      headers: { 'content-type': 'application/json', 'content-range': `bytes */${file.size}` },
    })
  }
  return streamResponse(opened.range(start, end), {
    status: 206,
    headers: { ...headers, 'content-length': String(end - start + 1), 'content-range': `bytes ${start}-${end}/${file.size}` },
  })
}

/**
 * Telemetry sidecars read at once: each walks its file's block headers (an hour of 30 fps is ~108k
 * small reads), so a client asking for many cannot keep the recordings disk busy (docs/limits.md).
 */
export const MAX_SIDECAR_READS = 2

const SIDECAR = {
  ass: { type: 'text/x-ssa; charset=utf-8', render: (cues: Parameters<typeof toAss>[0], title: string) => toAss(cues, title) },
  csv: { type: 'text/csv; charset=utf-8', render: (cues: Parameters<typeof toCsv>[0]) => toCsv(cues) },
} as const

export default definePlugin({
  name: 'recordings',
  // Streamed from a descriptor with an exact Content-Length: the zip, and a recording (played or downloaded).
  exactLength: ['/api/recordings/zip/download', '/api/recordings/:name', '/api/recordings/:name/download'],
  flags: {
    'retention-interval': {
      help: 'seconds between passes of the retention policy (it also runs when a recording ends, and every 2 s while recording below the free-space minimum)',
      default: 60,
      parse: (raw) => {
        const n = Number(raw)
        if (!Number.isInteger(n) || n < 1 || n > 86400) throw new Error('expected whole seconds from 1 to 86400')
        return n
      },
    },
  },
  setup({ config, registry, events, store: settings, log, lifecycle, refusals, flags }) {
    const store = new RecordingStore(config.recordingsDir, () => [...(registry.get('streamer')?.activeRecordings() ?? []), ...(registry.get('audio')?.activeRecordings() ?? [])])
    // CRCs survive a restart, so zipping recordings already zipped once needs no first pass.
    const crcs = { get: (id: string) => settings.get<number>(CRC_NAMESPACE, id), set: (id: string, crc: number) => settings.set(CRC_NAMESPACE, id, crc) }
    const jobs = new ZipJobs({
      ttlSeconds: config.zipTokenTtlSeconds,
      crcs,
      onProgress: (status) => {
        events.emit('zip_progress', status)
        // Bun prints the error that cut a transfer short as a bare stack; this is its log record.
        if (status.state === 'failed') log.warn('zip job failed', { token: status.token, error: status.error })
      },
    })

    let sidecarReads = 0
    /** GET /api/recordings/{name}/telemetry.{ass,csv}: the recording's own text track, as a sidecar file. */
    const sidecar = (name: string, kind: keyof typeof SIDECAR) =>
      mapped(async () => {
        const store = await dir()
        const file = await store.find(name)
        if (sidecarReads >= MAX_SIDECAR_READS) {
          registry.limitHit('telemetry_sidecar_reads')
          throw new LimitError(503, `${MAX_SIDECAR_READS} telemetry sidecars are being read now, the most at once; try again in 1 s`, 1)
        }
        sidecarReads++
        let cues
        try {
          cues = file.format === 'mkv' ? await readTextTrack(file.path) : null
        } finally {
          sidecarReads--
        }
        if (!cues) throw notFound(`${file.fileName} has no telemetry: it was recorded without an autopilot on the MAVLink link (--mavlink)`)
        const stem = file.fileName.slice(0, file.fileName.lastIndexOf('.'))
        return new Response(SIDECAR[kind].render(cues, file.fileName), {
          headers: { 'content-type': SIDECAR[kind].type, 'content-disposition': disposition('inline', `${stem}.telemetry.${kind}`) },
        })
      })

    let ready = false
    let initError: string | null = null
    const initStore = async () => {
      try {
        await store.init()
        ready = true
        initError = null
        // Forget the CRCs of files that are gone or changed.
        const current = new Set((await store.files()).map((f) => f.identity))
        for (const { key } of settings.list(CRC_NAMESPACE)) if (!current.has(key)) settings.delete(CRC_NAMESPACE, key)
      } catch (e) {
        initError = (e as Error).message
      }
    }
    /** The directory, created on first use if start() could not (a card mounted later). */
    const dir = async () => {
      if (ready && !existsSync(store.directory)) ready = false // removed under us (a card swapped): make it again
      if (!ready) await initStore()
      if (!ready) throw new HttpError(503, `The recordings directory ${config.recordingsDir} is unavailable: ${initError}`)
      return store
    }
    const retention = new Retention({ settings, events, log, store: dir, intervalSeconds: Number(flags['retention-interval'] ?? 60) })
    const list = async () => {
      const kept = retention.kept()
      return (await (await dir()).list()).map((r) => {
        if (!r.segments) return kept.has(r.path.slice(r.path.lastIndexOf('/') + 1)) ? { ...r, kept: true as const } : r
        // A segmented recording is kept when each of its files is (a mark on the recording covers them all).
        const segments = r.segments.map((seg) => (isKept(kept, seg.file) ? { ...seg, kept: true as const } : seg))
        return { ...r, segments, ...(segments.every((seg) => seg.kept) && { kept: true as const }) }
      })
    }
    const retentionState = async () => {
      const free = await dir().then((s) => s.disk().free, () => null)
      return retention.state(free)
    }
    /** A segmented recording named as a whole: its recording name (`<stem>.mkv`), the key of a mark covering every segment. */
    const wholeRecording = (name: string, files: RecordingFile[]) => {
      const recording = recordingNameOf(files[0]!.fileName)
      return recording !== files[0]!.fileName && (files.length > 1 || files[0]!.fileName !== name) ? recording : null
    }
    const keep = (name: string, kept: boolean) =>
      mapped(async () => {
        const files = await (await dir()).findAll(name, 'recording_path')
        // One mark on the recording: the segments cut after it are kept too (a press while recording).
        const recording = wholeRecording(name, files)
        const whole = files.length === 1 ? recordingNameOf(files[0]!.fileName) : null
        // One segment cannot be unmarked while the mark on its recording covers it: say so rather than answer kept: false.
        if (!kept && !recording && whole !== null && whole !== files[0]!.fileName && retention.kept().has(whole))
          throw conflict(`'${files[0]!.fileName}' is kept because its recording '${whole}' is: take the mark off the recording (DELETE /api/recordings/${whole}/keep)`)
        if (recording) retention.setKept(recording, kept, files.map((f) => f.fileName))
        else for (const file of files) retention.setKept(file.fileName, kept)
        return { name: recording ?? (files.length === 1 ? files[0]!.fileName : name), kept }
      })
    const links = (token: string) => ({ status_url: `/api/recordings/zip/${token}`, download_url: `/api/recordings/zip/download?token=${token}` })
    const zipStatus = (token: string) => ({ ...jobs.status(token), ...links(token) })

    lifecycle({
      start: async () => {
        await initStore()
        retention.start()
      },
      stop: async () => {
        await retention.stop()
        jobs.stop()
      },
      health: () =>
        ready ? { state: 'ok' as const, directory: store.directory } : { state: 'degraded' as const, detail: `recordings directory unavailable: ${initError}` },
    })

    // Static paths first: /disk and /zip/* must never be taken for recording names.
    return new Elysia({ name: 'periscope:recordings' })
      .get('/api/recordings', () => mapped(list), {
        ...docs({ tag: 'recordings', summary: 'Every recording in the recordings directory, newest first', ok: RecordingList, errors: [503] }),
      })
      .get('/api/recordings/disk', () => mapped(async () => (await dir()).disk()), {
        ...docs({ tag: 'recordings', summary: 'Size, used and free bytes of the file system holding the recordings', ok: DiskModel, errors: [502, 503] }),
      })
      .get('/api/recordings/retention', () => mapped(retentionState), {
        ...docs({
          tag: 'recordings',
          summary: 'The retention policy, the free bytes now, and the recent deletions with their reason',
          ok: RetentionStateModel,
        }),
      })
      .post(
        '/api/recordings/retention',
        typed({ body: RetentionPolicyModel }, ({ body }) =>
          mapped(async () => {
            retention.setPolicy(body)
            return retentionState()
          }),
        ),
        {
          ...docs({
            tag: 'recordings',
            summary: 'Save the retention policy (applied at once); answers the state as GET does',
            description:
              'Opt-in. `min_free_gb`: delete the oldest finished recordings until that much is free; `max_age_days`: delete finished recordings last written longer ago. ' +
              'A recording being written (a RECORDING stream or a recording made while streaming), one written in the last 10 s, or one marked kept is never deleted. ' +
              'Each deletion is logged (GET /api/logs) and sent as a `recording_deleted` event with its reason.',
            body: RetentionPolicyModel,
            ok: RetentionStateModel,
            errors: [507],
          }),
        },
      )
      .post(
        '/api/recordings/zip/prepare',
        typed({ body: ZipRequest }, ({ body, request }) =>
          mapped(async () => {
            refusals.limits.take('zip_prepare', request)
            const s = await dir()
            const chosen = new Map<string, RecordingFile>()
            const missing: string[] = []
            const invalid: RequestValidationError['errors'] = []
            for (const [i, name] of body.entries()) {
              try {
                for (const f of await s.findAll(name)) chosen.set(f.fileName, f)
              } catch (e) {
                if (e instanceof RecordingError && e.kind === 'not_found') missing.push(name)
                else if (e instanceof RecordingError && e.kind === 'invalid')
                  invalid.push({ type: 'value_error', loc: ['body', i], msg: `Value error, ${e.message}`, input: name, ctx: { error: e.message } })
                else throw e
              }
            }
            if (invalid.length) throw new RequestValidationError(invalid)
            if (missing.length) throw notFound(`No such recordings: ${missing.map((n) => `'${n}'`).join(', ')}`)
            const writing = [...chosen.keys()].filter((n) => s.inProgress().has(n))
            if (writing.length) throw conflict(`Still being recorded, cannot be zipped yet: ${writing.join(', ')}`)
            const status = jobs.prepare([...chosen.values()])
            return { ...status, ...links(status.token) }
          }),
        ),
        {
          ...docs({
            tag: 'recordings',
            summary: 'Start a zip of recordings (names with or without extension); answers a token',
            description:
              'A background pass computes each CRC-32 (progress on GET /api/recordings/zip/{token} and `zip_progress` events); ' +
              'GET /api/recordings/zip/download?token=… then streams a stored (uncompressed) ZIP, ZIP64 past 4 GiB, whose exact length is known up front (Content-Length, also X-Archive-Size and archive_size). ' +
              'No temporary file is written. Unused tokens expire (--zip-token-ttl). Limited per client (429: docs/security.md).',
            body: ZipRequest,
            ok: ZipStatusModel,
            errors: [404, 409, 429, 503],
          }),
        },
      )
      .get(
        '/api/recordings/zip/download',
        typed({ query: ZipDownloadQuery }, async ({ query, request }) =>
          mapped(async () => {
            const s = await dir()
            const token = query.token
            jobs.status(token) // 404 before waiting when the token is unknown
            const { size, body } = await jobs.download(token, (name) => s.find(name).catch(() => null), (file) => s.open(file), hangUpSignal(request))
            const headers = {
              'content-type': 'application/zip',
              // Exact, known before the first byte; a transfer cut short (a file changed) fails the client.
              'content-length': String(size),
              'x-archive-size': String(size),
              'access-control-expose-headers': 'x-archive-size, content-disposition',
              'content-disposition': disposition('attachment', `recordings_${timestamp(new Date())}.zip`),
            }
            // HEAD: the exact length, and no read of any recording.
            if (isHead(request)) return new Response(null, { headers })
            return streamResponse(body, { headers })
          }),
        ),
        {
          ...docs({
            tag: 'recordings',
            summary: 'Download a prepared zip (waits while it is still preparing)',
            description:
              'A recording renamed, deleted or changed since prepare answers 409; if that happens during the transfer, the transfer is cut short of its Content-Length, so no client takes it for a whole archive. ' +
              'Content-Length is exact (also in X-Archive-Size); HEAD answers it without reading any recording.',
            query: ZipDownloadQuery,
            ok: { content: { 'application/zip': { schema: { type: 'string', format: 'binary' } } } },
            errors: [404, 409, 503],
          }),
        },
      )
      .get('/api/recordings/zip/:token', ({ params }) => mapped(() => zipStatus(params.token)), {
        ...docs({
          tag: 'recordings',
          summary: 'State of a zip job: preparing/ready/downloading/failed/cancelled, bytes done/total',
          ok: ZipStatusModel,
          errors: [404],
          pathParams: { token: TokenParam },
        }),
      })
      .delete('/api/recordings/zip/:token', ({ params }) => mapped(() => ({ ...jobs.cancel(params.token), ...links(params.token) })), {
        ...docs({
          tag: 'recordings',
          summary: 'Cancel a zip job (its preparing pass and any download of it)',
          ok: ZipStatusModel,
          errors: [404],
          pathParams: { token: TokenParam },
        }),
      })
      .get('/api/recordings/:name/download', ({ params, request }) => mapped(async () => { const store = await dir(); return serveFile(store, await store.find(params.name), request, true) }), {
        ...docs({
          tag: 'recordings',
          summary: 'Download one recording (Range requests supported)',
          ok: { content: { 'video/*': { schema: { type: 'string', format: 'binary' } } } },
          errors: [404, 503],
          pathParams: { name: RecordingName },
        }),
      })
      .post('/api/recordings/:recording_path/keep', ({ params }) => keep(params.recording_path, true), {
        ...docs({
          tag: 'recordings',
          summary: 'Mark a recording kept: the retention policy never deletes it (the pilot still can); a segmented recording named whole is kept whole, segments cut later included',
          ok: KeptModel,
          errors: [404, 409, 503, 507],
          pathParams: { recording_path: RecordingName },
        }),
      })
      .delete('/api/recordings/:recording_path/keep', ({ params }) => keep(params.recording_path, false), {
        ...docs({
          tag: 'recordings',
          summary: 'Take the kept mark off a recording',
          ok: KeptModel,
          errors: [404, 409, 503, 507],
          pathParams: { recording_path: RecordingName },
        }),
      })
      .get('/api/recordings/:name/telemetry.ass', ({ params }) => sidecar(params.name, 'ass'), {
        ...docs({
          tag: 'recordings',
          summary: "The vehicle's telemetry of a recording as an ASS subtitle file, for players that load one beside the video",
          description:
            "Read from the recording's own subtitle track (recorded while an autopilot was on the MAVLink link): one cue per change, each lasting until the next. " +
            `404 when the recording has no telemetry; 503 while ${MAX_SIDECAR_READS} sidecars are being read (Retry-After).`,
          ok: { content: { 'text/x-ssa': { schema: { type: 'string' } } }, description: 'Advanced SubStation Alpha (v4.00+)' },
          errors: [404, 503],
          pathParams: { name: RecordingName },
        }),
      })
      .get('/api/recordings/:name/telemetry.csv', ({ params }) => sidecar(params.name, 'csv'), {
        ...docs({
          tag: 'recordings',
          summary: "The vehicle's telemetry of a recording as CSV: one row per cue, its times in seconds of the recording",
          description:
            'Columns: time_s, end_s, utc, armed, mode, depth_m, heading_deg, roll_deg, pitch_deg, water_temp_c, lat, lon, battery_v, battery_pct, stream; an empty cell where the autopilot did not report the value. ' +
            `404 when the recording has no telemetry; 503 while ${MAX_SIDECAR_READS} sidecars are being read (Retry-After).`,
          ok: { content: { 'text/csv': { schema: { type: 'string' } } }, description: 'CSV with a header row (RFC 4180)' },
          errors: [404, 503],
          pathParams: { name: RecordingName },
        }),
      })
      .get(
        '/api/recordings/:name',
        ({ params, request, query }) =>
          mapped(async () => {
            const store = await dir()
            return serveFile(store, await store.find(params.name), request, ['true', '1', 'yes'].includes(String(query.download).toLowerCase()))
          }),
        {
          ...docs({
            tag: 'recordings',
            summary: 'One recording, for playing (inline) or, with ?download=true, as an attachment; Range supported',
            ok: { content: { 'video/*': { schema: { type: 'string', format: 'binary' } } } },
            errors: [404, 503],
            pathParams: { name: RecordingName },
          }),
        },
      )
      .patch(
        '/api/recordings/:old_name/:new_name',
        ({ params }) =>
          mapped(async () => {
            const s = await dir()
            // rename() says what is wrong with either name, in its order; the kept marks follow the files.
            for (const [from, to] of await s.rename(params.old_name, params.new_name)) retention.renamed(from, to)
            return list()
          }),
        {
          ...docs({
            tag: 'recordings',
            summary: 'Rename a recording (full file names, same extension); answers the list',
            description:
              'Plain file names only: no separators, "..", control characters, leading dot, or names over 255 bytes. A taken name or a recording in progress answers 409.',
            ok: RecordingList,
            errors: [404, 409, 502, 503],
            pathParams: { old_name: RecordingName, new_name: NewRecordingName },
          }),
        },
      )
      .delete(
        '/api/recordings/:recording_path',
        ({ params }) =>
          mapped(async () => {
            const removed = await (await dir()).remove(params.recording_path)
            for (const gone of removed) retention.deleted(gone.fileName, gone.size, 'manual', 'deleted by request (DELETE /api/recordings)')
            const recording = removed.length ? wholeRecording(params.recording_path, removed) : null
            if (recording) retention.forget(recording)
            return list()
          }),
        {
          ...docs({
            tag: 'recordings',
            summary: 'Delete a recording; answers the list (200 [] when it was the last one)',
            ok: RecordingList,
            errors: [404, 409, 502, 503],
            pathParams: { recording_path: RecordingName },
          }),
        },
      )
  },
})
