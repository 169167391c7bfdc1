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

export function useResource<T>(path: string, refreshOn: EventName[] = []): Resource<T> {
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
    const offs = [on('connected', soon), ...refreshOn.map((name) => on(name, soon))]
    return () => {
      live.current = false
      clearTimeout(timer)
      for (const off of offs) off()
    }
  }, [reload, refreshOn.join()])
  return { ...state, reload }
}
