// The rules of the doors the app's own layers never see, applied with those layers' functions (not
// copies): a WebSocket upgrade (Cockpit's signalling, on the HTTP port's path and on its own port,
// which the front hands to the endpoint before any Elysia hook runs) and a WebRTC place (WHEP's POST
// and Cockpit's startSession share each camera's --max-viewers and each client's share of them).
//
// An upgrade passes, in order: the Host rule (hosts.ts: 400/421), the origin rule (cors.ts's
// originAllowed: the vehicle's own origins and --cors-origins, 403), the token (token.ts: with
// --token-scope all always; with --token, also for a page whose origin is opaque), then the client's
// socket rate and share (client-limits.ts: 429). A WebSocket is not bound by CORS: a page on any origin
// may open one, and a WebRTC MediaStream, unlike an <img>, is not tainted, so its pixels could be read;
// hence the origin rule here. An opaque origin (`null`: a local file, a sandboxed frame on any site, and
// Cockpit's desktop app, which Electron loads from file://) cannot be told apart by the Origin alone:
// with --token it needs the token; without, only a browser that says it is Electron (Cockpit's own
// test, `isElectron()`, reads the same User-Agent; a page cannot change the User-Agent of its WebSocket)
// is let in. docs/security.md says what this leaves open.
import { hostRefusal } from './hosts'
import { originAllowed } from './cors'
import { bearerOf, cookieToken, tokenMatcher } from './token'
import { placesPerClient, SOCKETS_PER_CLIENT, TooManyRequests, type ClientLimits } from './client-limits'
import type { Refusals } from './refusals'
import type { Config } from '../config'
import { HttpError } from '../errors'

export interface DoorContext {
  config: Pick<Config, 'allowedHosts' | 'corsOrigins' | 'token' | 'tokenScope' | 'maxViewers'>
  refusals: Refusals
}

const json = (status: number, detail: string, headers: Record<string, string> = {}) => Response.json({ detail }, { status, headers })

/** An origin that names no web site: 'null' (a file, a sandboxed frame, a data: URL), 'file://', an extension's. */
export const opaqueOrigin = (origin: string) => !/^https?:\/\/[^/]/i.test(origin)

/** Electron's renderer says so in its User-Agent ('… Electron/29.4.6 …'), as Cockpit's isElectron() reads it. */
const ELECTRON = /\bElectron\/\d/

/** The token of an upgrade: the Authorization header, the console's cookie, or `?token=` (a browser's WebSocket can send no header). */
function upgradeToken(request: Request): string | null {
  const header = bearerOf(request.headers.get('authorization'))
  if (header !== null) return header
  const cookie = cookieToken(request.headers.get('cookie'))
  if (cookie !== null) return cookie
  const query = request.url.indexOf('?')
  return query < 0 ? null : new URLSearchParams(request.url.slice(query + 1).replace(/#.*$/, '')).get('token')
}

/**
 * Why a WebSocket upgrade is refused by the Host, origin and token rules (a Response to send as it is),
 * or null when it passes them. `what` names the door in the sentences.
 */
export function upgradeRefusal(request: Request, { config, refusals }: DoorContext, what: string): Response | null {
  const host = hostRefusal(request.headers.get('host'), config.allowedHosts)
  if (host) {
    refusals.hosts++
    return json(host.status, host.detail)
  }
  const origin = request.headers.get('origin')
  const opaque = origin !== null && opaqueOrigin(origin)
  // No Origin: not a browser page (every browser sends one on a WebSocket).
  if (origin !== null && !opaque && !originAllowed(origin, request.headers.get('host'), config.corsOrigins)) {
    refusals.origins++
    return json(403, `A page on ${origin} may not open ${what}: only the vehicle's own pages and the origins given with --cors-origins may (docs/security.md)`)
  }
  const needsToken = config.token !== null && (config.tokenScope === 'all' || opaque)
  if (!needsToken) {
    if (opaque && !ELECTRON.test(request.headers.get('user-agent') ?? '')) {
      refusals.origins++
      return json(403, `A page with no origin of its own (Origin: ${origin}: a local file or a sandboxed frame, which any site can make) may not open ${what}; Cockpit's desktop app may. Start the service with --token and add ?token=<token> to the address, or add the page's origin with --cors-origins (docs/security.md)`)
    }
    return null
  }
  const given = upgradeToken(request)
  if (given !== null && tokenMatcher(config.token!)(given)) return null
  if (given !== null) refusals.wrongTokens++
  const why = config.tokenScope === 'all' ? 'Watching needs the bearer token (--token-scope all)' : `A page with no origin of its own (Origin: ${origin}) needs the bearer token (--token)`
  return json(401, `${why}: a WebSocket cannot send a header, so add ?token=<token> to the address (Cockpit: General → Video connection), or open the console's page first on this address (its cookie carries the token)`, { 'www-authenticate': 'Bearer' })
}

/**
 * The client's share of the sockets: its opening rate and the sockets it holds at once. A Response
 * refuses it (429), else the release to call when the socket closes.
 */
export function socketPlace(client: string | undefined, limits: ClientLimits, what: string): Response | (() => void) {
  try {
    limits.take('signalling_socket', client)
    return limits.hold('signalling_sockets', client, SOCKETS_PER_CLIENT, (held) => `This client already holds ${held} ${what} sockets, the most one client may at once: close one (a tab, a video widget) first`)
  } catch (err) {
    if (err instanceof TooManyRequests) return json(429, err.detail, { 'retry-after': String(err.retryAfter ?? 1) })
    throw err
  }
}

/**
 * A WebRTC place of a camera for a new session (WHEP's or Cockpit's): the camera's --max-viewers
 * (503), then the client's share of them (429); the release to call when the session ends.
 */
export function webrtcPlace(client: string | undefined, bus_info: string, viewers: number, { config, refusals }: DoorContext): () => void {
  if (viewers >= config.maxViewers) throw new HttpError(503, `'${bus_info}' already has ${viewers} WebRTC viewers (WHEP and Cockpit), the most allowed (--max-viewers); close one or try later`)
  const share = placesPerClient(config.maxViewers)
  return refusals.limits.hold(
    'webrtc_places',
    client,
    share,
    (held) => `This client already has ${held} WebRTC session${held === 1 ? '' : 's'} of '${bus_info}' (WHEP and Cockpit together), the most one client may: half of --max-viewers ${config.maxViewers}, so that others get a place; close one first`,
    bus_info,
  )
}
