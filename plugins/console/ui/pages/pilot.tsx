// The pilot's view: the cameras' live pictures filling the screen, all in a grid or one alone, driven by
// the keyboard (1–9: that camera alone; G or Esc: the grid; ←/→: the next camera; F: the browser's full
// screen). Each picture carries its camera's name, its figures (the delay, loss, jitter and round trip of
// a WebRTC view: preview.tsx) and the stream's health as the service receives it, with its alert.
import { useEffect, useState } from 'preact/hooks'
import { devices, reloadDevices } from '../devices'
import { cameraTitle, healthLine } from '../format'
import { LivePreview, previewsOn } from '../preview'
import { useValue } from '../state'
import type { Device } from '../types'

/** The cameras a pilot watches: those with a stream of their own (a follower streams with its leader). */
const watched = (all: Device[]) => all.filter((d) => d.stream.enabled && d.stream.encode_type !== 'NONE' && !d.leader)

/** The streams' health under the pictures is read again this often (the service measures it once a second; no event carries every second's). */
const HEALTH_EVERY_MS = 1000

/** Columns for `n` pictures: as near a square as the count allows. */
const columns = (n: number) => Math.max(1, Math.ceil(Math.sqrt(n)))

export function PilotPage() {
  const cameras = watched(useValue(devices) ?? [])
  const on = useValue(previewsOn)
  /** The camera shown alone (its bus_info), or null for the grid. */
  const [alone, setAlone] = useState<string | null>(null)
  const one = alone !== null && cameras.some((d) => d.bus_info === alone)

  useEffect(() => {
    const timer = setInterval(() => void reloadDevices(), HEALTH_EVERY_MS)
    return () => clearInterval(timer)
  }, [])

  useEffect(() => {
    const key = (e: KeyboardEvent) => {
      // Typing into a field, or a key with a modifier (the browser's own shortcuts), is not for the view.
      if (e.ctrlKey || e.metaKey || e.altKey || (e.target as HTMLElement | null)?.closest?.('input, select, textarea, dialog')) return
      const at = alone === null ? -1 : cameras.findIndex((d) => d.bus_info === alone)
      if (/^[1-9]$/.test(e.key)) {
        const d = cameras[Number(e.key) - 1]
        if (d) setAlone(d.bus_info)
      } else if (e.key === 'g' || e.key === 'G' || e.key === 'Escape') setAlone(null)
      else if ((e.key === 'ArrowRight' || e.key === 'ArrowLeft') && cameras.length) {
        const step = e.key === 'ArrowRight' ? 1 : -1
        setAlone(cameras[(at + step + cameras.length) % cameras.length]!.bus_info)
      } else if (e.key === 'f' || e.key === 'F') {
        if (document.fullscreenElement) void document.exitFullscreen().catch(() => {})
        else void document.documentElement.requestFullscreen().catch(() => {})
      } else return
      e.preventDefault()
    }
    addEventListener('keydown', key)
    return () => removeEventListener('keydown', key)
  }, [alone, cameras.map((d) => d.bus_info).join()])

  // The page's title, for screen readers and the page's outline; the pictures take the room.
  const title = <h1 class="sr-only">Pilot view</h1>
  if (!on)
    return (
      <>
        {title}
        <p class="muted pilot-note">Previews are off in this browser (the switch at the top): turn them on to watch the cameras here.</p>
      </>
    )
  if (!cameras.length)
    return (
      <>
        {title}
        <p class="muted pilot-note">No camera is streaming. Start a stream on the Cameras page.</p>
      </>
    )
  return (
    <div class="pilot" data-pilot={one ? 'alone' : 'grid'}>
      {title}
      <div class="pilot-grid" style={{ gridTemplateColumns: `repeat(${columns(one ? 1 : cameras.length)}, minmax(0, 1fr))` }}>
        {/* Every picture stays (the others hidden while one is alone): a switch shows a playing picture at once, not a new session's start. */}
        {cameras.map((d) => (
          <section key={d.bus_info} class="pilot-tile" data-tile={d.bus_info} aria-label={cameraTitle(d)} hidden={one && d.bus_info !== alone}>
            <LivePreview d={d} />
            <div class="pilot-title">
              <strong>
                {cameras.indexOf(d) + 1}. {cameraTitle(d)}
              </strong>
              {d.stream_status?.health && (
                <span class="pilot-health" data-health>
                  {healthLine(d.stream_status.health, d.stream.encode_type !== 'MJPG')}
                </span>
              )}
              {d.stream_status?.health?.alert && (
                <span class="pilot-alert" role="status" data-alert>
                  {d.stream_status.health.alert}
                </span>
              )}
            </div>
          </section>
        ))}
      </div>
      <p class="pilot-keys muted">1–{Math.min(9, cameras.length)}: one camera · G or Esc: all · ← →: the next · F: full screen</p>
    </div>
  )
}
