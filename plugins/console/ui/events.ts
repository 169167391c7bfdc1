// The service's server-sent events (GET /api/events, under the page's base: serviceUrl), one
// EventSource for the page. The browser reconnects by itself after a dropped stream; when it gives up
// (the service answered something else, e.g. while restarting) a new one is opened after a growing
// pause. Every (re)connection is announced, since events missed while away are not replayed: whoever
// keeps state reloads it then.
import type { EventType } from '../../../core/events'
import { reachable, serviceUrl } from './api'

/** The service's event names, from the one list in core/events.ts (a type: nothing of it is bundled). */
export type EventName = EventType

// Every name once; the compiler refuses this table when core/events.ts gains or loses one.
const EVERY: Record<EventName, true> = {
  device_added: true,
  device_removed: true,
  device_updated: true,
  stream_error: true,
  frame_stats: true,
  recording: true,
  preferences_updated: true,
  network_changed: true,
  zip_progress: true,
  recording_deleted: true,
  recording_kept: true,
  retention_updated: true,
  record_while_armed: true,
  log: true,
  audio_level: true,
  audio_state: true,
  audio_sources: true,
  stream_health: true,
}
const NAMES = Object.keys(EVERY) as EventName[]

type Listener = (data: any) => void
const listeners = new Map<EventName | 'connected', Set<Listener>>()

/** Follows one event (or 'connected': the stream opened, first time or again); returns the unsubscribe. */
export function on(name: EventName | 'connected', listener: Listener): () => void {
  let set = listeners.get(name)
  if (!set) listeners.set(name, (set = new Set()))
  set.add(listener)
  return () => set!.delete(listener)
}

function dispatch(name: EventName | 'connected', data: unknown): void {
  for (const listener of [...(listeners.get(name) ?? [])]) {
    try {
      listener(data)
    } catch (e) {
      console.warn(`a listener of ${name} failed`, e)
    }
  }
}

let source: EventSource | null = null
let retryMs = 1000
let retryTimer: ReturnType<typeof setTimeout> | undefined
export function connectEvents(): void {
  if (source) return
  open()
}

function open(): void {
  const es = new EventSource(serviceUrl('/api/events'))
  source = es
  es.onopen = () => {
    retryMs = 1000
    reachable.set(true)
    dispatch('connected', null)
  }
  es.onerror = () => {
    reachable.set(false)
    if (es.readyState !== EventSource.CLOSED) return // the browser retries by itself
    es.close()
    source = null
    clearTimeout(retryTimer)
    retryTimer = setTimeout(open, retryMs)
    retryMs = Math.min(retryMs * 2, 5000)
  }
  for (const name of NAMES) {
    es.addEventListener(name, (event) => {
      let data: unknown = null
      try {
        data = JSON.parse((event as MessageEvent<string>).data)
      } catch {
        return
      }
      dispatch(name, data)
    })
  }
}
