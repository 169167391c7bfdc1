// Which browser pages may call the service, and CORS for them. Allowed: the service's own origin and
// the vehicle's own names and addresses on any port (BlueOS's pages on port 80, its /extensionv2/
// proxy, Cockpit's widgets served from the vehicle), plus --cors-origins ('*': any page at all).
// A page on any other origin is refused with 403 before anything runs: every state-changing request
// (whatever its content type: a form or text/plain POST needs no preflight), and every read under
// /api/. A request without Origin is refused when the browser says it is cross-site (Sec-Fetch-Site):
// a change, and a read under /api/ that a page made (a no-cors fetch, an <img>, a <video> of a
// recording), except live pictures under /api/streams/ (a widget on the vehicle's other name embeds
// them; a page cannot read an image's pixels back) and a navigation (the pilot followed a link).
// Preflights are answered here, before the token is asked for, and Chromium's local/private-network
// preflights only for allowed origins. Any other OPTIONS goes to the routes (WHEP answers one).
import { Elysia } from 'elysia'
import { requestPath } from '../front'
import { hostnameOf, vehicleHost, vehicleHostList } from './hosts'
import type { Refusals } from './refusals'
import type { EarlyAnswer } from './request-log'

const SAFE = new Set(['GET', 'HEAD', 'OPTIONS'])

/** Whether a page on `origin` may call the service reached at `host` (the request's Host). */
export function originAllowed(origin: string, host: string | null, configured: readonly string[]): boolean {
  if (configured.includes('*') || configured.includes(origin)) return true
  if (!URL.canParse(origin)) return false // 'null': a sandboxed frame, a file
  const url = new URL(origin)
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
  const name = url.hostname.replace(/^\[|\]$/g, '')
  // The name the pilot reached the service by is the vehicle's, on any port (the proxy's page at blueos.local).
  if (host !== null && hostnameOf(host) === name) return true
  return vehicleHost(name)
}

export function cors(configured: readonly string[], refusals: Refusals, answered: EarlyAnswer = () => {}) {
  const any = configured.includes('*')
  const headersFor = (origin: string): Record<string, string> => ({
    'access-control-allow-origin': any ? '*' : origin,
    'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
    'access-control-allow-headers': 'content-type, authorization',
    'access-control-max-age': '600',
    ...(any ? {} : { vary: 'Origin' }),
  })
  return new Elysia({ name: 'periscope:cors' }).onRequest(({ request, set }) => {
    const origin = request.headers.get('origin')
    const preflight = request.method === 'OPTIONS' && request.headers.has('access-control-request-method')
    const refuse = (detail: string) => {
      refusals.origins++
      set.status = 403
      answered(request, 403)
      return { detail }
    }
    if (origin === null) {
      if (request.headers.get('sec-fetch-site') !== 'cross-site') return
      if (!SAFE.has(request.method)) return refuse('A page on another site may not change this vehicle (the browser said Sec-Fetch-Site: cross-site); see docs/security.md')
      const path = requestPath(request)
      if (path.startsWith('/api/') && !path.startsWith('/api/streams/') && request.headers.get('sec-fetch-mode') !== 'navigate') {
        return refuse('A page on another site may not read this vehicle\'s data (the browser said Sec-Fetch-Site: cross-site); see docs/security.md')
      }
      return
    }
    if (!originAllowed(origin, request.headers.get('host'), configured)) {
      if (preflight || !SAFE.has(request.method) || requestPath(request).startsWith('/api/')) {
        return refuse(`A page on ${origin} may not call this service: only the vehicle's own pages and the origins given with --cors-origins may (docs/security.md)`)
      }
      return
    }
    const headers = headersFor(origin)
    Object.assign(set.headers, headers)
    if (!preflight) return
    // Chromium asks before a public page reaches a private address (Private Network Access), and its
    // successor Local Network Access asks the same way: yes, for allowed origins only.
    if (request.headers.get('access-control-request-private-network') === 'true') headers['access-control-allow-private-network'] = 'true'
    if (request.headers.get('access-control-request-local-network') === 'true') headers['access-control-allow-local-network'] = 'true'
    answered(request, 204)
    return new Response(null, { status: 204, headers })
  })
}

/**
 * The pages that may show ours in a frame (CSP frame-ancestors): the same as may call it, so BlueOS's
 * and Cockpit's iframes on the vehicle keep working and a page elsewhere cannot frame the console
 * (clickjacking).
 */
export function frameAncestors(request: Request, configured: readonly string[]): string {
  if (configured.includes('*')) return 'frame-ancestors *'
  const host = request.headers.get('host')
  const names = new Set(vehicleHostList())
  const own = host === null ? null : hostnameOf(host)
  if (own && !own.includes(':')) names.add(own)
  const sources = [...names].flatMap((name) => [`http://${name}:*`, `https://${name}:*`])
  const extra = configured.filter((o) => /^https?:\/\/[^\s;,]+$/.test(o))
  return ['frame-ancestors', "'self'", ...sources, ...extra].join(' ')
}
