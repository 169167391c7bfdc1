// CORS for the allowed origins (config.corsOrigins, '*' for any): the headers on every answer, and
// preflights (OPTIONS with Access-Control-Request-Method) answered here with a 204, before the token is
// asked for. Any other OPTIONS goes to the routes (WHEP answers one: its Accept-Post), else 405 with Allow.
import { Elysia } from 'elysia'
import type { EarlyAnswer } from './request-log'

export function cors(origins: readonly string[], answered: EarlyAnswer = () => {}) {
  const any = origins.includes('*')
  const headersFor = (origin: string | null): Record<string, string> => {
    if (!origin) return {}
    if (!any && !origins.includes(origin)) return {}
    return {
      'access-control-allow-origin': any ? '*' : origin,
      'access-control-allow-methods': 'GET, POST, PATCH, DELETE, OPTIONS',
      'access-control-allow-headers': 'content-type, authorization',
      'access-control-max-age': '600',
      ...(any ? {} : { vary: 'Origin' }),
    }
  }
  return new Elysia({ name: 'periscope:cors' }).onRequest(({ request, set }) => {
    const headers = headersFor(request.headers.get('origin'))
    Object.assign(set.headers, headers)
    if (request.method !== 'OPTIONS' || !request.headers.has('access-control-request-method')) return
    answered(request, 204)
    return new Response(null, { status: 204, headers })
  })
}
