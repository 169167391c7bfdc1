// Giving memory back once viewers have gone. Every viewer allocates as it comes (a WebRTC session's
// keys, buffers and werift's objects), and the runtime's collector, left alone, lets the heap grow
// between its own collections: after 20 rounds of WebRTC viewers coming and going, the service's RSS
// stayed 13–24 % above where it started although none of it was in use. One full collection, once
// readers have stopped leaving for a moment, brings it back (tests/integration/whep-churn.test.ts).
// It runs on the main thread (tens of milliseconds for a heap of ~40 MB): the relay thread keeps
// forwarding to RTSP and the recorder meanwhile, and it runs at most once per MIN_INTERVAL_MS.

/** How long no reader may have left before the collection runs (a page change closes and opens several). */
export const QUIET_MS = 1000
/** The least time between two collections, however viewers churn. */
export const MIN_INTERVAL_MS = 10_000

let timer: ReturnType<typeof setTimeout> | null = null
/** Other threads' collections (media/relay.ts's thread), run with the main thread's. */
const others: (() => void)[] = []
let last = 0
let collections = 0

/** A reader has left: collect once things are quiet. */
export function readerLeft(): void {
  if (timer) clearTimeout(timer)
  const wait = Math.max(QUIET_MS, last + MIN_INTERVAL_MS - Date.now())
  timer = setTimeout(collect, wait)
  timer.unref?.()
}

function collect(): void {
  timer = null
  last = Date.now()
  collections++
  Bun.gc(true)
  for (const other of others) other()
}

/** Runs `collectOther` (another thread's collection) with each collection of the main thread. */
export function alsoCollect(collectOther: () => void): void {
  others.push(collectOther)
}

/** Whether a collection waits for quiet (for tests and /metrics). */
export function collectionPending(): boolean {
  return timer !== null
}

/** How many collections have run (for tests and /metrics). */
export function memoryCollections(): number {
  return collections
}
