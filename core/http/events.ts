// GET /api/events: the event bus as server-sent events, one `event:` per change.
import { Elysia, t } from 'elysia'
import type { EventBus } from '../events'
import { hangUpSignal, UNBUFFERED_BY_PROXIES } from '../front'
import { docs } from '../openapi'

export function eventStream(events: EventBus) {
  return new Elysia({ name: 'periscope:events' }).get('/api/events', ({ request }) => sse(events, hangUpSignal(request)), {
    ...docs({
      tag: 'system',
      summary: 'Server-sent events',
      description:
        'One `event:` per change: device_added, device_removed, device_updated, stream_error, frame_stats, recording (a recording made while streaming: started, every second while it grows, ended), preferences_updated, network_changed, zip_progress, recording_deleted (by the pilot or the retention policy: name, size, reason, detail, time), recording_kept (name, kept), retention_updated (the policy), log (a log entry at warn or above, as GET /api/logs gives it). `data:` is JSON.',
      ok: { content: { 'text/event-stream': { schema: t.String() } } },
    }),
  })
}

function sse(events: EventBus, signal: AbortSignal): Response {
  const encoder = new TextEncoder()
  let unsubscribe = () => {}
  let heartbeat: ReturnType<typeof setInterval> | undefined
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const send = (text: string) => {
        try {
          controller.enqueue(encoder.encode(text))
        } catch {
          close()
        }
      }
      const close = () => {
        unsubscribe()
        clearInterval(heartbeat)
      }
      send('retry: 2000\n: connected\n\n')
      unsubscribe = events.subscribe((e) => send(`id: ${e.id}\nevent: ${e.type}\ndata: ${JSON.stringify(e.data)}\n\n`))
      // Comments keep proxies and Bun's idle timeout from closing a quiet stream, and reveal dead clients.
      heartbeat = setInterval(() => send(': keep-alive\n\n'), 5000)
      signal.addEventListener('abort', () => {
        close()
        try {
          controller.close()
        } catch {}
      })
    },
    cancel() {
      unsubscribe()
      clearInterval(heartbeat)
    },
  })
  return new Response(stream, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', ...UNBUFFERED_BY_PROXIES } })
}
