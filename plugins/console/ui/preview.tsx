// A camera's live picture, from the links the service lists in the device's `watch` (never a URL built
// here; devices.ts has them as this page reaches them, watchLinksForPage): WebRTC over WHEP for an H.264 stream (no re-encoding on the vehicle), the camera's own JPEGs as
// MJPEG in an <img> for an MJPG stream, and a snapshot refreshed every few seconds when neither works.
// The decoded frames and size are read from the browser (getStats, naturalWidth) and shown.
// A pilot on a thin tether turns previews off, all at once or card by card: kept in this browser
// (localStorage), and while off nothing is asked of the service for them (no WHEP, MJPEG or snapshot).
import { useEffect, useRef, useState } from 'preact/hooks'
import { whyRefused } from './api'
import { FrameRate } from './framerate'
import { whepSession } from './whep'
import { useValue, Value } from './state'
import type { Device } from './types'

type Mode = 'whep' | 'mjpeg' | 'snapshot'

/** Seconds between snapshots when the live views fail. */
const SNAPSHOT_EVERY_MS = 3000

function WhepView({ url, onFail }: { url: string; onFail(why: string): void }) {
  const video = useRef<HTMLVideoElement>(null)
  // Browsers play media muted until the pilot asks (autoplay rules): the Listen button unmutes.
  const [listening, setListening] = useState(false)
  const [hasSound, setHasSound] = useState(false)
  const [stats, setStats] = useState<{ frames: number; width: number; height: number; fps: number | null } | null>(null)
  useEffect(() => {
    let closed = false
    const pc = new RTCPeerConnection({ iceServers: [] })
    pc.addTransceiver('video', { direction: 'recvonly' })
    // The stream's sound, when it has one (the service answers this section inactive otherwise).
    pc.addTransceiver('audio', { direction: 'recvonly' })
    const media = new MediaStream()
    pc.ontrack = (e) => {
      media.addTrack(e.track)
      if (e.track.kind === 'audio') setHasSound(true)
      if (video.current && video.current.srcObject !== media) video.current.srcObject = media
    }
    pc.onconnectionstatechange = () => {
      if (!closed && pc.connectionState === 'failed') onFail('the WebRTC connection failed')
    }
    const close = whepSession(pc, url, onFail)
    // The browser's own count of decoded frames: shown, so a frozen picture is seen as one. The rate is
    // over a 2 s window, shown once a full one has passed (framerate.ts).
    const rate = new FrameRate()
    const timer = setInterval(async () => {
      let s = { frames: 0, width: 0, height: 0 }
      ;(await pc.getStats()).forEach((r) => {
        if (r.type === 'inbound-rtp' && r.kind === 'video') s = { frames: r.framesDecoded ?? 0, width: r.frameWidth ?? 0, height: r.frameHeight ?? 0 }
      })
      const fps = rate.add(performance.now(), s.frames)
      if (!closed) setStats({ ...s, fps })
    }, 1000)
    return () => {
      closed = true
      clearInterval(timer)
      close()
    }
  }, [url])
  return (
    <div class="preview-box" data-preview="whep" data-frames-decoded={stats?.frames ?? 0} data-fps={stats?.fps == null ? '' : stats.fps.toFixed(1)}>
      <video ref={video} muted={!listening} autoplay playsInline />
      {hasSound && (
        <button type="button" class="small listen" data-action="listen" aria-pressed={listening} onClick={() => setListening(!listening)} title="Hear the stream's sound in this browser">
          {listening ? 'Sound on' : 'Listen'}
        </button>
      )}
      {stats && (
        <span class="overlay">
          {stats.width}×{stats.height} · {stats.fps === null ? '… fps' : `${Math.round(stats.fps)} fps`} · WebRTC
        </span>
      )}
    </div>
  )
}

function MjpegView({ url, onFail }: { url: string; onFail(why: string): void }) {
  const [size, setSize] = useState<string | null>(null)
  const img = useRef<HTMLImageElement>(null)
  const closed = useRef(false)
  // Chromium goes on loading a multipart <img> taken out of the page (the service would count a viewer
  // that is gone); dropping its src ends the request now. The element is held from the mount: Preact
  // clears the ref before this cleanup runs.
  useEffect(() => {
    const element = img.current
    return () => {
      closed.current = true
      element?.removeAttribute('src')
    }
  }, [])
  const failed = () => {
    if (!closed.current) void whyRefused(url).then((why) => !closed.current && onFail(why ?? 'the MJPEG stream ended'))
  }
  return (
    <div class="preview-box" data-preview="mjpeg">
      <img ref={img} src={url} alt="live picture" onLoad={(e) => setSize(`${e.currentTarget.naturalWidth}×${e.currentTarget.naturalHeight}`)} onError={failed} />
      {size && <span class="overlay">{size} · MJPEG</span>}
    </div>
  )
}

/** A snapshot now and every few seconds while shown (`every`), or once. */
function SnapshotView({ url, every }: { url: string; every: number | null }) {
  const [src, setSrc] = useState<string | null>(null)
  const [failed, setFailed] = useState(false)
  useEffect(() => {
    const take = () => {
      // A new query each time: the browser would show its cached picture for the same URL.
      const next = new URL(url)
      next.searchParams.set('height', '360')
      next.searchParams.set('at', String(Date.now()))
      setSrc(next.href)
    }
    take()
    if (every === null) return
    const timer = setInterval(take, every)
    return () => clearInterval(timer)
  }, [url, every])
  return (
    <div class="preview-box" data-preview="snapshot">
      {src && <img src={src} alt="snapshot" onError={() => setFailed(true)} onLoad={() => setFailed(false)} />}
      <span class="overlay">{failed ? 'no snapshot: the camera did not give one' : every ? 'snapshots (live view unavailable)' : 'snapshot'}</span>
    </div>
  )
}

// ---- previews on or off, for this browser ----

/** 'off' while every preview is off. */
const PREVIEWS_KEY = 'periscope.previews'
/** The bus_info of each camera whose own preview is off, as a JSON list. */
const HIDDEN_KEY = 'periscope.previews.hidden'

function readHidden(): string[] {
  try {
    const list: unknown = JSON.parse(localStorage.getItem(HIDDEN_KEY) ?? '[]')
    return Array.isArray(list) ? list.filter((x): x is string => typeof x === 'string') : []
  } catch {
    return []
  }
}

/** Whether live previews are on in this browser (the switch at the top). */
export const previewsOn = new Value(localStorage.getItem(PREVIEWS_KEY) !== 'off')
/** Cameras whose preview is off on its own card. */
const hiddenPreviews = new Value<readonly string[]>(readHidden())

export function setPreviewsOn(on: boolean): void {
  if (on) localStorage.removeItem(PREVIEWS_KEY)
  else localStorage.setItem(PREVIEWS_KEY, 'off')
  previewsOn.set(on)
}

function setCardPreview(bus_info: string, on: boolean): void {
  const next = readHidden().filter((b) => b !== bus_info)
  if (!on) next.push(bus_info)
  if (next.length) localStorage.setItem(HIDDEN_KEY, JSON.stringify(next))
  else localStorage.removeItem(HIDDEN_KEY)
  hiddenPreviews.set(next)
}

// Another tab of this browser changed them: follow, so no tab keeps a preview the pilot turned off.
addEventListener('storage', (e: StorageEvent) => {
  if (e.key === PREVIEWS_KEY || e.key === null) previewsOn.set(localStorage.getItem(PREVIEWS_KEY) !== 'off')
  if (e.key === HIDDEN_KEY || e.key === null) hiddenPreviews.set(readHidden())
})

/** The switch at the top of every page: all previews on or off. */
export function PreviewsSwitch() {
  const on = useValue(previewsOn)
  return (
    <button
      type="button"
      class="plain previews-switch"
      role="switch"
      aria-checked={on}
      data-action="previews"
      title={on ? 'Turn every live preview off (for a thin tether): no video is sent to this browser' : 'Turn live previews back on'}
      onClick={() => setPreviewsOn(!on)}
    >
      Previews <span class="state">{on ? 'on' : 'off'}</span>
    </button>
  )
}

/** The card's preview, or a note that it is off, and the card's own on/off button. */
export function Preview({ d }: { d: Device }) {
  const allOn = useValue(previewsOn)
  const cardOn = !useValue(hiddenPreviews).includes(d.bus_info)
  if (!allOn)
    return (
      <div class="preview-box empty" data-preview="off">
        <span class="muted">Previews are off in this browser (switch at the top)</span>
      </div>
    )
  const toggle = (
    <button type="button" class="small" data-action="card-preview" aria-pressed={!cardOn} onClick={() => setCardPreview(d.bus_info, !cardOn)}>
      {cardOn ? 'Hide preview' : 'Show preview'}
    </button>
  )
  if (!cardOn)
    return (
      <div class="preview-box empty" data-preview="off">
        <span class="muted">Preview off for this camera</span>
        {toggle}
      </div>
    )
  return (
    <div class="preview">
      <LivePreview d={d} />
      <div class="preview-bar">{toggle}</div>
    </div>
  )
}

function LivePreview({ d }: { d: Device }) {
  const running = d.stream_status?.state === 'running'
  const watch = d.watch
  const encode = d.stream.encode_type
  const live: Mode | null = running && watch?.whep && (encode === 'H264' || encode === 'SOFTWARE_H264') ? 'whep' : running && watch?.mjpeg && encode === 'MJPG' ? 'mjpeg' : null
  const [failed, setFailed] = useState<string | null>(null)
  const [still, setStill] = useState(false)
  // A new stream (restarted, reconfigured) gets a new try at the live view.
  useEffect(() => setFailed(null), [live, watch?.whep, watch?.mjpeg, d.stream_status?.restarts])
  const fail = (why: string) => setFailed(why)
  if (live && !failed) return live === 'whep' ? <WhepView key={watch!.whep} url={watch!.whep!} onFail={fail} /> : <MjpegView key={watch!.mjpeg} url={watch!.mjpeg!} onFail={fail} />
  if (live && failed && watch?.snapshot)
    return (
      <div>
        <SnapshotView url={watch.snapshot} every={SNAPSHOT_EVERY_MS} />
        <p class="hint" data-preview-fallback>
          Live view failed ({failed}); showing snapshots.
        </p>
      </div>
    )
  return (
    <div class="preview-box empty" data-preview="none">
      {still && watch?.snapshot ? (
        <SnapshotView url={watch.snapshot} every={null} />
      ) : (
        <span class="muted">{d.leader ? 'Streams with its leader' : running ? 'No live view for this stream' : 'Stream stopped'}</span>
      )}
      {!running && watch?.snapshot && !still && (
        <button type="button" class="small" onClick={() => setStill(true)}>
          Take a snapshot
        </button>
      )}
    </div>
  )
}
