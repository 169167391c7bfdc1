// Cockpit's WebRTC signalling, as mavlink-camera-manager serves it (its src/lib/stream/webrtc/, which
// Cockpit's src/libs/webrtc/signaller.ts and session.ts speak): JSON text messages on a WebSocket,
// each `{type: 'question' | 'answer' | 'negotiation', content: {type, content}}`. The browser asks for
// a peer id (`peerId`), the streams (`availableStreams`) and a session on one of them (`startSession`);
// we answer the session's id, then offer (`mediaNegotiation`) and send our host candidates one by one
// (`iceNegotiation`), the browser answers and trickles its own. A session ends on
// the browser's `endSession`, its socket's close, the idle timeout, or its stream's end (we then ask
// `endSession` ourselves, as mavlink-camera-manager does). Sessions are media/webrtc/session.ts's
// viewers, readers of the stream's hub, admitted by the same rules as WHEP's (ctx.admit: the camera's
// --max-viewers, the client's share and session rate, core/http/doors.ts): the camera's video, and the
// stream's Opus sound when it has one (a second section of our offer, after the video's); only the
// browser's candidates at the socket's own peer address are used (media/webrtc/candidates.ts).
//
// This is transport-agnostic: one Connection per WebSocket, fed its text messages; plugins/cockpit
// serves it on the HTTP port's path and on its own port. The protocol has no error message; we send
// `{type: 'error', content: {detail}}`, which Cockpit's listeners (they match on type) pass over.
import { createHash, randomUUID } from 'node:crypto'
import type { Device, StreamHub } from '../../core/types'
import { OfferError, WebRtcViewer, type EndReason } from '../../media/webrtc/session'
import { HttpError } from '../../core/errors'

/** The most bytes of one message: a browser's SDP answer is 2 to 6 kB, wrapped in JSON. */
export const MAX_MESSAGE_BYTES = 32 * 1024
/** Messages a socket may send in a burst, then per second (Cockpit asks for the streams once a second and trickles a few candidates). */
export const MESSAGE_BURST = 60
export const MESSAGES_PER_SECOND = 20
/** Sessions one socket may hold at once (Cockpit opens one per video widget, each on its own socket). */
export const MAX_SESSIONS_PER_SOCKET = 4
/** Candidates the browser may trickle per session (a browser has a handful: one per interface and protocol). */
export const MAX_CANDIDATES_PER_SESSION = 32
/** The longest id (consumer, producer, session) read: theirs are UUIDs. */
const MAX_ID_LENGTH = 128

/** What went wrong with a message, for /metrics (periscope_refusals_total{what="cockpit_message"}). */
export type RefusalReason = 'too_large' | 'rate' | 'not_json' | 'unknown_type' | 'bad_fields' | 'no_session' | 'no_stream' | 'max_viewers' | 'client_limit' | 'too_many_sessions' | 'unanswerable' | 'foreign_candidate'
export const REFUSAL_REASONS: readonly RefusalReason[] = ['too_large', 'rate', 'not_json', 'unknown_type', 'bad_fields', 'no_session', 'no_stream', 'max_viewers', 'client_limit', 'too_many_sessions', 'unanswerable', 'foreign_candidate']

/** One entry of `availableStreams`, as mavlink-camera-manager's signalling_protocol.rs `Stream`. */
export interface StreamEntry {
  id: string
  name: string
  encode: string | null
  height: number | null
  width: number | null
  interval: string | null
  source: string | null
  created: string | null
}

/** A stream's producer id: a UUID made from its bus_info, so it stays the same across restarts and sockets. */
export function producerId(bus_info: string): string {
  const h = createHash('sha1').update(`periscope-cockpit:${bus_info}`).digest()
  h[6] = (h[6]! & 0x0f) | 0x50 // version 5 (name-based, SHA-1)
  h[8] = (h[8]! & 0x3f) | 0x80
  const x = h.subarray(0, 16).toString('hex')
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`
}

/** Every running H.264 camera stream (WebRTC carries no MJPG), named by its nickname (Cockpit finds a stream by name). */
export function availableStreams(devices: Device[], live: (bus_info: string) => { hub: StreamHub; member: number } | null): StreamEntry[] {
  const seen = new Set<string>()
  const out: StreamEntry[] = []
  for (const device of devices) {
    const running = live(device.bus_info)
    if (!running || running.hub.encoding !== 'H264' || running.hub.closed) continue
    let name = device.nickname || device.name || device.bus_info
    if (seen.has(name)) name = `${name} (${device.bus_info})`
    seen.add(name)
    const interval = device.stream?.interval
    out.push({
      id: producerId(device.bus_info),
      name,
      encode: 'H264',
      width: running.hub.width || null,
      height: running.hub.height || null,
      // As mavlink-camera-manager writes it: the frame interval in seconds (numerator / denominator).
      interval: interval?.denominator ? String(interval.numerator / interval.denominator) : running.hub.fps ? String(1 / running.hub.fps) : null,
      source: device.stream?.device_path || device.bus_info,
      created: null,
    })
  }
  return out
}

/** An SDP without its candidate lines, and those candidates as RTCIceCandidateInit (for iceNegotiation). */
export function splitCandidates(sdp: string): { sdp: string; candidates: { candidate: string; sdpMid: string | null; sdpMLineIndex: number }[] } {
  const kept: string[] = []
  const found: { candidate: string; section: number }[] = []
  const mids: (string | null)[] = []
  let section = -1
  for (const line of sdp.split('\r\n')) {
    if (line.startsWith('m=')) mids[++section] = null
    if (section >= 0 && line.startsWith('a=mid:')) mids[section] = line.slice(6)
    if (section >= 0 && line.startsWith('a=candidate:')) found.push({ candidate: line.slice(2), section })
    else if (line !== 'a=end-of-candidates') kept.push(line)
  }
  return { sdp: kept.join('\r\n'), candidates: found.map(({ candidate, section }) => ({ candidate, sdpMid: mids[section] ?? null, sdpMLineIndex: section })) }
}

/** What a connection needs of the service. */
export interface SignallingContext {
  streams(): StreamEntry[]
  /** The camera behind a producer id, with its running stream; null when none runs as H.264. */
  producer(id: string): { bus_info: string; hub: StreamHub; member: number } | null
  /**
   * A WebRTC place of the camera for a new session from `peer`, by WHEP's rules (core/http/doors.ts:
   * the client's session rate, the camera's --max-viewers, the client's share): the release to call
   * when the session ends, or an HttpError (429, 503) whose detail is said.
   */
  admit(peer: string | undefined, bus_info: string): () => void
  listenHost: string
  /** A new session's label (cockpit-1, …) and its end (counted, logged). */
  label(): string
  ended(session: CockpitSession, reason: EndReason, detail?: string): void
  opened(session: CockpitSession): void
  refused(reason: RefusalReason): void
  /** A limit was hit (registry.limitHit: /metrics). */
  limitHit(limit: string): void
}

/** How a connection talks back: its WebSocket, and the address it came from. */
export interface Socket {
  /** The peer's address (its candidates must be there: media/webrtc/candidates.ts). */
  readonly peer: string | undefined
  send(text: string): void
  close(code: number, reason: string): void
}

export interface CockpitSession {
  id: string
  consumer_id: string
  producer_id: string
  bus_info: string
  viewer: WebRtcViewer
  candidates: number
  /** Gives its client's WebRTC place back (ctx.admit). */
  release: () => void
  /** Negotiation steps run one after the other (a candidate may arrive while the answer is being set). */
  queue: Promise<void>
}

class Refused extends Error {
  constructor(
    readonly reason: RefusalReason,
    message: string,
  ) {
    super(message)
  }
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const idOf = (content: Record<string, unknown>, key: string): string => {
  const v = content[key]
  if (typeof v !== 'string' || !v || v.length > MAX_ID_LENGTH) throw new Refused('bad_fields', `'${key}' must be a non-empty string of at most ${MAX_ID_LENGTH} characters`)
  return v
}

/** One signalling WebSocket: its sessions, its rate, its messages. */
export class Connection {
  readonly sessions = new Map<string, CockpitSession>()
  private tokens = MESSAGE_BURST
  private refilledAt = Date.now()
  /** Messages dropped since the last one within the rate. */
  private dropped = 0
  private closed = false
  /** Since when the socket holds no session (null while it holds one): a socket idle too long is shut (plugins/cockpit). */
  sessionlessSince: number | null = Date.now()

  constructor(
    private readonly socket: Socket,
    private readonly ctx: SignallingContext,
  ) {}

  /** A message from the socket (text, or bytes: both must be JSON). Never throws. */
  receive(message: string | Uint8Array): void {
    if (this.closed) return
    if (!this.withinRate()) return
    const size = typeof message === 'string' ? Buffer.byteLength(message) : message.byteLength
    if (size > MAX_MESSAGE_BYTES) return this.fail('too_large', `The message is ${size} bytes, more than the ${MAX_MESSAGE_BYTES} a signalling message may be here (an SDP answer is a few kB)`)
    let parsed: unknown
    try {
      parsed = JSON.parse(typeof message === 'string' ? message : new TextDecoder().decode(message))
    } catch {
      return this.fail('not_json', 'The message is not JSON: send {"type": "question", "content": {"type": "availableStreams"}} and the like (mavlink-camera-manager\'s signalling protocol)')
    }
    try {
      this.handle(parsed)
    } catch (err) {
      if (err instanceof Refused) return this.fail(err.reason, err.message)
      this.fail('bad_fields', `The message could not be handled: ${(err as Error).message}`)
    }
  }

  /** The socket closed: its sessions end (Cockpit does not always say endSession). */
  socketClosed(): void {
    this.closed = true
    for (const session of this.sessions.values()) void session.viewer.close('disconnected')
  }

  /** Closes the socket from our side (a flood, an idle socket); its sessions end. */
  shut(code: number, reason: string): void {
    if (this.closed) return
    this.closed = true
    this.socket.close(code, reason)
    this.socketClosed()
  }

  /** Every session, for the idle reaper and the health. */
  all(): IterableIterator<CockpitSession> {
    return this.sessions.values()
  }

  /**
   * A token bucket: MESSAGE_BURST at once, then MESSAGES_PER_SECOND. Past it, messages are dropped;
   * the first drop is said, and a socket that sends another burst's worth while dropped is closed.
   */
  private withinRate(): boolean {
    const now = Date.now()
    this.tokens = Math.min(MESSAGE_BURST, this.tokens + ((now - this.refilledAt) / 1000) * MESSAGES_PER_SECOND)
    this.refilledAt = now
    if (this.tokens >= 1) {
      this.tokens--
      this.dropped = 0
      return true
    }
    this.dropped++
    if (this.dropped === 1) {
      this.ctx.limitHit('cockpit_message_rate')
      this.fail('rate', `More than ${MESSAGES_PER_SECOND} messages a second (after a burst of ${MESSAGE_BURST}): messages are dropped until the rate falls; the socket is closed if ${MESSAGE_BURST} more come first`)
    } else if (this.dropped > MESSAGE_BURST) {
      this.ctx.refused('rate')
      this.shut(1008, `More than ${MESSAGES_PER_SECOND} messages a second, on and on`)
    }
    return false
  }

  private send(message: unknown): void {
    if (this.closed) return
    try {
      this.socket.send(JSON.stringify(message))
    } catch {
      // A socket that cannot be written is closing: its close handler ends its sessions.
    }
  }

  private fail(reason: RefusalReason, detail: string): void {
    this.ctx.refused(reason)
    this.send({ type: 'error', content: { detail } })
  }

  private handle(message: unknown): void {
    if (!isObject(message) || typeof message.type !== 'string') throw new Refused('bad_fields', 'A message is a JSON object {"type": "question" | "negotiation", "content": {...}}')
    const content = message.content
    if (message.type === 'question') {
      if (!isObject(content) || typeof content.type !== 'string') throw new Refused('bad_fields', 'A question is {"type": "question", "content": {"type": "peerId" | "availableStreams" | "startSession" | "endSession", ...}}')
      switch (content.type) {
        case 'peerId':
          return this.send({ type: 'answer', content: { type: 'peerId', content: { id: randomUUID() } } })
        case 'availableStreams':
          return this.send({ type: 'answer', content: { type: 'availableStreams', content: this.ctx.streams() } })
        case 'startSession':
          return this.startSession(content.content)
        case 'endSession':
          return this.endSession(content.content)
      }
      throw new Refused('unknown_type', `Unknown question '${content.type.slice(0, 40)}': ask peerId, availableStreams, startSession or endSession`)
    }
    if (message.type === 'negotiation') {
      if (!isObject(content) || typeof content.type !== 'string' || !isObject(content.content)) throw new Refused('bad_fields', 'A negotiation is {"type": "negotiation", "content": {"type": "mediaNegotiation" | "iceNegotiation", "content": {...}}}')
      if (content.type === 'mediaNegotiation') return this.mediaNegotiation(content.content)
      if (content.type === 'iceNegotiation') return this.iceNegotiation(content.content)
      throw new Refused('unknown_type', `Unknown negotiation '${content.type.slice(0, 40)}': send mediaNegotiation or iceNegotiation`)
    }
    if (message.type === 'answer') throw new Refused('unknown_type', 'Answers go from the service to the browser: ask a question instead')
    throw new Refused('unknown_type', `Unknown message type '${message.type.slice(0, 40)}': send a question or a negotiation`)
  }

  private startSession(content: unknown): void {
    if (!isObject(content)) throw new Refused('bad_fields', 'startSession takes {"consumer_id": "<your peer id>", "producer_id": "<a stream id from availableStreams>"}')
    const consumer_id = idOf(content, 'consumer_id')
    const producer_id = idOf(content, 'producer_id')
    if (this.sessions.size >= MAX_SESSIONS_PER_SOCKET) {
      this.ctx.limitHit('cockpit_sessions_per_socket')
      throw new Refused('too_many_sessions', `This socket already has ${this.sessions.size} sessions, the most one may have: end one (endSession) first`)
    }
    const producer = this.ctx.producer(producer_id)
    if (!producer) throw new Refused('no_stream', `No running H.264 stream has the id '${producer_id.slice(0, 40)}': ask availableStreams for the ids`)
    let release: () => void
    try {
      release = this.ctx.admit(this.socket.peer, producer.bus_info)
    } catch (err) {
      if (!(err instanceof HttpError)) throw err
      if (err.status === 503) this.ctx.limitHit('cockpit_viewers')
      throw new Refused(err.status === 503 ? 'max_viewers' : 'client_limit', err.detail)
    }
    const id = randomUUID()
    const viewer = new WebRtcViewer({
      id,
      reader: 'cockpit',
      label: this.ctx.label(),
      bus_info: producer.bus_info,
      hub: producer.hub,
      member: producer.member,
      listenHost: this.ctx.listenHost,
      peer: this.socket.peer,
      onForeignCandidate: () => this.ctx.refused('foreign_candidate'),
      onEnd: (_viewer, reason, detail) => this.sessionEnded(session, reason, detail),
    })
    const session: CockpitSession = { id, consumer_id, producer_id, bus_info: producer.bus_info, viewer, candidates: 0, release, queue: Promise.resolve() }
    this.sessions.set(id, session)
    this.sessionlessSince = null
    this.ctx.opened(session)
    const bind = { consumer_id, producer_id, session_id: id }
    this.send({ type: 'answer', content: { type: 'startSession', content: bind } })
    session.queue = viewer.offer().then(
      (full) => {
        // As mavlink-camera-manager does: the offer, then each candidate on its own, so that Cockpit's
        // ICE IP and protocol filters (General → Video) apply and it lists the vehicle's addresses.
        const { sdp, candidates } = splitCandidates(full)
        this.send({ type: 'negotiation', content: { type: 'mediaNegotiation', content: { ...bind, sdp: { type: 'offer', sdp } } } })
        for (const ice of candidates) this.send({ type: 'negotiation', content: { type: 'iceNegotiation', content: { ...bind, ice } } })
      },
      (err) => {
        this.fail('unanswerable', `No offer could be made for this session: ${(err as Error).message}`)
        void viewer.close('failed', String(err))
      },
    )
  }

  /** The session ended (any side): forgotten, and the browser told unless it asked. */
  private sessionEnded(session: CockpitSession, reason: EndReason, detail?: string): void {
    this.sessions.delete(session.id)
    session.release()
    if (!this.sessions.size) this.sessionlessSince = Date.now()
    this.ctx.ended(session, reason, detail)
    if (reason !== 'deleted' && reason !== 'disconnected') {
      const why = reason === 'idle' ? 'The browser was not heard from for the idle timeout' : reason === 'stream ended' ? 'The camera stream stopped' : reason === 'stopped' ? 'The service is stopping' : `The WebRTC connection failed${detail ? ` (${detail})` : ''}`
      this.send({ type: 'question', content: { type: 'endSession', content: { consumer_id: session.consumer_id, producer_id: session.producer_id, session_id: session.id, reason: why } } })
    }
  }

  /** The session a negotiation or endSession names: its ids must all match one of this socket's. */
  private sessionOf(content: Record<string, unknown>): CockpitSession {
    const session_id = idOf(content, 'session_id')
    const session = this.sessions.get(session_id)
    if (!session) throw new Refused('no_session', `No session '${session_id.slice(0, 40)}' on this socket (it ended, or was opened on another): start one with startSession`)
    if (content.consumer_id !== session.consumer_id || content.producer_id !== session.producer_id) throw new Refused('bad_fields', `consumer_id and producer_id must be the session's own (those its startSession answer gave)`)
    return session
  }

  private endSession(content: unknown): void {
    if (!isObject(content)) throw new Refused('bad_fields', 'endSession takes {"consumer_id", "producer_id", "session_id", "reason"}')
    void this.sessionOf(content).viewer.close('deleted')
  }

  private mediaNegotiation(content: Record<string, unknown>): void {
    const session = this.sessionOf(content)
    const sdp = content.sdp
    if (!isObject(sdp) || sdp.type !== 'answer' || typeof sdp.sdp !== 'string' || !sdp.sdp.startsWith('v=0')) {
      throw new Refused('bad_fields', "mediaNegotiation from the browser carries its answer: \"sdp\": {\"type\": \"answer\", \"sdp\": \"v=0...\"} (RTCPeerConnection's localDescription after createAnswer())")
    }
    const answer = sdp.sdp
    this.step(session, () => session.viewer.accept(answer))
  }

  private iceNegotiation(content: Record<string, unknown>): void {
    const session = this.sessionOf(content)
    const ice = content.ice
    if (!isObject(ice) || (ice.candidate !== undefined && ice.candidate !== null && typeof ice.candidate !== 'string')) {
      throw new Refused('bad_fields', 'iceNegotiation carries "ice": {"candidate": "candidate:...", "sdpMid": "0", "sdpMLineIndex": 0} (RTCIceCandidate.toJSON())')
    }
    // An empty candidate says the browser has no more: nothing to do.
    if (!ice.candidate) return
    if (++session.candidates > MAX_CANDIDATES_PER_SESSION) {
      this.ctx.limitHit('cockpit_candidates')
      throw new Refused('bad_fields', `More than ${MAX_CANDIDATES_PER_SESSION} ICE candidates for one session: the rest are dropped`)
    }
    const candidate = { candidate: ice.candidate as string, sdpMid: typeof ice.sdpMid === 'string' ? ice.sdpMid : null, sdpMLineIndex: typeof ice.sdpMLineIndex === 'number' ? ice.sdpMLineIndex : null }
    this.step(session, () => session.viewer.addCandidate(candidate))
  }

  /** Runs a negotiation step after the session's earlier ones; a step that fails is said, and a failed answer ends the session. */
  private step(session: CockpitSession, run: () => Promise<void>): void {
    session.queue = session.queue.then(run).catch((err) => {
      if (err instanceof OfferError) this.fail('unanswerable', err.message)
      else this.fail('unanswerable', `The negotiation failed: ${(err as Error).message}`)
      if (!(err instanceof OfferError) || /answer/.test(err.message)) void session.viewer.close('failed', (err as Error).message)
    })
  }
}
