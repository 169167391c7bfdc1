// The live tap of a running stream: the child sends one more copy of each member's RTP to a loopback
// socket of the service (beside the configured endpoints), and the service hands every packet to
// whoever watches — RTSP, WebRTC, MJPEG, snapshots, a recording made while streaming. Viewers come and
// go on the service's side, so the camera's child is never touched: no frame lost at the UDP endpoints
// when a viewer joins or leaves. The tap lives as long as the job (its ports survive child restarts).
import { createSocket, type Socket } from 'node:dgram'
import type { LiveTap, StreamJob } from '../../core/types'
import { fps } from './pipeline'

/** Bigger than the kernel's default (208 KiB): a 1080p key frame arrives as a burst of ~200 packets. */
const RECEIVE_BUFFER = 4 << 20

export class RtpTap implements LiveTap {
  readonly encoding: LiveTap['encoding']
  readonly width: number
  readonly height: number
  readonly fps: number
  private readonly sockets: Socket[] = []
  private readonly watchers: Set<(packet: Buffer) => void>[]
  /** Per member, what arrived since the tap opened (metrics). */
  private readonly counts: { bytes: number; frames: number }[]
  /** Per member, the loopback port the child sends to. */
  ports: number[] = []

  private constructor(job: StreamJob) {
    this.encoding = job.stream.encode_type === 'MJPG' ? 'JPEG' : 'H264'
    this.width = job.stream.width
    this.height = job.stream.height
    this.fps = fps(job)
    this.watchers = job.members.map(() => new Set())
    this.counts = job.members.map(() => ({ bytes: 0, frames: 0 }))
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
        socket.on('message', (packet) => {
          counts.bytes += packet.length
          // The RTP marker bit ends a frame: an H.264 access unit (RFC 6184), a JPEG (RFC 2435).
          if (packet.length > 1 && packet[1]! & 0x80) counts.frames++
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
