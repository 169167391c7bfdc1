// Recordings: the files in the recordings folder, newest first, and the disk they fill.
import { useResource, whenChanged } from '../resource'
import type { Recording } from '../types'
import { ErrorLine } from '../widgets'

type Listed = Recording & { in_progress?: boolean }
interface Disk {
  total: number
  used: number
  free: number
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`

export function RecordingsPage() {
  // Reloaded when a recording starts or ends, not at each second it grows.
  const list = useResource<Listed[]>('/api/recordings', [['recording', whenChanged('active')]])
  const disk = useResource<Disk>('/api/recordings/disk', [['recording', whenChanged('active')]])
  const rows = [...(list.data ?? [])].sort((a, b) => (a.created < b.created ? 1 : a.created > b.created ? -1 : 0))
  return (
    <section aria-labelledby="recordings-title">
      <h1 id="recordings-title">Recordings</h1>
      {disk.data && (
        <p class="muted" data-disk>
          {gib(disk.data.used)} used of {gib(disk.data.total)}, {gib(disk.data.free)} free
        </p>
      )}
      <ErrorLine error={list.error ?? disk.error} />
      {list.data && !rows.length && <p class="muted">No recordings yet: start one from a camera's card.</p>}
      {rows.length > 0 && (
        <table class="table" data-recordings>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Size</th>
              <th scope="col">Duration</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((r) => (
              <tr key={r.path} data-recording={`${r.name}.${r.format}`}>
                <td>
                  {r.name}.{r.format} {r.in_progress && <span class="tag live">recording</span>}
                </td>
                <td>{r.size}</td>
                <td>{r.duration}</td>
                <td>{r.created}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  )
}
