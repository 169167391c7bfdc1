// JPEG views of the cameras for browsers and plain HTTP clients: an MJPEG stream
// (`multipart/x-mixed-replace`, which an <img> shows natively) and snapshots. Everything comes from the
// hub of the running stream (media/hub.ts), so the camera's pipeline is never touched:
// no viewer and no snapshot ever stalls the stream or costs its UDP endpoints a frame (MCM #618). An MJPG
// camera's MJPEG is its own JPEGs, depayloaded in the service, never re-encoded.
import { Elysia, t } from 'elysia'
import { conflict, HttpError, LimitError, notFound, unavailable } from '../../core/errors'
import { hangUpSignal, isHead, UNBUFFERED_BY_PROXIES } from '../../core/front'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import type { StreamHub } from '../../core/types'
import { typed } from '../../core/validation'
import { JpegFeed } from './feed'
import { Busy, GstFailure, GstRunner, gopTokens, MAX_WAITING, probeH264Decoder, rtpStream, scaleTokens, stillTokens } from './gst'
import { jpegSize } from './jpeg'

const INSTALL = 'gst-launch-1.0 not found: install gstreamer1.0-tools and gstreamer1.0-plugins-{base,good,bad,ugly} (scripts/setup/gstreamer.sh)'
/** JPEG quality where we encode (H.264 cameras, scaled snapshots, stills from raw or H.264 sources). */
const QUALITY = 85
/** The most frames per second an H.264 camera's MJPEG carries (its stream's rate when lower). */
const MAX_TRANSCODE_FPS = 30
/** How long a snapshot is served again to whoever asks (the issue: cached for up to 1 s). */
const SNAPSHOT_TTL_MS = 1000
/**
 * Frames a second an H.264 camera's snapshot decoder (kept --snapshot-warm seconds after a snapshot)
 * makes into JPEG: its newest is at most this far behind the camera, and the JPEG encoder costs little.
 */
const WARM_FPS = 5
/** How long a snapshot waits for a frame: an H.264 camera's next key frame, or a camera's first frame. */
const FRAME_TIMEOUT_MS = 10_000
/** How long decoding a kept group of pictures may take before the snapshot waits for a live frame instead. */
const GOP_DECODE_TIMEOUT_MS = 5_000
const BOUNDARY = 'periscope-frame'
/**
 * The heights a snapshot is scaled to: ?height= is rounded up to the next of these, and a height at or
 * above the camera's own is its full-size JPEG. A few sizes per capture, each scaled once and shared,
 * rather than a child per distinct height.
 */
export const SIZE_CLASSES = [120, 240, 360, 480, 720, 1080, 1440, 2160] as const
/** Seconds a client refused at the children's cap is told to wait (Retry-After). */
const RETRY_AFTER_S = 1

const SnapshotQuery = t.Object({
  height: t.Optional(
    t.Integer({
      minimum: 16,
      maximum: 4320,
      description: `Scale to at least this many rows, the width keeping the aspect: rounded up to the next of ${SIZE_CLASSES.join(', ')}; the stream's own size without it or when it is not larger`,
    }),
  ),
})

/**
 * Where a snapshot's JPEG came from (its X-Snapshot-Source): the MJPEG viewers' newest frame, the warm
 * decoder's newest, the kept group of pictures decoded, the stream's next frame, or a one-shot capture
 * of a camera that does not stream.
 */
type SnapshotSource = 'mjpeg' | 'decoder' | 'group' | 'stream' | 'capture'

interface Captured {
  jpeg: Uint8Array
  source: SnapshotSource
}

/** One capture of a camera, shared by whoever asks while it runs and for SNAPSHOT_TTL_MS after. */
interface Shot {
  id: number
  /** The running stream it was taken from (null: a camera that did not stream): a new stream takes a new one. */
  hub: StreamHub | null
  /** When the frame was taken (performance.now()); Infinity while the capture runs. */
  at: number
  captured: Promise<Captured>
  scaled: Map<number, Promise<Uint8Array>>
}

export default definePlugin({
  name: 'jpeg',
  setup({ registry, config, log, lifecycle, refusals }) {
    /** MJPEG clients per camera (--max-viewers); one more is refused with 503. */
    const maxViewers = config.maxViewers
    const gstLaunch = Bun.which('gst-launch-1.0', { PATH: process.env.PATH ?? '' })
    const runner = gstLaunch ? new GstRunner(gstLaunch, config.snapshotChildren) : null
    const feeds = new Map<string, JpegFeed>()
    /** H.264 cameras' snapshot decoders, each kept --snapshot-warm seconds after its camera's last snapshot. */
    const warm = new Map<string, { feed: JpegFeed; leave: () => void; timer?: ReturnType<typeof setTimeout> }>()
    const mjpegClients = new Map<string, number>()
    const shots = new Map<string, Shot>()
    let captures = 0

    /** The device must exist (404); GStreamer must be there (503). */
    const check = (bus_info: string): GstRunner => {
      if (!registry.deviceDirectory().device(bus_info)) throw notFound(`No device with bus_info '${bus_info}' is connected`)
      if (!runner) throw unavailable(INSTALL)
      return runner
    }

    const liveOf = (bus_info: string) => registry.get('streamer')?.live(bus_info) ?? null

    /** The camera's shared producer, made for its running stream. */
    const feedFor = (gst: GstRunner, bus_info: string, live: { hub: StreamHub; member: number }): JpegFeed => {
      const existing = feeds.get(bus_info)
      if (existing && existing.hub === live.hub) return existing
      void existing?.end(`the stream of '${bus_info}' restarted`)
      const feed: JpegFeed = new JpegFeed(bus_info, live.hub, live.member, {
        runner: gst,
        log,
        quality: QUALITY,
        maxFps: MAX_TRANSCODE_FPS,
        ended: () => feeds.get(bus_info) === feed && feeds.delete(bus_info),
      })
      feeds.set(bus_info, feed)
      return feed
    }

    /**
     * After a snapshot of an H.264 stream, a decoder of it stays (renewed by each snapshot) making JPEGs
     * at WARM_FPS, so the next snapshot is its newest frame at once rather than the group of pictures
     * decoded anew (a camera's 10 s group took 0.9 s). It costs a decode of the stream while it stays.
     */
    const keepWarm = (gst: GstRunner, bus_info: string, live: { hub: StreamHub; member: number }): void => {
      if (config.snapshotWarmSeconds <= 0 || live.hub.encoding !== 'H264') return
      let kept = warm.get(bus_info)
      if (kept && kept.feed.hub !== live.hub) {
        kept.leave()
        kept = undefined
      }
      if (!kept) {
        const feed: JpegFeed = new JpegFeed(bus_info, live.hub, live.member, {
          runner: gst,
          log,
          quality: QUALITY,
          maxFps: WARM_FPS,
          lowPriority: true,
          ended: () => {
            const now = warm.get(bus_info)
            if (now?.feed !== feed) return
            clearTimeout(now.timer)
            warm.delete(bus_info)
          },
        })
        kept = { feed, leave: feed.join({ frame: () => {}, end: () => {} }) }
        if (!feed.closed) warm.set(bus_info, kept)
      }
      clearTimeout(kept.timer)
      kept.timer = setTimeout(kept.leave, config.snapshotWarmSeconds * 1000)
    }

    /** The newest JPEG of a feed of the camera's running stream (its MJPEG's, or its warm decoder's), if it is current. */
    const current = (bus_info: string, live: { hub: StreamHub }): Captured | null => {
      for (const [feed, fps, source] of [[feeds.get(bus_info), MAX_TRANSCODE_FPS, 'mjpeg'], [warm.get(bus_info)?.feed, WARM_FPS, 'decoder']] as const) {
        const spacing = 1000 / Math.max(1, Math.min(fps, live.hub.fps))
        if (feed?.hub === live.hub && feed.latest && performance.now() - feed.latest.at < spacing + 50) return { jpeg: feed.latest.jpeg, source }
      }
      return null
    }

    const notRunning = (bus_info: string) => {
      const leader = registry.deviceDirectory().device(bus_info)?.leader
      const restart = leader ? `its leader ${leader}'s group` : 'it'
      return conflict(`The stream of '${bus_info}' is not running: start ${restart} with POST /api/devices/restart_stream {"bus_info": "${leader ?? bus_info}"}, then open the MJPEG stream`)
    }

    /** The snapshot children's cap was reached: 503, try again shortly; counted for /metrics. */
    const busy = (err: Busy) => {
      registry.limitHit('snapshot_children')
      return new LimitError(503, `Too many snapshots are being made (${err.message}; --snapshot-children ${config.snapshotChildren}); try again in ${RETRY_AFTER_S} s`, RETRY_AFTER_S)
    }

    /** A full-size JPEG of the camera now: from its running stream, else a one-shot capture of its source. */
    const capture = async (gst: GstRunner, bus_info: string): Promise<Captured> => {
      const live = liveOf(bus_info)
      if (live) {
        keepWarm(gst, bus_info, live)
        // Someone watches the MJPEG, or a snapshot came lately: the newest frame is current (no wait, no work).
        const newest = current(bus_info, live)
        if (newest) return newest
        // H.264: the hub's last group of pictures, decoded up to its newest frame, rather than a wait for the next key frame.
        const gop = live.hub.lastGop(live.member)
        if (gop.length) {
          try {
            return { jpeg: await gst.first(gopTokens(QUALITY), GOP_DECODE_TIMEOUT_MS, rtpStream(gop), true), source: 'group' }
          } catch (err) {
            if (err instanceof Busy) throw busy(err)
            log.warn('snapshot: the last group of pictures did not decode; waiting for a live frame', { bus_info, error: (err as Error).message })
          }
        }
        try {
          return { jpeg: await feedFor(gst, bus_info, live).next(FRAME_TIMEOUT_MS), source: 'stream' }
        } catch (err) {
          throw new HttpError(504, `No frame from the stream of '${bus_info}': ${(err as Error).message}`)
        }
      }
      const still = registry.deviceDirectory().stillSource(bus_info)
      if (!still) throw conflict(`'${bus_info}' has no video format to capture: configure its stream first (POST /api/devices/configure_stream)`)
      const streamer = registry.get('streamer')
      if (!streamer?.captureSource) throw unavailable('No streamer can read the camera for a capture: the gstreamer plugin is not running')
      const source = streamer.captureSource(still.member, still.stream)
      try {
        return { jpeg: await gst.first(stillTokens(source, still.member, still.stream, QUALITY), FRAME_TIMEOUT_MS, undefined, false, streamer.captureEnv?.()), source: 'capture' }
      } catch (err) {
        if (err instanceof Busy) throw busy(err)
        const reason = (err as Error).message
        if (/busy/i.test(reason)) throw conflict(`'${bus_info}' is in use by another program, so it cannot be captured: ${reason}`)
        if (err instanceof GstFailure && reason.startsWith('no frame within')) throw new HttpError(504, `'${bus_info}' gave no frame: ${reason}`)
        throw new HttpError(502, `Could not capture '${bus_info}': ${reason}`)
      }
    }

    /** At most one capture per camera at a time; a capture answers everyone for SNAPSHOT_TTL_MS. */
    const shotOf = (gst: GstRunner, bus_info: string): Shot => {
      const cached = shots.get(bus_info)
      const hub = liveOf(bus_info)?.hub ?? null
      if (cached && cached.hub === hub && performance.now() - cached.at < SNAPSHOT_TTL_MS) return cached
      const shot: Shot = { id: ++captures, hub, at: Infinity, captured: capture(gst, bus_info), scaled: new Map() }
      shots.set(bus_info, shot)
      shot.captured.then(
        () => (shot.at = performance.now()),
        () => shots.get(bus_info) === shot && shots.delete(bus_info), // a failure is not kept
      )
      return shot
    }

    /** The JPEG of the size class that `requested` rows fall in: the full-size one when that is not smaller. */
    const scaled = (gst: GstRunner, shot: Shot, jpeg: Uint8Array, requested: number): Promise<Uint8Array> => {
      const size = jpegSize(jpeg)
      if (!size) throw new HttpError(502, 'The camera sent a JPEG without a frame header; it cannot be scaled')
      const height = SIZE_CLASSES.find((h) => h >= requested) ?? Infinity
      if (height >= size.height) return Promise.resolve(jpeg)
      let out = shot.scaled.get(height)
      if (!out) {
        const width = Math.max(2, Math.round((size.width * height) / size.height / 2) * 2)
        out = gst.first(scaleTokens(width, height, QUALITY), FRAME_TIMEOUT_MS, jpeg).catch((err) => {
          shot.scaled.delete(height)
          if (err instanceof Busy) throw busy(err)
          throw new HttpError(502, `Could not scale the snapshot: ${(err as Error).message}`)
        })
        shot.scaled.set(height, out)
      }
      return out
    }

    lifecycle({
      // Which H.264 decoder this machine has, asked once off the event loop (not by the first snapshot).
      start: () => void probeH264Decoder(),
      async stop() {
        shots.clear()
        for (const kept of warm.values()) clearTimeout(kept.timer)
        await Promise.all([...feeds.values(), ...[...warm.values()].map((kept) => kept.feed)].map((feed) => feed.end('the service is stopping')))
      },
      health: () =>
        runner
          ? {
              state: 'ok',
              feeds: feeds.size,
              viewers: [...mjpegClients.values()].reduce((a, b) => a + b, 0),
              max_viewers_per_camera: maxViewers,
              transcoders: [...feeds.values()].filter((f) => f.transcoding).length,
              warm_snapshot_decoders: [...warm.values()].filter((kept) => kept.feed.transcoding).length,
              snapshot_children: { running: runner.children, max: runner.maxChildren, most: runner.stats.most, refused: runner.stats.refused },
            }
          : { state: 'down', detail: INSTALL },
    })

    // Where a device says it can be watched: MJPEG while its stream runs, a snapshot whenever GStreamer is here.
    const at = (origin: URL, bus_info: string, view: string) => `${origin.origin}/api/streams/${encodeURIComponent(bus_info)}/${view}`
    registry.addWatchLink('mjpeg', (bus_info, origin) => (runner && liveOf(bus_info) ? at(origin, bus_info, 'mjpeg') : null), 'jpeg')
    registry.addWatchLink('snapshot', (bus_info, origin) => (runner ? at(origin, bus_info, 'snapshot.jpg') : null), 'jpeg')
    registry.addViewerCount('mjpeg', (bus_info) => mjpegClients.get(bus_info) ?? 0, 'jpeg')

    const tag = 'cameras'
    const pathParams = ['bus_info']
    return new Elysia({ name: 'periscope:jpeg' })
      .get(
        '/api/streams/:bus_info/mjpeg',
        ({ params: { bus_info }, request }) => {
          const gst = check(bus_info)
          registry.require('streamer') // 503 when nothing can stream
          const live = liveOf(bus_info)
          if (!live) throw notRunning(bus_info)
          const headers = { 'content-type': `multipart/x-mixed-replace; boundary=${BOUNDARY}`, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...UNBUFFERED_BY_PROXIES }
          if (isHead(request)) return new Response(null, { headers })
          const clients = mjpegClients.get(bus_info) ?? 0
          if (clients >= maxViewers) registry.limitHit('mjpeg_viewers')
          if (clients >= maxViewers) throw unavailable(`'${bus_info}' already has ${maxViewers} MJPEG viewers, the most allowed (--max-viewers); close one (or watch over RTSP/WebRTC)`)
          mjpegClients.set(bus_info, clients + 1)
          const left = () => {
            const n = (mjpegClients.get(bus_info) ?? 1) - 1
            if (n > 0) mjpegClients.set(bus_info, n)
            else mjpegClients.delete(bus_info)
          }
          return new Response(multipart(feedFor(gst, bus_info, live), hangUpSignal(request), left), { headers })
        },
        {
          ...docs({
            tag,
            summary: 'MJPEG stream of a running camera (multipart/x-mixed-replace: an <img src> shows it)',
            description:
              'Each part is one whole JPEG with its Content-Length; an MJPG camera\'s parts also say when the frame was made and when the part left (X-Captured-At, X-Sent-At: ms since the epoch on the vehicle\'s clock), for a viewer\'s delay. An MJPG camera sends its own JPEGs, never re-encoded; an H.264 camera is decoded and encoded once for all its viewers while any watch. ' +
              `A client that reads too slowly misses frames rather than falling behind. At most ${maxViewers} viewers per camera (--max-viewers; 503 beyond). 409 when the stream does not run.`,
            ok: { content: { 'multipart/x-mixed-replace': { schema: { type: 'string', format: 'binary' } } }, description: 'An endless stream of JPEG parts' },
            errors: [404, 409, 503],
            pathParams,
          }),
        },
      )
      .get(
        '/api/streams/:bus_info/snapshot.jpg',
        typed({ query: SnapshotQuery }, async ({ params, query, request }) => {
          const bus_info = (params as { bus_info: string }).bus_info
          const gst = check(bus_info)
          if (isHead(request)) return new Response(null, { headers: { 'content-type': 'image/jpeg', 'cache-control': 'no-store' } })
          // A stopped camera is started for the capture: limited per client (core/http/client-limits.ts).
          if (!liveOf(bus_info)) refusals.limits.take('snapshot_stopped', request)
          const shot = shotOf(gst, bus_info)
          const { jpeg: full, source } = await shot.captured
          const jpeg = query.height === undefined ? full : await scaled(gst, shot, full, query.height)
          return new Response(jpeg, {
            headers: { 'content-type': 'image/jpeg', 'cache-control': 'no-store', etag: `"${bus_info}-${shot.id}${query.height ? `-h${query.height}` : ''}"`, 'x-capture-id': String(shot.id), 'x-snapshot-source': source },
          })
        }),
        {
          ...docs({
            tag,
            summary: 'A JPEG of the current frame (from the running stream, else a one-shot capture)',
            description:
              'From the running stream without touching it (an MJPG camera\'s own JPEG), else one capture from the camera. One capture per camera at a time: concurrent requests share it, and it is served again for up to 1 s (`X-Capture-Id` names the capture); so is each size class of it. ' +
              `After a snapshot of an H.264 stream its decoder stays --snapshot-warm seconds (${config.snapshotWarmSeconds}), so the next is its newest frame at once. \`X-Snapshot-Source\` says where the JPEG came from: mjpeg, decoder, group (the kept group of pictures decoded), stream (its next frame) or capture (a camera that does not stream). ` +
              `At most ${config.snapshotChildren} captures, decodes and scalings run at once (--snapshot-children), below the streams' priority; ${MAX_WAITING} more wait, and past that the answer is 503 with Retry-After. ` +
              '409 when the camera is in use by another program or has no stream format; 504 when it gives no frame within 10 s; 429 past the per-client limit on snapshots of a stopped camera (docs/security.md).',
            query: SnapshotQuery,
            ok: { content: { 'image/jpeg': { schema: { type: 'string', format: 'binary' } } }, description: 'One JPEG' },
            errors: [404, 409, 429, 502, 503, 504],
            pathParams,
          }),
        },
      )
  },
})

/**
 * The multipart body of one MJPEG client: whole parts only (a late joiner starts at the next frame),
 * and at most two parts waiting for a slow client (it misses frames instead of buffering without
 * bound). Leaving, by hang-up or cancel, takes the client off the feed; the last one stops the producer.
 */
function multipart(feed: JpegFeed, hangUp: AbortSignal, left: () => void): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let leave: (() => void) | null = null
  let finished = false
  const quit = () => {
    if (finished) return
    finished = true
    leave?.()
    left()
  }
  return new ReadableStream<Uint8Array>(
    {
      start(controller) {
        const close = () => {
          quit()
          try {
            controller.close()
          } catch {}
        }
        leave = feed.join({
          frame(jpeg, capturedAt) {
            if ((controller.desiredSize ?? 0) <= 0) return
            // When the frame was made and when it left, on the vehicle's clock (ms): a viewer's delay (docs/latency.md).
            const timing = capturedAt === null ? '' : `X-Captured-At: ${capturedAt.toFixed(1)}\r\nX-Sent-At: ${(performance.timeOrigin + performance.now()).toFixed(1)}\r\n`
            const head = encoder.encode(`--${BOUNDARY}\r\nContent-Type: image/jpeg\r\nContent-Length: ${jpeg.length}\r\n${timing}\r\n`)
            const part = new Uint8Array(head.length + jpeg.length + 2)
            part.set(head)
            part.set(jpeg, head.length)
            part.set([13, 10], head.length + jpeg.length)
            try {
              controller.enqueue(part)
            } catch {
              close()
            }
          },
          end: close,
        })
        if (finished) leave() // the feed had already ended
        if (hangUp.aborted) close()
        else hangUp.addEventListener('abort', close, { once: true })
      },
      cancel: quit,
    },
    { highWaterMark: 2 },
  )
}
