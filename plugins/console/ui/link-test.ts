// "Test the tether": the link between this browser and the vehicle, measured over the HTTP the console
// uses anyway (plugins/link), in under 10 s, while any video keeps playing: the round trip and its jitter
// (pings one after another), the throughput down (a download read as it comes) and up (an upload sized
// from the download's rate), and the loss the stream's WebRTC viewers saw meanwhile (their own counts, as
// the service's health carries them: TCP, which the transfers ride, shows no loss).
import { ApiError, get, request, serviceUrl, savedToken } from './api'
import type { Device } from './types'

export interface LinkFigures {
  /** Vehicle to this browser, and back (megabits per second). */
  downMbps: number
  upMbps: number
  /** The median round trip of the pings (ms), and their jitter: the mean change from one to the next. */
  roundTripMs: number
  jitterMs: number
  /** The worst share of video packets a WebRTC viewer lost during the test; null with none watching. */
  videoLoss: number | null
  seconds: number
}

export type LinkStep = 'round trip' | 'download' | 'upload'

const PINGS = 10
/** Each transfer's time: long enough to pass a link's first burst, short enough for the whole test to stay under 10 s. */
const TRANSFER_MS = 3000
/** The most the vehicle sends or takes in one transfer (plugins/link). */
const MAX_DOWNLOAD = 64 << 20
const MAX_UPLOAD = 15 << 20
const MIN_UPLOAD = 256 << 10

const now = () => performance.now()

/** The median and the mean change between consecutive values. */
export function roundTrips(rtts: number[]): { roundTripMs: number; jitterMs: number } {
  const sorted = [...rtts].sort((a, b) => a - b)
  const jitter = rtts.slice(1).reduce((sum, r, i) => sum + Math.abs(r - rtts[i]!), 0) / Math.max(1, rtts.length - 1)
  return { roundTripMs: sorted[Math.floor(sorted.length / 2)] ?? 0, jitterMs: jitter }
}

/** Bits a second of `bytes` read between `from` and `to` (ms). */
export const mbps = (bytes: number, ms: number) => (ms > 0 ? (bytes * 8) / (ms * 1000) : 0)

async function download(): Promise<number> {
  const token = savedToken()
  const stop = new AbortController()
  const res = await fetch(serviceUrl(`/api/link/download?bytes=${MAX_DOWNLOAD}`), { cache: 'no-store', headers: token ? { authorization: `Bearer ${token}` } : {}, signal: stop.signal })
  if (!res.ok || !res.body) throw new ApiError(res.status, ((await res.json().catch(() => ({}))) as { detail?: string }).detail ?? `the download answered ${res.status}`)
  const reader = res.body.getReader()
  // Timed from the end of the first chunk (the request's own round trip and the link's first burst left out).
  let first: number | null = null
  let last = 0
  let bytes = 0
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) break
      const at = now()
      if (first === null) first = at
      else bytes += value.length
      last = at
      if (at - first >= TRANSFER_MS) break
    }
  } finally {
    stop.abort()
  }
  return mbps(bytes, first === null ? 0 : last - first)
}

async function upload(bytes: number, roundTripMs: number): Promise<number> {
  const body = new Uint8Array(bytes)
  crypto.getRandomValues(body.subarray(0, 65536)) // random head: no link compresses the upload into a faster figure
  for (let at = 65536; at < bytes; at += 65536) body.copyWithin(at, 0, Math.min(65536, bytes - at))
  const start = now()
  const answer = await request('POST', '/api/link/upload', { type: 'application/octet-stream', text: body }, { timeoutMs: 3 * TRANSFER_MS })
  const elapsed = now() - start
  // The vehicle's own timing of what came after the first chunk, when the body came in chunks; else this
  // page's (the answer comes half a round trip after the last byte arrived, the request began half one before).
  const timed = JSON.parse(answer.text) as { timed_bytes: number; seconds: number }
  return timed.seconds > 0.5 ? mbps(timed.timed_bytes, timed.seconds * 1000) : mbps(bytes, elapsed - roundTripMs)
}

/** The worst loss any stream's WebRTC viewers say now (their last 2 s), or null with none saying. */
async function videoLoss(): Promise<number | null> {
  try {
    const losses = (await get<Device[]>('/api/devices')).flatMap((d) => (d.stream_status?.health?.viewer_loss ?? null) === null ? [] : [d.stream_status!.health!.viewer_loss!])
    return losses.length ? Math.max(...losses) : null
  } catch {
    return null
  }
}

/** Runs the test; `step` is told what it measures now. Rejects with the service's sentence when a part is refused. */
export async function testLink(step: (s: LinkStep) => void): Promise<LinkFigures> {
  const began = now()
  step('round trip')
  const rtts: number[] = []
  for (let i = 0; i < PINGS; i++) {
    const sent = now()
    await request('GET', '/api/link/ping', undefined, { timeoutMs: 2000 })
    rtts.push(now() - sent)
  }
  const { roundTripMs, jitterMs } = roundTrips(rtts)
  // The video's loss, read each second while the transfers fill the link.
  let worstLoss: number | null = null
  let watching = true
  const lossWatch = (async () => {
    while (watching) {
      const loss = await videoLoss()
      if (loss !== null) worstLoss = Math.max(worstLoss ?? 0, loss)
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
  })()
  try {
    step('download')
    const downMbps = await download()
    step('upload')
    const size = Math.max(MIN_UPLOAD, Math.min(MAX_UPLOAD, Math.round(((downMbps * 1e6) / 8) * (TRANSFER_MS / 1000))))
    const upMbps = await upload(size, roundTripMs)
    return { downMbps, upMbps, roundTripMs, jitterMs, videoLoss: worstLoss, seconds: (now() - began) / 1000 }
  } finally {
    watching = false
    await lossWatch
  }
}
