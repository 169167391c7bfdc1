// Cameras: a card per device, kept current by events (devices.ts).
import { devices, devicesError } from '../devices'
import { useValue } from '../state'
import type { Device } from '../types'
import { ErrorLine } from '../widgets'

const LEADS = new Set([1, 3])
const FOLLOWS = new Set([2, 4])

export const displayName = (d: Device) => d.nickname || d.name || d.bus_info

/** What the device is in a stereo group, in words. */
export function groupRole(d: Device, all: Device[]): string {
  const name = (bus: string) => {
    const other = all.find((x) => x.bus_info === bus)
    return other ? displayName(other) : bus
  }
  if (d.followers.length) return `leads ${d.followers.map(name).join(', ')}`
  if (d.leader) return `follows ${name(d.leader)}`
  if (LEADS.has(d.device_type)) return 'can lead a group'
  if (FOLLOWS.has(d.device_type)) return 'can follow a leader'
  return 'no group role'
}

function StreamStatusLine({ d }: { d: Device }) {
  const s = d.stream_status ?? { state: 'stopped', error: null, restarts: 0 }
  return (
    <p class="stream-status" data-stream-state={s.state}>
      <span class={`tag ${s.state}`}>{s.state}</span> {d.stream.encode_type} {d.stream.width}×{d.stream.height} · restarts {s.restarts} · drops {d.frame_stats.num_drops}
      {s.error && <span class="error-text"> · {s.error}</span>}
    </p>
  )
}

function CameraCard({ d, all }: { d: Device; all: Device[] }) {
  return (
    <article class="card" data-device={d.bus_info} aria-labelledby={`title-${d.bus_info}`}>
      <header>
        <h2 id={`title-${d.bus_info}`}>{displayName(d)}</h2>
        <p class="muted">
          {[d.manufacturer, d.name].filter(Boolean).join(' ')} · <code>{d.bus_info}</code>
        </p>
        <p class="muted" data-role>
          {groupRole(d, all)}
        </p>
      </header>
      <StreamStatusLine d={d} />
    </article>
  )
}

export function CamerasPage() {
  const list = useValue(devices)
  const error = useValue(devicesError)
  return (
    <section aria-labelledby="cameras-title">
      <h1 id="cameras-title">Cameras</h1>
      <ErrorLine error={error} />
      {list && !list.length && <p class="muted">No camera is connected.</p>}
      <div class="cards" data-cards>
        {list?.map((d) => <CameraCard key={d.bus_info} d={d} all={list} />)}
      </div>
    </section>
  )
}
