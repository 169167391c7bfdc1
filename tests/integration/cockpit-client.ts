// A Cockpit video widget's client, in the page, written after Cockpit's own src/libs/webrtc/signaller.ts,
// session.ts and src/composables/webRTC.ts (bluerobotics/cockpit; read, not copied): on the socket's
// open it asks `peerId` and `availableStreams`, finds the stream by name, asks `startSession`; on the
// startSession answer it makes an RTCPeerConnection with one recvonly video transceiver and no ICE
// servers; the service's `mediaNegotiation` offer is set, answered (createAnswer, setLocalDescription)
// and the answer sent as `localDescription.toJSON()`; each local candidate goes as `iceNegotiation`
// (`candidate.toJSON()`); incoming `iceNegotiation` candidates are added; an `endSession` question
// for its ids ends it. The track event's first stream is kept as the widget's media (`mediaStreams[key]`). Stats come from tests/integration/browser.ts's `watch` (the pc is `pcs[key]`).
import type { Page } from 'puppeteer-core'

export interface CockpitOpened {
  consumerId: string
  sessionId: string
  producerId: string
  streams: { id: string; name: string; encode: string | null; width: number | null; height: number | null; interval: string | null; source: string | null; created: string | null }[]
}

/** Connects to `wsUrl`, starts a session on the stream named `streamName`; resolves once the offer is answered. */
export async function openCockpitSession(page: Page, wsUrl: string, streamName: string, key: string): Promise<CockpitOpened> {
  return page.evaluate(
    (wsUrl: string, streamName: string, key: string) =>
      new Promise<CockpitOpened>((resolve, reject) => {
        const w = globalThis as any // the page's window (this project's tsconfig has no DOM types)
        w.pcs ??= {}
        w.sockets ??= {}
        w.received ??= {}
        w.postedAt ??= {}
        const received: any[] = (w.received[key] = [])
        const ws = new w.WebSocket(wsUrl)
        w.sockets[key] = ws
        const send = (m: unknown) => ws.send(JSON.stringify(m))
        let consumerId: string | undefined
        let streams: any[] | undefined
        let session: { id: string; producer: string } | undefined
        const timer = setTimeout(() => reject(new Error(`no session within 20 s; received: ${JSON.stringify(received).slice(0, 2000)}`)), 20_000)
        const maybeStart = () => {
          if (!consumerId || !streams || session) return
          const stream = streams.find((s) => s.name === streamName)
          if (!stream) return reject(new Error(`no stream named ${streamName} in ${JSON.stringify(streams)}`))
          session = { id: '', producer: stream.id }
          send({ type: 'question', content: { type: 'startSession', content: { consumer_id: consumerId, producer_id: stream.id } } })
        }
        ws.addEventListener('error', () => reject(new Error('the signalling socket failed')))
        ws.addEventListener('open', () => {
          send({ type: 'question', content: { type: 'peerId' } })
          send({ type: 'question', content: { type: 'availableStreams' } })
        })
        ws.addEventListener('message', async (ev: any) => {
          const message = JSON.parse(ev.data)
          received.push(message)
          if (message.type === 'error') {
            // Cockpit passes over a message type it does not know; this client fails on it instead.
            clearTimeout(timer)
            reject(new Error(message.content.detail))
          } else if (message.type === 'answer' && message.content.type === 'peerId') {
            consumerId = message.content.content.id
            maybeStart()
          } else if (message.type === 'answer' && message.content.type === 'availableStreams') {
            streams = message.content.content
            maybeStart()
          } else if (message.type === 'answer' && message.content.type === 'startSession') {
            session!.id = message.content.content.session_id
            const pc = new w.RTCPeerConnection({ iceServers: [] })
            w.pcs[key] = pc
            w.postedAt[key] = performance.now()
            pc.addTransceiver('video', { direction: 'recvonly' })
            pc.addEventListener('icecandidate', (e: any) => {
              if (!e.candidate) return
              send({ type: 'negotiation', content: { type: 'iceNegotiation', content: { session_id: session!.id, consumer_id: consumerId, producer_id: session!.producer, ice: e.candidate.toJSON() } } })
            })
            // As Cockpit's webRTC.ts onTrackAdded: the track event's first stream is the widget's whole
            // media (its <video muted autoplay> plays it), whichever track came.
            pc.addEventListener('track', (e: any) => {
              const [remoteStream] = e.streams
              w.mediaStreams ??= {}
              if (!remoteStream || w.mediaStreams[key] === remoteStream) return
              w.mediaStreams[key] = remoteStream
              const video = w.document.createElement('video')
              video.muted = true
              video.autoplay = true
              video.srcObject = remoteStream
              w.document.body.appendChild(video)
            })
          } else if (message.type === 'negotiation' && message.content.content.session_id === session?.id) {
            const pc = w.pcs[key]
            if (message.content.type === 'mediaNegotiation') {
              await pc.setRemoteDescription(message.content.content.sdp)
              await pc.setLocalDescription(await pc.createAnswer())
              send({ type: 'negotiation', content: { type: 'mediaNegotiation', content: { session_id: session!.id, consumer_id: consumerId, producer_id: session!.producer, sdp: pc.localDescription.toJSON() } } })
              clearTimeout(timer)
              resolve({ consumerId: consumerId!, sessionId: session!.id, producerId: session!.producer, streams: streams! })
            } else if (message.content.type === 'iceNegotiation' && message.content.content.ice?.candidate) {
              await pc.addIceCandidate(message.content.content.ice)
            }
          } else if (message.type === 'question' && message.content.type === 'endSession' && message.content.content.session_id === session?.id) {
            w.pcs[key]?.close()
          }
        })
      }),
    wsUrl,
    streamName,
    key,
  )
}

/** What the page's socket `key` received so far (every message, parsed). */
export const receivedBy = (page: Page, key: string): Promise<any[]> => page.evaluate((key: string) => (globalThis as any).received[key] ?? [], key)

/** Sends `endSession` for the page's session, as Cockpit would. */
export const endCockpitSession = (page: Page, key: string, opened: CockpitOpened): Promise<void> =>
  page.evaluate(
    (key: string, o: CockpitOpened) => {
      ;(globalThis as any).sockets[key].send(JSON.stringify({ type: 'question', content: { type: 'endSession', content: { consumer_id: o.consumerId, producer_id: o.producerId, session_id: o.sessionId, reason: 'the pilot closed the widget' } } }))
    },
    key,
    opened,
  )

/** Closes the page's signalling socket (Cockpit's tab going away without endSession). */
export const closeSocket = (page: Page, key: string): Promise<void> => page.evaluate((key: string) => (globalThis as any).sockets[key].close(), key)

/** The offer's SDP the page's socket `key` received (our mediaNegotiation). */
export const offerSdp = async (page: Page, key: string): Promise<string> =>
  (await receivedBy(page, key)).find((m) => m.type === 'negotiation' && m.content.type === 'mediaNegotiation')?.content.content.sdp.sdp ?? ''

/** The session's inbound sound as getStats() shows it, and the tracks of the media stream Cockpit's widget plays. */
export const soundStats = (page: Page, key: string): Promise<{ packets: number; energy: number; mimeType: string | null; tracks: { video: number; audio: number } }> =>
  page.evaluate(async (key: string) => {
    const w = globalThis as any
    const stats = await w.pcs[key].getStats()
    let found = { packets: 0, energy: 0, mimeType: null as string | null }
    stats.forEach((r: any) => {
      if (r.type === 'inbound-rtp' && r.kind === 'audio') found = { packets: r.packetsReceived ?? 0, energy: r.totalAudioEnergy ?? 0, mimeType: stats.get(r.codecId)?.mimeType ?? null }
    })
    const stream = w.mediaStreams?.[key]
    return { ...found, tracks: { video: stream?.getVideoTracks().length ?? 0, audio: stream?.getAudioTracks().length ?? 0 } }
  }, key)
