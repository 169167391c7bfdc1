// GET /api/events: the event bus as server-sent events, one `event:` per change.
//
// Each client has a bounded queue (--events-queue-bytes). A client that does not read (a stalled
// browser tab, a socket nobody reads) would otherwise hold every event sent since it stopped, for every
// such client: 50 of them took the service from 103 to 545 MB. Past the bound the client is dropped: it
// gets no more events, a last `dropped` event says why (an EventSource reconnects after it and reads the
// state afresh), and if it has not read that far within DROP_GRACE_MS its connection is cut, which frees
// its queue. An event is encoded once and the same bytes are queued for every client.
//
// Only a client that asks for the stream gets it (`followsStream`): scanners GET every documented path
// and wait for each answer to end (BlueOS's helper reads with a 1 s timeout per read, and with sound's
// `audio_level` events twice a second the stream never went quiet for it, so BlueOS never listed the
// service). Anyone else gets a short, finished answer saying how to follow it.
import { Elysia, t } from 'elysia'
import type { EventBus, PeriscopeEvent } from '../events'
import { hangUpSignal, UNBUFFERED_BY_PROXIES } from '../front'
import { docs } from '../openapi'
import type { Registry } from '../plugin'

/** A dropped client that has not read up to its last event within this is cut off. */
export const DROP_GRACE_MS = 10_000
const HEARTBEAT_MS = 5000

const encoder = new TextEncoder()
/** Each event's wire form, made once for all clients (and gone with the event). */
const wire = new WeakMap<PeriscopeEvent, Uint8Array>()
const encoded = (e: PeriscopeEvent): Uint8Array => {
  let bytes = wire.get(e)
  if (!bytes) wire.set(e, (bytes = encoder.encode(`id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`)))
  return bytes
}
const KEEP_ALIVE = encoder.encode(': keep-alive\n\n')

/**
 * Whether a request to the event stream gets the stream: its `Accept` names `text/event-stream` (every
 * EventSource sends it, and SSE libraries do) or it comes from curl (`curl -N` sends `Accept: *\/*`),
 * and its User-Agent is not a known crawler's (`crawlers`: BlueOS's scanner, declared by its plugin).
 */
export function followsStream(request: Request, crawlers: ReadonlySet<string> = new Set()): boolean {
  const agent = request.headers.get('user-agent') ?? ''
  if (crawlers.has(agent)) return false
  if (/^curl\//i.test(agent)) return true
  return acceptsEventStream(request.headers.get('accept') ?? '')
}

/** `text/event-stream` among the media ranges of an Accept header, not refused with q=0. */
function acceptsEventStream(accept: string): boolean {
  return accept.split(',').some((range) => {
    const [type, ...params] = range.split(';').map((p) => p.trim().toLowerCase())
    if (type !== 'text/event-stream') return false
    const q = params.find((p) => p.startsWith('q='))
    return !q || Number(q.slice(2)) > 0
  })
}

/** The finished answer of a client that did not ask for the stream: one SSE comment saying how to. */
const NOT_FOLLOWED = encoder.encode(
  ': Periscope\'s event stream. This client did not ask to follow it, so this answer ends here; send "Accept: text/event-stream" (EventSource does) or use curl -N to follow it, and GET /api/devices for the current state.\n\n',
)

export function eventStream(events: EventBus, registry: Registry, queueBytes: number, crawlers: readonly string[] = []) {
  const crawlerAgents = new Set(crawlers)
  const route = ({ request }: { request: Request }) =>
    followsStream(request, crawlerAgents)
      ? sse(events, registry, queueBytes, hangUpSignal(request))
      : new Response(NOT_FOLLOWED, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } })
  return new Elysia({ name: 'periscope:events' }).get('/api/events', route, {
    ...docs({
      tag: 'system',
      summary: 'Server-sent events',
      description:
        'The stream is sent to a client that asks for it: `Accept: text/event-stream` (EventSource sends it) or curl (`curl -N`); any other client (a scanner, a plain GET, BlueOS\'s `User-Agent: python`) gets at once a short finished answer, one SSE comment saying how to follow it. ' +
        'One `event:` per change: device_added, device_removed, device_updated, stream_error, frame_stats, recording (a recording made while streaming: started, every second while it grows, ended), preferences_updated, network_changed, zip_progress, recording_deleted (by the pilot or the retention policy: name, size, reason, detail, time), recording_kept (name, kept), retention_updated (the policy), log (a log entry at warn or above, as GET /api/logs gives it), stream_health (for 2 s a stream\'s delivered frame rate below 90 % of its configured rate, a viewer\'s delay past --delay-alert or a viewer losing over 5 %, state alert; or all back for 2 s, state ok: bus_info, state, message, health). `data:` is JSON.' +
        `A client that falls more than ${queueBytes} bytes of events behind (--events-queue-bytes) is dropped: a last \`dropped\` event with \`{"detail": "..."}\` says why, then the stream ends (an EventSource reconnects by itself); ` +
        `one that does not read even that within ${DROP_GRACE_MS / 1000} s is disconnected. Counted in /metrics as periscope_limit_hits_total{limit="events_client_behind"}.`,
      ok: { content: { 'text/event-stream': { schema: t.String() } } },
    }),
  })
}

function sse(events: EventBus, registry: Registry, queueBytes: number, signal: AbortSignal): Response {
  let unsubscribe = () => {}
  let heartbeat: ReturnType<typeof setInterval> | undefined
  let cutOff: ReturnType<typeof setTimeout> | undefined
  let finished = false
  const finish = () => {
    finished = true
    unsubscribe()
    clearInterval(heartbeat)
    clearTimeout(cutOff)
  }
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        let dropped = false
        const drop = (detail: string) => {
          dropped = true
          unsubscribe()
          clearInterval(heartbeat)
          registry.limitHit('events_client_behind')
          try {
            controller.enqueue(encoder.encode(`event: dropped\ndata: ${JSON.stringify({ detail })}\n\n`))
            controller.close()
          } catch {
            return finish()
          }
          // Still not read that far: cut the connection, which frees what it holds. (Bun closes a
          // stream's connection at once on error(); with an Error it would also print it to stderr.)
          cutOff = setTimeout(() => {
            if (finished) return
            finish()
            try {
              controller.error(undefined)
            } catch {}
          }, DROP_GRACE_MS)
        }
        const send = (bytes: Uint8Array) => {
          if (dropped || finished) return
          if ((controller.desiredSize ?? 0) < bytes.length) {
            return drop(`This client fell more than ${queueBytes} bytes of events behind (--events-queue-bytes) and was dropped; reconnect and read the current state again (GET /api/devices)`)
          }
          try {
            controller.enqueue(bytes)
          } catch {
            finish()
          }
        }
        send(encoder.encode('retry: 2000\n: connected\n\n'))
        unsubscribe = events.subscribe((e) => send(encoded(e)))
        // Comments keep proxies and Bun's idle timeout from closing a quiet stream, and reveal dead clients.
        heartbeat = setInterval(() => send(KEEP_ALIVE), HEARTBEAT_MS)
        const hungUp = () => {
          finish()
          try {
            controller.close()
          } catch {}
        }
        if (signal.aborted) hungUp()
        else signal.addEventListener('abort', hungUp, { once: true })
      },
      cancel: finish,
    },
    // The queue is counted in bytes: desiredSize is what is left of the bound.
    new ByteLengthQueuingStrategy({ highWaterMark: queueBytes }),
  )
  return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...UNBUFFERED_BY_PROXIES } })
}
