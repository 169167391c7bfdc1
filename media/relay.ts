// The relay: one worker thread (relay-worker.ts) that owns the sockets a stream's child sends to, and
// forwards each packet to the hub on the main thread and to the children fed over loopback, so the
// UDP-to-UDP paths (RTSP server, recorder, MJPEG transcoder) never wait behind HTTP work on the main
// event loop (bench/media-hub.bench.ts measured why: docs/media.md).
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import type { Logger } from '../core/log'
import type { MediaEncoding } from './rtp'
import type { RelayCommand } from './relay-worker'
import { alsoCollect } from './memory'

let shared: Relay | null = null

export class Relay {
  private readonly worker: Worker
  private readonly opening = new Map<number, (port: number) => void>()
  /** Targets retargeted and not yet switched: who to tell when the thread switches them. */
  private readonly switching = new Map<number, (timestamp: number) => void>()
  /** Targets whose first packet is not yet taken: who to tell its timestamp (feeder.ts FeedOptions.began). */
  private readonly beginning = new Map<number, (timestamp: number) => void>()
  private readonly settling = new Map<number, () => void>()
  private next = 1

  private constructor(private readonly log: Logger) {
    this.worker = new Worker(join(import.meta.dir, 'relay-worker.ts'))
    this.worker.unref() // never keeps the process alive
    // The thread's heap holds what the viewers' feeds left too: collected with the main thread's.
    alsoCollect(() => this.post({ op: 'collect' }))
    this.worker.on('message', (m: { id: number; port: number } | { switched: number; timestamp: number } | { began: number; timestamp: number } | { settled: number }) => {
      if ('began' in m) {
        const began = this.beginning.get(m.began)
        this.beginning.delete(m.began)
        return began?.(m.timestamp)
      }
      if ('settled' in m) {
        this.settling.get(m.settled)?.()
        return this.settling.delete(m.settled)
      }
      if ('switched' in m) {
        const switched = this.switching.get(m.switched)
        this.switching.delete(m.switched)
        return switched?.(m.timestamp)
      }
      this.opening.get(m.id)?.(m.port)
      this.opening.delete(m.id)
    })
    this.worker.on('error', (err) => {
      // The thread died: every stream's forwarding with it; the next hub starts a new relay.
      if (shared === this) shared = null
      for (const reject of this.opening.values()) reject(-1)
      this.opening.clear()
      for (const resolve of this.settling.values()) resolve()
      this.settling.clear()
      this.log.error('the media relay thread failed: streams fed through it stop until they restart', { error: String(err) })
    })
  }

  /** The process's relay, started on first use (its failure is logged to the first user's log). */
  static shared(log: Logger): Relay {
    shared ??= new Relay(log)
    return shared
  }

  private post(command: RelayCommand): void {
    this.worker.postMessage(command)
  }

  /** An input socket that forwards to the hub's `hubPort`; resolves with its id and its port. */
  open(encoding: MediaEncoding, hubPort: number): Promise<{ id: number; port: number }> {
    const id = this.next++
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.opening.delete(id)
        reject(new Error('the media relay did not open a socket within 5 s'))
      }, 5000)
      this.opening.set(id, (port) => {
        clearTimeout(timer)
        if (port < 0) reject(new Error('the media relay thread failed'))
        else resolve({ id, port })
      })
      this.post({ op: 'open', id, encoding, hubPort })
    })
  }

  /**
   * Resolves once the thread has carried out every command posted before (a feed is in place: packets
   * reach the socket and the commands the thread by different ways, so a packet can overtake a feed).
   */
  settled(): Promise<void> {
    const n = this.next++
    return new Promise((resolve) => {
      this.settling.set(n, resolve)
      this.post({ op: 'settle', n })
    })
  }

  close(id: number): void {
    this.post({ op: 'close', id })
  }

  /**
   * Sends input `id`'s packets to 127.0.0.1:`port` too: from `now`, from the next `key` frame, or from the
   * `kept` group of pictures (the thread's own, sent at once as rtp.ts compressedGroup; none kept: from the
   * next key frame). With `frameTicks`, one RTP timeline across camera child restarts (rtp.ts RtpContinuity).
   * With `port` null the thread holds the packets until release(). `began` is told the first packet's RTP
   * timestamp. Returns the target's id.
   */
  feed(id: number, port: number | null, from: 'now' | 'key' | 'kept', frameTicks?: number, began?: (timestamp: number) => void): number {
    const target = this.next++
    if (began) this.beginning.set(target, began)
    this.post({ op: 'feed', id, target, port: port ?? -1, from, frameTicks, began: began !== undefined })
    return target
  }

  /** A target fed with no port: what it held goes to 127.0.0.1:`port` at once, then every packet. */
  release(id: number, target: number, port: number): void {
    this.post({ op: 'release', id, target, port })
  }

  unfeed(id: number, target: number): void {
    this.switching.delete(target)
    this.beginning.delete(target)
    this.post({ op: 'unfeed', id, target })
  }

  /** Input `id`'s target `target` sends to `port` from the next key frame on; then `switched` is called with that key frame's RTP timestamp. */
  retarget(id: number, target: number, port: number, switched?: (timestamp: number) => void): void {
    if (switched) this.switching.set(target, switched)
    else this.switching.delete(target)
    this.post({ op: 'retarget', id, target, port })
  }
}
