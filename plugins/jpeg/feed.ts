// One producer of JPEG frames per camera, shared by every MJPEG viewer and snapshot of it: a reader of
// the stream's hub (media/hub.ts). An MJPG camera's frames are its own JPEGs, depayloaded in the service
// (no child, never re-encoded); an H.264 camera's are decoded and encoded by one transcoder child fed
// from the hub through a loopback feeder (media/feeder.ts). The producer starts with the first viewer
// and stops with the last; the camera's pipeline is never touched, so viewers coming and going cost
// its endpoints nothing. The stream's stop or restart reaches the feed as the hub's event and ends it
// (its viewers reconnect to the new stream).
import type { Logger } from '../../core/log'
import type { Reading, StreamHub } from '../../core/types'
import { freeLoopbackPorts, LoopbackFeeder } from '../../media/feeder'
import { transcoderTokens, type GstChild, type GstRunner } from './gst'
import { RtpJpegDepayloader } from './rtp-jpeg'
import { timestampOf } from '../../media/rtp'

export interface Viewer {
  /**
   * A whole JPEG; called for every frame while the viewer is joined. `capturedAt`: when the frame was made
   * (ms since the epoch, the hub's capture clock), for an MJPG camera's own frames; null for a transcoded one.
   */
  frame(jpeg: Uint8Array, capturedAt: number | null): void
  /** The feed ended (the stream stopped or restarted, the transcoder died): no frame follows. */
  end(reason: string): void
}

export interface FeedOptions {
  runner: GstRunner
  log: Logger
  /** JPEG quality of transcoded frames (H.264 cameras). */
  quality: number
  /** Most frames per second a transcoder makes. */
  maxFps: number
  /** The transcoder below the cameras' priority (a snapshot's warm decoder: no camera waits for it). */
  lowPriority?: boolean
  /** Called once when the feed has ended, to forget it. */
  ended(): void
}

export class JpegFeed {
  private viewers = new Set<Viewer>()
  /** The newest frame and when it was whole (ms, performance.now()). */
  latest: { jpeg: Uint8Array; at: number } | null = null
  private stopSource: (() => Promise<void> | void) | null = null
  private unwatch: () => void
  private finished = false

  constructor(
    readonly bus_info: string,
    readonly hub: StreamHub,
    private readonly member: number,
    private readonly options: FeedOptions,
  ) {
    // The hub ends with its job: a stopped or restarted stream ends the feed (its viewers reconnect).
    const stops = [
      hub.on('closed', () => void this.end(`the stream of '${bus_info}' stopped`)),
      hub.on('replaced', () => void this.end(`the stream of '${bus_info}' restarted`)),
    ]
    this.unwatch = () => stops.forEach((stop) => stop())
    if (hub.closed) queueMicrotask(() => void this.end(`the stream of '${bus_info}' stopped`))
  }

  /** Ended (the stream stopped or restarted, no viewer left): no frame follows. */
  get closed(): boolean {
    return this.finished
  }

  get viewerCount(): number {
    return this.viewers.size
  }

  /** Whether the transcoder child runs (H.264 cameras; for tests and health). */
  get transcoding(): boolean {
    return this.child !== null
  }

  private child: GstChild | null = null

  join(viewer: Viewer): () => void {
    if (this.finished) {
      viewer.end(`the stream of '${this.bus_info}' stopped`)
      return () => {}
    }
    this.viewers.add(viewer)
    if (this.viewers.size === 1) this.start()
    return () => this.leave(viewer)
  }

  /** The next whole frame (a snapshot); rejects after `timeoutMs` or when the feed ends. */
  next(timeoutMs: number): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        leave()
        reject(new Error(`no frame from '${this.bus_info}' within ${Math.round(timeoutMs / 1000)} s`))
      }, timeoutMs)
      const leave = this.join({
        frame: (jpeg) => {
          clearTimeout(timer)
          leave()
          resolve(jpeg)
        },
        end: (reason) => {
          clearTimeout(timer)
          reject(new Error(reason))
        },
      })
    })
  }

  private leave(viewer: Viewer): void {
    if (!this.viewers.delete(viewer)) return
    // The last viewer gone: the producer stops (a transcoder child exits) and the feed is forgotten.
    if (this.viewers.size === 0) void this.end('no viewer left')
  }

  private publish(jpeg: Uint8Array, capturedAt: number | null = null): void {
    this.latest = { jpeg, at: performance.now() }
    for (const viewer of [...this.viewers]) viewer.frame(jpeg, capturedAt)
  }

  private start(): void {
    if (this.hub.encoding === 'JPEG') {
      const depayloader = new RtpJpegDepayloader(this.hub)
      const reading = this.hub.read(this.member, {
        name: 'mjpeg',
        from: 'key',
        packet: (packet) => {
          const jpeg = depayloader.push(packet)
          if (jpeg) this.publish(jpeg, this.hub.capturedAt(this.member, timestampOf(packet)))
        },
        ended: (end) => end.reason === 'failed' && void this.end(`the MJPEG of '${this.bus_info}' failed: ${end.detail}`),
      })
      this.stopSource = () => reading.close()
      return
    }
    this.startTranscoder()
  }

  /** H.264: a child decodes the hub's RTP (fed to its loopback port) and encodes JPEG. */
  private startTranscoder(): void {
    let stopped = false
    let feeder: LoopbackFeeder | null = null
    let reading: Reading | null = null
    let child: GstChild | null = null
    this.stopSource = () => {
      stopped = true
      reading?.close()
      feeder?.close()
      this.child = null
      return child?.stop()
    }
    void (async () => {
      const [port] = await freeLoopbackPorts(1)
      if (stopped) return
      child = this.options.runner.spawn(transcoderTokens(port!, Math.min(this.hub.fps, this.options.maxFps), this.options.quality), 'ignore', this.options.lowPriority)
      this.child = child
      feeder = new LoopbackFeeder(this.options.log)
      reading = feeder.feed(this.hub, this.member, port!, {
        name: 'mjpeg',
        ended: (end) => end.reason === 'failed' && void this.end(`the JPEG transcoder of '${this.bus_info}' failed: ${end.detail}`),
      })
      const running = child
      await this.options.runner.frames(running, (jpeg) => {
        if (!stopped) this.publish(jpeg)
      })
      await running.proc.exited
      if (!stopped) {
        this.options.log.warn('MJPEG transcoder ended', { bus_info: this.bus_info, stderr: running.errors() })
        void this.end(`the JPEG transcoder of '${this.bus_info}' ended: ${running.errors() || 'no reason given'}`)
      }
    })().catch((err) => void this.end(`the JPEG transcoder of '${this.bus_info}' failed: ${(err as Error).message}`))
  }

  private stop(): Promise<void> | void {
    const stopping = this.stopSource?.()
    this.stopSource = null
    return stopping
  }

  /** Ends every viewer and the producer (resolves when a transcoder has exited); the feed is then forgotten. */
  async end(reason: string): Promise<void> {
    if (this.finished) return
    this.finished = true
    this.unwatch()
    const viewers = [...this.viewers]
    this.viewers.clear()
    const stopping = this.stop()
    for (const viewer of viewers) viewer.end(reason)
    this.options.ended()
    await stopping
  }
}
