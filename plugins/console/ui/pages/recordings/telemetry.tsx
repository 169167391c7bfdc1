// A recording with the vehicle's telemetry (its Matroska file has the text track the recorder writes
// while an autopilot is on the MAVLink link): links to its sidecars (.ass for a player beside the
// downloaded video, .csv for a spreadsheet), and its last values, read from the CSV when asked.
import { useState } from 'preact/hooks'
import { request, serviceUrl } from '../../api'

const sidecarUrl = (fileName: string, kind: 'ass' | 'csv') => serviceUrl(`/api/recordings/${encodeURIComponent(fileName)}/telemetry.${kind}`)

/** The CSV's last row as "column value" pairs, the empty ones left out. */
function lastValues(csv: string): string {
  const lines = csv.trim().split(/\r?\n/)
  if (lines.length < 2) return 'no values'
  const header = lines[0]!.split(',')
  const last = lines[lines.length - 1]!.split(',')
  return header.map((h, i) => [h, last[i] ?? ''] as const).filter(([h, v]) => v !== '' && h !== 'end_s').map(([h, v]) => `${h} ${v}`).join(' · ')
}

export function TelemetryLinks({ fileName }: { fileName: string }) {
  const [values, setValues] = useState<string | null>(null)
  const [error, setError] = useState<string | null>(null)
  const show = async () => {
    try {
      setValues(lastValues((await request('GET', sidecarUrl(fileName, 'csv'))).text))
      setError(null)
    } catch (e) {
      setError((e as Error).message)
    }
  }
  return (
    <span class="telemetry" data-telemetry={fileName}>
      <span class="tag ok" title="The video carries the vehicle's telemetry as a subtitle track (VLC, mpv and ffmpeg read it)">telemetry</span>{' '}
      <a href={sidecarUrl(fileName, 'ass')} download data-sidecar="ass">.ass</a>{' '}
      <a href={sidecarUrl(fileName, 'csv')} download data-sidecar="csv">.csv</a>{' '}
      <button type="button" class="small" data-action="telemetry-values" onClick={show}>
        Last values
      </button>
      {values && (
        <small class="muted" data-telemetry-values>
          {' '}
          {values}
        </small>
      )}
      {error && <small class="error-text"> {error}</small>}
    </span>
  )
}
