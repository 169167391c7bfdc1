// The console's WHEP client, for every live view (preview.tsx, sound.tsx): the offer of `pc` with all its
// candidates (no trickle), the answer, and the session ended when the view goes or the page does.
import { answeredLocation, ApiError, request } from './api'

/** Opens a WHEP session of `pc` at `url`; returns what closes it (the connection and the session). */
export function whepSession(pc: RTCPeerConnection, url: string, onFail: (why: string) => void): () => void {
  let closed = false
  let session: string | null = null
  const end = () => {
    if (session) void request('DELETE', session, undefined, { keepalive: true }).catch(() => {})
    session = null
  }
  // A reload or a closed tab runs no cleanup: the session is ended as the page goes, or the service
  // would count a viewer that is gone (taking a --max-viewers place) until --whep-idle-timeout.
  addEventListener('pagehide', end)
  ;(async () => {
    await pc.setLocalDescription(await pc.createOffer())
    // All candidates in the offer (WHEP without trickle).
    await new Promise<void>((resolve) => {
      if (pc.iceGatheringState === 'complete') return resolve()
      pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve())
      setTimeout(resolve, 2000)
    })
    if (closed) return
    const answer = await request('POST', url, { type: 'application/sdp', text: pc.localDescription!.sdp })
    const location = answer.headers.get('location')
    session = location ? answeredLocation(location, url) : null
    if (closed) return void end()
    await pc.setRemoteDescription({ type: 'answer', sdp: answer.text })
  })().catch((e) => !closed && onFail(e instanceof ApiError ? e.detail : String((e as Error).message ?? e)))
  return () => {
    closed = true
    removeEventListener('pagehide', end)
    pc.close()
    end()
  }
}
