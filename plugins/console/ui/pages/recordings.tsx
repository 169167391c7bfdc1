// Recordings: the files in the recordings folder (newest first, as the service lists them) with their
// size, duration and creation time, the one being written marked; play one in the page, rename it
// (the service's name rules shown), delete it (after a confirmation), select several and download
// them as one zip with a progress bar, and the disk they fill; mark one kept (the retention policy
// never deletes it) and set that policy (./recordings/retention.tsx). Kept current by events: a
// recording starting, growing or ending (`recording`, and a RECORDING stream's `stream_error` state
// changes), deleted (`recording_deleted`) or marked (`recording_kept`) reloads the list; nothing polls.
// A recording written in segments is one row (rename, delete, keep and zip act on all its files) with a
// row per segment under it, each played or downloaded alone.
import { Fragment } from 'preact'
import { useEffect, useState } from 'preact/hooks'
import { api } from '../api'
import { useResource } from '../resource'
import type { Recording } from '../types'
import { diskUsage, type Disk } from '../format'
import { ConfirmDialog, ErrorLine, useAction } from '../widgets'
import { Player, recordingUrl } from './recordings/player'
import './recordings/recordings.css'
import { RenameDialog } from './recordings/rename'
import { RetentionPanel } from './recordings/retention'
import { TelemetryLinks } from './recordings/telemetry'
import { useZipJob, ZipProgress } from './recordings/zip'

type Listed = Recording & { in_progress?: boolean; kept?: boolean; telemetry?: boolean }

/** The file's own name (its extension as written on disk): the name every recording route takes. */
export const fileNameOf = (r: Recording) => r.path.slice(r.path.lastIndexOf('/') + 1) || `${r.name}.${r.format}`

const REFRESH_ON = ['recording', 'stream_error', 'recording_deleted', 'recording_kept'] as const

function DiskUsage({ disk }: { disk: Disk }) {
  const { share, text } = diskUsage(disk)
  return (
    <div class="disk" data-disk>
      <meter min={0} max={1} value={share} low={0.8} high={0.95} optimum={0} aria-label="Disk used" />
      <span>{text}</span>
    </div>
  )
}

export function RecordingsPage() {
  const list = useResource<Listed[]>('/api/recordings', [...REFRESH_ON])
  const disk = useResource<Disk>('/api/recordings/disk', [...REFRESH_ON])
  const rows = list.data ?? []
  const [selected, setSelected] = useState<Set<string>>(new Set())
  const [playing, setPlaying] = useState<string | null>(null)
  const [renaming, setRenaming] = useState<string | null>(null)
  const [deleting, setDeleting] = useState<Listed | null>(null)
  const [run, action] = useAction()
  const zip = useZipJob()

  // What is no longer listed (renamed, deleted, elsewhere) cannot stay selected or playing.
  useEffect(() => {
    if (!list.data) return
    const names = new Set(list.data.map(fileNameOf))
    const playable = new Set([...names, ...list.data.flatMap((r) => r.segments?.map((seg) => seg.file) ?? [])])
    setSelected((s) => (([...s].every((n) => names.has(n)) ? s : new Set([...s].filter((n) => names.has(n))))))
    setPlaying((p) => (p && playable.has(p) ? p : null))
  }, [list.data])

  const selectable = rows.filter((r) => !r.in_progress).map(fileNameOf)
  const allSelected = selectable.length > 0 && selectable.every((n) => selected.has(n))
  const toggle = (name: string, on: boolean) =>
    setSelected((s) => {
      const next = new Set(s)
      if (on) next.add(name)
      else next.delete(name)
      return next
    })
  const reloadAll = () => Promise.all([list.reload(), disk.reload()])

  const remove = (r: Listed) => {
    const name = fileNameOf(r)
    setDeleting(null)
    void run(async () => {
      try {
        await api('DELETE', `/api/recordings/${encodeURIComponent(name)}`)
      } finally {
        // Refused or not, the list shows what the service has now (a 404: someone else removed it).
        void reloadAll()
      }
    }, `Deleted ${name}`)
  }

  const setKept = (name: string, kept: boolean) =>
    void run(async () => {
      try {
        await api(kept ? 'POST' : 'DELETE', `/api/recordings/${encodeURIComponent(name)}/keep`)
      } finally {
        void list.reload()
      }
    }, kept ? `${name} will be kept` : `${name} may be deleted by the retention policy`)

  const zipping = zip.status?.state === 'preparing' || zip.busy
  return (
    <section aria-labelledby="recordings-title" class="recordings">
      <h1 id="recordings-title">Recordings</h1>
      {disk.data && <DiskUsage disk={disk.data} />}
      <ErrorLine error={list.error ?? disk.error} />
      <RetentionPanel />
      {playing && <Player fileName={playing} onClose={() => setPlaying(null)} />}
      <div class="actions toolbar">
        <span class="muted" data-selected-count>
          {selected.size ? `${selected.size} selected` : 'Select recordings to download them as one zip'}
        </span>
        <button type="button" class="primary" data-zip disabled={!selected.size || zipping} onClick={() => void zip.start([...selected])}>
          Download {selected.size > 1 ? `${selected.size} recordings` : 'selected'} as zip
        </button>
        {selected.size > 0 && (
          <button type="button" onClick={() => setSelected(new Set())}>
            Clear selection
          </button>
        )}
      </div>
      <ZipProgress job={zip} />
      <ErrorLine error={action.error} />
      {list.data && !rows.length && <p class="muted">No recordings yet: start one from a camera's card.</p>}
      {rows.length > 0 && (
        <div class="table-scroll">
          <table class="table" data-recordings>
            <thead>
              <tr>
                <th scope="col" class="check">
                  <input
                    type="checkbox"
                    aria-label="Select every recording"
                    checked={allSelected}
                    disabled={!selectable.length}
                    onChange={(e) => setSelected(e.currentTarget.checked ? new Set(selectable) : new Set())}
                  />
                </th>
                <th scope="col">Name</th>
                <th scope="col">Size</th>
                <th scope="col">Duration</th>
                <th scope="col">Created</th>
                <th scope="col" title="A kept recording is never deleted by the retention policy">
                  Kept
                </th>
                <th scope="col">
                  <span class="visually-hidden">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => {
                const name = fileNameOf(r)
                const busy = r.in_progress ? 'It is still being recorded' : undefined
                // Several segments are no one file: Play opens the first, each segment's row plays its own.
                const segments = r.segments && r.segments.length > 1 ? r.segments : null
                const playName = segments ? segments[0]!.file : name
                return (
                  <Fragment key={r.path}>
                  <tr data-recording={name} data-in-progress={r.in_progress ? 'true' : undefined} class={playing === name ? 'playing' : undefined}>
                    <td class="check">
                      <input type="checkbox" data-select aria-label={`Select ${name}`} title={busy} disabled={!!busy} checked={selected.has(name)} onChange={(e) => toggle(name, e.currentTarget.checked)} />
                    </td>
                    <td class="name">
                      {name} {r.kind === 'still' && <span class="tag" data-kind="still">still</span>} {r.in_progress && <span class="tag live">recording</span>} {segments && <span class="tag" data-segment-count>{segments.length} segments</span>}
                      {r.telemetry && (
                        <div>
                          <TelemetryLinks fileName={playName} />
                        </div>
                      )}
                    </td>
                    <td data-size>{r.size}</td>
                    <td data-duration>{r.duration}</td>
                    <td data-created>{r.created}</td>
                    <td class="check">
                      <input type="checkbox" data-keep aria-label={`Keep ${name}`} title="Never deleted by the retention policy" checked={!!r.kept} onChange={(e) => setKept(name, e.currentTarget.checked)} />
                    </td>
                    <td class="row-actions">
                      <button type="button" class="small" data-action="play" aria-label={`Play ${name}`} onClick={() => setPlaying(playName)}>
                        Play
                      </button>
                      <button type="button" class="small" data-action="rename" aria-label={`Rename ${name}`} title={busy} disabled={!!busy} onClick={() => setRenaming(name)}>
                        Rename
                      </button>
                      <button type="button" class="small danger" data-action="delete" aria-label={`Delete ${name}`} title={busy} disabled={!!busy} onClick={() => setDeleting(r)}>
                        Delete
                      </button>
                    </td>
                  </tr>
                  {segments?.map((seg, i) => (
                    <tr key={seg.file} class={`segment${playing === seg.file ? ' playing' : ''}`} data-segment={seg.file} data-in-progress={seg.in_progress ? 'true' : undefined}>
                      <td />
                      <td class="name">
                        <span class="muted">segment {i + 1}:</span> {seg.file} {seg.in_progress && <span class="tag live">recording</span>}
                        {seg.telemetry && i > 0 && (
                          <div>
                            <TelemetryLinks fileName={seg.file} />
                          </div>
                        )}
                      </td>
                      <td data-size>{seg.size}</td>
                      <td data-duration>{seg.duration}</td>
                      <td />
                      <td />
                      <td class="row-actions">
                        <button type="button" class="small" data-action="play" aria-label={`Play ${seg.file}`} onClick={() => setPlaying(seg.file)}>
                          Play
                        </button>
                        <a class="small" data-action="download" href={recordingUrl(seg.file, 'download')} download={seg.file} aria-label={`Download ${seg.file}`}>
                          Download
                        </a>
                      </td>
                    </tr>
                  ))}
                  </Fragment>
                )
              })}
            </tbody>
          </table>
        </div>
      )}
      {renaming && (
        <RenameDialog
          fileName={renaming}
          onCancel={() => setRenaming(null)}
          onRenamed={(next) => {
            setRenaming(null)
            setSelected((s) => (s.has(renaming) ? new Set([...s].map((n) => (n === renaming ? next : n))) : s))
            setPlaying((p) => (p === renaming ? next : p))
            void reloadAll()
          }}
        />
      )}
      {deleting && (
        <ConfirmDialog title="Delete this recording?" confirm="Delete" danger onCancel={() => setDeleting(null)} onConfirm={() => remove(deleting)}>
          <p data-confirm-delete={fileNameOf(deleting)}>
            <strong>{fileNameOf(deleting)}</strong> ({deleting.size}, {deleting.duration}) will be deleted from the vehicle. This cannot be undone.
          </p>
        </ConfirmDialog>
      )}
    </section>
  )
}
