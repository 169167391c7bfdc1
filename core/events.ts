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
  /** A recording deleted, by the pilot or the retention policy: {name, size, reason, detail, time}. */
  | 'recording_deleted'
  /** A recording marked kept or no longer: {name, kept}. */
  | 'recording_kept'
  /** The retention policy saved (GET /api/recordings/retention's answer). */
  | 'retention_updated'
  /** Arming or disarming started or stopped a camera's recording, or could not: {bus_info, armed, action: started|stopped|failed, detail, file}. */
  | 'record_while_armed'
  /** A log entry at warn or above (core/log.ts): why a stream failed, a device refused, … */
  | 'log'
  /** A stream's sound level, every half second while it runs: {bus_info, peak_db, rms_db} (dBFS); a sound-only stream's: {source, sound_only: true, …}. */
  | 'audio_level'
  /** A stream's sound started, stopped or failed: {bus_info, source, state, error}; a sound-only stream's has sound_only: true and no bus_info. */
  | 'audio_state'
  /** Sound sources were plugged or unplugged: {sources: ids}. */
  | 'audio_sources'
  /** A stream's delivered frame rate fell below 90 % of its configured rate for 2 s (state: alert), or is back for 2 s or the stream stopped (state: ok): {bus_info, state, message, health}. */
  | 'stream_health'

export interface PeriscopeEvent { type: EventType; data: unknown; id: number; time: string }
type Listener = (event: PeriscopeEvent) => void
/** Told when a listener throws: the event, the error, and how many of that listener's failures went unreported before. */
export type ListenerFault = (event: PeriscopeEvent, err: unknown, unreported: number) => void

/** A listener that keeps failing is reported at most this often (ms); the failures in between are counted. */
export const LISTENER_FAULT_REPORT_MS = 60_000

export class EventBus {
  private listeners = new Set<Listener>()
  private nextId = 1
  private faults = new WeakMap<Listener, { reportedAt: number; unreported: number }>()

  /** `onFault`: where a listener's error goes (the app logs it); a broken listener must not stop the others. */
  constructor(private readonly onFault: ListenerFault = () => {}) {}

  emit(type: EventType, data: unknown): void {
    const event: PeriscopeEvent = { type, data, id: this.nextId++, time: new Date().toISOString() }
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch (err) {
        this.fault(listener, event, err)
      }
    }
  }

  /** Reports a listener's error, the first at once and then at most once per LISTENER_FAULT_REPORT_MS (a listener may fail on every frame). */
  private fault(listener: Listener, event: PeriscopeEvent, err: unknown): void {
    const now = Date.now()
    const seen = this.faults.get(listener)
    if (seen && now - seen.reportedAt < LISTENER_FAULT_REPORT_MS) {
      seen.unreported++
      return
    }
    this.faults.set(listener, { reportedAt: now, unreported: 0 })
    try {
      this.onFault(event, err, seen?.unreported ?? 0)
    } catch {
      // the report itself failed: nothing more to do without looping
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
