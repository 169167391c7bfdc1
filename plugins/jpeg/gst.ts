// The gst-launch-1.0 children of the JPEG views: a transcoder per H.264 camera with MJPEG viewers, a
// one-shot capture of a camera whose stream does not run, a scaler for ?height=. Each is supervised
// like every child of the media plane (media/children.ts): the parent-death signal takes it along on a
// kill -9 of the service, and the registry kills what a crash skipped stopping.
//
// The one-shot children (first(): a capture, a decode of a kept group of pictures, a scaler) are few
// at once: at most `maxChildren` run, a few more wait (MAX_WAITING), and past that first() refuses with
// Busy. They run at a lower priority (nice) than the cameras' pipelines, so a flood of snapshots slows
// the snapshots, never the streams (120 of them at once once ran 78 children and took an H.264
// camera's video from 38 to 5 packets/s).
import type { Subprocess } from 'bun'
import type { Stream, StreamMember } from '../../core/types'
import { endChild, spawnChild } from '../../media/children'
import { JpegSplitter } from './jpeg'

export interface GstChild {
  proc: Subprocess<'pipe' | 'ignore', 'pipe', 'pipe'>
  /** The last lines of stderr (why it failed). */
  errors(): string
  stop(): Promise<void>
}

/** One-shot children waiting for a free slot beyond those running; more are refused (Busy). */
export const MAX_WAITING = 8
/** The niceness of one-shot children: below the cameras' pipelines (0), which must never wait for a snapshot. */
const ONE_SHOT_NICENESS = 10

/** first() found every slot taken and the waiting line full. */
export class Busy extends Error {}

export class GstRunner {
  private readonly lowPriority: string[]
  private running = 0
  private waiting: (() => void)[] = []
  /** The most one-shot children that ran at once, and how many were refused (for /api/health). */
  readonly stats = { most: 0, refused: 0 }

  constructor(
    readonly gstLaunch: string,
    /** One-shot children (first()) at once. */
    readonly maxChildren = Infinity,
  ) {
    const nice = Bun.which('nice')
    this.lowPriority = nice ? [nice, '-n', String(ONE_SHOT_NICENESS)] : []
  }

  /** One-shot children running now. */
  get children(): number {
    return this.running
  }

  /** `env`: the child's environment when it is not the service's own (Streamer.captureEnv). */
  spawn(tokens: string[], stdin: 'pipe' | 'ignore' = 'ignore', lowPriority = false, env?: Record<string, string | undefined>): GstChild {
    // nice execs what follows: the child keeps its pid, the parent-death signal and the niceness.
    const proc = spawnChild([...(lowPriority ? this.lowPriority : []), this.gstLaunch, '-q', ...tokens], { stdin, stdout: 'pipe', stderr: 'pipe', env })
    let tail = ''
    void (async () => {
      const decoder = new TextDecoder()
      for await (const chunk of proc.stderr as unknown as AsyncIterable<Uint8Array>) tail = (tail + decoder.decode(chunk)).slice(-2000)
    })().catch(() => {})
    return {
      proc,
      errors: () => tail.trim(),
      stop: () => endChild(proc, 'SIGTERM', 2000),
    }
  }

  /** Calls `onFrame` with every JPEG the child writes to its stdout, until it ends. */
  async frames(child: GstChild, onFrame: (jpeg: Uint8Array) => boolean | void): Promise<void> {
    const splitter = new JpegSplitter()
    for await (const chunk of child.proc.stdout as unknown as AsyncIterable<Uint8Array>) {
      for (const frame of splitter.push(chunk)) if (onFrame(frame) === false) return
    }
  }

  /**
   * The first JPEG a pipeline writes, then the child is stopped (or, with `last`, the last one it writes
   * before it ends); rejects with its stderr when it ends without one or times out.
   */
  async first(tokens: string[], timeoutMs: number, input?: Uint8Array, last = false, env?: Record<string, string | undefined>): Promise<Uint8Array> {
    await this.slot()
    try {
      return await this.once(tokens, timeoutMs, input, last, env)
    } finally {
      this.release()
    }
  }

  /** Waits for a free slot (FIFO); Busy when MAX_WAITING already wait. */
  private async slot(): Promise<void> {
    if (this.running < this.maxChildren) {
      this.running++
      this.stats.most = Math.max(this.stats.most, this.running)
      return
    }
    if (this.waiting.length >= MAX_WAITING) {
      this.stats.refused++
      throw new Busy(`${this.running} snapshot children run and ${this.waiting.length} wait, the most allowed`)
    }
    // The slot passes straight from the child that ends to the first waiting (running stays the same).
    await new Promise<void>((resolve) => this.waiting.push(resolve))
  }

  private release(): void {
    const next = this.waiting.shift()
    if (next) next()
    else this.running--
  }

  private async once(tokens: string[], timeoutMs: number, input: Uint8Array | undefined, last: boolean, env?: Record<string, string | undefined>): Promise<Uint8Array> {
    const child = this.spawn(tokens, input ? 'pipe' : 'ignore', true, env)
    if (input) {
      const sink = child.proc.stdin as import('bun').FileSink
      sink.write(input)
      void sink.end()
    }
    let found: Uint8Array | undefined
    let late = false
    const timer = setTimeout(() => {
      late = true
      void child.stop()
    }, timeoutMs)
    try {
      await this.frames(child, (jpeg) => {
        found = jpeg
        return last
      })
    } finally {
      clearTimeout(timer)
      await child.stop()
    }
    if (found && !(last && late)) return found
    throw new GstFailure(late ? `no frame within ${Math.round(timeoutMs / 1000)} s` : child.errors() || 'gst-launch-1.0 ended without a frame')
  }
}

export class GstFailure extends Error {}

/** A JPEG to `height` rows, the width keeping the aspect (rounded to even, as encoders like). */
export function scaleTokens(width: number, height: number, quality: number): string[] {
  return ['fdsrc', 'fd=0', '!', 'jpegparse', '!', 'jpegdec', '!', 'videoscale', '!', `video/x-raw,width=${width},height=${height}`, '!', 'jpegenc', `quality=${quality}`, '!', 'fdsink', 'fd=1']
}

/**
 * The H.264 decoder the JPEG views use: FFmpeg's (gstreamer1.0-libav) where it is installed, else
 * OpenH264's from plugins-bad — the container image carries only the latter, which saves FFmpeg's
 * codec libraries (about 200 MB) on the vehicle's card.
 */
export function pickH264Decoder(exists: (element: string) => boolean): 'avdec_h264' | 'openh264dec' {
  return exists('avdec_h264') ? 'avdec_h264' : 'openh264dec'
}

let decoder: ReturnType<typeof pickH264Decoder> | null = null
const hasElement = (element: string): boolean => {
  try {
    return Bun.spawnSync(['gst-inspect-1.0', '--exists', element]).exitCode === 0
  } catch {
    return false // no GStreamer: the views fail later with their own sentence
  }
}

/**
 * Asks this machine's GStreamer which decoder it has, off the event loop; the jpeg plugin calls it at
 * start, so no request waits for gst-inspect.
 */
export async function probeH264Decoder(): Promise<void> {
  if (decoder) return
  try {
    const probe = Bun.spawn(['gst-inspect-1.0', '--exists', 'avdec_h264'], { stdout: 'ignore', stderr: 'ignore' })
    const found = (await probe.exited) === 0
    decoder ??= pickH264Decoder((element) => element === 'avdec_h264' && found)
  } catch {
    decoder ??= 'openh264dec'
  }
}

/** pickH264Decoder's answer for this machine (asked at once if the start-up probe has not answered yet). */
export function h264Decoder(): ReturnType<typeof pickH264Decoder> {
  decoder ??= pickH264Decoder(hasElement)
  return decoder
}

/**
 * A group of pictures of H.264 RTP (a hub's lastGop, framed by rtpStream) from stdin to JPEGs on stdout,
 * the newest frame last: every frame is decoded, but the encoder takes only the newest one waiting (the
 * leaky queue), so it encodes a few and always the last.
 */
export function gopTokens(quality: number, decode: string = h264Decoder()): string[] {
  return [
    'fdsrc', 'fd=0', '!', 'application/x-rtp-stream,media=video,encoding-name=H264,clock-rate=90000,payload=96',
    '!', 'rtpstreamdepay', '!', 'rtph264depay', '!', 'h264parse', '!', decode,
    '!', 'queue', 'leaky=downstream', 'max-size-buffers=1', 'max-size-bytes=0', 'max-size-time=0',
    '!', 'videoconvert', '!', 'jpegenc', `quality=${quality}`, '!', 'fdsink', 'fd=1', 'sync=false',
  ]
}

/** RTP packets as one byte stream, each after its 16-bit length (RFC 4571, what rtpstreamdepay reads). */
export function rtpStream(packets: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(packets.reduce((n, p) => n + 2 + p.length, 0))
  let at = 0
  for (const packet of packets) {
    out[at] = packet.length >> 8
    out[at + 1] = packet.length & 0xff
    out.set(packet, at + 2)
    at += 2 + packet.length
  }
  return out
}

/** H.264 RTP from a loopback port to JPEG frames on stdout, at most `fps` a second. */
export function transcoderTokens(port: number, fps: number, quality: number, decode: string = h264Decoder()): string[] {
  return [
    'udpsrc', 'address=127.0.0.1', `port=${port}`, 'buffer-size=4194304',
    'caps=application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=96',
    '!', 'rtph264depay', 'wait-for-keyframe=true', '!', 'h264parse', '!', decode,
    '!', 'videorate', 'drop-only=true', `max-rate=${Math.max(1, Math.round(fps))}`,
    '!', 'videoconvert', '!', 'jpegenc', `quality=${quality}`, '!', 'fdsink', 'fd=1', 'sync=false',
  ]
}

/**
 * One still from a camera whose stream does not run: its source as the streamer would read it
 * (Streamer.captureSource), then JPEG — the camera's own when it sends MJPG, else decoded (H.264) or
 * converted (raw) and encoded.
 */
export function stillTokens(source: string[], member: StreamMember, stream: Stream, quality: number): string[] {
  const format = member.pixel_format ?? stream.encode_type
  const toJpeg =
    format === 'MJPG' ? ['jpegparse'] : format === 'H264' ? ['h264parse', '!', h264Decoder(), '!', 'videoconvert', '!', 'jpegenc', `quality=${quality}`] : ['videoconvert', '!', 'jpegenc', `quality=${quality}`]
  return [...source, '!', ...toJpeg, '!', 'fdsink', 'fd=1', 'sync=false']
}
