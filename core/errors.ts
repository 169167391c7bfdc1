// The error model (DESIGN.md): 422 in pydantic v2's shape (core/validation.ts), every other failure
// {"detail": "<sentence a person can act on>"} with 404/409/413/502/503/504, and 507 when the disk
// cannot take a setting (full or read-only). A 500 is a bug.
import type { Static } from '@sinclair/typebox'
import type { ValidationError } from './schemas'
import { DeviceError } from './types'

export class HttpError extends Error {
  constructor(
    readonly status: 400 | 401 | 403 | 404 | 408 | 409 | 413 | 415 | 421 | 429 | 502 | 503 | 504 | 507,
    readonly detail: string,
    /** Seconds after which trying again may succeed (a Retry-After header). */
    readonly retryAfter?: number,
  ) {
    super(detail)
    this.name = 'HttpError'
  }
}

/**
 * A limit refused the request (docs/limits.md): 429 or 503 with Retry-After. Not logged as a failure:
 * the plugin counts it (registry.limitHit) for /metrics instead, so a flood cannot flood the log too.
 */
export class LimitError extends HttpError {}

export const notFound = (detail: string) => new HttpError(404, detail)
export const conflict = (detail: string) => new HttpError(409, detail)
export const unavailable = (detail: string) => new HttpError(503, detail)

/**
 * One pydantic v2 error entry, as FastAPI writes it (no `url`): the ValidationError model, with the
 * input always present (pydantic always has one) and ctx's fields, which the document leaves open.
 */
export type PydanticError = Omit<Static<typeof ValidationError>, 'input' | 'ctx'> & { input: unknown; ctx?: Record<string, unknown> }

export class RequestValidationError extends Error {
  constructor(readonly errors: PydanticError[]) {
    super('request validation failed')
    this.name = 'RequestValidationError'
  }
}

/** A single 422 for a rule that only the device knows (EINVAL from the driver, say). */
export const valueError = (loc: (string | number)[], msg: string, input: unknown) =>
  new RequestValidationError([{ type: 'value_error', loc, msg: `Value error, ${msg}`, input, ctx: { error: msg } }])

/** errno → HTTP, for failures reported by hardware backends. */
export function fromDeviceError(e: DeviceError, what: string, loc: (string | number)[] = ['body', 'value'], input?: unknown): Error {
  switch (e.code) {
    case 'EINVAL':
    case 'ERANGE':
      return valueError(loc, `${what}: the device refused the value (${e.code}): ${e.message}`, input)
    case 'EACCES':
    case 'EBUSY':
    case 'EPERM':
      return conflict(`${what}: ${e.message} (${e.code})`)
    case 'ENODEV':
    case 'ENOENT':
    case 'ENXIO':
      return notFound(`${what}: the device is gone (${e.code})`)
    case 'ETIMEDOUT':
      return new HttpError(504, `${what}: the device did not answer in time (ETIMEDOUT)`)
    default:
      return new HttpError(502, `${what}: the device failed (${e.code}): ${e.message}`)
  }
}
