// One reader's queue of a hub: packets wait here between the hub's socket and the reader's handler.
// It is bounded in packets and in bytes; a reader that falls behind (its handler is slow, or a promise
// it returned has not settled) loses what waits and skips to the next frame a decoder can start from
// (an H.264 key frame, a JPEG's first fragment), so it never holds the hub or the other readers, and the
// service's memory never grows with a reader that stopped reading.
import { startsKeyFrame, type MediaEncoding } from './rtp'

/**
 * The most packets a reader's queue holds: more than a 1080p key frame (~200 packets of ≤ 1400 bytes,
 * rtph264pay's MTU) several times over, so a healthy reader never drops.
 */
export const READER_QUEUE_PACKETS = 1024
/** The most bytes a reader's queue holds (1024 × 1500-byte packets fit): the bound per reader. */
export const READER_QUEUE_BYTES = 1536 * 1024

/**
 * What a loopback feed made before its child listens may hold (feeder.ts Feed.open; the children start
 * within their 10 s, and this is 10 s of a 50 Mbit/s camera). Past it, later packets are dropped: the
 * child is failing to start anyway.
 */
export const HOLD_BYTES = 64 << 20

export interface QueueLimits {
  packets: number
  bytes: number
}

export class ReaderQueue {
  private items: Uint8Array[] = []
  private head = 0
  private size = 0
  /** Until a key frame (H.264) or a frame's start (JPEG) comes, packets are skipped. */
  private waitingForKey: boolean
  /** Packets this reader lost: dropped from the queue when it overflowed, or skipped until a key frame after that. */
  dropped = 0
  /** How many times the queue overflowed. */
  overflows = 0

  constructor(
    private readonly encoding: MediaEncoding,
    options: { fromKeyFrame?: boolean; limits?: Partial<QueueLimits> } = {},
    private readonly limits: QueueLimits = { packets: options.limits?.packets ?? READER_QUEUE_PACKETS, bytes: options.limits?.bytes ?? READER_QUEUE_BYTES },
  ) {
    this.waitingForKey = options.fromKeyFrame ?? false
  }

  get length(): number {
    return this.items.length - this.head
  }

  get bytes(): number {
    return this.size
  }

  /** Queues a packet; false when it was dropped (the queue overflowed, or it waits for a key frame). */
  push(packet: Uint8Array): boolean {
    if (this.waitingForKey) {
      if (!startsKeyFrame(packet, this.encoding)) {
        if (this.overflows) this.dropped++ // a reader that starts at a key frame has lost nothing before it
        return false
      }
      this.waitingForKey = false
    }
    if (this.length >= this.limits.packets || this.size + packet.length > this.limits.bytes) {
      // Behind by a whole queue: what waits is stale; start again at the next frame a decoder can use.
      this.dropped += this.length
      this.overflows++
      this.clear()
      if (!startsKeyFrame(packet, this.encoding)) {
        this.waitingForKey = true
        this.dropped++
        return false
      }
    }
    this.items.push(packet)
    this.size += packet.length
    return true
  }

  shift(): Uint8Array | undefined {
    if (this.head >= this.items.length) return undefined
    const packet = this.items[this.head]!
    this.items[this.head++] = EMPTY
    this.size -= packet.length
    if (this.head === this.items.length) this.clear()
    else if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
    return packet
  }

  clear(): void {
    this.items = []
    this.head = 0
    this.size = 0
  }
}

const EMPTY = new Uint8Array(0)
