// The live tap of a running stream: the child sends one more copy of each member's RTP to a loopback
// socket of the service (beside the configured endpoints), and the service hands every packet to
// whoever watches — RTSP, WebRTC, MJPEG, snapshots, a recording made while streaming. Viewers come and
// go on the service's side, so the camera's child is never touched: no frame lost at the UDP endpoints
// when a viewer joins or leaves. The tap lives as long as the job (its ports survive child restarts).
// For H.264 it also keeps each member's last group of pictures (GopCache), so a viewer or a snapshot
// that arrives between two key frames starts at once instead of waiting for the next one.
import { createSocket, type Socket } from 'node:dgram'
import type { LiveTap, StreamJob } from '../../core/types'
import { fps } from './pipeline'
import { startsKeyFrame } from './recorder'

/** Bigger than the kernel's default (208 KiB): a 1080p key frame arrives as a burst of ~200 packets. */
const RECEIVE_BUFFER = 4 << 20
/**
 * The most a kept group of pictures holds; a longer one (a camera with a long GOP, a high bitrate) is
 * dropped and nothing is kept until the next key frame. Software H.264 at 1080p30 with a key frame every
 * second is ~0.8 MB in ~600 packets; a viewer is sent the whole group at once when it joins.
 */
const GOP_MAX_BYTES = 3 << 20
const GOP_MAX_PACKETS = 2500

/**
 * One member's packets from its latest key frame on, with no gap: a lost packet, a new SSRC (the
 * camera's child restarted) or a group past the bounds empties it until the next key frame.
 */
export class GopCache {
  private packets: Uint8Array[] = []
  private bytes = 0

  push(packet: Uint8Array): void {
    if (startsKeyFrame(packet, 'H264')) {
      this.packets = [packet]
      this.bytes = packet.length
      return
    }
    const last = this.packets.at(-1)
    if (!last) return
    const follows = packet.length >= 12 && sequenceOf(packet) === ((sequenceOf(last) + 1) & 0xffff) && ssrcOf(packet) === ssrcOf(last)
    if (!follows || this.packets.length >= GOP_MAX_PACKETS || this.bytes + packet.length > GOP_MAX_BYTES) {
      this.packets = []
      this.bytes = 0
      return
    }
    this.packets.push(packet)
    this.bytes += packet.length
  }

  /** A copy of the list (the packets themselves are shared). */
  get gop(): Uint8Array[] {
    return this.packets.slice()
  }
}

const sequenceOf = (packet: Uint8Array) => (packet[2]! << 8) | packet[3]!
const ssrcOf = (packet: Uint8Array) => ((packet[8]! << 24) | (packet[9]! << 16) | (packet[10]! << 8) | packet[11]!) >>> 0

export class RtpTap implements LiveTap {
  readonly encoding: LiveTap['encoding']
  readonly width: number
  readonly height: number
  readonly fps: number
  private readonly sockets: Socket[] = []
  private readonly watchers: Set<(packet: Buffer) => void>[]
  /** Per member, what arrived since the tap opened (metrics). */
  private readonly counts: { bytes: number; frames: number }[]
  /** Per member, its last group of pictures (H.264 only). */
  private readonly gops: GopCache[]
  /** Per member, the loopback port the child sends to. */
  ports: number[] = []

  private constructor(job: StreamJob) {
    this.encoding = job.stream.encode_type === 'MJPG' ? 'JPEG' : 'H264'
    this.width = job.stream.width
    this.height = job.stream.height
    this.fps = fps(job)
    this.watchers = job.members.map(() => new Set())
    this.counts = job.members.map(() => ({ bytes: 0, frames: 0 }))
    this.gops = this.encoding === 'H264' ? job.members.map(() => new GopCache()) : []
  }

  get members(): number {
    return this.watchers.length
  }

  /** Binds one loopback socket per member of the job. */
  static async open(job: StreamJob): Promise<RtpTap> {
    const tap = new RtpTap(job)
    try {
      for (let i = 0; i < job.members.length; i++) {
        const socket = createSocket({ type: 'udp4', recvBufferSize: RECEIVE_BUFFER })
        tap.sockets.push(socket)
        const watchers = tap.watchers[i]!
        const counts = tap.counts[i]!
        const gop = tap.gops[i]
        socket.on('message', (packet) => {
          counts.bytes += packet.length
          // The RTP marker bit ends a frame: an H.264 access unit (RFC 6184), a JPEG (RFC 2435).
          if (packet.length > 1 && packet[1]! & 0x80) counts.frames++
          gop?.push(packet)
          for (const watch of watchers) watch(packet)
        })
        socket.on('error', () => {}) // a loopback socket of ours: nothing to recover
        await new Promise<void>((resolve, reject) => {
          socket.once('error', reject)
          socket.bind(0, '127.0.0.1', () => {
            socket.off('error', reject)
            resolve()
          })
        })
        tap.ports.push(socket.address().port)
      }
    } catch (err) {
      tap.close()
      throw err
    }
    return tap
  }

  subscribe(member: number, onPacket: (packet: Uint8Array) => void): () => void {
    const watchers = this.watchers[member]
    if (!watchers) throw new RangeError(`member ${member} of ${this.members}`)
    watchers.add(onPacket)
    return () => void watchers.delete(onPacket)
  }

  sent(member: number): { bytes: number; frames: number } {
    const counts = this.counts[member]
    if (!counts) throw new RangeError(`member ${member} of ${this.members}`)
    return { ...counts }
  }

  lastGop(member: number): readonly Uint8Array[] {
    return this.gops[member]?.gop ?? []
  }

  watching(): number {
    return this.watchers.reduce((n, w) => n + w.size, 0)
  }

  close(): void {
    for (const watchers of this.watchers) watchers.clear()
    for (const socket of this.sockets.splice(0)) {
      try {
        socket.close()
      } catch {}
    }
  }
}
