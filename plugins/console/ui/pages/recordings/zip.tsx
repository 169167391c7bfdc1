// A zip of several recordings: POST /api/recordings/zip/prepare starts the service's background pass
// (a CRC-32 of each file), its `zip_progress` events move the bar, and once the job is ready the
// browser downloads the archive (its length is exact, so the browser shows real progress too); the
// job's events then say how much of it the service has sent.
import type { Static } from '@sinclair/typebox'
import { useEffect, useRef, useState } from 'preact/hooks'
import type { ZipStatusModel } from '../../../../../core/schemas'
import { api, ApiError, get, post, request, serviceUrl } from '../../api'
import { on } from '../../events'
import { ErrorLine, notify } from '../../widgets'
import { bytes } from '../../format'

export type ZipStatus = Static<typeof ZipStatusModel>

/** A job's report as an event carries it: without the links, which only the answers have. */
type ZipReport = Omit<ZipStatus, 'status_url' | 'download_url'> & Partial<Pick<ZipStatus, 'status_url' | 'download_url'>>

/**
 * The newer of two reports on one job, the links kept. Events and answers can cross (a small zip is
 * ready before the prepare answer arrives): a job never goes back to preparing, and its byte counts
 * never go down within one phase.
 */
function newer<T extends ZipReport>(current: T | null, next: ZipReport): T {
  if (!current || current.token !== next.token) return next as T
  if (next.state === 'preparing' && (current.state !== 'preparing' || next.bytes_done < current.bytes_done)) return current
  if (next.state === 'downloading' && current.state === 'downloading' && next.downloaded < current.downloaded) return current
  return { ...current, ...next }
}

/** Starts the browser's download of `path`, a service path (an attachment: the page stays). */
function download(path: string): void {
  const link = document.createElement('a')
  link.href = serviceUrl(path)
  link.download = ''
  document.body.appendChild(link)
  link.click()
  link.remove()
}

export interface ZipJob {
  status: ZipStatus | null
  error: string | null
  busy: boolean
  start(fileNames: string[]): Promise<void>
  cancel(): Promise<void>
  /** The archive once more (checked first, as the first time). */
  again(): void
  dismiss(): void
}

export function useZipJob(): ZipJob {
  const [status, setStatus] = useState<ZipStatus | null>(null)
  const [error, setError] = useState<string | null>(null)
  const [busy, setBusy] = useState(false)
  // Events may come before the prepare answer names the token: the latest report of every job is kept.
  const seen = useRef(new Map<string, ZipReport>())
  const token = status?.token ?? null
  const downloaded = useRef<string | null>(null)

  useEffect(() => {
    const offProgress = on('zip_progress', (report: ZipReport) => {
      seen.current.set(report.token, newer(seen.current.get(report.token) ?? null, report))
      setStatus((current) => (current?.token === report.token ? newer(current, report) : current))
    })
    return offProgress
  }, [])

  // Events missed while the stream was away: the job's state again, from the service.
  useEffect(() => {
    if (!token) return
    return on('connected', () => {
      get<ZipStatus>(`/api/recordings/zip/${token}`).then(
        (report) => setStatus((current) => newer(current, report)),
        (e: ApiError) => setError(e.detail),
      )
    })
  }, [token])

  /**
   * The browser's download, after a HEAD of it: a download the service refuses would otherwise fail
   * inside the browser's download list while this page said it was on its way. (A HEAD carries no body,
   * so the refusal is said here from its status.)
   */
  const fetchArchive = async (url: string) => {
    try {
      await request('HEAD', url)
      download(url)
    } catch (e) {
      const detail = `${e instanceof ApiError ? e.detail : String(e)}: the archive cannot be sent as it was prepared (a recording in it may have been renamed, deleted or changed since); prepare the zip again`
      setError(detail)
      notify('error', detail)
    }
  }

  // Ready after preparing: the browser downloads it, once per job.
  useEffect(() => {
    if (status?.state === 'ready' && downloaded.current !== status.token) {
      downloaded.current = status.token
      void fetchArchive(status.download_url)
    }
  }, [status?.state, status?.token])

  const start = async (fileNames: string[]) => {
    setBusy(true)
    setError(null)
    try {
      const answer = await post<ZipStatus>('/api/recordings/zip/prepare', fileNames)
      setStatus(newer(answer, seen.current.get(answer.token) ?? answer))
      // Whatever the events said before this page listened for this token.
      const now = await get<ZipStatus>(answer.status_url)
      setStatus((current) => newer(current, now))
    } catch (e) {
      const detail = e instanceof ApiError ? e.detail : String(e)
      setError(detail)
      notify('error', detail)
    } finally {
      setBusy(false)
    }
  }

  const cancel = async () => {
    if (!token) return
    try {
      setStatus(await api<ZipStatus>('DELETE', `/api/recordings/zip/${token}`))
    } catch (e) {
      const detail = e instanceof ApiError ? e.detail : String(e)
      setError(detail)
      notify('error', detail)
    }
  }

  const again = () => {
    if (!status) return
    setError(null)
    void fetchArchive(status.download_url)
  }

  return { status, error, busy, start, cancel, again, dismiss: () => (setStatus(null), setError(null)) }
}

const percent = (done: number, total: number) => (total > 0 ? Math.min(100, Math.floor((done / total) * 100)) : 100)

/** The job's bar and sentence: preparing, ready (downloading in the browser), sent, failed, cancelled. */
export function ZipProgress({ job }: { job: ZipJob }) {
  const s = job.status
  if (!s) return <ErrorLine error={job.error} />
  const files = `${s.files.length} recording${s.files.length === 1 ? '' : 's'}`
  let bar: { value: number; max: number } | null = null
  let text: string
  if (s.state === 'preparing') {
    bar = { value: s.bytes_done, max: s.bytes_total }
    text = `Preparing a zip of ${files}: ${percent(s.bytes_done, s.bytes_total)} % (${bytes(s.bytes_done)} of ${bytes(s.bytes_total)} read)`
  } else if (s.state === 'downloading') {
    bar = { value: s.downloaded, max: s.archive_size ?? s.bytes_total }
    text = `Sending the zip: ${bytes(s.downloaded)} of ${bytes(s.archive_size ?? s.bytes_total)}`
  } else if (s.state === 'ready') {
    const whole = s.archive_size !== null && s.downloaded === s.archive_size
    bar = { value: whole ? 1 : 0, max: 1 }
    text = job.error
      ? `The zip of ${files} is ready (${bytes(s.archive_size ?? 0)}) but was not downloaded.`
      : whole
        ? `The zip of ${files} was sent whole (${bytes(s.archive_size!)}).`
        : `The zip of ${files} is ready (${bytes(s.archive_size ?? 0)}): your browser is downloading it.`
  } else if (s.state === 'failed') {
    text = `The zip failed: ${s.error ?? 'no reason given'}`
  } else {
    text = 'The zip was cancelled.'
  }
  return (
    <div class={`zip-job ${s.state}`} data-zip-state={s.state} data-zip-token={s.token} role={s.state === 'failed' ? 'alert' : 'status'}>
      {bar && <progress data-zip-progress value={bar.value} max={Math.max(bar.max, 1)} aria-label="Zip progress" />}
      <span class={s.state === 'failed' ? 'error-text' : undefined}>{text}</span>
      <span class="actions">
        {s.state === 'preparing' && (
          <button type="button" class="small" onClick={() => void job.cancel()}>
            Cancel
          </button>
        )}
        {s.state === 'ready' && (
          <button type="button" class="small" data-zip-download onClick={job.again}>
            Download again
          </button>
        )}
        {s.state !== 'preparing' && s.state !== 'downloading' && (
          <button type="button" class="small" onClick={job.dismiss}>
            Close
          </button>
        )}
      </span>
      <ErrorLine error={job.error} />
    </div>
  )
}
