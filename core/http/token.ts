// With a token configured (--token), every mutating request under /api/ needs it; with --token-scope
// all, every request under /api/ but /api/health does too (recordings, logs, events, live video).
// Sent as `Authorization: Bearer <token>` (the scheme in any case, RFC 9110 §11.1), or, for a GET or
// HEAD only, as the cookie the console sets (an EventSource, an <img> or a download link cannot send
// a header; a cookie is never enough for a change). Compared in constant time; never logged; a wrong
// one is counted (/metrics: periscope_http_wrong_tokens_total).
import { createHash, timingSafeEqual } from 'node:crypto'
import { Elysia } from 'elysia'
import { requestPath } from '../front'
import type { Refusals } from './refusals'
import type { EarlyAnswer } from './request-log'

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
const READING = new Set(['GET', 'HEAD'])

/** The cookie the console sets for reads (plugins/console/ui/api.ts writes it under this name). */
export const TOKEN_COOKIE = 'periscope_token'

/** Paths that stay open whatever the scope: whoever watches the vehicle's health needs no token. */
const ALWAYS_OPEN = new Set(['/api/health'])

const digest = (value: string) => createHash('sha256').update(value).digest()

/** The bearer token of an Authorization header (any case of 'Bearer'); null when it has none. */
export function bearerOf(header: string | null): string | null {
  const m = header && /^[ \t]*bearer[ \t]+([^ \t]+)[ \t]*$/i.exec(header)
  return m ? m[1]! : null
}

export function cookieToken(header: string | null): string | null {
  for (const part of header?.split(';') ?? []) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === TOKEN_COOKIE) {
      try {
        return decodeURIComponent(part.slice(at + 1).trim())
      } catch {
        return null
      }
    }
  }
  return null
}

/** Whether a given token is `token`, compared in constant time over SHA-256 digests (any length). */
export function tokenMatcher(token: string): (given: string) => boolean {
  const expected = digest(token)
  return (given) => timingSafeEqual(digest(given), expected)
}

export function bearerToken(token: string | null, scope: 'changes' | 'all', refusals: Refusals, answered: EarlyAnswer = () => {}) {
  const plugin = new Elysia({ name: 'periscope:token' })
  if (!token) return plugin
  const matches = tokenMatcher(token)
  return plugin.onRequest(({ request, set }) => {
    const path = requestPath(request)
    if (!path.startsWith('/api/') || ALWAYS_OPEN.has(path)) return
    const mutating = MUTATING.has(request.method)
    if (!mutating && scope !== 'all') return
    const header = request.headers.get('authorization')
    const given = bearerOf(header) ?? (READING.has(request.method) ? cookieToken(request.headers.get('cookie')) : null)
    if (given !== null && matches(given)) return
    if (given !== null || header !== null) refusals.wrongTokens++
    set.status = 401
    set.headers['www-authenticate'] = 'Bearer'
    answered(request, 401)
    return { detail: given !== null ? 'The token is wrong: send Authorization: Bearer <token> with the one the service was started with' : mutating ? 'This operation needs the bearer token: send Authorization: Bearer <token>' : 'Reading needs the bearer token (--token-scope all): send Authorization: Bearer <token>' }
  })
}
