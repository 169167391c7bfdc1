// Tags each request with this app's body limit, which the body parsers (core/validation.ts) enforce
// with a 413; per request, because several apps with different limits may share a process (tests).
import { Elysia } from 'elysia'
import { bodyLimitOf } from '../validation'

export function bodyLimit(bytes: number) {
  return new Elysia({ name: 'periscope:body-limit' }).onRequest(({ request }) => {
    bodyLimitOf.set(request, bytes)
  })
}
