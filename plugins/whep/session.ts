// One WHEP viewer: a werift RTCPeerConnection that answers the browser's offer and sends the camera's
// H.264 RTP as it leaves the pipeline (from the live tap), never re-encoded. The session joins at the
// next key frame, keeps its own sequence numbers and timestamps continuous when the camera's child
// restarts (new SSRC, new numbering), and remembers when the browser was last heard (RTCP), so the
// plugin can reap a tab that vanished without DELETE.
import { networkInterfaces } from 'node:os'
import { MediaStreamTrack, RTCPeerConnection, RTCRtpCodecParameters, type RTCRtpSender } from 'werift'
import type { LiveTap } from '../../core/types'
import { rtpHeader, startsKeyFrame } from './h264'

/** The only codec offered: H.264 in packetization mode 1 (what Chromium, Firefox and Safari all offer). */
export const H264_CODEC = () =>
  new RTCRtpCodecParameters({
    mimeType: 'video/H264',
    clockRate: 90000,
    rtcpFeedback: [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }],
    parameters: 'level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f',
  })

export class OfferError extends Error {}

/** At most this many packets wait for the handshake (a 1080p key frame is ~200; a second of 1080p30 ~600). */
const PREROLL_PACKETS = 1000

/** Why a session ended, for the log and the health counters. */
export type EndReason = 'deleted' | 'idle' | 'failed' | 'stream ended' | 'stopped'

const isLoopback = (address: string) => address.startsWith('127.') || address === '::1'

/**
 * The host candidates the service offers: the address it listens on, or, listening on every address
 * (0.0.0.0), every IPv4 address of the machine except loopback. No STUN/TURN: the pilot is on the LAN.
 */
export function hostCandidates(listenHost: string): { addresses: string[]; bind?: string } {
  if (listenHost !== '0.0.0.0' && listenHost !== '::' && listenHost !== '') return { addresses: [listenHost], bind: listenHost }
  const addresses = Object.values(networkInterfaces())
    .flat()
    .filter((a) => a && a.family === 'IPv4' && !a.internal)
    .map((a) => a!.address)
  return { addresses: addresses.length ? addresses : ['127.0.0.1'] }
}

export interface SessionOptions {
  id: string
  bus_info: string
  tap: LiveTap
  member: number
  listenHost: string
  onEnd: (session: WhepSession, reason: EndReason) => void
}

export class WhepSession {
  readonly id: string
  readonly bus_info: string
  /** The tap it reads: a restart of the camera's stream makes a new one, which the session follows. */
  tap: LiveTap
  /** When the camera's stream was last seen running (the plugin ends sessions whose stream is gone). */
  streamSeenAt = Date.now()
  readonly createdAt = Date.now()
  /** When the browser was last heard from: RTCP, or the session's creation. */
  lastHeardAt = Date.now()
  connectedAt: number | null = null
  private readonly pc: RTCPeerConnection
  private readonly track = new MediaStreamTrack({ kind: 'video' })
  private sender: RTCRtpSender | null = null
  private unsubscribe: (() => void) | null = null
  private ended = false
  /** Forwarding waits for a key frame: on joining, and after the camera's child restarted. */
  private needKeyFrame = true
  /** Packets of the current key frame and after, while the handshake runs. */
  private preroll: Uint8Array[] = []
  private lastSsrc: number | null = null
  private member: number
  private readonly onEnd: SessionOptions['onEnd']
  private readonly frameTicks: number

  constructor(options: SessionOptions) {
    this.id = options.id
    this.bus_info = options.bus_info
    this.tap = options.tap
    this.member = options.member
    this.onEnd = options.onEnd
    this.frameTicks = Math.max(1, Math.round(90000 / (options.tap.fps || 30)))
    const { addresses, bind } = hostCandidates(options.listenHost)
    const loopbackOnly = addresses.every(isLoopback)
    this.pc = new RTCPeerConnection({
      codecs: { video: [H264_CODEC()], audio: [] },
      // Only the addresses above (werift would add every interface's); sockets bound to the listen address.
      iceUseIpv4: false,
      iceUseIpv6: false,
      iceAdditionalHostAddresses: addresses,
      ...(bind ? { iceInterfaceAddresses: { udp4: bind } } : {}),
      // A service on loopback talks to loopback only (its sockets could not reach anything else).
      iceFilterCandidatePair: (pair) => !loopbackOnly || isLoopback(pair.remoteCandidate.host),
    })
    this.pc.connectionStateChange.subscribe((state) => {
      if (state === 'connected' && this.connectedAt === null) {
        this.connectedAt = Date.now()
        // What arrived during the handshake, from its key frame on, goes first: the picture starts at once.
        for (const packet of this.preroll.splice(0)) this.forward(packet)
      }
      if (state === 'failed' || state === 'closed') void this.close(state === 'failed' ? 'failed' : 'stopped')
    })
  }

  /** Answers the browser's offer (all host candidates included: no trickle). Throws OfferError for an unusable offer. */
  async answer(offer: string): Promise<string> {
    try {
      await this.pc.setRemoteDescription({ type: 'offer', sdp: offer })
    } catch (err) {
      throw new OfferError(`The SDP offer could not be read: ${(err as Error).message}`)
    }
    const transceiver = this.pc.getTransceivers().find((t) => t.kind === 'video')
    if (!transceiver) throw new OfferError('The SDP offer has no video media section: add a recvonly video transceiver')
    if (!transceiver.codecs.length) throw new OfferError('The SDP offer has no H.264 with packetization-mode=1: the camera sends H.264 only')
    transceiver.setDirection('sendonly')
    this.sender = transceiver.sender
    await this.sender.replaceTrack(this.track)
    this.sender.onRtcp.subscribe(() => {
      this.lastHeardAt = Date.now()
    })
    await this.pc.setLocalDescription(await this.pc.createAnswer())
    this.subscribe()
    if (this.pc.iceGatheringState !== 'complete') {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5_000)
        this.pc.iceGatheringStateChange.subscribe((state) => {
          if (state === 'complete') {
            clearTimeout(timer)
            resolve()
          }
        })
      })
    }
    const sdp = this.pc.localDescription?.sdp
    if (!sdp) throw new Error('werift produced no answer')
    return sdp
  }

  /**
   * Reads the tap from the answer on. Until the browser is connected, the packets from the latest key
   * frame on are kept (at most PREROLL_PACKETS), so the first picture needs no wait for the next one.
   */
  private subscribe(): void {
    if (this.ended || this.unsubscribe) return
    this.unsubscribe = this.tap.subscribe(this.member, (packet) => {
      if (this.connectedAt !== null) return this.forward(packet)
      if (startsKeyFrame(packet)) this.preroll = [packet]
      else if (this.preroll.length && this.preroll.length < PREROLL_PACKETS) this.preroll.push(packet)
    })
  }

  /** The camera's stream was restarted (a new job, a new tap): carry on from the new tap's first key frame. */
  follow(tap: LiveTap, member: number): void {
    if (this.ended) return
    this.unsubscribe?.()
    this.unsubscribe = null
    this.tap = tap
    this.member = member
    this.needKeyFrame = true
    this.preroll = []
    this.subscribe()
  }

  private forward(packet: Uint8Array): void {
    if (this.ended || !this.sender || packet.length < 12) return
    const header = rtpHeader(packet)
    if (this.lastSsrc !== null && header.ssrc !== this.lastSsrc) {
      // The camera's child restarted: new SSRC, sequence numbers and timestamps. Carry on our own
      // numbering one frame later, from its first key frame.
      this.needKeyFrame = true
    }
    this.lastSsrc = header.ssrc
    if (this.needKeyFrame) {
      if (!startsKeyFrame(packet)) return
      this.needKeyFrame = false
      this.sender.replaceRTP(header, true, this.frameTicks)
    }
    try {
      this.track.writeRtp(Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength))
    } catch {
      // a packet werift cannot parse: skip it, the next key frame repairs the picture
    }
  }

  async close(reason: EndReason): Promise<void> {
    if (this.ended) return
    this.ended = true
    this.unsubscribe?.()
    this.unsubscribe = null
    this.preroll = []
    this.onEnd(this, reason)
    try {
      await this.pc.close()
    } catch {}
  }
}
