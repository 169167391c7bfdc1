// A change to an active profile's IPv4, watched until it is kept or rolled back (the service's safety
// net, drivers/networkmanager/rollback.ts): after such a change the service waits `rollback_seconds`
// for ANY API request; none, and it restores the previous configuration.
//
// The page was loaded from the vehicle's address. When that is the address being changed, the page
// loses the vehicle with the change — even the answer to the change may never arrive (its source
// address is gone) — so:
// - the window is read before the change (GET /api/network/rollback), and the countdown starts from
//   the answer, or from the request when no answer comes within a few seconds;
// - "keep this setting" is a request to the vehicle at its NEW address (another origin: CORS), which is
//   the client being heard from that confirms the change; then the page offers to go there;
// - once the window is over, the page asks its own origin again until the vehicle answers there, and
//   tells from the interface's addresses (or from the `network_changed` event, when it arrives)
//   whether the change was rolled back. A late answer to the change itself is never taken for success.
// Kept in a module, not in the page, so leaving the page does not lose the watch.
import { ApiError, get, post, serviceBase, serviceBaseAt, serviceUrl } from '../../api'
import { on } from '../../events'
import { Value } from '../../state'
import type { ConnectionProfile, IpConfiguration, WiredDevice } from '../../types'
import { notify } from '../../widgets'

/** GET /api/network/rollback */
export interface RollbackStatus {
  pending: { description: string; interfaces: string[]; phase: string; seconds_left: number } | null
  rollback_seconds: number
}

/** The `rollback` of a `network_changed` event (drivers/networkmanager/rollback.ts). */
interface RollbackEvent {
  outcome: 'confirmed' | 'rolled_back' | 'rollback_failed' | 'confirm_failed'
  description: string
  interfaces: string[]
  detail: string
}

export type Phase = 'sending' | 'counting' | 'keeping' | 'checking' | 'kept' | 'rolled_back' | 'failed'

export interface Watch {
  profile: string
  interfaces: string[]
  /** "eth0 10.77.0.1/24", as it was before the change. */
  before: string
  /** What was asked for. */
  after: IpConfiguration
  /**
   * Where "keep" reaches the vehicle, as a base (ending in `/`): this page's base on the first new
   * address (same port, same proxy prefix), or this page's own base when the change does not touch it;
   * null when unknown (DHCP).
   */
  target: string | null
  windowSeconds: number
  /** When the service restores the previous configuration unless a client is heard from (ms, this clock). */
  deadline: number
  phase: Phase
  /** Whether this page came by an address being changed (it loses the vehicle with the change). */
  moving: boolean
  /** Whether the change was answered (false: the vehicle went quiet with it, as expected on its own address). */
  answered: boolean
  /** The outcome's sentence (the service's own when its event arrived). */
  message: string | null
  /** Why "keep" did not reach the vehicle, or a failed rollback's retry notice. */
  problem: string | null
}

export const watch = new Value<Watch | null>(null)

const update = (change: Partial<Watch>) => {
  const w = watch.get()
  if (w) watch.set({ ...w, ...change })
}
const settled = (w: Watch | null) => !w || w.phase === 'kept' || w.phase === 'rolled_back' || w.phase === 'failed'

/** How long the change's answer is waited for before the page takes it that the vehicle moved. */
const ANSWER_WAIT_MS = 3000
/** How long "keep" waits for the vehicle at its new address. */
const KEEP_WAIT_MS = 8000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** The work's result, or `null` once `ms` passed without one (the work goes on). */
const within = <T>(work: Promise<T>, ms: number): Promise<T | null> => Promise.race([work, sleep(ms).then(() => null)])
const detailOf = (e: unknown) => (e instanceof ApiError ? e.detail : String((e as Error)?.message ?? e))

const addressList = (ip: IpConfiguration | null | undefined) => (ip?.ip_addresses ?? []).map((a) => `${a.address}/${a.prefix}`)

export const profileUrl = (path: string) => `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`

/**
 * Sends `after` as the profile's IPv4 configuration. A refusal rejects with the service's ApiError (its
 * fields for the form) and changes nothing here; an edit of a profile no interface uses is simply saved;
 * one in use starts the watch.
 */
export async function applyChange(profile: ConnectionProfile, after: IpConfiguration, wired: WiredDevice[]): Promise<void> {
  const using = wired.filter((w) => w.active_profile_id === profile.path)
  if (!using.length) {
    await post(profileUrl(profile.path), after)
    notify('ok', `Saved the IPv4 settings of ${profile.id}`)
    return
  }
  if (!settled(watch.get())) throw new ApiError(409, 'An earlier network change is still being watched; wait until it is kept or rolled back')
  // Asked before the change: its answer may be the last thing heard from this address.
  const { rollback_seconds: windowSeconds } = await get<RollbackStatus>('/api/network/rollback')
  // Where "keep" goes: the new address when this page came by an address being changed; else this
  // page's own origin, a way to the vehicle that the change does not touch.
  const first = after.method === 'manual' ? after.ip_addresses[0]?.address : undefined
  const moving = using.some((w) => w.active_ip_configuration?.ip_addresses.some((a) => a.address === location.hostname))
  const target = !moving ? serviceBase() : first ? serviceBaseAt(first) : null
  const sentAt = Date.now()
  watch.set({
    profile: profile.id,
    interfaces: using.map((w) => w.interface),
    before: using.map((w) => `${w.interface} ${addressList(w.active_ip_configuration).join(', ') || 'no address'}`).join('; '),
    after,
    target,
    moving,
    windowSeconds,
    deadline: sentAt + windowSeconds * 1000,
    phase: 'sending',
    answered: false,
    message: null,
    problem: null,
  })
  const answer = post<{ status: boolean; rollback_seconds: number | null }>(profileUrl(profile.path), after)
  let reply: { status: boolean; rollback_seconds: number | null } | null
  try {
    reply = await within(answer, ANSWER_WAIT_MS)
  } catch (e) {
    if (e instanceof ApiError && e.status > 0) {
      // Refused: nothing was changed, nothing to watch.
      watch.set(null)
      throw e
    }
    reply = null // no answer at all: the link went with the change
  }
  if (reply) {
    if (reply.rollback_seconds === null) {
      watch.set(null)
      notify('ok', `Saved the IPv4 settings of ${profile.id}`)
      return
    }
    update({ phase: 'counting', answered: true, deadline: Date.now() + reply.rollback_seconds * 1000 })
  } else {
    update({ phase: 'counting' })
    // A late answer: a refusal after all ends the watch; a success only refines the countdown (the
    // outcome is decided by what the vehicle does, never by this answer).
    answer.then(
      (late) => {
        const w = watch.get()
        if (w?.phase === 'counting' && late.rollback_seconds !== null) update({ answered: true, deadline: Date.now() + late.rollback_seconds * 1000 })
      },
      (e) => {
        if (e instanceof ApiError && e.status > 0 && !settled(watch.get())) update({ phase: 'failed', message: `The service refused the change: ${e.detail}` })
      },
    )
  }
  void followUntilSettled()
}

/** "Keep this setting": a request to the vehicle at its new address, then until its guard has settled. */
export async function keep(): Promise<void> {
  const w = watch.get()
  if (!w?.target || (w.phase !== 'counting' && w.phase !== 'keeping')) return
  const target = w.target
  update({ phase: 'keeping', problem: null })
  try {
    const first = await within(get<RollbackStatus>(serviceUrl('/api/network/rollback', target)), KEEP_WAIT_MS)
    if (!first) throw new ApiError(0, `${new URL(target).host} did not answer within ${KEEP_WAIT_MS / 1000} s`)
    // Heard: the service confirms on its next tick and writes the profile to disk.
    for (let i = 0; i < 20; i++) {
      const now = await get<RollbackStatus>(serviceUrl('/api/network/rollback', target))
      if (!now.pending) {
        if (!settled(watch.get())) update({ phase: 'kept', message: `The vehicle answers at ${shownBase(target)}: the change is kept.` })
        return
      }
      await sleep(500)
    }
    throw new ApiError(0, `the vehicle answers at ${shownBase(target)} but has not settled the change yet`)
  } catch (e) {
    if (settled(watch.get())) return
    update({
      phase: 'counting',
      problem: `Could not reach the vehicle at ${shownBase(target)}: ${detailOf(e)}. If the new address is on another subnet, this computer needs an address on that subnet too; otherwise the previous setting comes back when the countdown ends.`,
    })
  }
}

/** A base as the pilot reads it: `http://10.0.0.2:8080`, `http://blueos.local/extensionv2/periscope`. */
export const shownBase = (base: string) => base.replace(/\/$/, '')

export const dismiss = () => settled(watch.get()) && watch.set(null)

/** After the window: this page's own origin again, until the vehicle answers there, then what it did. */
async function followUntilSettled(): Promise<void> {
  for (;;) {
    const w = watch.get()
    if (settled(w) || !w) return
    const wait = w.deadline - Date.now()
    if (wait > 0) {
      await sleep(Math.min(wait, 1000))
      continue
    }
    if (w.phase === 'keeping') {
      await sleep(500)
      continue
    }
    if (w.phase !== 'checking') update({ phase: 'checking' })
    break
  }
  // Bounded: a vehicle that never answers again here leaves the page saying so.
  for (let attempt = 0; attempt < 120 && !settled(watch.get()); attempt++) {
    try {
      const status = await get<RollbackStatus>('/api/network/rollback')
      if (status.pending) {
        await sleep(1000)
        continue
      }
      const wired = await get<WiredDevice[]>('/api/network/wired/devices')
      const w = watch.get()
      if (!w || settled(w)) return
      const now = w.interfaces.map((i) => addressList(wired.find((d) => d.interface === i)?.active_ip_configuration)).flat()
      const wanted = addressList(w.after)
      const kept = w.after.method === 'manual' && wanted.every((a) => now.includes(a))
      update(
        kept
          ? { phase: 'kept', message: `A client reached the vehicle in time: ${w.interfaces.join(', ')} keeps ${wanted.join(', ')}.` }
          : {
              phase: 'rolled_back',
              message: `No client reached the vehicle at its new address within ${w.windowSeconds} s, so it restored the previous configuration (${w.interfaces
                .map((i) => `${i} ${addressList(wired.find((d) => d.interface === i)?.active_ip_configuration).join(', ') || 'no address'}`)
                .join('; ')}).`,
            },
      )
      return
    } catch (e) {
      if (e instanceof ApiError && e.status > 0) {
        update({ problem: e.detail })
        await sleep(1000)
      } else await sleep(1000) // not answering there yet
    }
  }
  if (!settled(watch.get())) update({ phase: 'failed', message: 'The vehicle has not answered at this address since the change; try its new address, or find it on the network.' })
}

// The service's own word, whenever its event gets through (it may arrive late, over a stalled stream).
on('network_changed', (change: { rollback?: RollbackEvent }) => {
  const r = change?.rollback
  const w = watch.get()
  if (!r || !w || settled(w)) return
  if (r.outcome === 'confirmed') update({ phase: 'kept', message: r.detail })
  else if (r.outcome === 'rolled_back') update({ phase: 'rolled_back', message: r.detail })
  else if (/giving up/.test(r.detail)) update({ phase: 'failed', message: r.detail })
  else update({ problem: r.detail })
})
