// Per-client limits on what makes the vehicle work hard or hold something for a client (a zip of
// every recording, a snapshot that starts a camera, a WebRTC session, a signalling socket), in this one
// place: a token bucket per client address and kind (take), and a count of what a client holds at once
// (hold). A client past its bucket or its share gets 429 with Retry-After and a sentence; each refusal
// is counted (/metrics: periscope_http_limited_total). docs/security.md lists the numbers.
import { callerAddress } from '../front'
import { LimitError } from '../errors'

/** Each kind's bucket: `burst` at once, then one more every `everySeconds`. */
export const CLIENT_LIMITS = {
  zip_prepare: { burst: 8, everySeconds: 5, what: 'zip archives prepared' },
  snapshot_stopped: { burst: 10, everySeconds: 1, what: 'snapshots of a stopped camera (each starts it)' },
  // One bucket for both WebRTC doors: WHEP's POST and Cockpit's startSession.
  webrtc_session: { burst: 20, everySeconds: 0.5, what: 'WebRTC sessions opened (WHEP and Cockpit together)' },
  signalling_socket: { burst: 20, everySeconds: 0.5, what: 'signalling sockets opened' },
  // Per HTTP client and per MAVLink peer (system/component id): each still is a file on the card.
  still: { burst: 10, everySeconds: 1, what: 'stills taken' },
  // Every MAVLink sender together: a sender's ids cost nothing to forge, so one link cannot have a fresh bucket per forged id.
  still_mavlink: { burst: 20, everySeconds: 0.5, what: 'stills taken over MAVLink (all senders together)' },
  // A link test is two transfers (plugins/link): three tests at once, then one every 10 s.
  link_transfer: { burst: 6, everySeconds: 5, what: 'link test transfers (each fills the link for seconds)' },
} as const

export type LimitedKind = keyof typeof CLIENT_LIMITS

/** What a client holds at once: a camera's WebRTC places (WHEP and Cockpit together), signalling sockets, link test transfers. */
export type HeldKind = 'webrtc_places' | 'signalling_sockets' | 'link_transfers'

/** Signalling sockets one client may hold open at once (of MAX_SOCKETS, plugins/cockpit). */
export const SOCKETS_PER_CLIENT = 16

/**
 * A camera's WebRTC places (--max-viewers) one client may hold at once, WHEP and Cockpit together:
 * half of them, rounded up, so no one client takes every place and another always gets one.
 */
export const placesPerClient = (maxViewers: number) => Math.max(1, Math.ceil(maxViewers / 2))

/** Buckets kept at most (one per client and kind); the oldest is forgotten first. */
const MAX_BUCKETS = 4096

export class TooManyRequests extends LimitError {
  constructor(detail: string, retryAfterSeconds: number) {
    super(429, detail, retryAfterSeconds)
  }
}

/** A client's address: the caller of a request, or an address the door already has (a socket's peer). */
const clientOf = (from: Request | string | undefined) => (typeof from === 'string' ? from : from ? callerAddress(from) : undefined) ?? 'unknown'

export class ClientLimits {
  /** `enabled` false (--client-limits off): every take and hold succeeds. */
  constructor(private readonly enabled = true) {}

  private buckets = new Map<string, { tokens: number; at: number }>()
  /** What each client holds now, by kind, client and scope (a camera). Entries go when they reach 0. */
  private held = new Map<string, number>()
  /** Refusals so far, by kind. */
  readonly refused: Record<LimitedKind | HeldKind, number> = {
    zip_prepare: 0,
    snapshot_stopped: 0,
    webrtc_session: 0,
    signalling_socket: 0,
    still: 0,
    still_mavlink: 0,
    link_transfer: 0,
    webrtc_places: 0,
    signalling_sockets: 0,
    link_transfers: 0,
  }

  /**
   * Takes one of the client's tokens for `kind`; throws a 429 when it has none left. The client is a
   * request's caller, or an address or name the door already has (a socket's peer, `mavlink <sysid>/<compid>`).
   */
  take(kind: LimitedKind, from: Request | string | undefined): void {
    if (!this.enabled) return
    const { burst, everySeconds, what } = CLIENT_LIMITS[kind]
    const key = `${kind} ${clientOf(from)}`
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

  /**
   * The client takes one more of `kind` (in `scope`: a camera), at most `cap` at once; throws a 429
   * with `refusal`'s sentence past it. The answer releases it (once, whatever calls it again).
   */
  hold(kind: HeldKind, from: Request | string | undefined, cap: number, refusal: (held: number) => string, scope = ''): () => void {
    if (!this.enabled) return () => {}
    const key = `${kind} ${clientOf(from)} ${scope}`
    const now = this.held.get(key) ?? 0
    if (now >= cap) {
      this.refused[kind]++
      throw new TooManyRequests(refusal(now), 1)
    }
    this.held.set(key, now + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      const left = (this.held.get(key) ?? 1) - 1
      if (left > 0) this.held.set(key, left)
      else this.held.delete(key)
    }
  }
}
