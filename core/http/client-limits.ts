// Per-client limits on the operations that make the vehicle work hard (a zip of every recording, a
// snapshot that starts a camera, a WebRTC session): a token bucket per client address and kind, in
// this one place. A client past its bucket gets 429 with Retry-After and a sentence; each refusal is
// counted (/metrics: periscope_http_limited_total). docs/security.md lists the numbers.
import { callerAddress } from '../front'
import { LimitError } from '../errors'

/** Each kind's bucket: `burst` at once, then one more every `everySeconds`. */
export const CLIENT_LIMITS = {
  zip_prepare: { burst: 8, everySeconds: 5, what: 'zip archives prepared' },
  snapshot_stopped: { burst: 10, everySeconds: 1, what: 'snapshots of a stopped camera (each starts it)' },
  whep_session: { burst: 20, everySeconds: 0.5, what: 'WebRTC (WHEP) sessions opened' },
  // Per HTTP client and per MAVLink peer (system/component id): each still is a file on the card.
  still: { burst: 10, everySeconds: 1, what: 'stills taken' },
  // Every MAVLink sender together: a sender's ids cost nothing to forge, so one link cannot have a fresh bucket per forged id.
  still_mavlink: { burst: 20, everySeconds: 0.5, what: 'stills taken over MAVLink (all senders together)' },
} as const

export type LimitedKind = keyof typeof CLIENT_LIMITS

/** Buckets kept at most (one per client and kind); the oldest is forgotten first. */
const MAX_BUCKETS = 4096

export class TooManyRequests extends LimitError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(429, detail, retryAfterSeconds)
  }
}

export class ClientLimits {
  /** `enabled` false (--client-limits off): every take succeeds. */
  constructor(private readonly enabled = true) {}

  private buckets = new Map<string, { tokens: number; at: number }>()
  /** Refusals so far, by kind. */
  readonly refused: Record<LimitedKind, number> = { zip_prepare: 0, snapshot_stopped: 0, whep_session: 0, still: 0, still_mavlink: 0 }

  /** Takes one of the client's tokens for `kind`; throws a 429 when it has none left. */
  take(kind: LimitedKind, request: Request): void {
    this.takeFor(kind, callerAddress(request) ?? 'unknown')
  }

  /** As take(), for a client known otherwise than by an HTTP request (a MAVLink peer: `mavlink <sysid>/<compid>`). */
  takeFor(kind: LimitedKind, client: string): void {
    if (!this.enabled) return
    const { burst, everySeconds, what } = CLIENT_LIMITS[kind]
    const key = `${kind} ${client}`
    const now = performance.now() / 1000
    let bucket = this.buckets.get(key)
    if (bucket) this.buckets.delete(key)
    else {
      if (this.buckets.size >= MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value!)
      bucket = { tokens: burst, at: now }
    }
    bucket.tokens = Math.min(burst, bucket.tokens + (now - bucket.at) / everySeconds)
    bucket.at = now
    this.buckets.set(key, bucket) // newest last
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return
    }
    this.refused[kind]++
    const wait = Math.max(1, Math.ceil((1 - bucket.tokens) * everySeconds))
    throw new TooManyRequests(`Too many ${what} from this client: ${burst} at once, then one every ${everySeconds} s; try again in ${wait} s`, wait)
  }
}
