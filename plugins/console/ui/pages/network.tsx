// Network: the wired interfaces NetworkManager manages, with their state and active address, and the
// ethernet profiles.
import { useResource } from '../resource'
import type { ConnectionProfile, IpConfiguration, WiredDevice } from '../types'
import { ErrorLine } from '../widgets'

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

export function NetworkPage() {
  const wired = useResource<WiredDevice[]>('/api/network/wired/devices', ['network_changed'])
  const profiles = useResource<ConnectionProfile[]>('/api/network/connection_profiles', ['network_changed'])
  const profileName = (path: string | null) => profiles.data?.find((p) => p.path === path)?.id ?? path ?? '—'
  return (
    <section aria-labelledby="network-title">
      <h1 id="network-title">Network</h1>
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
                <td>{STATES[w.state] ?? `state ${w.state}`}</td>
                <td>{addresses(w.active_ip_configuration)}</td>
                <td>{profileName(w.active_profile_id)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <h2>Profiles</h2>
      <ErrorLine error={wired.error ? null : profiles.error} />
      {profiles.data && (
        <ul class="list" data-profiles>
          {profiles.data.map((p) => (
            <li key={p.path}>
              <strong>{p.id}</strong> <span class="muted">{p.ipv4_settings.method}</span> {addresses(p.ipv4_settings)}
            </li>
          ))}
        </ul>
      )}
    </section>
  )
}
