// A value components can follow: set() re-renders every component that uses it (useValue). The
// console's few pieces of shared state (the link to the service, the token prompt, the devices, the
// notices) are each one of these; no state library is needed for so few.
import { useEffect, useState } from 'preact/hooks'

export class Value<T> {
  private listeners = new Set<(value: T) => void>()
  constructor(private current: T) {}

  get(): T {
    return this.current
  }

  set(next: T): void {
    if (Object.is(next, this.current)) return
    this.current = next
    for (const listener of [...this.listeners]) listener(next)
  }

  subscribe(listener: (value: T) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}

export function useValue<T>(value: Value<T>): T {
  const [, rerender] = useState(0)
  useEffect(() => value.subscribe(() => rerender((n) => n + 1)), [value])
  return value.get()
}
