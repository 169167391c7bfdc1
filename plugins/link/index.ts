// The link test: what the console's "Test the tether" measures between the pilot's browser and the
// vehicle, over the same HTTP the pilot's video and API use. A ping (round trip and its jitter, timed by
// the browser), a download of incompressible bytes (the vehicle to the pilot) and an upload (the pilot to
// the vehicle), each timed by the browser as it reads or sends them. Transfers are bounded in size, one at
// a time per client and two in all, rate-limited per client, and served only to the vehicle's own pages
// (a page elsewhere cannot make the vehicle fill its tether). docs/network.md says how to read it.
import { Type as t } from '@sinclair/typebox'
import { Elysia } from 'elysia'
import { randomBytes } from 'node:crypto'
import { HttpError, unavailable } from '../../core/errors'
import { hangUpSignal } from '../../core/front'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { typed } from '../../core/validation'

/** The most one download sends: 3 s of a 170 Mbit/s link; a faster link's test ends on time, not on bytes. */
export const MAX_DOWNLOAD_BYTES = 64 << 20
/** The most one upload carries (under the front's 16 MiB cap on any body). */
export const MAX_UPLOAD_BYTES = 15 << 20
/** Transfers at once, all clients together: each holds a socket's worth of the vehicle's CPU. */
const MAX_TRANSFERS = 2
/** The bytes sent, repeated: random, so no proxy or link compresses them into a faster figure. */
const CHUNK = randomBytes(256 << 10)

const DownloadQuery = t.Object({
  bytes: t.Integer({ minimum: 1, maximum: MAX_DOWNLOAD_BYTES, description: `How many bytes to send (at most ${MAX_DOWNLOAD_BYTES})` }),
})
const PingModel = t.Object({ server_time: t.Number({ description: "The vehicle's clock as it answered, in ms since the Unix epoch" }) })
const UploadModel = t.Object({
  bytes: t.Integer({ description: 'The bytes of the body the vehicle read' }),
  timed_bytes: t.Integer({ description: 'Those that came after its first chunk…' }),
  seconds: t.Number({ description: '…and the time they took to come (0: the body came at once, as one chunk)' }),
})

export default definePlugin({
  name: 'link',
  setup({ refusals }) {
    let transfers = 0

    /**
     * One transfer of a client, if it may start: the vehicle's own pages only (a no-cors request from a
     * page elsewhere says `Sec-Fetch-Site: cross-site` or `same-site`), its bucket, one at a time per
     * client, MAX_TRANSFERS in all. Returns what ends it.
     */
    const transfer = (request: Request): (() => void) => {
      const site = request.headers.get('sec-fetch-site')
      if (site === 'cross-site' || site === 'same-site') throw new HttpError(403, 'A link test is run from the vehicle\'s own pages (the console), not from another site')
      const release = refusals.limits.hold('link_transfers', request, 1, () => 'One link test transfer at a time per client: wait for the one running to end')
      try {
        if (transfers >= MAX_TRANSFERS) throw unavailable(`${MAX_TRANSFERS} link test transfers are running already (other clients'): try again in a few seconds`)
        refusals.limits.take('link_transfer', request)
      } catch (err) {
        release()
        throw err
      }
      transfers++
      let ended = false
      return () => {
        if (ended) return
        ended = true
        transfers--
        release()
      }
    }

    return new Elysia({ name: 'periscope:link' })
      .get('/api/link/ping', () => ({ server_time: performance.timeOrigin + performance.now() }), {
        ...docs({
          tag: 'network',
          summary: "The link test's ping: a tiny answer with the vehicle's clock",
          description: 'The console times a few of these one after another for the round trip and its jitter (Test the tether, docs/network.md).',
          ok: PingModel,
        }),
      })
      .get(
        '/api/link/download',
        typed({ query: DownloadQuery }, ({ query, request }) => {
          const end = transfer(request)
          const hangUp = hangUpSignal(request)
          let left = query.bytes
          const body = new ReadableStream<Uint8Array>(
            {
              pull(controller) {
                if (left <= 0 || hangUp?.aborted) {
                  end()
                  return controller.close()
                }
                const n = Math.min(left, CHUNK.length)
                left -= n
                controller.enqueue(n === CHUNK.length ? CHUNK : CHUNK.subarray(0, n))
              },
              cancel: end,
            },
            { highWaterMark: 2 },
          )
          hangUp?.addEventListener('abort', end, { once: true })
          return new Response(body, { headers: { 'content-type': 'application/octet-stream', 'content-length': String(query.bytes), 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } })
        }),
        {
          ...docs({
            tag: 'network',
            summary: "The link test's download: `bytes` random bytes from the vehicle",
            description:
              `For the console's Test the tether (docs/network.md), which times them as they come. At most ${MAX_DOWNLOAD_BYTES} bytes; one transfer at a time per client (429), ${MAX_TRANSFERS} in all (503), a few per client a minute (429); from the vehicle's own pages only (403).`,
            query: DownloadQuery,
            ok: { content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } }, description: 'The bytes' },
            errors: [403, 429, 503],
          }),
        },
      )
      .post(
        '/api/link/upload',
        async ({ request }) => {
          const end = transfer(request)
          try {
            let bytes = 0
            // Timed from the end of the first chunk to the last (the request's own way here left out).
            let first: { at: number; bytes: number } | null = null
            let last = 0
            const reader = request.body?.getReader()
            for (;;) {
              const chunk = await reader?.read()
              if (!chunk || chunk.done) break
              bytes += chunk.value.length
              last = performance.now()
              first ??= { at: last, bytes }
              if (bytes > MAX_UPLOAD_BYTES) throw new HttpError(413, `A link test upload is at most ${MAX_UPLOAD_BYTES} bytes`)
            }
            const seconds = first ? (last - first.at) / 1000 : 0
            return { bytes, timed_bytes: first ? bytes - first.bytes : 0, seconds }
          } finally {
            end()
          }
        },
        {
          parse: 'none',
          ...docs({
            tag: 'network',
            summary: "The link test's upload: any bytes to the vehicle, which reads and drops them",
            description: `For the console's Test the tether (docs/network.md), which times the upload. At most ${MAX_UPLOAD_BYTES} bytes (413); the same limits as the download (403, 429, 503).`,
            requestContent: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
            ok: UploadModel,
            errors: [403, 429, 503],
          }),
        },
      )
  },
})
