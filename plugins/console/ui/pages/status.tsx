// Status: GET /api/health — the service's version and uptime, whether settings can be saved, each
// plugin's state with its reason, and which plugin provides which backend.
import { Fragment } from 'preact'
import { diskUsage, type Disk } from '../format'
import { useResource, whenChanged } from '../resource'
import type { Health } from '../types'
import { ErrorLine } from '../widgets'

function uptime(seconds: number): string {
  const d = Math.floor(seconds / 86400)
  const h = Math.floor((seconds % 86400) / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  return d ? `${d} d ${h} h` : h ? `${h} h ${m} min` : m ? `${m} min ${seconds % 60} s` : `${seconds} s`
}

/** The autopilot's last telemetry as /api/health's mavlink plugin reports it (docs/recordings.md). */
function vehicleText(mavlink: Health['plugins'][string] | undefined): string {
  if (!mavlink?.enabled) return 'no MAVLink link (--mavlink)'
  const v = mavlink.vehicle as { armed: boolean; mode: string; depth_m: number | null; heading_deg: number | null; battery_v: number | null } | null | undefined
  if (!v) return 'no autopilot heard'
  return [
    v.armed ? 'ARMED' : 'disarmed',
    v.mode,
    v.depth_m !== null ? `depth ${v.depth_m.toFixed(2)} m` : null,
    v.heading_deg !== null ? `heading ${Math.round(v.heading_deg)}°` : null,
    v.battery_v !== null ? `battery ${v.battery_v.toFixed(2)} V` : null,
  ].filter(Boolean).join(' · ')
}

export function StatusPage() {
  const health = useResource<Health>('/api/health', ['stream_error', 'device_added', 'device_removed', 'network_changed', 'preferences_updated'])
  const disk = useResource<Disk>('/api/recordings/disk', [['recording', whenChanged('active')]])
  const h = health.data
  const reasons = h ? [...(h.settings.state !== 'ok' ? [`settings: ${h.settings.detail ?? h.settings.state}`] : []), ...Object.entries(h.plugins).filter(([, p]) => p.state !== 'ok').map(([name, p]) => `${name}: ${p.detail ?? p.state}`)] : []
  return (
    <section aria-labelledby="status-title">
      <h1 id="status-title">Status</h1>
      <ErrorLine error={health.error} />
      <button type="button" onClick={() => (void health.reload(), void disk.reload())}>
        Refresh
      </button>
      {h && (
        <>
          <dl class="facts" data-health={h.status}>
            <dt>Service</dt>
            <dd>
              <span class={`tag ${h.status}`}>{h.status}</span>
            </dd>
            <dt>Version</dt>
            <dd>{h.version}</dd>
            <dt>Up for</dt>
            <dd>{uptime(h.uptime_s)}</dd>
            <dt>Settings</dt>
            <dd>
              <span class={`tag ${h.settings.state}`}>{h.settings.state}</span> {h.settings.detail}
            </dd>
            <dt>Vehicle</dt>
            <dd data-vehicle>{vehicleText(h.plugins.mavlink)}</dd>
            <dt>Recordings disk</dt>
            <dd data-disk>{disk.data ? diskUsage(disk.data).text : (disk.error ?? '…')}</dd>
          </dl>
          {reasons.length > 0 && (
            <>
              <h2>Why degraded</h2>
              <ul class="list" data-degraded>
                {reasons.map((r) => (
                  <li key={r}>{r}</li>
                ))}
              </ul>
            </>
          )}
          <h2>Plugins</h2>
          <table class="table" data-plugins>
            <thead>
              <tr>
                <th scope="col">Plugin</th>
                <th scope="col">State</th>
                <th scope="col">Why</th>
              </tr>
            </thead>
            <tbody>
              {Object.entries(h.plugins).map(([name, p]) => (
                <tr key={name} data-plugin={name}>
                  <td>{name}</td>
                  <td>
                    <span class={`tag ${p.state}`}>{p.state}</span>
                  </td>
                  <td>{p.detail ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
          <h2>Backends</h2>
          <dl class="facts" data-backends>
            {Object.entries(h.backends).map(([kind, plugin]) => (
              <Fragment key={kind}>
                <dt>{kind}</dt>
                <dd>{plugin}</dd>
              </Fragment>
            ))}
          </dl>
        </>
      )}
    </section>
  )
}
