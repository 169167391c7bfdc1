// With a token configured (--token), every mutating request under /api/ needs `Authorization: Bearer
// <token>`; reads stay open.
import { Elysia } from 'elysia'
import { requestPath } from '../front'
import type { EarlyAnswer } from './request-log'

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])

export function bearerToken(token: string | null, answered: EarlyAnswer = () => {}) {
  const plugin = new Elysia({ name: 'periscope:token' })
  if (!token) return plugin
  return plugin.onRequest(({ request, set }) => {
    if (!MUTATING.has(request.method) || !requestPath(request).startsWith('/api/')) return
    if (request.headers.get('authorization') === `Bearer ${token}`) return
    set.status = 401
    set.headers['www-authenticate'] = 'Bearer'
    answered(request, 401)
    return { detail: 'This operation needs the bearer token: send Authorization: Bearer <token>' }
  })
}
