// The MAVLink link: one transport (udpout, udpin or tcpout, as mavlink-router names them) carrying
// MAVLink 2 frames that node-mavlink writes and reads. Nothing here ever waits on the peer: a send is
// fire-and-forget (dropped and counted while there is nowhere to send it or the peer does not keep up),
// a TCP link that drops or cannot connect tries again after 0.5, 1, 2 … 10 s, and a udpin port that
// cannot be bound is tried again the same way. The service and its API carry on whatever the link does.
//
// Every peer is on its own (frames.ts): each UDP datagram is read alone, a TCP connection has its own
// reader, and a udpin sender becomes a peer only once it sent a valid frame (checksum, and signature when
// --mavlink-signing-key is set). Each udpin peer gets a socket of its own, bound to the listening port and
// connected to the peer: our frames still come from the port the ground station sent to, and an ICMP
// "port unreachable" (a ground station closed or restarted on another port) is reported on that peer's
// socket alone, which drops the peer at once. On one shared unconnected socket that error surfaces on the
// next send to anyone, and that send is lost (the ground station restarted on a new port lost a third of
// its answers that way).
import { createSocket, type RemoteInfo, type Socket as UdpSocket } from 'node:dgram'
import { connect, isIP, type Socket as TcpSocket } from 'node:net'
import type { MavLinkData } from 'mavlink-mappings'
import { MavLinkProtocolV2, type MavLinkPacket } from 'node-mavlink'
import type { MavlinkEndpoint } from '../../core/config'
import type { Logger } from '../../core/log'
import { packet, readDatagram, type Refusal, Signing, StreamReader } from './frames'

const RETRY_FIRST_MS = 500
const RETRY_MAX_MS = 10_000
/** A TCP connect that hangs (a host that drops SYNs) is given up after this. */
const CONNECT_TIMEOUT_MS = 5000
/** A peer that stops reading: past this much unsent data, frames are dropped instead of queued. */
const MAX_QUEUED_BYTES = 256 * 1024
/** udpin: the default of --mavlink-peer-timeout (QGroundControl sends a heartbeat every second). */
export const PEER_TIMEOUT_MS = 10_000
/** udpin: ground stations sent to at once; a new one past this replaces the one heard from longest ago. */
export const MAX_PEERS = 8

export type LinkState = 'connecting' | 'connected' | 'reconnecting' | 'sending' | 'listening' | 'stopped'

export interface LinkStatus {
  endpoint: string
  /** udpout: sending (nothing tells whether anyone listens); udpin: listening, connected once a peer was heard; tcpout: connecting, connected, reconnecting. */
  state: LinkState
  /** Whom frames go to now. */
  peers: string[]
  frames_sent: number
  frames_received: number
  /** Frames not sent: no peer yet, TCP down, or the peer not reading. */
  frames_dropped: number
  /** Send and socket errors (an unreachable UDP peer, a refused TCP connect). */
  errors: number
  /** Frames (or datagrams) refused: a bad checksum, an unknown message, cut short, and with a signing key unsigned, wrongly signed or replayed. */
  frames_rejected: number
  /** Whether frames must be signed (--mavlink-signing-key) and ours are. */
  signing: boolean
  /** TCP connects (or udpin binds) tried again after a failure or a drop. */
  retries: number
  last_error: string | null
  /** Milliseconds since a valid MAVLink frame last arrived (null: never). */
  last_received_ms_ago: number | null
}

export const endpointText = (e: MavlinkEndpoint) => `${e.kind}:${isIP(e.host) === 6 ? `[${e.host}]` : e.host}:${e.port}`
const hostPort = (host: string, port: number) => (isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`)

interface Peer {
  host: string
  port: number
  /** When a valid frame last came from it. */
  at: number
  /** Bound to the listening port and connected to the peer (null until ready, or if that failed: the listening socket sends). */
  socket: UdpSocket | null
}

export class MavlinkLink {
  private udp: UdpSocket | null = null
  private tcp: TcpSocket | null = null
  private retryTimer: ReturnType<typeof setTimeout> | null = null
  private failures = 0
  private connectedAt = 0
  private stopped = true
  private state: LinkState = 'stopped'
  /** udpin: the ground stations heard from, by "host:port", with when. */
  private peers = new Map<string, Peer>()
  private seq = new Map<number, number>()
  private protocols = new Map<number, MavLinkProtocolV2>()
  private counts = { sent: 0, received: 0, dropped: 0, errors: 0, retries: 0, rejected: 0 }
  private lastError: string | null = null
  private lastReceivedAt = 0
  private readonly signing: Signing | null
  /** udpin: a ground station unheard for this long is no longer sent to (--mavlink-peer-timeout). */
  private readonly peerTimeoutMs: number

  constructor(
    readonly endpoint: MavlinkEndpoint,
    private readonly log: Logger,
    private readonly onPacket: (packet: MavLinkPacket) => void,
    options: { signingKey?: Uint8Array | null; onRefused?: (why: Refusal) => void; peerTimeoutMs?: number } = {},
  ) {
    this.peerTimeoutMs = options.peerTimeoutMs ?? PEER_TIMEOUT_MS
    this.signing = options.signingKey
      ? new Signing(options.signingKey, 0, (ahead) =>
          this.log.warn('a signed MAVLink frame is stamped ahead of this clock: new ground stations are locked out until then', {
            from: { system: ahead.system, component: ahead.component, link: ahead.link },
            ahead_s: Math.round(ahead.aheadMs / 1000),
            until: ahead.until,
            detail:
              `A frame signed with the key came from system ${ahead.system} component ${ahead.component} (link ${ahead.link}) stamped ${Math.round(ahead.aheadMs / 1000)} s ahead of this computer's clock. ` +
              `MAVLink signing refuses a new sender whose timestamps are more than a minute behind the newest seen, so until ${ahead.until} any other ground station with the right time is refused as a replay (mavlink_frame_replayed). ` +
              "Set that sender's clock right (NTP, or the autopilot's GPS time) and check this computer's clock, then restart Periscope: it forgets the future timestamp.",
          }),
        )
      : null
    this.onRefused = options.onRefused ?? (() => {})
  }

  private readonly onRefused: (why: Refusal) => void

  start(): void {
    this.stopped = false
    this.open()
  }

  stop(): void {
    this.stopped = true
    this.state = 'stopped'
    if (this.retryTimer) clearTimeout(this.retryTimer)
    this.retryTimer = null
    this.closeSockets()
  }

  /** Sends one message as MAVLink 2 from `sysid`/`compid` (each component numbers its own frames). */
  send(message: MavLinkData, sysid: number, compid: number): void {
    const key = (sysid << 8) | compid
    let protocol = this.protocols.get(key)
    // Signed frames carry the signed flag in the header, under the checksum.
    if (!protocol) this.protocols.set(key, (protocol = new MavLinkProtocolV2(sysid, compid, this.signing ? 1 : 0)))
    const seq = this.seq.get(key) ?? 0
    this.seq.set(key, (seq + 1) & 0xff)
    const frame = protocol.serialize(message, seq)
    this.write(this.signing ? this.signing.sign(frame) : frame)
  }

  /** The peer's host, to find the local address that faces it (null: none yet). */
  peerHost(): string | null {
    if (this.endpoint.kind !== 'udpin') return this.endpoint.host
    return this.livePeers()[0]?.host ?? null
  }

  /** tcpout: the address of our end of the connection (null when not connected). */
  tcpLocalAddress(): string | null {
    return this.state === 'connected' ? (this.tcp?.localAddress ?? null) : null
  }

  status(): LinkStatus {
    const peers = this.endpoint.kind === 'udpin' ? this.livePeers().map((p) => hostPort(p.host, p.port)) : this.state === 'connected' || this.state === 'sending' ? [hostPort(this.endpoint.host, this.endpoint.port)] : []
    return {
      endpoint: endpointText(this.endpoint),
      state: this.state,
      peers,
      frames_sent: this.counts.sent,
      frames_received: this.counts.received,
      frames_dropped: this.counts.dropped,
      errors: this.counts.errors,
      frames_rejected: this.counts.rejected,
      signing: this.signing !== null,
      retries: this.counts.retries,
      last_error: this.lastError,
      last_received_ms_ago: this.lastReceivedAt ? Date.now() - this.lastReceivedAt : null,
    }
  }

  // ---- transports ----

  private open(): void {
    if (this.stopped) return
    if (this.endpoint.kind === 'tcpout') this.openTcp()
    else this.openUdp()
  }

  private received(frame: Buffer): void {
    this.counts.received++
    this.lastReceivedAt = Date.now()
    let parsed: MavLinkPacket
    try {
      parsed = packet(frame)
      this.onPacket(parsed)
    } catch (e) {
      this.log.warn('MAVLink frame not handled', { msgid: frame[0] === 0xfd ? frame.readUIntLE(7, 3) : frame[5], err: e })
    }
  }

  private refused = (why: Refusal): void => {
    this.counts.rejected++
    this.onRefused(why)
  }

  /** The frame may be used: with a signing key, signed with it and not replayed. */
  private accepted(frame: Buffer): boolean {
    const verdict = this.signing ? this.signing.verify(frame) : 'ok'
    if (verdict !== 'ok') this.refused(verdict)
    return verdict === 'ok'
  }

  /** One datagram, read on its own; its sender (udpin) is a peer once it carried a valid frame. */
  private datagram(chunk: Buffer, from: RemoteInfo): void {
    const frames: Buffer[] = []
    readDatagram(chunk, (frame) => this.accepted(frame) && frames.push(frame), this.refused)
    if (frames.length === 0) return
    if (this.endpoint.kind === 'udpin') this.notePeer(from.address, from.port)
    for (const frame of frames) this.received(frame)
  }

  private openUdp(): void {
    const { kind, host, port } = this.endpoint
    // udpin: reuseAddr, so that each peer's own socket can bind this port too.
    const socket = createSocket({ type: isIP(host) === 6 ? 'udp6' : 'udp4', reuseAddr: kind === 'udpin' })
    this.udp = socket
    socket.on('message', (chunk, from) => this.datagram(chunk, from))
    socket.on('error', (err) => this.failed(err))
    if (kind === 'udpout') {
      // Unconnected, so an ICMP "port unreachable" (nobody listening yet) is not an error; the peer's
      // answers come back to this socket's port.
      socket.bind(0)
      this.state = 'sending'
      return
    }
    this.state = 'listening'
    socket.bind(port, host, () => {
      this.failures = 0
      this.log.info('MAVLink listening', { endpoint: endpointText(this.endpoint) })
    })
  }

  private openTcp(): void {
    const { host, port } = this.endpoint
    this.state = this.failures || this.counts.retries ? 'reconnecting' : 'connecting'
    const socket = connect({ host, port })
    this.tcp = socket
    socket.setNoDelay(true)
    socket.setTimeout(CONNECT_TIMEOUT_MS)
    socket.on('timeout', () => socket.destroy(new Error(`no answer from ${hostPort(host, port)} within ${CONNECT_TIMEOUT_MS / 1000} s`)))
    socket.once('connect', () => {
      socket.setTimeout(0)
      socket.setKeepAlive(true, 5000)
      this.state = 'connected'
      this.connectedAt = Date.now()
      this.log.info('MAVLink connected', { endpoint: endpointText(this.endpoint) })
    })
    // This connection's own reader: nothing read on an earlier connection is carried over.
    const reader = new StreamReader((frame) => this.accepted(frame) && this.received(frame), this.refused)
    socket.on('data', (chunk: Buffer) => reader.write(chunk))
    socket.on('error', (err) => {
      this.counts.errors++
      this.lastError = err.message
    })
    socket.on('close', () => {
      if (this.tcp !== socket) return
      this.tcp = null
      if (this.stopped) return
      if (this.state === 'connected') this.log.warn('MAVLink connection closed; reconnecting', { endpoint: endpointText(this.endpoint), err: this.lastError })
      // A connection that held for a while starts the backoff afresh; one that drops at once does not.
      if (this.state === 'connected' && Date.now() - this.connectedAt > 5000) this.failures = 0
      this.state = 'reconnecting'
      this.retryLater()
    })
  }

  /** A socket error: UDP send failures are counted; a udpin bind failure (port taken) is retried. */
  private failed(err: Error): void {
    this.counts.errors++
    this.lastError = err.message
    if (this.endpoint.kind !== 'udpin' || this.stopped) return
    const bound = (() => {
      try {
        return this.udp?.address() !== undefined
      } catch {
        return false
      }
    })()
    if (bound) return
    this.log.warn('MAVLink udpin could not listen; retrying', { endpoint: endpointText(this.endpoint), err })
    this.closeSockets()
    this.state = 'reconnecting'
    this.retryLater()
  }

  private retryLater(): void {
    if (this.stopped || this.retryTimer) return
    const delay = Math.min(RETRY_MAX_MS, RETRY_FIRST_MS * 2 ** this.failures)
    this.failures++
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null
      this.counts.retries++
      this.open()
    }, delay)
    this.retryTimer.unref?.()
  }

  private closeSockets(): void {
    for (const key of [...this.peers.keys()]) this.dropPeer(key)
    const tcp = this.tcp
    this.tcp = null
    tcp?.destroy()
    const udp = this.udp
    this.udp = null
    try {
      udp?.close()
    } catch {
      // never bound
    }
  }

  private notePeer(host: string, port: number): void {
    const key = hostPort(host, port)
    const known = this.peers.get(key)
    this.state = 'connected'
    if (known) {
      known.at = Date.now()
      return
    }
    if (this.peers.size >= MAX_PEERS) this.dropPeer([...this.peers.entries()].sort((a, b) => a[1].at - b[1].at)[0]![0], 'too many ground stations')
    const peer: Peer = { host, port, at: Date.now(), socket: null }
    this.peers.set(key, peer)
    this.log.info('MAVLink peer heard', { peer: key })
    this.openPeerSocket(key, peer)
  }

  /** The peer's own socket: on the listening address and port, connected to the peer. */
  private openPeerSocket(key: string, peer: Peer): void {
    const listening = this.udp
    if (!listening) return
    let bound: { address: string; port: number }
    try {
      bound = listening.address()
    } catch {
      return
    }
    const socket = createSocket({ type: isIP(peer.host) === 6 ? 'udp6' : 'udp4', reuseAddr: true })
    socket.on('message', (chunk, from) => this.datagram(chunk, from))
    socket.on('error', (err) => {
      if (this.peers.get(key) !== peer) return this.closeQuietly(socket)
      if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED') return this.dropPeer(key, 'its port is closed (ICMP port unreachable)')
      this.counts.errors++
      this.lastError = err.message
      // It could not bind or connect: the listening socket goes on serving this peer.
      if (peer.socket !== socket) this.closeQuietly(socket)
    })
    socket.bind(bound.port, bound.address, () => {
      socket.connect(peer.port, peer.host, () => {
        if (this.peers.get(key) === peer) peer.socket = socket
        else this.closeQuietly(socket) // dropped meanwhile
      })
    })
  }

  private dropPeer(key: string, why?: string): void {
    const peer = this.peers.get(key)
    if (!peer) return
    this.peers.delete(key)
    if (why) this.log.info('MAVLink peer dropped', { peer: key, why })
    if (peer.socket) this.closeQuietly(peer.socket)
    peer.socket = null
    if (this.peers.size === 0 && this.endpoint.kind === 'udpin' && this.udp && this.state === 'connected') this.state = 'listening'
  }

  private closeQuietly(socket: UdpSocket): void {
    try {
      socket.close()
    } catch {
      // already closed
    }
  }

  private livePeers(): Peer[] {
    const now = Date.now()
    for (const [key, peer] of this.peers) if (now - peer.at > this.peerTimeoutMs) this.dropPeer(key, `nothing heard for ${this.peerTimeoutMs / 1000} s`)
    return [...this.peers.values()].sort((a, b) => b.at - a.at)
  }

  private write(frame: Buffer): void {
    const dropped = () => void this.counts.dropped++
    const sent = (err?: Error | null) => {
      if (err) {
        this.counts.errors++
        this.lastError = err.message
      }
    }
    if (this.endpoint.kind === 'tcpout') {
      const socket = this.tcp
      if (!socket || this.state !== 'connected' || socket.writableLength > MAX_QUEUED_BYTES) return dropped()
      socket.write(frame)
      this.counts.sent++
      return
    }
    const socket = this.udp
    if (!socket) return dropped()
    const targets: { host: string; port: number; socket?: UdpSocket | null }[] = this.endpoint.kind === 'udpout' ? [{ host: this.endpoint.host, port: this.endpoint.port }] : this.livePeers()
    if (targets.length === 0) return dropped()
    for (const target of targets) {
      try {
        // A peer's own socket reports its port closed on the send itself, too.
        if (target.socket) target.socket.send(frame, (err) => (err && (err as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? this.dropPeer(hostPort(target.host, target.port), 'its port is closed (ICMP port unreachable)') : sent(err)))
        else socket.send(frame, target.port, target.host, sent)
        this.counts.sent++
      } catch (e) {
        sent(e as Error) // a socket closed under us
      }
    }
  }
}
