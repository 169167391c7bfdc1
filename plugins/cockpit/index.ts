// Cockpit (Blue Robotics' ground station) plays vehicle video only through mavlink-camera-manager's
// WebRTC signalling, a WebSocket it looks for at ws://<vehicle>:6021. This plugin serves that protocol
// (./signalling.ts) on its own port (--cockpit-port, 6021 by default, so Cockpit finds the cameras with
// no typing) and on the HTTP port's path /api/cockpit/signalling (through a proxy, or when 6021 is
// taken, e.g. by mavlink-camera-manager itself). Each device's `watch.cockpit` gives the address.
//
// Who may connect: what may open a WHEP session, by the same functions (core/http/doors.ts): the Host
// rule, the origin rule (a WebRTC MediaStream is not tainted: a page elsewhere could read its pixels),
// the token, each client's share of the sockets and their rate; a socket that holds no session for
// --cockpit-idle-timeout seconds is closed (Cockpit reconnects by itself). Sessions take WebRTC places
// by WHEP's rules too (the camera's --max-viewers, the client's share and session rate). No message
// changes the vehicle.
//
// It also serves what Cockpit adds from a BlueOS extension (./extras.ts: /cockpit_extras.json, named by
// /register_service's extras.cockpit): a live-view page per camera for its widgets (./widget.ts), and
// POST /api/devices/capture_still for its "take a still" action (the same still as MAVLink's).
import { Elysia, t } from 'elysia'
import type { Server, WebSocketHandler } from 'bun'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { MAX_SOCKET_MESSAGE_BYTES, type SocketEndpoint } from '../../core/front'
import { socketPlace, upgradeRefusal, webrtcPlace } from '../../core/http/doors'
import { END_REASONS, type EndReason } from '../../media/webrtc/session'
import { guardWeriftSockets } from '../../media/webrtc/sockets'
import { stillsOf } from '../mavlink/capture'
import { VERSION } from '../../core/version'
import { BusInfoRequest } from '../../core/schemas'
import { conflict, notFound } from '../../core/errors'
import { typed } from '../../core/validation'
import { EXTRAS_PATH, extras, WIDGET_ICON } from './extras'
import { PLAYER_PATH, PLAYER_SCRIPT, widgetPage, WIDGET_POLICY } from './widget'
import { availableStreams, Connection, producerId, REFUSAL_REASONS, type CockpitSession, type RefusalReason, type SignallingContext } from './signalling'
import { DEFAULT_STREAMS_PORT, serveStreamsPort, streamStatuses, StreamStatusModel, STREAMS_PATH } from './streams'

/** The path on the HTTP port. */
export const SIGNALLING_PATH = '/api/cockpit/signalling'
/** mavlink-camera-manager's signalling port, where Cockpit looks by default. */
export const DEFAULT_COCKPIT_PORT = 6021
/** Signalling sockets open at once, over both ports: more are refused (503). */
export const MAX_SOCKETS = 64
/** How often sessions are checked for silence (a browser that stopped sending RTCP), and sockets for holding none. */
const REAP_INTERVAL_MS = 1_000
/** Seconds a signalling socket may hold no session before it is closed (--cockpit-idle-timeout). */
export const DEFAULT_SOCKET_IDLE_SECONDS = 60

interface SocketData {
  connection: Connection | null
  /** The peer's address, and the release of its client's share of the sockets (core/http/doors.ts). */
  peer: string | undefined
  release: () => void
}

const json = (status: number, detail: string) => new Response(JSON.stringify({ detail }), { status, headers: { 'content-type': 'application/json' } })

export default definePlugin({
  name: 'cockpit',
  // Cockpit reads its extras whenever it looks for widgets, and its Video page polls the stream list
  // every 5 s: a machine, not a pilot at the API.
  backgroundPaths: [EXTRAS_PATH, STREAMS_PATH],
  flags: {
    'cockpit-streams-port': {
      help: `TCP port of mavlink-camera-manager's REST list of streams, which Cockpit's Video page reads for a stream's status (at ${DEFAULT_STREAMS_PORT}, written into Cockpit): GET /streams only; 0 or off: only ${STREAMS_PATH} on the HTTP port`,
      default: String(DEFAULT_STREAMS_PORT),
      parse: (raw) => parsePort(raw, `0/'off' to serve the list at ${STREAMS_PATH} on the HTTP port only`),
    },
    'cockpit-port': {
      help: `TCP port of Cockpit's WebRTC signalling (mavlink-camera-manager's, where Cockpit looks: ${DEFAULT_COCKPIT_PORT}); 0 or off: only the path ${SIGNALLING_PATH} on the HTTP port`,
      default: String(DEFAULT_COCKPIT_PORT),
      parse: (raw) => parsePort(raw, "0/'off' to serve the signalling on the HTTP port's path only"),
    },
    'cockpit-idle-timeout': {
      help: 'seconds a Cockpit signalling socket may hold no WebRTC session before it is closed (Cockpit reconnects by itself)',
      default: String(DEFAULT_SOCKET_IDLE_SECONDS),
      parse: (raw) => {
        const n = Number(raw)
        if (!Number.isFinite(n) || n < 0.1 || n > 3600) throw new Error('expected seconds from 0.1 to 3600')
        return n
      },
    },
  },
  setup({ config, registry, log, lifecycle, refusals, flags, handle }) {
    const wantedPort = (flags['cockpit-port'] as number | null | undefined) ?? null
    const wantedStreamsPort = (flags['cockpit-streams-port'] as number | null | undefined) ?? null
    let streamsServer: Server<undefined> | null = null
    const socketIdleMs = ((flags['cockpit-idle-timeout'] as number | undefined) ?? DEFAULT_SOCKET_IDLE_SECONDS) * 1000
    const connections = new Set<Connection>()
    const stills = stillsOf({ registry, config, refusals })
    const sessions = new Map<string, CockpitSession>()
    let opened = 0
    let ownPort: number | null = null
    let ownServer: Server<SocketData> | null = null
    const refused = Object.fromEntries(REFUSAL_REASONS.map((r) => [r, 0])) as Record<RefusalReason, number>
    registry.addRefusals('cockpit_message', () => ({ ...refused }))
    const ended = Object.fromEntries(END_REASONS.map((r) => [r, 0])) as Record<EndReason, number>
    const idleMs = config.whepIdleTimeoutSeconds * 1000

    guardWeriftSockets((err) => log.warn('an error on a WebRTC socket of no session (WHEP or Cockpit)', { error: String(err) }))

    const live = (bus_info: string) => registry.get('streamer')?.live(bus_info) ?? null
    const context: SignallingContext = {
      streams: () => availableStreams(registry.deviceDirectory().devices(), live),
      producer(id) {
        for (const device of registry.deviceDirectory().devices()) {
          if (producerId(device.bus_info) !== id) continue
          const running = live(device.bus_info)
          return running && running.hub.encoding === 'H264' && !running.hub.closed ? { bus_info: device.bus_info, ...running } : null
        }
        return null
      },
      // WHEP's rules for a new session: the same bucket, the same places (core/http/doors.ts).
      admit(peer, bus_info) {
        refusals.limits.take('webrtc_session', peer)
        return webrtcPlace(peer, bus_info, registry.webrtcViewers(bus_info), { config, refusals })
      },
      listenHost: config.host,
      label: () => `cockpit-${++opened}`,
      opened(session) {
        sessions.set(session.id, session)
        log.info('cockpit session opened', { bus_info: session.bus_info, session: session.viewer.label })
      },
      ended(session, reason, detail) {
        sessions.delete(session.id)
        ended[reason]++
        log.info('cockpit session ended', { bus_info: session.bus_info, session: session.viewer.label, reason, ...(detail ? { detail } : {}), seconds: Math.round((Date.now() - session.viewer.createdAt) / 1000) })
      },
      refused(reason) {
        refused[reason]++
        if (reason === 'foreign_candidate') registry.limitHit('webrtc_foreign_candidate')
      },
      limitHit: (limit) => registry.limitHit(limit),
    }

    /** The upgrade's checks (the app's own layers do not see it), WHEP's by the same functions: Host, origin, token, the sockets' bound and the client's share. */
    const accept = (request: Request, peer: string | undefined): Response | { data: SocketData } => {
      const shut = upgradeRefusal(request, { config, refusals }, "Cockpit's WebRTC signalling")
      if (shut) return shut
      if (connections.size >= MAX_SOCKETS) {
        registry.limitHit('cockpit_sockets')
        return json(503, `${connections.size} signalling sockets are open, the most allowed at once: close one (a Cockpit tab) or try later`)
      }
      const address = peer?.startsWith('::ffff:') ? peer.slice(7) : peer
      const place = socketPlace(address, refusals.limits, 'signalling')
      if (place instanceof Response) {
        registry.limitHit('cockpit_client_sockets')
        return place
      }
      return { data: { connection: null, peer: address, release: place } }
    }

    const handler: WebSocketHandler<SocketData> = {
      open(ws) {
        const connection = new Connection(
          {
            peer: ws.data.peer,
            send: (text) => void ws.send(text),
            close: (code, reason) => ws.close(code, reason),
          },
          context,
        )
        ws.data.connection = connection
        connections.add(connection)
      },
      message(ws, message) {
        ws.data.connection?.receive(typeof message === 'string' ? message : new Uint8Array(message))
      },
      close(ws) {
        ws.data.release()
        const connection = ws.data.connection
        if (!connection) return
        connections.delete(connection)
        connection.socketClosed()
      },
    }
    registry.addSocketEndpoint({ path: SIGNALLING_PATH, accept, unused: (data) => data.release(), handler } as SocketEndpoint<SocketData> as unknown as SocketEndpoint, 'cockpit')

    /** Its own port: any path upgrades (Cockpit connects to ws://vehicle:6021 with no path). */
    const serveOwnPort = (port: number) => {
      try {
        ownServer = Bun.serve<SocketData>({
          hostname: config.host,
          port,
          fetch(request, server) {
            const accepted = accept(request, server.requestIP(request)?.address)
            if (accepted instanceof Response) return accepted
            if (server.upgrade(request, { data: accepted.data })) return undefined
            accepted.data.release()
            return json(426, `This port serves Cockpit's WebRTC signalling, a WebSocket: give Cockpit ws://<this vehicle>:${port} (General → Video connection)`)
          },
          websocket: { ...handler, maxPayloadLength: MAX_SOCKET_MESSAGE_BYTES, idleTimeout: 120, sendPings: true },
          error: () => json(500, 'Internal error of the signalling port (a bug; the log has the details)'),
        })
        ownPort = ownServer.port ?? port
        log.info('cockpit signalling listening', { port: ownPort, path: SIGNALLING_PATH })
      } catch (err) {
        ownServer = null
        ownPort = null
        log.warn(`cockpit: port ${port} is taken (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; mavlink-camera-manager?): Cockpit's signalling is served only at ${SIGNALLING_PATH} on the HTTP port`, { port })
      }
    }

    const reap = () => {
      const now = Date.now()
      for (const session of sessions.values()) if (now - session.viewer.lastHeardAt > idleMs) void session.viewer.close('idle')
      for (const connection of connections) {
        if (connection.sessionlessSince !== null && now - connection.sessionlessSince > socketIdleMs) {
          registry.limitHit('cockpit_idle_sockets')
          connection.shut(1000, `No WebRTC session for ${socketIdleMs / 1000} s: closed (reconnect to watch)`)
        }
      }
    }
    let reaper: ReturnType<typeof setInterval> | null = null

    /** Cockpit's Video page reads mavlink-camera-manager's port (./streams.ts): taken, the list is only on the HTTP port. */
    const serveStreams = (port: number) => {
      try {
        streamsServer = serveStreamsPort(config.host, port, handle)
        log.info('cockpit stream list listening', { port: streamsServer.port, path: '/streams' })
      } catch (err) {
        streamsServer = null
        log.warn(`cockpit: port ${port} is taken (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; mavlink-camera-manager?): Cockpit's Video page reads that port's /streams, so it shows this service's streams as Offline; the list is at ${STREAMS_PATH} on the HTTP port`, { port })
      }
    }

    lifecycle({
      start() {
        if (wantedPort !== null) serveOwnPort(wantedPort)
        if (wantedStreamsPort !== null) serveStreams(wantedStreamsPort)
        reaper = setInterval(reap, Math.min(REAP_INTERVAL_MS, idleMs / 2, socketIdleMs / 2))
      },
      async stop() {
        if (reaper) clearInterval(reaper)
        reaper = null
        await Promise.all([...sessions.values()].map((s) => s.viewer.close('stopped')))
        ownServer?.stop(true)
        ownServer = null
        streamsServer?.stop(true)
        streamsServer = null
      },
      health: () => ({
        state: 'ok',
        port: ownPort,
        path: SIGNALLING_PATH,
        streams_port: streamsServer?.port ?? null,
        sockets: connections.size,
        sessions: sessions.size,
        max_viewers_per_camera: config.maxViewers,
        ended: { ...ended },
        refused_messages: { ...refused },
      }),
    })

    registry.addViewerCount('cockpit', (bus_info) => [...sessions.values()].filter((s) => s.bus_info === bus_info).length, 'cockpit')

    // The address to give Cockpit: its own port when it listens, else the path on the port the request came to.
    registry.addWatchLink(
      'cockpit',
      (bus_info, origin) => {
        if (live(bus_info)?.hub.encoding !== 'H264') return null
        const scheme = origin.protocol === 'https:' ? 'wss:' : 'ws:'
        return ownPort !== null ? `${scheme}//${origin.hostname.includes(':') ? `[${origin.hostname}]` : origin.hostname}:${ownPort}` : `${scheme}//${origin.host}${SIGNALLING_PATH}`
      },
      'cockpit',
    )

    const page = (body: string, type: string, policy?: string) =>
      new Response(body, { headers: { 'content-type': type, 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff', ...(policy ? { 'content-security-policy': policy } : {}) } })

    return new Elysia({ name: 'periscope:cockpit' })
      // --port 0 (tests: any free port) is known only from a request's URL.
      .get(EXTRAS_PATH, ({ request }) => extras(registry.deviceDirectory().devices(), { port: config.port || Number(new URL(request.url).port) || 80, version: VERSION }), {
        ...docs({
          tag: 'system',
          summary: "What Cockpit adds from this extension (BlueOS's extras.cockpit): a live-view widget per camera, recording and still actions, joystick suggestions",
          description: "Cockpit's ExtrasJson (camelCase). The actions are http-request actions on http://{{ vehicle-address }}:<port>/api/…, which Cockpit fills in (docs/cockpit.md).",
        }),
      })
      .get(STREAMS_PATH, () => streamStatuses(registry.deviceDirectory().devices(), live), {
        ...docs({
          tag: 'cameras',
          summary: "The streams Cockpit's signalling lists, in mavlink-camera-manager's shape (its GET /streams, which Cockpit's Video page reads for their status); also GET /streams on --cockpit-streams-port (6020)",
          description: "Each running stream the signalling lists, under the name it gives it, so Cockpit's Video page calls it Available (docs/cockpit.md).",
          ok: t.Array(StreamStatusModel),
        }),
      })
      .get(
        '/widget/:bus_info',
        ({ params: { bus_info } }) => {
          const device = registry.deviceDirectory().device(bus_info)
          if (!device) throw notFound(`No device with bus_info '${bus_info}' is connected`)
          return page(widgetPage(bus_info, device.nickname || device.name || bus_info), 'text/html; charset=utf-8', WIDGET_POLICY)
        },
        {
          ...docs({
            tag: 'cameras',
            summary: "A camera's bare live view (WHEP), full size, for Cockpit's widget iframe; any page may frame it (read-only)",
            ok: { description: 'An HTML page', content: { 'text/html': { schema: { type: 'string' } } } },
            errors: [404],
            pathParams: ['bus_info'],
          }),
        },
      )
      .get(PLAYER_PATH, () => page(PLAYER_SCRIPT, 'text/javascript; charset=utf-8'), { ...docs({ tag: 'cameras', summary: "The widget page's player script", ok: { description: 'JavaScript', content: { 'text/javascript': { schema: { type: 'string' } } } } }) })
      .get('/cockpit-widget-icon.svg', () => page(WIDGET_ICON, 'image/svg+xml'), { ...docs({ tag: 'cameras', summary: "The widget's icon in Cockpit's widget list", ok: { description: 'An SVG image', content: { 'image/svg+xml': { schema: { type: 'string' } } } } }) })
      .post(
        '/api/devices/capture_still',
        typed({ body: BusInfoRequest }, async ({ body, request }) => {
          const device = registry.deviceDirectory().device(body.bus_info)
          if (!device) throw notFound(`No device with bus_info '${body.bus_info}' is connected`)
          // Refusals (503, 507, 429) before anything is taken; what fails after is a 409 with why.
          const pending = stills.begin(device, request)
          try {
            return { file: await pending.take() }
          } catch (err) {
            throw conflict(`No still of '${body.bus_info}' could be taken: ${(err as Error).message}`)
          }
        }),
        {
          ...docs({
            tag: 'cameras',
            summary: 'Take a still (JPEG) of a camera into the recordings directory, as MAVLink IMAGE_START_CAPTURE does (Cockpit\'s action): answers its file name',
            description:
              'The name is `<camera>_<YYYY-MM-DD_HH-MM-SS-mmm>.jpg`, never shared; GET /api/recordings lists it with `kind: "still"`. ' +
              '429 past the client\'s rate (10 at once, then one a second; --client-limits), 507 below the free-space floor (--min-free-to-record), ' +
              '503 without a snapshot service or while 64 stills are being taken; nothing is written then. 409 when the picture could not be taken.',
            body: BusInfoRequest,
            errors: [404, 409, 429, 503, 507],
          }),
        },
      )
      .get(
      SIGNALLING_PATH,
      () => json(426, `This is Cockpit's WebRTC signalling, a WebSocket: connect with Upgrade: websocket (Cockpit: General → Video connection)`),
      {
        ...docs({
          tag: 'cameras',
          summary: "Cockpit's WebRTC signalling (a WebSocket; mavlink-camera-manager's protocol), also on --cockpit-port (6021)",
          description:
            'Upgrade to a WebSocket and speak mavlink-camera-manager\'s signalling (docs/cockpit.md): peerId, availableStreams, startSession, mediaNegotiation (the service offers), iceNegotiation, endSession. ' +
            'A plain GET is 426. Sessions share --max-viewers with WHEP. Each malformed message is answered {"type": "error", "content": {"detail": "..."}}.',
          okStatus: 426,
          errors: [400, 401, 403, 421, 429, 503],
        }),
      },
    )
  },
})

/** A port flag's value: 1 to 65535, or null for 0/'off'. */
function parsePort(raw: string, off: string): number | null {
  if (raw === 'off' || raw === '0') return null
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1 || n > 65535) throw new Error(`expected a TCP port from 1 to 65535, or ${off}`)
  return n
}
