// A periodic check that comes late (the event loop was busy: a burst of work, a machine under load, the
// process stopped for a while) runs before what happened meanwhile is read: a child's messages and a
// socket's packets wait behind it. Such a check must not take the silence it sees for an absence (a
// stall, a source gone): it decides nothing, and the next one, after the loop has read what waited, does.

export class LateTicks {
  private last: number | null = null

  /** `lateAfterMs`: a tick this long after the one before is late (the period plus room for jitter). */
  constructor(private readonly lateAfterMs: number) {}

  /** Whether the tick at `now` (ms, any one clock) came late. */
  late(now: number): boolean {
    const late = this.last !== null && now - this.last > this.lateAfterMs
    this.last = now
    return late
  }
}
