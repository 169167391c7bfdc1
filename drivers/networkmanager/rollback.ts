// The safety net for address changes on a tethered vehicle: after a change that alters an active
// address, if no API client is heard from within the window, the previous configuration comes back.
// One change is watched at a time; a client heard after the change confirms it.
import type { Static } from '@sinclair/typebox'
import type { PendingChangeModel } from '../../core/schemas'
import { NetworkError } from './errors'

export interface WatchedChange {
  /** What was done, for events and logs: "activating profile 'x' on eth0". */
  description: string
  interfaces: string[]
  /** Puts the previous configuration back. */
  restore(): Promise<void>
  /** Makes the change permanent (it may have been applied in memory only). */
  confirm(): Promise<void>
}

export type RollbackOutcome = 'confirmed' | 'rolled_back' | 'rollback_failed' | 'confirm_failed'

export interface RollbackEvent {
  outcome: RollbackOutcome
  description: string
  interfaces: string[]
  detail: string
}

export interface RollbackOptions {
  seconds: number
  /** When any API client was last heard from (ms since epoch). */
  lastActivity: () => number
  onEvent: (event: RollbackEvent) => void
  tickMs?: number
  retryMs?: number
}

interface Watch {
  change: WatchedChange
  armedAt: number
  deadline: number
  phase: 'watching' | 'confirming' | 'restoring'
  nextAttempt: number
  failures: number
}

/** The watched change as GET /api/network/rollback shows it; the phase is one of the guard's own. */
export type PendingChange = Static<typeof PendingChangeModel> & { phase: Watch['phase'] }

export class RollbackGuard {
  private watch: Watch | null = null
  private timer: ReturnType<typeof setInterval> | null = null
  private busy: Promise<void> | null = null

  constructor(private options: RollbackOptions) {}

  /** The change being watched, for health and the UI. */
  pending(): PendingChange | null {
    const w = this.watch
    if (!w) return null
    return { description: w.change.description, interfaces: w.change.interfaces, phase: w.phase, seconds_left: Math.max(0, Math.ceil((w.deadline - Date.now()) / 1000)) }
  }

  /**
   * Watches a change that was just applied. An earlier change is settled first (the request arming this
   * one proves a client got through after it); if it cannot be settled, the new change is refused by the
   * caller before it is made — so call `ready()` before applying anything.
   */
  async ready(): Promise<void> {
    if (!this.watch) return
    await this.tick()
    if (this.watch)
      throw new NetworkError('refused', `An earlier network change (${this.watch.change.description}) is still being ${this.watch.phase === 'restoring' ? 'rolled back' : 'confirmed'}; try again in a few seconds.`)
  }

  arm(change: WatchedChange): void {
    if (this.watch) throw new Error('RollbackGuard.arm: a change is already watched (call ready() first)')
    const now = Date.now()
    this.watch = { change, armedAt: now, deadline: now + this.options.seconds * 1000, phase: 'watching', nextAttempt: 0, failures: 0 }
    this.timer ??= setInterval(() => void this.tick(), this.options.tickMs ?? 500)
    this.timer.unref?.()
  }

  /** On shutdown nobody can confirm: an unconfirmed change is rolled back now. */
  async stop(): Promise<void> {
    if (this.watch?.phase === 'watching' && !(this.options.lastActivity() > this.watch.armedAt)) this.watch.phase = 'restoring'
    if (this.watch) {
      this.watch.nextAttempt = 0
      await this.tick()
    }
    this.watch = null
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  private tick(): Promise<void> {
    this.busy ??= this.step().finally(() => (this.busy = null))
    return this.busy
  }

  private async step(): Promise<void> {
    const w = this.watch
    if (!w) return
    const now = Date.now()
    if (w.phase === 'watching') {
      if (this.options.lastActivity() > w.armedAt) w.phase = 'confirming'
      else if (now >= w.deadline) w.phase = 'restoring'
      else return
    }
    if (now < w.nextAttempt) return
    const { description, interfaces } = w.change
    const seconds = this.options.seconds
    try {
      if (w.phase === 'confirming') {
        await w.change.confirm()
        this.done({ outcome: 'confirmed', description, interfaces, detail: `An API client was heard from after ${description}: the change is kept` })
      } else {
        await w.change.restore()
        this.done({
          outcome: 'rolled_back',
          description,
          interfaces,
          detail: `No API client was heard from within ${seconds} s after ${description}: the previous configuration was restored`,
        })
      }
    } catch (e) {
      const outcome = w.phase === 'confirming' ? 'confirm_failed' : 'rollback_failed'
      const what = `${outcome === 'confirm_failed' ? 'Saving' : 'Restoring the previous configuration after'} ${description} failed`
      // The profile or interface is gone: there is nothing left to put back.
      if (e instanceof NetworkError && e.kind === 'not_found') return this.done({ outcome, description, interfaces, detail: `${what}, giving up: ${e.message}` })
      // NetworkManager away: keep trying (the vehicle may depend on it), telling about it once a minute or so.
      w.nextAttempt = Date.now() + (this.options.retryMs ?? 5000)
      if (w.failures++ % 12 === 0) this.options.onEvent({ outcome, description, interfaces, detail: `${what}, retrying: ${(e as Error).message}` })
    }
  }

  private done(event: RollbackEvent): void {
    this.watch = null
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.options.onEvent(event)
  }
}
