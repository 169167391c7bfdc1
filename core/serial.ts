// Work that must not overlap per key (one stream's start and stop, one sound's reconcile): run one at a
// time per key, in the order asked; a failure does not stop the next.
export class KeyedSerial {
  private readonly pending = new Map<string, Promise<unknown>>()

  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const next = (this.pending.get(key) ?? Promise.resolve()).then(fn, fn)
    const settled = next.catch(() => {})
    this.pending.set(key, settled)
    void settled.then(() => this.pending.get(key) === settled && this.pending.delete(key))
    return next
  }
}
