// What the front refused, counted for /metrics (the metrics plugin reads these at scrape time).
import { ClientLimits } from './client-limits'

export class Refusals {
  /** Requests that carried a token (header or cookie) that was not the one configured. */
  wrongTokens = 0
  /** Requests from a browser page on an origin that is not allowed (403). */
  origins = 0
  /** Requests whose Host is not served (421) or is no host name or was sent twice (400). */
  hosts = 0
  /** The per-client buckets of the expensive operations (429). */
  readonly limits: ClientLimits

  constructor(limits = true) {
    this.limits = new ClientLimits(limits)
  }
}
