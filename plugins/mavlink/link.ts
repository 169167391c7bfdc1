// The MAVLink link: one transport (udpout, udpin or tcpout, as mavlink-router names them) carrying
// MAVLink 2 frames that node-mavlink writes and reads. Nothing here ever waits on the peer: a send is
// fire-and-forget (dropped and counted while there is nowhere to send it or the peer does not keep up),
// a TCP link that drops or cannot connect tries again after 0.5, 1, 2 … 10 s, and a udpin port that
// cannot be bound is tried again the same way. The service and its API carry on whatever the link does.
import { createSocket, type Socket as UdpSocket } from 'node:dgram'
import { connect, isIP, type Socket as TcpSocket } from 'node:net'
import type { MavLinkData } from 'mavlink-mappings'
import { MavLinkPacketParser, MavLinkPacketSplitter, MavLinkProtocolV2, type MavLinkPacket } from 'node-mavlink'
import type { MavlinkEndpoint } from '../../core/config'
import type { Logger } from '../../core/log'

const RETRY_FIRST_MS = 500
const RETRY_MAX_MS = 10_000
/** A TCP connect that hangs (a host that drops SYNs) is given up after this. */
const CONNECT_TIMEOUT_MS = 5000
/** A peer that stops reading: past this much unsent data, frames are dropped instead of queued. */
const MAX_QUEUED_BYTES = 256 * 1024
/** Bytes read with no MAVLink frame found in them: the peer is not speaking MAVLink; start afresh. */
const MAX_UNFRAMED_BYTES = 1 << 20
/** udpin: a ground station unheard for this long is no longer sent to. */
const PEER_TTL_MS = 30_000
const MAX_PEERS = 8

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
  /** TCP connects (or udpin binds) tried again after a failure or a drop. */
  retries: number
  last_error: string | null
  /** Milliseconds since a valid MAVLink frame last arrived (null: never). */
  last_received_ms_ago: number | null
}

/** node-mavlink's splitter and parser for one byte stream (a TCP connection, a UDP socket). */
class FrameReader {
  private splitter = new MavLinkPacketSplitter()
  private parser = new MavLinkPacketParser()
  private unframed = 0

  constructor(onPacket: (packet: MavLinkPacket) => void) {
    this.splitter.pipe(this.parser)
    this.parser.on('data', (packet: MavLinkPacket) => {
      this.unframed = 0
      onPacket(packet)
    })
    // Neither throws on bad bytes (they are skipped), but a stream without an error listener would crash the process.
    this.splitter.on('error', () => {})
    this.parser.on('error', () => {})
  }

  /** Whether the reader is still sane (false: it was fed too much that never framed, and should be replaced). */
  write(chunk: Buffer): boolean {
    this.splitter.write(chunk)
    this.unframed += chunk.length
    return this.unframed < MAX_UNFRAMED_BYTES
  }

  close(): void {
    this.splitter.unpipe(this.parser)
    this.splitter.destroy()
    this.parser.destroy()
  }
}

export const endpointText = (e: MavlinkEndpoint) => `${e.kind}:${isIP(e.host) === 6 ? `[${e.host}]` : e.host}:${e.port}`
const hostPort = (host: string, port: number) => (isIP(host) === 6 ? `[${host}]:${port}` : `${host}:${port}`)

export class MavlinkLink {
  private udp: UdpSocket | null = null
  private tcp: TcpSocket | null = null
  private reader: FrameReader | null = null
  private retryTimer: ReturnType<typeof setTimeout> | null = null
  private failures = 0
  private connectedAt = 0
  private stopped = true
  private state: LinkState = 'stopped'
  /** udpin: the ground stations heard from, by "host:port", with when. */
  private peers = new Map<string, { host: string; port: number; at: number }>()
  private seq = new Map<number, number>()
  private protocols = new Map<number, MavLinkProtocolV2>()
  private counts = { sent: 0, received: 0, dropped: 0, errors: 0, retries: 0 }
  private lastError: string | null = null
  private lastReceivedAt = 0

  constructor(
    readonly endpoint: MavlinkEndpoint,
    private readonly log: Logger,
    private readonly onPacket: (packet: MavLinkPacket) => void,
  ) {}

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
    this.peers.clear()
  }

  /** Sends one message as MAVLink 2 from `sysid`/`compid` (each component numbers its own frames). */
  send(message: MavLinkData, sysid: number, compid: number): void {
    const key = (sysid << 8) | compid
    let protocol = this.protocols.get(key)
    if (!protocol) this.protocols.set(key, (protocol = new MavLinkProtocolV2(sysid, compid)))
    const seq = this.seq.get(key) ?? 0
    this.seq.set(key, (seq + 1) & 0xff)
    this.write(protocol.serialize(message, seq))
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

  private received = (packet: MavLinkPacket): void => {
    this.counts.received++
    this.lastReceivedAt = Date.now()
    try {
      this.onPacket(packet)
    } catch (e) {
      this.log.warn('MAVLink frame not handled', { msgid: packet.header.msgid, err: e })
    }
  }

  private feed(chunk: Buffer): void {
    this.reader ??= new FrameReader(this.received)
    if (!this.reader.write(chunk)) {
      this.reader.close()
      this.reader = null
    }
  }

  private openUdp(): void {
    const { kind, host, port } = this.endpoint
    const socket = createSocket({ type: isIP(host) === 6 ? 'udp6' : 'udp4' })
    this.udp = socket
    socket.on('message', (chunk, from) => {
      // Only what starts like a MAVLink frame counts: stray datagrams neither become peers nor pile up.
      if (chunk[0] !== 0xfd && chunk[0] !== 0xfe) return
      if (kind === 'udpin') this.notePeer(from.address, from.port)
      this.feed(chunk)
    })
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
    socket.on('data', (chunk: Buffer) => this.feed(chunk))
    socket.on('error', (err) => {
      this.counts.errors++
      this.lastError = err.message
    })
    socket.on('close', () => {
      if (this.tcp !== socket) return
      this.tcp = null
      this.reader?.close()
      this.reader = null
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
    this.reader?.close()
    this.reader = null
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
    if (known) known.at = Date.now()
    else {
      if (this.peers.size >= MAX_PEERS) {
        const oldest = [...this.peers.entries()].sort((a, b) => a[1].at - b[1].at)[0]!
        this.peers.delete(oldest[0])
      }
      this.peers.set(key, { host, port, at: Date.now() })
      this.log.info('MAVLink peer heard', { peer: key })
    }
    this.state = 'connected'
  }

  private livePeers(): { host: string; port: number; at: number }[] {
    const now = Date.now()
    for (const [key, peer] of this.peers) if (now - peer.at > PEER_TTL_MS) this.peers.delete(key)
    if (this.endpoint.kind === 'udpin' && this.udp && this.peers.size === 0 && this.state === 'connected') this.state = 'listening'
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
    const targets = this.endpoint.kind === 'udpout' ? [{ host: this.endpoint.host, port: this.endpoint.port }] : this.livePeers()
    if (targets.length === 0) return dropped()
    for (const { host, port } of targets) {
      try {
        socket.send(frame, port, host, sent)
        this.counts.sent++
      } catch (e) {
        sent(e as Error) // a socket closed under us
      }
    }
  }
}
