// In-process event bus; GET /api/events relays it as server-sent events.
export type EventType =
  | 'device_added'
  | 'device_removed'
  | 'device_updated'
  | 'stream_error'
  | 'frame_stats'
  | 'recording'
  | 'preferences_updated'
  | 'network_changed'
  | 'zip_progress'
  /** A log entry at warn or above (core/log.ts): why a stream failed, a device refused, … */
  | 'log'

export interface PeriscopeEvent { type: EventType; data: unknown; id: number; time: string }
type Listener = (event: PeriscopeEvent) => void

export class EventBus {
  private listeners = new Set<Listener>()
  private nextId = 1

  emit(type: EventType, data: unknown): void {
    const event: PeriscopeEvent = { type, data, id: this.nextId++, time: new Date().toISOString() }
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch {
        // A broken listener (a closed SSE stream) must not stop the others.
      }
    }
  }

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** How many listen now (each open event stream is one): a client that hangs up must not stay. */
  get subscribers(): number {
    return this.listeners.size
  }
}
