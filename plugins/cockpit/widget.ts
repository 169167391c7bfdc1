// The live view Cockpit shows in a widget (an iframe): one camera, full size, nothing else, over WHEP
// with the lowest latency the browser allows (no jitter buffer target). Read-only, so any page may
// frame it (frame-ancestors *): it shows what /api/streams/ already gives every origin, and its one
// request (the WHEP POST) goes to its own origin, which the origin rules already allow. Its paths are
// relative (../api/…, ../widget-player.js), so it works under BlueOS's /extensionv2/<name>/ prefix.

/** The page of one camera: /widget/<bus_info>. */
export const widgetPath = (bus_info: string) => `/widget/${encodeURIComponent(bus_info)}`
export const PLAYER_PATH = '/widget-player.js'

const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** Read-only: framed by anyone, scripts from this service only. */
export const WIDGET_POLICY = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; connect-src 'self'; media-src 'self' blob:; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors *"

export function widgetPage(bus_info: string, title: string): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>
html, body { margin: 0; width: 100%; height: 100%; background: #000; overflow: hidden; }
video { width: 100%; height: 100%; object-fit: contain; display: block; }
#status { position: absolute; left: 0; right: 0; bottom: 0; padding: 4px 8px; font: 13px system-ui, sans-serif; color: #ddd; background: rgba(0, 0, 0, .6); }
#status:empty { display: none; }
</style>
</head>
<body data-bus-info="${escapeHtml(bus_info)}">
<video id="video" muted autoplay playsinline></video>
<div id="status">Connecting…</div>
<script src="..${PLAYER_PATH}"></script>
</body>
</html>
`
}

/**
 * The player: a WHEP session (offer, wait for the candidates, POST, answer), decoded frames watched, and
 * a new session 2 s after one ends or fails; the session is DELETEd when the page goes away.
 */
export const PLAYER_SCRIPT = `'use strict'
;(() => {
  const busInfo = document.body.dataset.busInfo
  const base = new URL('../', location.href)
  const video = document.getElementById('video')
  const status = document.getElementById('status')
  const say = (text) => { status.textContent = text }
  let session = null
  let pc = null
  let retry = null

  const again = (text) => {
    say(text)
    if (pc) pc.close()
    pc = null
    session = null
    clearTimeout(retry)
    retry = setTimeout(start, 2000)
  }

  async function start() {
    pc = new RTCPeerConnection({ iceServers: [] })
    const mine = pc
    pc.addTransceiver('video', { direction: 'recvonly' })
    pc.ontrack = (e) => {
      // Show frames as soon as they are decoded: no jitter buffer target.
      try { e.receiver.jitterBufferTarget = 0 } catch (_) {}
      video.srcObject = e.streams[0] || new MediaStream([e.track])
    }
    pc.onconnectionstatechange = () => {
      if (mine !== pc) return
      if (pc.connectionState === 'connected') say('')
      if (pc.connectionState === 'failed' || pc.connectionState === 'closed') again('The video connection ended; reconnecting…')
    }
    try {
      await pc.setLocalDescription(await pc.createOffer())
      await new Promise((resolve) => {
        if (pc.iceGatheringState === 'complete') return resolve()
        pc.addEventListener('icegatheringstatechange', () => pc && pc.iceGatheringState === 'complete' && resolve())
        setTimeout(resolve, 2000)
      })
      const res = await fetch(new URL('api/streams/' + encodeURIComponent(busInfo) + '/whep', base), { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: pc.localDescription.sdp })
      const text = await res.text()
      if (res.status !== 201) {
        let detail = text
        try { detail = JSON.parse(text).detail } catch (_) {}
        return again(detail || 'The camera cannot be watched now (' + res.status + ')')
      }
      const location = res.headers.get('location')
      // A path from the service's root is under this page's base (BlueOS's proxy prefix).
      session = location && location.startsWith('/') ? new URL(location.slice(1), base).href : location
      await pc.setRemoteDescription({ type: 'answer', sdp: text })
    } catch (err) {
      again('No video: ' + err)
    }
  }

  addEventListener('pagehide', () => {
    if (session) fetch(session, { method: 'DELETE', keepalive: true }).catch(() => {})
  })
  start()
})()
`
