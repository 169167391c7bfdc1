// The console's WHEP client, for every live view (preview.tsx, sound.tsx): the offer of `pc` with all its
// candidates (no trickle), the answer, and the session ended when the view goes or the page does (and
// again by the tab's next page, before it offers: see previousPageEnded).
import { answeredLocation, ApiError, request } from './api'

/** An offer unanswered this long (a cut tether, a stopped vehicle) is taken as no answer. */
const OFFER_TIMEOUT_MS = 3000

/** This tab's open sessions, kept across a reload (sessionStorage). */
const OPEN_KEY = 'periscope.whep-sessions'
function openSessions(): string[] {
  try {
    const list = JSON.parse(sessionStorage.getItem(OPEN_KEY) ?? '[]')
    return Array.isArray(list) ? list.filter((s) => typeof s === 'string') : []
  } catch {
    return []
  }
}
function setOpenSessions(list: string[]): void {
  try {
    sessionStorage.setItem(OPEN_KEY, JSON.stringify(list))
  } catch {}
}

/**
 * The sessions the tab's previous page left open, ended before this page offers any. That page ended
 * them as it went (pagehide), but that request may reach the service after this page's offer, which
 * would then find the camera's --max-viewers places still taken.
 */
const previousPageEnded: Promise<unknown> = (() => {
  const left = openSessions()
  setOpenSessions([])
  return Promise.all(left.map((session) => request('DELETE', session).catch(() => {})))
})()

/**
 * Opens a WHEP session of `pc` at `url`; returns what closes it (the connection and the session), which
 * settles once the service answered the DELETE (or did not: it is best effort). `onFail` gets the
 * service's sentence and its status (0: no answer at all); `onSession` the session's URL once answered
 * (its timing is read there: delay.ts).
 */
export function whepSession(pc: RTCPeerConnection, url: string, onFail: (why: string, status: number) => void, onSession?: (session: string) => void): () => Promise<void> {
  let closed = false
  let session: string | null = null
  const end = (): Promise<void> => (session ? request('DELETE', session, undefined, { keepalive: true }).then(() => {}, () => {}) : Promise.resolve())
  // Ended by the view (not by the page going): no longer this tab's to end after a reload.
  const forget = (): Promise<void> => {
    const ended = end()
    if (session) setOpenSessions(openSessions().filter((s) => s !== session))
    session = null
    return ended
  }
  // A reload or a closed tab runs no cleanup: the session is ended as the page goes, or the service
  // would count a viewer that is gone (taking a --max-viewers place) until --whep-idle-timeout.
  const pagehide = () => void end()
  addEventListener('pagehide', pagehide)
  ;(async () => {
    await pc.setLocalDescription(await pc.createOffer())
    // All candidates in the offer (WHEP without trickle).
    await new Promise<void>((resolve) => {
      if (pc.iceGatheringState === 'complete') return resolve()
      pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve())
      setTimeout(resolve, 2000)
    })
    await previousPageEnded
    if (closed) return
    // Unanswered in OFFER_TIMEOUT_MS is no answer (status 0): the view asks again once the vehicle answers.
    const answer = await request('POST', url, { type: 'application/sdp', text: pc.localDescription!.sdp }, { timeoutMs: OFFER_TIMEOUT_MS })
    const location = answer.headers.get('location')
    session = location ? answeredLocation(location, url) : null
    if (session) setOpenSessions([...openSessions(), session])
    if (closed) return void forget()
    await pc.setRemoteDescription({ type: 'answer', sdp: answer.text })
    if (session && !closed) onSession?.(session)
  })().catch((e) => !closed && onFail(e instanceof ApiError ? e.detail : String((e as Error).message ?? e), e instanceof ApiError ? e.status : 0))
  return () => {
    closed = true
    removeEventListener('pagehide', pagehide)
    pc.close()
    return forget()
  }
}
