// A camera's live picture, from the links the service lists in the device's `watch` (never a URL built
// here; devices.ts has them as this page reaches them, watchLinksForPage): WebRTC over WHEP for an H.264 stream (no re-encoding on the vehicle), the camera's own JPEGs as
// MJPEG in an <img> for an MJPG stream, and a snapshot refreshed every few seconds when neither works.
// The decoded frames and size are read from the browser (getStats, naturalWidth) and shown. The live
// views mark a picture that stopped moving as frozen, saying why, and come back by themselves.
// A pilot on a thin tether turns previews off, all at once or card by card: kept in this browser
// (localStorage), and while off nothing is asked of the service for them (no WHEP, MJPEG or snapshot).
import { useEffect, useRef, useState } from 'preact/hooks'
import { pauseUntilBack, reachable, refusal, request, savedToken } from './api'
import { ViewerDelay, type WhepTiming } from './delay'
import { FrameRate } from './framerate'
import { MultipartParts, type Part } from './multipart'
import { whepSession } from './whep'
import { useValue, Value } from './state'
import type { Device } from './types'

type Mode = 'whep' | 'mjpeg' | 'snapshot'

/** Seconds between snapshots when the live views fail. */
const SNAPSHOT_EVERY_MS = 3000
/** A refreshed snapshot not followed by a new one this long after the next was due is marked as old. */
const STALE_SNAPSHOT_MS = 2000

/**
 * No new frame for this long: the picture on the card is marked frozen (never a still shown as live),
 * so the mark is up within 1 s of the last frame (FROZEN_AFTER_MS + CHECK_EVERY_MS); three frame
 * intervals for a stream slower than 4 fps, so a slow stream is not called frozen between its frames.
 */
const FROZEN_AFTER_MS = 750
/** No new frame for this long, the session is taken for dead: ended and offered again. */
const DEAD_AFTER_MS = 2000
/** A new session's first frame (ICE, DTLS, the stream's latest key frame) may take this long. */
const FIRST_FRAME_WITHIN_MS = 4000
/** 'disconnected' this long is taken for dead (the browser says 'failed' only after about 30 s). */
const DISCONNECTED_FOR_MS = 2000
/** An MJPEG request whose answer has not begun in this long (a cut tether) is let go and made again. */
const ANSWER_WITHIN_MS = 3000
/** How often the picture and the connection are checked. */
const CHECK_EVERY_MS = 200
/** How often the figures on the picture (delay, loss, jitter) are refreshed, and the session's timing read. */
const FIGURES_EVERY_MS = 1000
/** The session's timing unanswered this long is no answer (an offer's own time: whep.ts OFFER_TIMEOUT_MS). */
const TIMING_WITHIN_MS = 3000
/**
 * A check this late on the wall clock means the page was asleep (a laptop's lid, a stopped browser):
 * the page's own clock (performance.now) may not have moved meanwhile, so that one cannot tell.
 */
const ASLEEP_AFTER_MS = 1500
/** The pause before the nth new offer: 0.5, 1, 2, 4, then 5 s. */
const retryDelay = (n: number) => Math.min(5000, 500 * 2 ** (n - 1))
const ordinal = (n: number) => `${n}${n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th')}`
const after = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

interface Picture {
  frozen: boolean
  /** New offers since the picture last moved. */
  tries: number
  /** Whether this view ever showed a frame. */
  shown: boolean
}

/**
 * The card's picture at `at`: frozen when it is from a session or answer taken for dead (`stale`), or
 * has not moved for FROZEN_AFTER_MS (three frame intervals for a stream slower than 4 fps); the same
 * object when nothing changed, so the view does not render again.
 */
function pictureAt(previous: Picture, at: number, stale: boolean, movedAt: number | null, tries: number, frameMs: number): Picture {
  const frozen = stale || (movedAt !== null && at - movedAt > Math.max(FROZEN_AFTER_MS, 3 * frameMs))
  const shown = movedAt !== null
  return previous.frozen === frozen && previous.tries === tries && previous.shown === shown ? previous : { frozen, tries, shown }
}

/**
 * The WebRTC view, which comes back by itself: it watches the decoded frames and the connection, marks
 * the picture frozen after FROZEN_AFTER_MS without a frame, and when the session is dead (the connection
 * failed or closed, disconnected for long, no answer from the service, no frame for DEAD_AFTER_MS) ends
 * it (DELETE, best effort) and offers again after a growing pause. A refusal (503 --max-viewers, 409) is
 * the card's to show (onFail).
 */
function WhepView({ url, frameMs, onFail }: { url: string; frameMs: number; onFail(why: string): void }) {
  const video = useRef<HTMLVideoElement>(null)
  // Browsers play media muted until the pilot asks (autoplay rules): the Listen button unmutes.
  const [listening, setListening] = useState(false)
  const [hasSound, setHasSound] = useState(false)
  type Stats = { frames: number; width: number; height: number; fps: number | null }
  const [shownStats, setShownStats] = useState<Stats | null>(null)
  const [figures, setFigures] = useState<Figures | null>(null)
  const [picture, setPicture] = useState<Picture>({ frozen: false, tries: 0, shown: false })
  const answering = useValue(reachable)
  useEffect(() => {
    let stopped = false
    let pc: RTCPeerConnection | null = null
    let close: (() => Promise<void>) | null = null
    let tries = 0
    // This session's: when it was offered, its decoded frames, its last new frame, since when disconnected.
    let offeredAt = 0
    let frames = 0
    let lastFrameAt: number | null = null
    let disconnectedAt: number | null = null
    /** The last new frame of any session: the picture on the card. */
    let movedAt: number | null = null
    /** The picture is from a session taken for dead: frozen until the next one shows a frame. */
    let stale = false
    /** The current session's media: frames of an older one (a jitter buffer's, after a sleep) do not count. */
    let media: MediaStream | null = null
    let lastCheck = Date.now()
    let checking = false
    // The browser's own count of decoded frames: shown, so a frozen picture is seen as one. The rate is
    // over a 2 s window, shown once a full one has passed (framerate.ts).
    const rate = new FrameRate()
    // This session's URL (its timing is read there) and its delay; the packets at the last figures.
    let session: string | null = null
    let delay = new ViewerDelay()
    let packets = { received: 0, lost: 0 }
    let jitterMs: number | null = null
    let lastLoss: number | null = null
    let reading = false

    const offer = () => {
      if (stopped) return
      const next = new RTCPeerConnection({ iceServers: [] })
      pc = next
      next.addTransceiver('video', { direction: 'recvonly' })
      // The stream's sound, when it has one (the service answers this section inactive otherwise).
      next.addTransceiver('audio', { direction: 'recvonly' })
      const own = new MediaStream()
      next.ontrack = (e) => {
        own.addTrack(e.track)
        if (e.track.kind === 'audio') setHasSound(true)
        if (pc !== next) return
        media = own
        if (video.current && video.current.srcObject !== own) video.current.srcObject = own
      }
      offeredAt = performance.now()
      frames = 0
      lastFrameAt = null
      disconnectedAt = null
      session = null
      delay = new ViewerDelay()
      packets = { received: 0, lost: 0 }
      lastLoss = null
      close = whepSession(
        next,
        url,
        (why, status) => {
          if (stopped || pc !== next) return
          // No answer at all (the service restarting, the link down): offer again; a refusal is the card's.
          if (status === 0) lost(retryDelay(tries + 1), true)
          else onFail(why)
        },
        (answered) => {
          if (pc === next) session = answered
        },
      )
    }

    /** Once a second: the session's timing (and the clock against the vehicle's), and the figures shown on the picture. */
    const refreshFigures = async () => {
      const current = pc
      if (stopped || !current || reading) return
      if (session) {
        reading = true
        const own = delay
        // What this view measured goes with the request: the stream's health counts it (its alert past --delay-alert).
        const said = new URLSearchParams()
        const delayNow = own.figure(performance.timeOrigin + performance.now())
        if (delayNow !== null) said.set('delay_ms', String(Math.round(delayNow)))
        if (lastLoss !== null) said.set('loss', lastLoss.toFixed(3))
        const query = said.size ? `?${said}` : ''
        const sent = performance.timeOrigin + performance.now()
        try {
          // As long as an offer is given (whep.ts): a slow link's late answer is no vehicle gone (request() would say so on the page).
          const answer = await request('GET', session + query, undefined, { timeoutMs: TIMING_WITHIN_MS })
          own.answered(JSON.parse(answer.text) as WhepTiming, sent, performance.timeOrigin + performance.now())
        } catch {} // no answer: the figures wait for the next (the picture's own checks find a dead session)
        reading = false
      }
      let loss: number | null = null
      try {
        ;(await current.getStats()).forEach((r) => {
          if (r.type !== 'inbound-rtp' || r.kind !== 'video') return
          const received = r.packetsReceived ?? 0
          const lostNow = r.packetsLost ?? 0
          const got = received - packets.received + (lostNow - packets.lost)
          loss = got > 0 ? Math.max(0, (lostNow - packets.lost) / got) : null
          packets = { received, lost: lostNow }
          jitterMs = r.jitter === undefined ? null : r.jitter * 1000
        })
      } catch {}
      if (stopped || current !== pc) return
      lastLoss = loss
      const clock = delay.clock()
      const at = performance.timeOrigin + performance.now()
      setFigures({ at, delayMs: delay.figure(at), loss, jitterMs, roundTripMs: clock?.roundTrip ?? null })
    }

    /**
     * The session is dead: end it and offer again after a pause (cut short when the service answers
     * again; `unanswered`: the offer got no answer), the old one ended first (or given up on after 1 s)
     * so a camera with --max-viewers 1 has its place.
     */
    const lost = (pause = retryDelay(tries + 1), unanswered = false) => {
      if (stopped || !pc) return
      pc = null
      media = null
      stale = true
      tries++
      const ended = close?.() ?? Promise.resolve()
      close = null
      void Promise.all([Promise.race([ended, after(1000)]), pauseUntilBack(pause, () => stopped, unanswered)]).then(offer)
    }

    /** A new frame of the current session on the card: the picture moves. */
    const moved = (at: number) => {
      movedAt = at
      stale = false
      tries = 0
    }

    const check = async () => {
      const wall = Date.now()
      // A hidden tab's timers are throttled (to once a minute after a while): late, not asleep. Its
      // session, if gone meanwhile, is found dead by its missing frames once the tab shows.
      const asleep = wall - lastCheck > ASLEEP_AFTER_MS && document.visibilityState === 'visible'
      lastCheck = wall
      // Awake again: what the card shows is old, and the service has likely ended the silent session
      // (--whep-idle-timeout), which the browser would take long to notice: a new one, now.
      if (asleep) lost(0)
      const current = pc
      if (current && !checking) {
        checking = true
        let s = { frames: 0, width: 0, height: 0 }
        try {
          ;(await current.getStats()).forEach((r) => {
            if (r.type === 'inbound-rtp' && r.kind === 'video') s = { frames: r.framesDecoded ?? 0, width: r.frameWidth ?? 0, height: r.frameHeight ?? 0 }
          })
        } catch {} // a closed connection has no stats: its state says so below
        checking = false
        if (stopped || current !== pc) return
        const at = performance.now()
        if (s.frames > frames) {
          frames = s.frames
          lastFrameAt = at
          if (!byFrames) moved(at)
        }
        const state = current.connectionState
        disconnectedAt = state === 'disconnected' ? (disconnectedAt ?? at) : null
        const silent = lastFrameAt === null ? at - offeredAt > FIRST_FRAME_WITHIN_MS : at - lastFrameAt > DEAD_AFTER_MS
        if (state === 'failed' || state === 'closed' || (disconnectedAt !== null && at - disconnectedAt > DISCONNECTED_FOR_MS) || silent) lost()
        setShownStats({ ...s, fps: rate.add(at, s.frames) })
      }
      if (stopped) return
      setPicture((p) => pictureAt(p, performance.now(), stale, movedAt, tries, frameMs))
    }

    // Each frame the video shows, as it shows it (where the browser tells: requestVideoFrameCallback);
    // the decoder's count (getStats, at each check) stands in where it does not, as for a card out of view.
    const element = video.current
    const byFrames = Boolean(element && 'requestVideoFrameCallback' in element)
    const shown = (_now: number, meta: { rtpTimestamp?: number; expectedDisplayTime: number }) => {
      if (stopped || !element) return
      if (pc && media && element.srcObject === media) {
        lastFrameAt = performance.now()
        moved(lastFrameAt)
        // Each frame's delay, where the browser gives its RTP timestamp (delay.ts).
        if (meta.rtpTimestamp !== undefined) delay.frame(meta.rtpTimestamp, performance.timeOrigin + meta.expectedDisplayTime)
      }
      element.requestVideoFrameCallback(shown)
    }
    if (byFrames) element!.requestVideoFrameCallback(shown)
    offer()
    const timer = setInterval(() => void check(), CHECK_EVERY_MS)
    const figuresTimer = setInterval(() => void refreshFigures(), FIGURES_EVERY_MS)
    return () => {
      stopped = true
      clearInterval(timer)
      clearInterval(figuresTimer)
      void close?.()
    }
  }, [url])
  const away = picture.frozen || picture.tries > 0
  return (
    <div class="preview-box" data-preview="whep" data-frozen={away ? 'true' : undefined} data-tries={picture.tries} data-frames-decoded={shownStats?.frames ?? 0} data-fps={shownStats?.fps == null ? '' : shownStats.fps.toFixed(1)}>
      <video ref={video} muted={!listening} autoplay playsInline />
      {away && <PictureState picture={picture} answering={answering} />}
      {hasSound && (
        <button type="button" class="small listen" data-action="listen" aria-pressed={listening} onClick={() => setListening(!listening)} title="Hear the stream's sound in this browser">
          {listening ? 'Sound on' : 'Listen'}
        </button>
      )}
      {shownStats && (
        <span class="overlay">
          {shownStats.width}×{shownStats.height} · {away ? 'frozen' : shownStats.fps === null ? '… fps' : `${Math.round(shownStats.fps)} fps`} · WebRTC
          {!away && figures && <FiguresLine figures={figures} />}
        </span>
      )}
    </div>
  )
}

/** What a live view shows of its link, refreshed each second. */
interface Figures {
  /** When they were made (ms since the epoch, this page's clock): the delay is of the second before. */
  at: number
  /** Camera to screen (ms): the median of the last second's frames (delay.ts); null while unknown. */
  delayMs: number | null
  /** The share of the video's packets lost in the last second; null with none expected. */
  loss: number | null
  jitterMs: number | null
  /** The round trip of the session's timing request (ms). */
  roundTripMs: number | null
}

function FiguresLine({ figures }: { figures: Figures }) {
  const { delayMs, loss, jitterMs, roundTripMs } = figures
  const parts = [
    delayMs === null ? 'delay …' : `${Math.round(delayMs)} ms behind`,
    loss === null ? null : `lost ${(loss * 100).toFixed(loss > 0 && loss < 0.01 ? 1 : 0)} %`,
    jitterMs === null ? null : `jitter ${Math.round(jitterMs)} ms`,
    roundTripMs === null ? null : `round trip ${Math.round(roundTripMs)} ms`,
  ].filter(Boolean)
  return (
    <span class="figures" data-at={figures.at.toFixed(1)} data-delay-ms={delayMs === null ? '' : Math.round(delayMs)} data-loss={loss === null ? '' : loss.toFixed(3)} data-round-trip-ms={roundTripMs === null ? '' : Math.round(roundTripMs)}>
      <br />
      {parts.join(' · ')}
    </span>
  )
}

/**
 * The MJPEG view (an MJPG camera's own JPEGs), which comes back by itself as the WebRTC one does: the
 * stream is read here (fetch), not by an <img> that tells the page nothing after its first picture, so
 * each picture's arrival is known. The picture is marked frozen after FROZEN_AFTER_MS without one; with
 * none for DEAD_AFTER_MS (a cut link, a stopped camera), the answer ended or the service not answering,
 * it is asked for again after a growing pause. A refusal (503 --max-viewers, 409) is the card's (onFail).
 */
function MjpegView({ url, frameMs, onFail }: { url: string; frameMs: number; onFail(why: string): void }) {
  const img = useRef<HTMLImageElement>(null)
  const [shownStats, setShownStats] = useState<{ width: number; height: number; fps: number | null } | null>(null)
  const [figures, setFigures] = useState<Figures | null>(null)
  const [picture, setPicture] = useState<Picture>({ frozen: false, tries: 0, shown: false })
  const answering = useValue(reachable)
  useEffect(() => {
    let stopped = false
    let request: AbortController | null = null
    // This answer's delay (delay.ts: each part says when its frame was made and left the vehicle), and when its figure was last shown.
    let delay = new ViewerDelay()
    let figuresAt = 0
    let tries = 0
    let askedAt = 0
    let lastPartAt: number | null = null
    let movedAt: number | null = null
    /** The picture is from an answer taken for dead: frozen until the next one brings a part. */
    let stale = false
    let frames = 0
    let objectUrl: string | null = null
    let lastCheck = Date.now()
    const rate = new FrameRate()

    const show = ({ jpeg, capturedAt }: Part) => {
      const element = img.current
      if (!element) return
      const previous = objectUrl
      objectUrl = URL.createObjectURL(new Blob([jpeg], { type: 'image/jpeg' }))
      element.src = objectUrl
      if (previous) URL.revokeObjectURL(previous)
      // On the screen at the first animation frame that finds it loaded (a picture replaced first never is).
      pending = capturedAt === null ? null : { src: objectUrl, capturedAt }
    }
    let pending: { src: string; capturedAt: number } | null = null
    const onAnimationFrame = (t: number) => {
      if (stopped) return
      const element = img.current
      if (pending && element?.complete && element.src === pending.src) {
        delay.made(pending.capturedAt, performance.timeOrigin + t)
        pending = null
      }
      requestAnimationFrame(onAnimationFrame)
    }
    requestAnimationFrame(onAnimationFrame)

    const ask = async () => {
      if (stopped) return
      const own = new AbortController()
      request = own
      askedAt = performance.now()
      lastPartAt = null
      delay = new ViewerDelay()
      try {
        const token = savedToken()
        // Headers not there in ANSWER_WITHIN_MS (a cut tether): no answer, let go below.
        const late = setTimeout(() => own.abort(), ANSWER_WITHIN_MS)
        const res = await fetch(url, { cache: 'no-store', headers: token ? { authorization: `Bearer ${token}` } : {}, signal: own.signal }).finally(() => clearTimeout(late))
        if (!res.ok || !res.body) {
          const why = res.ok ? 'the answer was no MJPEG stream' : refusal(res, await res.text().catch(() => '')).detail
          if (!stopped && request === own) onFail(why)
          return
        }
        const parts = new MultipartParts()
        const reader = res.body.getReader()
        for (;;) {
          const { value, done } = await reader.read()
          if (done || request !== own) break
          for (const part of parts.push(value)) {
            lastPartAt = movedAt = performance.now()
            if (part.sentAt !== null) delay.partCame(part.sentAt, performance.timeOrigin + lastPartAt)
            stale = false
            tries = 0
            frames++
            show(part)
          }
        }
        if (!stopped && request === own) lost() // the answer ended (the stream stopped or restarted)
        return
      } catch {} // no answer, cut, aborted, or not a stream: asked again below unless this one was let go
      if (!stopped && request === own) lost(retryDelay(tries + 1), true)
    }

    /**
     * The answer is dead (ended, cut, silent): let go, and asked again after a pause (cut short when the
     * service answers again; `unanswered`: the request got no answer).
     */
    const lost = (pause = retryDelay(tries + 1), unanswered = false) => {
      if (stopped || !request) return
      request.abort()
      request = null
      stale = true
      tries++
      void pauseUntilBack(pause, () => stopped, unanswered).then(ask)
    }

    const check = () => {
      const wall = Date.now()
      const asleep = wall - lastCheck > ASLEEP_AFTER_MS && document.visibilityState === 'visible'
      lastCheck = wall
      if (asleep) lost(0)
      const at = performance.now()
      const silent = lastPartAt === null ? at - askedAt > FIRST_FRAME_WITHIN_MS : at - lastPartAt > DEAD_AFTER_MS
      if (request && silent) lost()
      setPicture((p) => pictureAt(p, at, stale, movedAt, tries, frameMs))
      const element = img.current
      const fps = rate.add(at, frames)
      if (element?.naturalWidth) setShownStats((s) => (s && s.width === element.naturalWidth && s.height === element.naturalHeight && s.fps === fps ? s : { width: element.naturalWidth, height: element.naturalHeight, fps }))
      if (at - figuresAt >= FIGURES_EVERY_MS) {
        figuresAt = at
        const delayMs = delay.figure(performance.timeOrigin + at)
        setFigures(delayMs === null ? null : { at: performance.timeOrigin + at, delayMs, loss: null, jitterMs: null, roundTripMs: null })
      }
    }

    void ask()
    const timer = setInterval(check, CHECK_EVERY_MS)
    return () => {
      stopped = true
      clearInterval(timer)
      request?.abort()
      if (objectUrl) URL.revokeObjectURL(objectUrl)
    }
  }, [url])
  const away = picture.frozen || picture.tries > 0
  return (
    <div class="preview-box" data-preview="mjpeg" data-frozen={away ? 'true' : undefined} data-tries={picture.tries} data-fps={shownStats?.fps == null ? '' : shownStats.fps.toFixed(1)}>
      <img ref={img} alt="live picture" />
      {away && <PictureState picture={picture} answering={answering} />}
      {shownStats && (
        <span class="overlay">
          {shownStats.width}×{shownStats.height} · {away ? 'frozen' : shownStats.fps === null ? '… fps' : `${Math.round(shownStats.fps)} fps`} · MJPEG
          {!away && figures && <FiguresLine figures={figures} />}
        </span>
      )}
    </div>
  )
}

/**
 * What the pilot is told while the picture is away, in words: what the page knows first (the service
 * not answering its event stream), else that the picture is frozen or not there yet, and the tries.
 */
function PictureState({ picture, answering }: { picture: Picture; answering: boolean }) {
  const said = !answering ? 'vehicle not answering' : picture.shown ? 'video frozen' : 'no video yet'
  return (
    <span class="preview-state" role="status" data-preview-state>
      {said}
      {picture.tries > 0 ? ` — reconnecting (${ordinal(picture.tries)} try)` : ''}
    </span>
  )
}

/**
 * A snapshot now and every few seconds while shown (`every`), or once. Refreshing, a picture that is
 * not followed by a new one within `every` + STALE_SNAPSHOT_MS is marked as old, with its age (a
 * camera that gives none, a link that is down): never an old still shown as the current one.
 */
function SnapshotView({ url, every }: { url: string; every: number | null }) {
  const [src, setSrc] = useState<string | null>(null)
  const [failed, setFailed] = useState(false)
  const [loadedAt, setLoadedAt] = useState<number | null>(null)
  const [now, setNow] = useState(Date.now())
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
    const clock = setInterval(() => setNow(Date.now()), 1000)
    return () => {
      clearInterval(timer)
      clearInterval(clock)
    }
  }, [url, every])
  const age = loadedAt === null ? null : Math.max(0, Math.round((now - loadedAt) / 1000))
  const old = every !== null && loadedAt !== null && now - loadedAt > every + STALE_SNAPSHOT_MS
  return (
    <div class="preview-box" data-preview="snapshot" data-frozen={old ? 'true' : undefined}>
      {src && (
        <img
          src={src}
          alt="snapshot"
          onError={() => setFailed(true)}
          onLoad={() => {
            setFailed(false)
            setLoadedAt(Date.now())
          }}
        />
      )}
      {old && (
        <span class="preview-state" role="status" data-preview-state>
          snapshot {age} s old — no newer one
        </span>
      )}
      <span class="overlay">{failed && loadedAt === null ? 'no snapshot: the camera did not give one' : every ? 'snapshots (live view unavailable)' : 'snapshot'}</span>
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

/** The stream's frame interval (ms), as configured. */
const frameMs = (d: Device) => (d.stream.interval.denominator > 0 ? (1000 * d.stream.interval.numerator) / d.stream.interval.denominator : 0)

export function LivePreview({ d }: { d: Device }) {
  const running = d.stream_status?.state === 'running'
  // Between two runs of the stream (the supervisor's backoff after a fault, or starting again).
  const restarting = d.stream.enabled && (d.stream_status?.state === 'starting' || d.stream_status?.state === 'backoff')
  const watch = d.watch
  const encode = d.stream.encode_type
  const live: Mode | null = running && watch?.whep && (encode === 'H264' || encode === 'SOFTWARE_H264') ? 'whep' : running && watch?.mjpeg && encode === 'MJPG' ? 'mjpeg' : null
  const [failed, setFailed] = useState<string | null>(null)
  const [still, setStill] = useState(false)
  // A new stream (restarted, reconfigured) gets a new try at the live view.
  useEffect(() => setFailed(null), [live, watch?.whep, watch?.mjpeg, d.stream_status?.restarts])
  const fail = (why: string) => setFailed(why)
  if (live && !failed) return live === 'whep' ? <WhepView key={watch!.whep} url={watch!.whep!} frameMs={frameMs(d)} onFail={fail} /> : <MjpegView key={watch!.mjpeg} url={watch!.mjpeg!} frameMs={frameMs(d)} onFail={fail} />
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
        <span class="muted">{d.leader ? 'Streams with its leader' : running ? 'No live view for this stream' : restarting ? 'Stream restarting' : 'Stream stopped'}</span>
      )}
      {!running && watch?.snapshot && !still && (
        <button type="button" class="small" onClick={() => setStill(true)}>
          Take a snapshot
        </button>
      )}
    </div>
  )
}
