// useResource(path, events): a GET the page shows, loaded when the page opens, again when the event
// stream (re)connects and whenever one of the named events arrives; never on a timer.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, get } from './api'
import { on, type EventName } from './events'

export interface Resource<T> {
  data: T | null
  /** The service's sentence when the last load failed. */
  error: string | null
  reload(): Promise<void>
}

/** An event, or an event and which of its occurrences matter (the others do not reload). */
export type Trigger = EventName | [EventName, (data: any) => boolean]

/**
 * A filter for events that repeat while nothing the page lists changes (a recording's event every
 * second while it grows): true only when `field` changed for that `bus_info` since its last event.
 */
export function whenChanged(field: string): (data: any) => boolean {
  const last = new Map<string, unknown>()
  return (data) => {
    const key = String(data?.bus_info)
    const changed = !last.has(key) || last.get(key) !== data?.[field]
    last.set(key, data?.[field])
    return changed
  }
}

export function useResource<T>(path: string, refreshOn: Trigger[] = []): Resource<T> {
  const [state, setState] = useState<{ data: T | null; error: string | null }>({ data: null, error: null })
  const live = useRef(true)
  const reload = useCallback(async () => {
    try {
      const data = await get<T>(path)
      if (live.current) setState({ data, error: null })
    } catch (e) {
      if (live.current) setState((s) => ({ data: s.data, error: e instanceof ApiError ? e.detail : String(e) }))
    }
  }, [path])
  useEffect(() => {
    live.current = true
    void reload()
    let timer: ReturnType<typeof setTimeout> | undefined
    const soon = () => {
      clearTimeout(timer)
      timer = setTimeout(() => void reload(), 100)
    }
    const offs = [on('connected', soon), ...refreshOn.map((t) => (typeof t === 'string' ? on(t, soon) : on(t[0], (data) => t[1](data) && soon())))]
    return () => {
      live.current = false
      clearTimeout(timer)
      for (const off of offs) off()
    }
    // The triggers of the first render are kept (pages write them inline; a filter keeps its memory).
  }, [reload])
  return { ...state, reload }
}
