// WebRTC for browsers through WHEP (the WebRTC-HTTP egress protocol): a browser POSTs an SDP offer to
// /api/streams/{bus_info}/whep and gets 201 Created, the session's Location and the SDP answer; DELETE
// on the Location ends it; OPTIONS says what a POST takes (Accept-Post: application/sdp). The camera's
// H.264 goes out as the pipeline made it (read from the stream's hub), never re-encoded; an MJPG stream is
// refused (409) with a pointer to the MJPEG route. Host candidates only, no trickle (PATCH on a session
// is 405, as the WHEP draft allows): the pilot is on the vehicle's LAN. Sessions that go unheard for
// --whep-idle-timeout seconds (a closed tab) are closed; a session whose stream stops (the hub says
// 'closed') ends, one whose stream restarts ('replaced') follows it; at most --max-viewers per camera.
// Offers are bounded and checked first (./offer.ts); a session's Location ends in a secret that nothing
// else shows (docs/whep.md).
import { Elysia } from 'elysia'
import { randomBytes } from 'node:crypto'
import { HttpError, conflict, notFound } from '../../core/errors'
import { docs } from '../../core/openapi'
import { WhepTimingModel } from '../../core/schemas'
import { definePlugin } from '../../core/plugin'
import { readBodyText, typed } from '../../core/validation'
import { Type as t } from '@sinclair/typebox'
import { acceptBundleOnly, checkOffer, MAX_MEDIA_SECTIONS, MAX_OFFER_BYTES, OfferRefused, REFUSAL_REASONS, type RefusalReason } from './offer'
import { END_REASONS, OfferError, WebRtcViewer, type EndReason } from '../../media/webrtc/session'
import { guardWeriftSockets } from '../../media/webrtc/sockets'
import { callerAddress } from '../../core/front'
import { webrtcPlace } from '../../core/http/doors'

/** How often sessions are checked for silence (a browser's RTCP stopped). */
const REAP_INTERVAL_MS = 1_000
/**
 * A session's Location ends it, so its last segment is a secret: 192 random bits, never logged, never
 * listed. Logs and health name a session by a short label of its own (whep-1, whep-2…).
 */
const newSessionSecret = () => randomBytes(24).toString('base64url')

/** A sound-only stream (plugins/audio/sound-only.ts) is addressed as `sound:<source id>` where a camera's bus_info goes. */
const SOUND_ONLY_PREFIX = 'sound:'
const soundOnlySource = (bus_info: string) => (bus_info.startsWith(SOUND_ONLY_PREFIX) ? bus_info.slice(SOUND_ONLY_PREFIX.length) : null)

/** What a viewer says of its picture as it reads its session's timing (the console's WebRTC views: delay.ts). */
const ViewerFiguresQuery = t.Object({
  delay_ms: t.Optional(t.Number({ minimum: 0, maximum: 600_000, description: "The viewer's camera-to-screen delay (ms), as it measured it" })),
  loss: t.Optional(t.Number({ minimum: 0, maximum: 1, description: "The share of the video's packets it lost in its last second" })),
})

const SDP_CONTENT = { 'application/sdp': { schema: { type: 'string', description: 'An SDP offer (RFC 8866) with a recvonly video section offering H.264 in packetization-mode 1' } } }

export default definePlugin({
  name: 'whep',
  setup({ registry, config, log, lifecycle, refusals }) {
    /** By their secret (the last segment of their Location). */
    const sessions = new Map<string, WebRtcViewer>()
    let opened = 0
    const refused = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])) as Record<RefusalReason, number>
    registry.addRefusals('whep_offer', () => ({ ...refused }))
    /** Counts a refused offer, and makes its answer (to throw). */
    const refuse = (reason: RefusalReason, status: 400 | 413, detail: string): HttpError => {
      refused[reason]++
      return new HttpError(status, detail)
    }
    const ended = Object.fromEntries(END_REASONS.map((r) => [r, 0])) as Record<EndReason, number>
    /** Remote candidates dropped: addresses the viewer's request did not come from (media/webrtc/candidates.ts). */
    let foreignCandidates = 0
    const foreignCandidate = () => {
      foreignCandidates++
      registry.limitHit('webrtc_foreign_candidate')
    }
    /** Each session's release of its client's WebRTC place (core/http/doors.ts). */
    const places = new Map<WebRtcViewer, () => void>()
    const idleMs = config.whepIdleTimeoutSeconds * 1000
    const location = (bus_info: string, id: string) => `/api/streams/${encodeURIComponent(bus_info)}/whep/${id}`

    guardWeriftSockets((err) => log.warn('an error on a WebRTC socket of no session (WHEP or Cockpit)', { error: String(err) }))

    const onEnd = (session: WebRtcViewer, reason: EndReason, detail?: string) => {
      sessions.delete(session.id)
      places.get(session)?.()
      places.delete(session)
      ended[reason]++
      log.info('whep session ended', { bus_info: session.bus_info, session: session.label, reason, ...(detail ? { detail } : {}), seconds: Math.round((Date.now() - session.createdAt) / 1000) })
    }

    const onSocketError = (session: WebRtcViewer, detail: string) =>
      log.info('whep: a socket error, the viewer is still heard from and keeps watching', { bus_info: session.bus_info, session: session.label, detail })

    /**
     * Closes sessions that went silent (a session not yet heard from gets the same grace). A stream's
     * stop or restart reaches its sessions from the hub (session.ts), not from here.
     */
    const reap = () => {
      const now = Date.now()
      for (const session of sessions.values()) if (now - session.lastHeardAt > idleMs) void session.close('idle')
    }
    let reaper: ReturnType<typeof setInterval> | null = null

    lifecycle({
      start() {
        reaper = setInterval(reap, Math.min(REAP_INTERVAL_MS, idleMs / 2))
      },
      async stop() {
        if (reaper) clearInterval(reaper)
        reaper = null
        await Promise.all([...sessions.values()].map((s) => s.close('stopped')))
      },
      health: () => ({ state: 'ok', sessions: sessions.size, max_viewers_per_camera: config.maxViewers, ended, refused_offers: { ...refused }, foreign_candidates: foreignCandidates }),
    })

    // A device can be watched over WHEP while its stream runs as H.264 (an MJPG one is refused: see the route).
    registry.addWatchLink(
      'whep',
      (bus_info, origin) => (registry.get('streamer')?.live(bus_info)?.hub.encoding === 'H264' ? `${origin.origin}/api/streams/${encodeURIComponent(bus_info)}/whep` : null),
      'whep',
    )

    /** A camera's running H.264 stream, or the answer why not. */
    const cameraLive = (bus_info: string) => {
      const device = registry.deviceDirectory().device(bus_info)
      if (!device) throw notFound(`No device with bus_info '${bus_info}' is connected`)
      const streamer = registry.require('streamer')
      const live = streamer.live(bus_info)
      if (!live) throw conflict(`The stream of '${bus_info}' is not running: start it with POST /api/devices/restart_stream {"bus_info": "${bus_info}"}`)
      if (live.hub.encoding !== 'H264') {
        throw conflict(`The stream of '${bus_info}' is MJPG, which WebRTC does not carry: watch it at /api/streams/${encodeURIComponent(bus_info)}/mjpeg, or configure the stream as SOFTWARE_H264 (or H264) to watch it here`)
      }
      return live
    }
    /** A running sound-only stream (plugins/audio), heard at /api/streams/sound:<source>/whep. */
    const soundOnlyLive = (source: string) => {
      const found = registry.get('audio')?.soundOnly().find((x) => x.source === source)
      if (!found) throw notFound(`No sound-only stream of '${source}' is running (GET /api/audio/sound_only lists them)`)
      return { hub: found.hub, member: 0 }
    }

    const watching = (bus_info: string) => [...sessions.values()].filter((s) => s.bus_info === bus_info).length
    registry.addViewerCount('whep', watching, 'whep')

    return new Elysia({ name: 'periscope:whep' })
      .options(
        '/api/streams/:bus_info/whep',
        ({ params: { bus_info } }) => {
          const soundSource = soundOnlySource(bus_info)
          if (soundSource !== null) soundOnlyLive(soundSource)
          else if (!registry.deviceDirectory().device(bus_info)) throw notFound(`No device with bus_info '${bus_info}' is connected`)
          return new Response(null, { status: 204, headers: { 'accept-post': 'application/sdp', allow: 'POST, OPTIONS' } })
        },
        {
          ...docs({
            tag: 'cameras',
            summary: 'What a WHEP endpoint takes: 204 with Accept-Post: application/sdp',
            description:
              "As the WHEP draft says. A browser's CORS preflight (OPTIONS with Access-Control-Request-Method) is answered before this, by the CORS layer, with the allowed origin, methods and headers.",
            okStatus: 204,
            ok: {
              description: 'The endpoint takes SDP offers',
              headers: {
                'Accept-Post': { description: 'The media type of an offer: application/sdp', schema: { type: 'string' } },
                Allow: { description: 'The methods this endpoint takes', schema: { type: 'string' } },
              },
            },
            errors: [404],
            pathParams: ['bus_info'],
          }),
        },
      )
      .post(
        '/api/streams/:bus_info/whep',
        async ({ params: { bus_info }, request }) => {
          const type = request.headers.get('content-type')?.split(';')[0]?.trim().toLowerCase()
          if (type !== 'application/sdp') throw new HttpError(415, `A WHEP offer is an SDP body with Content-Type: application/sdp (got ${type ? `'${type}'` : 'none'})`)
          // One bucket for both WebRTC doors (WHEP and Cockpit's startSession): core/http/client-limits.ts.
          refusals.limits.take('webrtc_session', request)
          let offer = ''
          try {
            offer = await readBodyText(request, MAX_OFFER_BYTES)
          } catch (err) {
            if (err instanceof HttpError && err.status === 413) throw refuse('too_large', 413, `The SDP offer is larger than ${MAX_OFFER_BYTES} bytes, the most a WHEP offer may be here (a browser's offer is a few kB)`)
            throw err
          }
          const soundSource = soundOnlySource(bus_info)
          try {
            checkOffer(offer, soundSource !== null)
          } catch (err) {
            if (err instanceof OfferRefused) throw refuse(err.reason, err.status, err.message)
            throw err
          }
          offer = acceptBundleOnly(offer)
          const live = soundSource !== null ? soundOnlyLive(soundSource) : cameraLive(bus_info)
          // The camera's places, WHEP's and Cockpit's together, and this client's share of them (core/http/doors.ts).
          const client = callerAddress(request)
          const release = webrtcPlace(client, bus_info, registry.webrtcViewers(bus_info), { config, refusals })

          const id = newSessionSecret()
          const session = new WebRtcViewer({ id, reader: 'whep', label: `whep-${++opened}`, bus_info, hub: live.hub, member: live.member, listenHost: config.host, peer: client, onForeignCandidate: foreignCandidate, onEnd, onSocketError })
          places.set(session, release)
          sessions.set(id, session)
          let answer: string
          try {
            answer = await session.answer(offer)
          } catch (err) {
            await session.close('failed')
            if (err instanceof OfferError) throw refuse('unanswerable', 400, err.message)
            // werift read the offer but could not answer it: still the offer's fault (no common transport…).
            log.warn('whep: no answer to an offer', { bus_info, error: String(err) })
            throw refuse('unanswerable', 400, `The SDP offer could not be answered: ${(err as Error).message}`)
          }
          log.info('whep session opened', { bus_info, session: session.label })
          return new Response(answer, {
            status: 201,
            headers: {
              'content-type': 'application/sdp',
              location: location(bus_info, id),
              // A browser UI on another origin reads the Location to DELETE the session later.
              'access-control-expose-headers': 'Location',
            },
          })
        },
        {
          parse: 'none',
          ...docs({
            tag: 'cameras',
            summary: 'Watch a camera in a browser over WebRTC (WHEP): an SDP offer in, 201 with the SDP answer and the session Location out',
            description:
              "H.264 passes through as the camera's stream makes it (MJPG streams: 409, see /mjpeg). All host candidates are in the answer (no trickle: PATCH is 405). " +
              "A sound-only stream (GET /api/audio/sound_only) is heard at bus_info 'sound:<source id>': its offer needs an audio section (Opus), no video. " +
              `An offer is at most ${MAX_OFFER_BYTES} bytes (413) and ${MAX_MEDIA_SECTIONS} media sections in at most one BUNDLE group, with a DTLS fingerprint and ICE credentials (400); the first H.264 video section is watched, the others are answered inactive. ` +
              'The Location ends in a secret that ends the session: keep it. A session unheard for --whep-idle-timeout seconds is closed; at most --max-viewers per camera (503).',
            requestContent: SDP_CONTENT,
            okStatus: 201,
            ok: {
              description: 'The session: its SDP answer, and its URL in Location',
              content: SDP_CONTENT,
              headers: { Location: { description: 'The session, to DELETE when done', schema: { type: 'string' } } },
            },
            errors: [400, 404, 409, 413, 415, 429, 503],
            pathParams: ['bus_info'],
          }),
        },
      )
      .get(
        '/api/streams/:bus_info/whep/:session_id',
        typed({ query: ViewerFiguresQuery }, ({ params, query }) => {
          const { bus_info, session_id } = params as { bus_info: string; session_id: string }
          const session = sessions.get(session_id)
          if (!session || session.bus_info !== bus_info) throw notFound(`No such WebRTC session for '${bus_info}' (it ended, or was never opened)`)
          if (query.delay_ms !== undefined || query.loss !== undefined) session.viewerSaid(query.delay_ms ?? null, query.loss ?? null)
          const timing = session.timing()
          return { rtp_timestamp: timing?.rtp ?? null, captured_at: timing?.capturedAt ?? null, clock_rate: 90_000, server_time: performance.timeOrigin + performance.now() }
        }),
        {
          ...docs({
            tag: 'cameras',
            summary: "A WebRTC (WHEP) session's timing: when its newest frame was made, for the viewer's camera-to-screen delay",
            description:
              "session_id is the secret the POST's Location ends with. The viewer reads each frame's RTP timestamp as it shows it (the browser's requestVideoFrameCallback gives it): that frame was made at captured_at + (its timestamp − rtp_timestamp) / 90 ms, on the vehicle's clock; server_time and the request's round trip give the viewer's clock against the vehicle's. The console polls it each second (docs/latency.md), saying its own figures in the query: they count in the stream's health for 2 s (viewer_delay_ms, viewer_loss, the alert past --delay-alert).",
            query: ViewerFiguresQuery,
            ok: WhepTimingModel,
            errors: [404],
            pathParams: ['bus_info', 'session_id'],
          }),
        },
      )
      .delete(
        '/api/streams/:bus_info/whep/:session_id',
        async ({ params: { bus_info, session_id } }) => {
          const session = sessions.get(session_id)
          // The detail does not repeat the secret it was given (it would land in a proxy's or a browser's log).
          if (!session || session.bus_info !== bus_info) throw notFound(`No such WebRTC session for '${bus_info}' (it ended, or was never opened)`)
          await session.close('deleted')
          return new Response(null, { status: 200 })
        },
        {
          ...docs({
            tag: 'cameras',
            summary: 'End a WebRTC (WHEP) session',
            description: "session_id is the secret the POST's Location ends with (192 random bits), shown nowhere else. PATCH on a session (trickle ICE, ICE restart) is 405: the answer to the POST already holds every host candidate.",
            errors: [404],
            pathParams: ['bus_info', 'session_id'],
          }),
        },
      )
  },
})
