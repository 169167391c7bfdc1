// Playing a recording in the browser: a <video> on GET /api/recordings/{name} (served inline, with
// Range, so the browser seeks). Chromium plays the Matroska H.264 files the service writes; a browser
// that cannot says so, and the download link still works. A still (a .jpg taken over MAVLink) is an <img>.
import { useState } from 'preact/hooks'
import { serviceUrl } from '../../api'

const MEDIA_ERRORS: Record<number, string> = {
  1: 'playback was aborted',
  2: 'the network failed while loading it',
  3: 'the browser could not decode it',
  4: 'this browser cannot play this file type (download it and play it with VLC)',
}

/** A recording's URL for this page, or one of its sub-resources (`download`): under the page's base (serviceUrl). */
export const recordingUrl = (fileName: string, sub?: 'download') => serviceUrl(`/api/recordings/${encodeURIComponent(fileName)}${sub ? `/${sub}` : ''}`)

export function Player({ fileName, onClose }: { fileName: string; onClose(): void }) {
  const [error, setError] = useState<string | null>(null)
  return (
    <figure class="player" data-player={fileName}>
      {/\.jpg$/i.test(fileName) ? (
        <img key={fileName} src={recordingUrl(fileName)} alt={fileName} style="display:block;max-width:100%;max-height:55vh" onError={() => setError(`${fileName} cannot be shown here`)} />
      ) : (
      <video
        key={fileName}
        src={recordingUrl(fileName)}
        controls
        autoplay
        muted
        playsInline
        preload="auto"
        onError={(e) => {
          const failure = e.currentTarget.error
          setError(`${fileName} cannot be played here: ${failure ? (MEDIA_ERRORS[failure.code] ?? failure.message) : 'unknown error'}`)
        }}
      />
      )}
      <figcaption class="actions">
        <strong>{fileName}</strong>
        <a href={recordingUrl(fileName, 'download')} download>
          Download
        </a>
        <button type="button" class="small" onClick={onClose}>
          Close player
        </button>
      </figcaption>
      {error && (
        <p class="error-line" role="alert" data-error>
          {error}
        </p>
      )}
    </figure>
  )
}
