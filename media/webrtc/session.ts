// One WebRTC viewer, shared by WHEP (plugins/whep: the browser offers, we answer) and Cockpit's
// signalling (plugins/cockpit: we offer, the browser answers and trickles its candidates): a werift
// RTCPeerConnection that sends the camera's H.264 RTP as it leaves the pipeline, never re-encoded, and
// the stream's Opus sound when it has one, the same way in both directions: a reader of the stream's
// hub (media/hub.ts),
// with its own bounded queue. Once connected, the session first sends the hub's last group of pictures
// (from its latest key frame), so the browser decodes at once instead of waiting for the next key
// frame; without one, it joins at the next key frame. It keeps its own sequence numbers and timestamps
// continuous when the camera's child restarts (new SSRC, new numbering) or the stream restarts (the
// hub says 'replaced': the session reads the next one), ends when the stream stops (the hub says
// 'closed'), and remembers when the browser was last heard (RTCP), so the plugin can reap a tab that
// vanished without DELETE.
import { networkInterfaces } from 'node:os'
import { MediaStream, MediaStreamTrack, RTCPeerConnection, RTCRtpCodecParameters, type RTCRtpSender, type RTCRtpTransceiver } from 'werift'
import type { ReaderEnd, Reading, StreamHub } from '../../core/types'
import { compressedGroup, rtpHeader, startsKeyFrame } from '../rtp'
import { gatherFor } from './sockets'
import { candidateAddress, peerCandidate, peerCandidatesOnly } from './candidates'
import { sentTimestamp, trueSenderClock } from './sender-clock'

/** The only codec offered: H.264 in packetization mode 1 (what Chromium, Firefox and Safari all offer). */
export const H264_CODEC = () =>
  new RTCRtpCodecParameters({
    mimeType: 'video/H264',
    clockRate: 90000,
    rtcpFeedback: [{ type: 'nack' }, { type: 'nack', parameter: 'pli' }],
    parameters: 'level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f',
  })

/**
 * The stream's sound (plugins/audio: Opus, one continuous timeline) goes to the offer's first audio
 * section while the stream carries one. Otherwise, and for any other audio section, it is answered
 * inactive inside its bundle: one answered with port 0 moves the bundle to the video, which Chromium
 * refuses for an audio-first max-bundle offer ("Failed to setup RTCP mux"). werift rejects a section it
 * has no codec for, so it is given the codec every browser offers.
 */
const OPUS_CODEC = () => new RTCRtpCodecParameters({ mimeType: 'audio/opus', clockRate: 48000, channels: 2 })

export class OfferError extends Error {}

/**
 * Why a session ended, for the log and the health counters: 'deleted' the viewer asked (WHEP's DELETE,
 * Cockpit's endSession), 'disconnected' its signalling socket closed (Cockpit).
 */
export type EndReason = 'deleted' | 'disconnected' | 'idle' | 'failed' | 'stream ended' | 'stopped'
export const END_REASONS: readonly EndReason[] = ['deleted', 'disconnected', 'idle', 'failed', 'stream ended', 'stopped']

/** A browser sends RTCP about every second: heard from this recently, it is still there. */
const STILL_HEARD_MS = 2_000

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
  /** Its id: for WHEP the secret its Location ends with (never logged). */
  id: string
  /** The hub reader's name (media/hub.ts): the plugin that serves it ('whep', 'cockpit'). */
  reader: string
  /** How logs name it: short, not secret. */
  label: string
  bus_info: string
  hub: StreamHub
  member: number
  listenHost: string
  /**
   * The address its signalling came from (the WHEP request's, the Cockpit socket's): only remote
   * candidates there are used (./candidates.ts); undefined: none are, ICE learns the browser's address
   * from its checks.
   */
  peer: string | undefined
  /** A remote candidate was dropped (./candidates.ts): its address, for the plugin's count. */
  onForeignCandidate?: (address: string) => void
  onEnd: (session: WebRtcViewer, reason: EndReason, detail?: string) => void
  /** A socket error that did not end the session (its browser is still heard from). */
  onSocketError?: (session: WebRtcViewer, detail: string) => void
}

export class WebRtcViewer {
  readonly id: string
  private readonly reader: string
  readonly label: string
  readonly bus_info: string
  /** The hub it reads: a restart of the camera's stream makes a new one, which the session follows. */
  hub: StreamHub
  readonly createdAt = Date.now()
  /** When the browser was last heard from: RTCP, or the session's creation. */
  lastHeardAt = Date.now()
  connectedAt: number | null = null
  private readonly pc: RTCPeerConnection
  private readonly track = new MediaStreamTrack({ kind: 'video' })
  private sender: RTCRtpSender | null = null
  private reading: Reading | null = null
  /** The sound's sender when the answer carries the stream's sound, and its reading of the hub. */
  private soundSender: RTCRtpSender | null = null
  private soundReading: Reading | null = null
  /** The one media stream of its tracks (sendVideo, sendSound). */
  private readonly stream: MediaStream
  /** Stops listening to the hub's 'replaced'/'closed' (watch). */
  private unwatch: () => void = () => {}
  private ended = false
  /** Forwarding waits for a key frame: on joining without a kept group of pictures, and after the camera's child restarted. */
  private needKeyFrame = true
  private lastSsrc: number | null = null
  private member: number
  private readonly onEnd: SessionOptions['onEnd']
  private readonly onSocketError: SessionOptions['onSocketError']
  /** The first error on one of its sockets, if any (said once). */
  private socketError: string | null = null
  private readonly frameTicks: number
  /** The newest live frame sent: its RTP timestamp as the viewer gets it (werift's rewrite) and when it was made (the hub's capture clock). */
  private sentFrame: { rtp: number; capturedAt: number } | null = null
  private readonly peer: string | undefined
  private readonly foreign: (address: string) => void

  constructor(options: SessionOptions) {
    this.peer = options.peer
    this.foreign = options.onForeignCandidate ?? (() => {})
    this.id = options.id
    this.reader = options.reader
    this.label = options.label
    this.stream = new MediaStream({ id: `periscope-${options.label}` })
    this.bus_info = options.bus_info
    this.hub = options.hub
    this.member = options.member
    this.onEnd = options.onEnd
    this.onSocketError = options.onSocketError
    this.frameTicks = Math.max(1, Math.round(90000 / (options.hub.fps || 30)))
    this.watch(options.hub)
    const { addresses, bind } = hostCandidates(options.listenHost)
    const loopbackOnly = addresses.every(isLoopback)
    this.pc = new RTCPeerConnection({
      codecs: { video: [H264_CODEC()], audio: [OPUS_CODEC()] },
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
        this.subscribe()
      }
      if (state === 'failed' || state === 'closed') void this.close(state === 'failed' ? 'failed' : 'stopped')
    })
  }

  /** Answers the browser's offer (all host candidates included: no trickle). Throws OfferError for an unusable offer. */
  async answer(offer: string): Promise<string> {
    // The sockets werift opens for this session report their errors to it (./sockets.ts).
    return gatherFor((err) => this.socketFailed(err), () => this.answerOffer(offer))
  }

  /**
   * An error on one of this viewer's sockets (an ICMP port-unreachable: a port of the browser, or of
   * anyone who sent us a datagram, is closed) concerns this viewer only, and is said once. It ends the
   * viewer when its browser has gone quiet too; a browser still heard from keeps watching (a stranger's
   * datagram must not end a pilot's view), and the idle reaper ends it if it goes quiet later.
   */
  private socketFailed(err: Error): void {
    if (this.ended || this.socketError) return
    this.socketError = `socket error: ${(err as NodeJS.ErrnoException).code ?? err.message}`
    if (Date.now() - this.lastHeardAt > STILL_HEARD_MS) void this.close('failed', this.socketError)
    else this.onSocketError?.(this, this.socketError)
  }

  private async answerOffer(offer: string): Promise<string> {
    try {
      await this.pc.setRemoteDescription({ type: 'offer', sdp: peerCandidatesOnly(offer, this.peer, this.foreign) })
    } catch (err) {
      throw new OfferError(`The SDP offer could not be read: ${(err as Error).message}`)
    }
    const transceivers = this.pc.getTransceivers()
    // A sound-only stream (a hub with no video member: plugins/audio/sound-only.ts) is heard, not watched.
    const soundOnly = this.hub.members === 0
    const videos = transceivers.filter((t) => t.kind === 'video')
    if (!soundOnly && !videos.length) throw new OfferError('The SDP offer has no video media section: add a recvonly video transceiver')
    // The first video section that takes H.264 is watched, the first audio section that takes Opus hears
    // the stream's sound (when it has one); every other section is answered inactive.
    const transceiver = soundOnly ? undefined : videos.find((t) => t.codecs.length)
    if (!soundOnly && !transceiver) throw new OfferError('The SDP offer has no H.264 with packetization-mode=1: the camera sends H.264 only')
    const sound = this.carriesSound() ? transceivers.find((t) => t.kind === 'audio' && t.codecs.length) : undefined
    if (soundOnly && !sound) throw new OfferError('The SDP offer has no audio section that takes Opus: this stream is sound only (add a recvonly audio transceiver)')
    for (const other of transceivers) if (other !== transceiver && other !== sound) other.setDirection('inactive')
    if (transceiver) await this.sendVideo(transceiver)
    if (sound) await this.sendSound(sound)
    this.listenForRtcp()
    await this.pc.setLocalDescription(await this.pc.createAnswer())
    await this.gathered()
    const sdp = this.pc.localDescription?.sdp
    if (!sdp) throw new Error('werift produced no answer')
    return sdp
  }

  /**
   * The other way round (Cockpit's signalling): our offer, for the browser to answer (accept()): a
   * sendonly H.264 video section first (Cockpit's recvonly video transceiver takes the first video
   * section), and a sendonly Opus audio section after it while the stream carries sound, both in one
   * media stream as in answer(). Every host candidate is in it (no trickle from our side).
   */
  async offer(): Promise<string> {
    return gatherFor((err) => this.socketFailed(err), async () => {
      await this.sendVideo(this.pc.addTransceiver('video', { direction: 'sendonly' }))
      if (this.carriesSound()) await this.sendSound(this.pc.addTransceiver('audio', { direction: 'sendonly' }))
      this.listenForRtcp()
      await this.pc.setLocalDescription(await this.pc.createOffer())
      await this.gathered()
      const sdp = this.pc.localDescription?.sdp
      if (!sdp) throw new Error('werift produced no offer')
      return sdp
    })
  }

  // The media of a viewer, whichever side offered: the camera's H.264 on one transceiver, the stream's
  // sound on another, both in one media stream (the browser plays them in step: lip sync by RTCP sender
  // reports; Cockpit's widget takes the track event's first stream as its whole picture and sound).

  /** Whether this viewer gets the stream's sound: the hub carries one and this is its first member (a group's sound is its leader's). */
  private carriesSound(): boolean {
    return this.hub.hasSound && this.member === 0
  }

  private async sendVideo(transceiver: RTCRtpTransceiver): Promise<void> {
    transceiver.setDirection('sendonly')
    this.sender = transceiver.sender
    trueSenderClock(this.sender)
    this.sender.setStreams([this.stream])
    await this.sender.replaceTrack(this.track)
  }

  private async sendSound(transceiver: RTCRtpTransceiver): Promise<void> {
    transceiver.setDirection('sendonly')
    this.soundSender = transceiver.sender
    trueSenderClock(this.soundSender)
    this.soundSender.setStreams([this.stream])
    await this.soundSender.replaceTrack(new MediaStreamTrack({ kind: 'audio' }))
  }

  /** The browser's RTCP (on the video's sender, or the sound's for a sound-only stream) says it is still there. */
  private listenForRtcp(): void {
    ;(this.sender ?? this.soundSender)!.onRtcp.subscribe(() => {
      this.lastHeardAt = Date.now()
    })
  }

  /** The browser's answer to offer(). Throws OfferError for one that cannot be used. */
  async accept(answer: string): Promise<void> {
    if (this.pc.signalingState !== 'have-local-offer') throw new OfferError('An answer came for a session that is not waiting for one (it was answered already)')
    try {
      await this.pc.setRemoteDescription({ type: 'answer', sdp: peerCandidatesOnly(answer, this.peer, this.foreign) })
    } catch (err) {
      throw new OfferError(`The SDP answer could not be read: ${(err as Error).message}`)
    }
  }

  /**
   * A candidate the browser trickles (Cockpit sends them one by one): one its signalling peer cannot
   * honestly be is dropped (./candidates.ts). Throws OfferError for one that cannot be read.
   */
  async addCandidate(candidate: { candidate: string; sdpMid?: string | null; sdpMLineIndex?: number | null }): Promise<void> {
    if (!peerCandidate(candidate.candidate, this.peer)) return this.foreign(candidateAddress(candidate.candidate) ?? '?')
    try {
      await this.pc.addIceCandidate({ candidate: candidate.candidate, sdpMid: candidate.sdpMid ?? null, sdpMLineIndex: candidate.sdpMLineIndex ?? null })
    } catch (err) {
      throw new OfferError(`The ICE candidate could not be used: ${(err as Error).message}`)
    }
  }

  /** Waits (5 s at most) until werift has every host candidate, so the description holds them all. */
  private async gathered(): Promise<void> {
    if (this.pc.iceGatheringState === 'complete') return
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

  /**
   * Once connected: the hub's last group of pictures first, then every packet as it comes (through this
   * reader's queue). The reader joins in the same turn of the event loop as the group is taken, so no
   * packet falls between them or comes twice.
   */
  private subscribe(): void {
    if (this.ended || this.reading || this.soundReading || this.connectedAt === null) return
    if (this.sender) {
      const gop = this.hub.lastGop(this.member)
      this.reading = this.hub.read(this.member, {
        name: this.reader,
        packet: (packet) => this.forward(packet),
        ended: (end) => this.streamEnded(end),
      })
      // Sent at once, one tick a frame (rtp.ts compressedGroup): the viewer's first picture is whole, and the latest.
      for (const packet of compressedGroup(gop)) this.forward(packet, false)
    }
    if (this.soundSender && !this.soundReading) {
      const sender = this.soundSender
      this.soundReading = this.hub.readSound({
        name: this.reader,
        // The sound's timeline is continuous already (media/sound.ts): werift only puts its SSRC and payload type.
        packet: (packet) => {
          if (!this.ended) sender.sendRtp(Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength)).catch(() => {})
        },
        ended: () => {
          this.soundReading = null
        },
      })
    }
  }

  /** The reader ended from the hub's side: a failure ends the session; a restart or a stop comes as the hub's event (watch). */
  private streamEnded(end: ReaderEnd): void {
    this.reading = null
    if (end.reason === 'failed') void this.close('failed')
  }

  /** From creation on (connected or not): a restarted stream is followed, a stopped one ends the session. */
  private watch(hub: StreamHub): void {
    this.unwatch()
    const stops = [
      hub.on('replaced', (next) => {
        const member = next.memberOf(this.bus_info)
        if (next.encoding === 'H264' && member >= 0) this.follow(next, member)
        else void this.close('stream ended')
      }),
      hub.on('closed', () => void this.close('stream ended')),
    ]
    this.unwatch = () => stops.forEach((stop) => stop())
  }

  /** The camera's stream was restarted (a new job, a new hub): carry on from the new hub's latest key frame. */
  follow(hub: StreamHub, member: number): void {
    if (this.ended) return
    this.reading?.close()
    this.reading = null
    this.soundReading?.close()
    this.soundReading = null
    this.hub = hub
    this.watch(hub)
    this.member = member
    this.needKeyFrame = true
    this.subscribe()
  }

  /**
   * The viewer's timing: a frame stamped `rtp` + n ticks (as the viewer gets it) was made at `capturedAt`
   * + n / 90 ms, on this machine's real-time clock. Null before the first live frame.
   */
  timing(): { rtp: number; capturedAt: number } | null {
    return this.sentFrame
  }

  /** What the viewer says of its picture (its delay in ms, the share of packets it lost): counted in its stream's health. */
  viewerSaid(delayMs: number | null, loss: number | null): void {
    if (!this.ended && !this.hub.closed && this.hub.members > this.member) this.hub.viewerFigures(this.member, delayMs, loss)
  }

  /** Sends one packet of the hub: `live`, as it came (not the kept group's, restamped one tick a frame). */
  private forward(packet: Uint8Array, live = true): void {
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
    // Straight to the sender (it parses the packet once and rewrites its own copy of the header), not
    // through the track, which would parse it and copy it once more per viewer on every packet.
    const failed = () => {} // a packet werift cannot parse or send: skip it, the next key frame repairs the picture
    try {
      this.sender.sendRtp(Buffer.from(packet.buffer, packet.byteOffset, packet.byteLength)).catch(failed)
    } catch {
      failed()
    }
    // werift has restamped it as it sent it (a connected sender sends at once): sender-clock.ts keeps
    // the field read here under a test.
    const capturedAt = live ? this.hub.capturedAt(this.member, header.timestamp) : null
    if (capturedAt !== null) this.sentFrame = { rtp: sentTimestamp(this.sender), capturedAt }
  }

  /** Ends the session once; `detail` says more than the reason (which socket error). */
  async close(reason: EndReason, detail?: string): Promise<void> {
    if (this.ended) return
    this.ended = true
    this.reading?.close()
    this.reading = null
    this.soundReading?.close()
    this.soundReading = null
    this.unwatch()
    this.onEnd(this, reason, detail)
    try {
      await this.pc.close()
    } catch {}
  }
}
