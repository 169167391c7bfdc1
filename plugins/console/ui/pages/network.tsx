// Network: the wired interfaces NetworkManager manages, with their state and active address, and the
// ethernet profiles with their IPv4 settings, each editable. A change to a profile in use is watched
// (network/change.ts): a countdown of the service's rollback, "keep this setting" reaching the vehicle
// at its new address, and a clear message when the vehicle rolled the change back.
import { useEffect, useState } from 'preact/hooks'
import { useResource } from '../resource'
import { useValue } from '../state'
import type { ConnectionProfile, IpConfiguration, WiredDevice } from '../types'
import { ErrorLine } from '../widgets'
import { serviceBase } from '../api'
import { dismiss, keep, shownBase, watch, type Watch } from './network/change'
import { Ipv4Editor } from './network/editor'
import { LinkTest } from './network/link-test'
import './network/network.css'

/** NetworkManager's device states (spec part 3). */
const STATES: Record<number, string> = {
  0: 'unknown',
  10: 'unmanaged',
  20: 'unavailable',
  30: 'disconnected',
  40: 'preparing',
  50: 'configuring',
  60: 'needs authentication',
  70: 'getting an address',
  80: 'checking the address',
  90: 'waiting for secondaries',
  100: 'connected',
  110: 'disconnecting',
  120: 'failed',
}

export const addresses = (ip: IpConfiguration | null | undefined) => (ip?.ip_addresses.length ? ip.ip_addresses.map((a) => `${a.address}/${a.prefix}`).join(', ') : '—')

const settledPhase = (w: Watch | null) => !w || w.phase === 'kept' || w.phase === 'rolled_back' || w.phase === 'failed'

/** The watched change: its countdown and "keep", then its outcome. */
function ChangePanel({ w }: { w: Watch }) {
  const [, tick] = useState(0)
  const settled = settledPhase(w)
  useEffect(() => {
    if (settled) return
    const timer = setInterval(() => tick((n) => n + 1), 250)
    return () => clearInterval(timer)
  }, [settled])
  const left = Math.max(0, Math.ceil((w.deadline - Date.now()) / 1000))
  const asked = `${w.profile}: ${w.after.method}${w.after.ip_addresses.length ? ` ${addresses(w.after)}` : ''}`

  if (w.phase === 'kept')
    return (
      <div class="change kept" role="status" data-change-phase="kept">
        <p>
          <strong>Kept.</strong> <span data-change-message>{w.message}</span>
        </p>
        <div class="actions">
          {w.target && w.target !== serviceBase() && (
            <a class="button primary" href={new URL('#/network', w.target).href} data-new-address>
              Open the console at {shownBase(w.target)}
            </a>
          )}
          <button type="button" onClick={dismiss}>
            Close
          </button>
        </div>
      </div>
    )
  if (w.phase === 'rolled_back' || w.phase === 'failed')
    return (
      <div class={`change ${w.phase}`} role="alert" data-change-phase={w.phase}>
        <p>
          <strong>{w.phase === 'rolled_back' ? `Rolled back: ${asked} was undone.` : 'The change did not go through.'}</strong> <span data-change-message>{w.message}</span>
        </p>
        <div class="actions">
          <button type="button" onClick={dismiss}>
            Close
          </button>
        </div>
      </div>
    )
  return (
    <div class="change counting" role="status" aria-live="polite" data-change-phase={w.phase}>
      <p>
        <strong>{w.phase === 'sending' ? 'Applying' : 'Applied'}: {asked}</strong> (before: {w.before}).
      </p>
      {w.phase !== 'sending' &&
        !w.answered &&
        (w.moving ? (
          <p class="muted">The vehicle stopped answering at {location.host} with the change, as expected when the address this page uses changes.</p>
        ) : (
          <p class="muted">The service has not answered the change yet.</p>
        ))}
      {w.phase === 'checking' ? (
        <p>The rollback window is over: waiting for the vehicle to answer at {location.host} again to see what it did…</p>
      ) : (
        w.phase !== 'sending' && (
          <p class="countdown">
            Unless a client reaches the vehicle, it restores the previous setting in <span data-countdown>{left}</span> s.
          </p>
        )
      )}
      {w.phase !== 'checking' && w.phase !== 'sending' && (
        <div class="actions">
          {w.target ? (
            <button type="button" class="primary" data-keep disabled={w.phase === 'keeping'} onClick={() => void keep()}>
              {w.phase === 'keeping' ? `Reaching ${shownBase(w.target)}…` : `Keep this setting (reach the vehicle at ${shownBase(w.target)})`}
            </button>
          ) : (
            <span class="muted">The new address is not known here ({w.after.method}): reach the vehicle at it from any client to keep the setting.</span>
          )}
        </div>
      )}
      <ErrorLine error={w.problem} />
    </div>
  )
}

function ProfileCard({ profile, wired, editing, onEdit, onClose }: { profile: ConnectionProfile; wired: WiredDevice[]; editing: boolean; onEdit(): void; onClose(): void }) {
  const ip = profile.ipv4_settings
  const activeOn = wired.filter((w) => w.active_profile_id === profile.path).map((w) => w.interface)
  return (
    <article class={`card profile${editing ? ' editing' : ''}`} data-profile={profile.id}>
      <header>
        <h3>
          {profile.id} {activeOn.length > 0 && <span class="tag ok">active on {activeOn.join(', ')}</span>}
        </h3>
      </header>
      {editing ? (
        <Ipv4Editor profile={profile} wired={wired} onDone={onClose} onCancel={onClose} />
      ) : (
        <>
          <dl class="facts">
            <dt>Method</dt>
            <dd data-method>{ip.method}</dd>
            <dt>Addresses</dt>
            <dd data-addresses>{addresses(ip)}</dd>
            <dt>Gateway</dt>
            <dd data-gateway>{ip.gateway || '—'}</dd>
            <dt>DNS</dt>
            <dd data-dns>{ip.dns.join(', ') || '—'}</dd>
          </dl>
          <div class="actions">
            <button type="button" data-edit={profile.id} onClick={onEdit}>
              Edit IPv4
            </button>
          </div>
        </>
      )}
    </article>
  )
}

export function NetworkPage() {
  const current = useValue(watch)
  // While a change is watched the page does not reload by itself: any request the vehicle hears keeps the
  // change, and that should be the pilot's "keep" (or another client), not this page refreshing a table.
  const refreshOn = settledPhase(current) ? (['network_changed'] as const) : []
  const wired = useResource<WiredDevice[]>('/api/network/wired/devices', [...refreshOn])
  const profiles = useResource<ConnectionProfile[]>('/api/network/connection_profiles', [...refreshOn])
  const [editing, setEditing] = useState<string | null>(null)
  const profileName = (path: string | null) => profiles.data?.find((p) => p.path === path)?.id ?? path ?? '—'
  // Once a watched change has settled, what the vehicle has now (its events may not have reached this page).
  const outcome = settledPhase(current) ? (current?.phase ?? null) : null
  // While the change is open, and once kept at another address, what this page read may be the past.
  const stale = current && (!outcome || (outcome === 'kept' && current.target !== null && current.target !== serviceBase()))
  useEffect(() => {
    if (!outcome) return
    void wired.reload()
    void profiles.reload()
  }, [outcome])
  return (
    <section aria-labelledby="network-title" class="network">
      <h1 id="network-title">Network</h1>
      {current && <ChangePanel w={current} />}
      <LinkTest />
      <h2>Wired interfaces</h2>
      {stale && (
        <p class="muted" data-stale>
          As last read from {location.host} before the change: this page may not reach the vehicle there any more.
        </p>
      )}
      <ErrorLine error={wired.error} />
      {wired.data && !wired.data.length && <p class="muted">NetworkManager manages no wired interface.</p>}
      {wired.data && wired.data.length > 0 && (
        <table class="table" data-wired>
          <thead>
            <tr>
              <th scope="col">Interface</th>
              <th scope="col">State</th>
              <th scope="col">Address</th>
              <th scope="col">Profile</th>
            </tr>
          </thead>
          <tbody>
            {wired.data.map((w) => (
              <tr key={w.interface} data-interface={w.interface}>
                <td>{w.interface}</td>
                <td data-state={w.state}>{STATES[w.state] ?? `state ${w.state}`}</td>
                <td data-address>{addresses(w.active_ip_configuration)}</td>
                <td>{profileName(w.active_profile_id)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Profiles</h2>
      <ErrorLine error={wired.error ? null : profiles.error} />
      {profiles.data && !profiles.data.length && <p class="muted">No ethernet profile.</p>}
      {profiles.data && profiles.data.length > 0 && (
        <div class="cards" data-profiles>
          {profiles.data.map((p) => (
            <ProfileCard key={p.path} profile={p} wired={wired.data ?? []} editing={editing === p.path} onEdit={() => setEditing(p.path)} onClose={() => setEditing(null)} />
          ))}
        </div>
      )}
    </section>
  )
}
