// Shared by the GStreamer tests: jobs on simulated cameras, a real GStreamer receiver, an RTP socket,
// gst-discoverer, and process bookkeeping so every test stops what it started.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { createLogger } from '../../core/log'
import { freeUdpPortPair, tempDir as testTempDir } from '../helpers'
import type { EncodeType, StreamJob, StreamType } from '../../core/types'
import { segmentFileName } from '../../core/naming'
import { simulatedSource } from '../../drivers/gstreamer/simulated'
import { GstStreamer, type GstStreamerOptions } from '../../drivers/gstreamer/streamer'

export function requireGStreamer(): void {
  for (const tool of ['gst-launch-1.0', 'gst-discoverer-1.0']) {
    if (!Bun.which(tool)) throw new Error(`${tool} is missing: run scripts/setup/gstreamer.sh (GStreamer 1.22 tools and plugins)`)
  }
}

/** GStreamer, the RTSP server's GstRtspServer, and Debian ffmpeg's clients (ffprobe, ffmpeg): scripts/setup/rtsp.sh. */
export function requireRtspClients(): void {
  requireGStreamer()
  for (const tool of ['ffprobe', 'ffmpeg']) {
    if (!Bun.which(tool)) throw new Error(`${tool} is missing: run scripts/setup/rtsp.sh (Debian ffmpeg)`)
  }
  const gi = Bun.spawnSync(['/usr/bin/python3', '-c', "import gi; gi.require_version('GstRtspServer', '1.0')"])
  if (gi.exitCode !== 0) throw new Error('GstRtspServer is not importable by /usr/bin/python3: run scripts/setup/rtsp.sh')
}

export const tempDir = (prefix = 'periscope-gst-') => testTempDir(prefix)

/** An even UDP port with its odd neighbour free (RTP and RTCP), on loopback. */
export const freePort = freeUdpPortPair

/** A TCP port nobody listens on now (suites run concurrently: never a fixed one like 8554). */
export { freeTcpPort } from '../helpers'

export interface Probed { codec_name: string; codec_type: string; width: number; height: number }

/** ffprobe's (Debian ffmpeg's) view of an RTSP URL: its video streams, or the error it printed. */
export async function ffprobe(url: string, transport: 'tcp' | 'udp', timeoutMs = 20_000): Promise<{ streams: Probed[]; error: string }> {
  const proc = Bun.spawn(['ffprobe', '-v', 'error', '-rtsp_transport', transport, '-show_entries', 'stream=codec_name,codec_type,width,height', '-of', 'json', url], {
    stdout: 'pipe',
    stderr: 'pipe',
    stdin: 'ignore',
  })
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  let streams: Probed[] = []
  try {
    streams = (JSON.parse(out).streams ?? []).filter((s: Probed) => s.codec_type === 'video')
  } catch {}
  return { streams, error: err.trim() }
}

export interface JobSpec {
  encode_type: EncodeType
  stream_type: StreamType
  width?: number
  height?: number
  fps?: number
  ports?: number[]
  members?: number
  dir?: string
  bus_info?: string
}

export function simulatedJob(spec: JobSpec): StreamJob {
  const width = spec.width ?? 320
  const height = spec.height ?? 240
  const interval = { numerator: 1, denominator: spec.fps ?? 30 }
  const patterns = ['ball', 'smpte', 'snow', 'pinwheel']
  const bus = spec.bus_info ?? `usb-sim-${Math.random().toString(36).slice(2, 8)}`
  return {
    bus_info: bus,
    recordings_dir: spec.dir ?? tempDir(),
    stream: {
      device_path: '/dev/video0',
      encode_type: spec.encode_type,
      stream_type: spec.stream_type,
      endpoints: (spec.ports ?? [freePort()]).map((port) => ({ host: '127.0.0.1', port })),
      width,
      height,
      interval,
      enabled: true,
    },
    members: Array.from({ length: spec.members ?? 1 }, (_, i) => ({
      bus_info: i === 0 ? bus : `${bus}-f${i}`,
      label: i === 0 ? 'Sim Cam' : `follower ${i}`,
      source: { kind: 'gst' as const, description: simulatedSource(spec.encode_type, width, height, interval, patterns[i % patterns.length]) },
    })),
  }
}

export interface Recorded { type: string; data: any; at: number }

export function testStreamer(options: Partial<GstStreamerOptions> = {}): { streamer: GstStreamer; events: Recorded[] } {
  const events: Recorded[] = []
  const streamer = new GstStreamer({
    log: createLogger('error'),
    emit: (type, data) => events.push({ type, data, at: Date.now() }),
    ...options,
  })
  return { streamer, events }
}

export async function waitFor<T>(what: string, probe: () => T | undefined | null | false, timeoutMs = 10_000, stepMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const value = probe()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await Bun.sleep(stepMs)
  }
}

export const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

/** gst processes whose parent is `ppid`: the video ones (streams, recorders, …), or with `sound` the sound children (plugins/audio). */
export function gstChildrenOf(ppid: number, kind: 'video' | 'sound' = 'video'): number[] {
  const out = Bun.spawnSync(['ps', '-eo', 'pid=,ppid=,comm=']).stdout.toString()
  const isSound = (pid: number) => {
    try {
      return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('rtpopuspay')
    } catch {
      return false
    }
  }
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter(([, parent, comm]) => Number(parent) === ppid && comm?.startsWith('gst-launch'))
    .map(([pid]) => Number(pid))
    .filter((pid) => isSound(pid) === (kind === 'sound'))
}

/**
 * Whether process `pid` holds a UDP socket bound to `port` (from /proc: its socket inodes against its
 * network namespace's UDP table), so a test sends only once a receiver can take the first packet.
 */
export function udpBound(pid: number, port: number): boolean {
  let table: string
  try {
    table = readFileSync(`/proc/${pid}/net/udp`, 'utf8') + readFileSync(`/proc/${pid}/net/udp6`, 'utf8')
  } catch {
    return false // gone, or not started yet
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  const inodes = table
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[1]?.endsWith(`:${hexPort}`))
    .map((f) => f[9])
  if (!inodes.length) return false
  let fds: string[]
  try {
    fds = readdirSync(`/proc/${pid}/fd`)
  } catch {
    return false
  }
  const sockets = new Set(inodes.map((inode) => `socket:[${inode}]`))
  return fds.some((fd) => {
    try {
      return sockets.has(readlinkSync(`/proc/${pid}/fd/${fd}`))
    } catch {
      return false
    }
  })
}

/** Calls `onLine` for each line a child process prints, until its output ends. */
export async function eachLine(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder()
  let rest = ''
  for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
    const lines = (rest + decoder.decode(chunk, { stream: true })).split('\n')
    rest = lines.pop()!
    for (const line of lines) onLine(line)
  }
}

/** A real GStreamer receiver: depayloads, decodes, and reports each decoded frame with its size. */
export class Receiver {
  frames: number[] = [] // arrival times (ms)
  /** When an RTSP client's PLAY was answered (gst-launch's progress message): where the server's part starts. */
  playedAt: number | undefined
  width = 0
  height = 0
  private proc: Subprocess

  /**
   * `source`: what produces decoded video instead of udpsrc on `port` (an RTSP client, say); `prefix`:
   * what runs gst-launch (`ip netns exec <ns>`: a client in a test's network namespace).
   */
  constructor(
    private readonly port: number,
    encode: EncodeType,
    source?: string[],
    prefix: string[] = [],
  ) {
    const depay =
      encode === 'MJPG'
        ? ['application/x-rtp,media=video,encoding-name=JPEG,clock-rate=90000,payload=26', '!', 'rtpjpegdepay', '!', 'jpegdec']
        : ['application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=96', '!', 'rtph264depay', '!', 'avdec_h264']
    const head = source ?? ['udpsrc', `port=${port}`, 'address=127.0.0.1', '!', ...depay]
    this.proc = Bun.spawn([...prefix, 'gst-launch-1.0', '-v', ...head, '!', 'identity', 'name=rx', 'silent=false', '!', 'fakesink', 'sync=false'], {
      stdout: 'pipe',
      stderr: 'pipe',
      stdin: 'ignore',
    })
    void this.read()
  }

  /** gst-launch-1.0's rtspsrc over `protocol`, decoding whatever the server sends. */
  static rtsp(url: string, protocol: 'tcp' | 'udp', prefix: string[] = []): Receiver {
    return new Receiver(0, 'H264', ['rtspsrc', `location=${url}`, `protocols=${protocol}`, 'latency=0', '!', 'decodebin'], prefix)
  }

  /** Whether the client process has ended (an RTSP client does when the server ends its session). */
  get exited(): boolean {
    return this.proc.exitCode !== null || this.proc.signalCode !== null
  }

  private read(): Promise<void> {
    return eachLine(this.proc.stdout as ReadableStream<Uint8Array>, (line) => {
      if (line.includes('GstIdentity:rx: last-message = chain')) this.frames.push(Date.now())
      if (this.playedAt === undefined && line.startsWith('Progress: (request) Sent PLAY request')) this.playedAt = Date.now()
      const caps = /GstIdentity:rx\.GstPad:src: caps = video\/x-raw.*?width=\(int\)(\d+), height=\(int\)(\d+)/.exec(line)
      if (caps) [this.width, this.height] = [Number(caps[1]), Number(caps[2])]
    })
  }

  /** Waits until udpsrc is bound (a packet sent before would be lost and blur the timing). */
  async ready(): Promise<void> {
    await waitFor(`the receiver bound to UDP port ${this.port}`, () => udpBound(this.proc.pid, this.port), 15_000)
  }

  firstFrameAfter(t: number): number | undefined {
    return this.frames.find((f) => f >= t)
  }

  framesBetween(from: number, to: number): number {
    return this.frames.filter((f) => f >= from && f < to).length
  }

  async stop(): Promise<void> {
    this.proc.kill('SIGKILL')
    await this.proc.exited
  }
}

/**
 * An RTSP viewer that behaves as QGroundControl's receiver does: its VideoReceiver restarts the whole
 * pipeline (here rtspsrc over TCP, gst-launch) when no frame came for its "RTSP Video Timeout"
 * (`timeoutMs`), or when the session ends. `prefix`: what runs it (`ip netns exec <ns>`).
 */
export class RestartingViewer {
  frames: number[] = []
  restarts = 0
  private rx: Receiver
  private seen = 0
  private since = Date.now()
  private readonly timer: ReturnType<typeof setInterval>

  constructor(
    private readonly url: string,
    private readonly timeoutMs: number,
    private readonly prefix: string[] = [],
  ) {
    this.rx = Receiver.rtsp(url, 'tcp', prefix)
    this.timer = setInterval(() => void this.watch(), 100)
  }

  private async watch(): Promise<void> {
    const now = Date.now()
    if (this.rx.frames.length > this.seen) {
      this.frames.push(...this.rx.frames.slice(this.seen))
      this.seen = this.rx.frames.length
      this.since = now
    }
    if (!this.rx.exited && now - this.since < this.timeoutMs) return
    const old = this.rx
    this.rx = Receiver.rtsp(this.url, 'tcp', this.prefix)
    this.seen = 0
    this.since = now
    this.restarts++
    await old.stop()
  }

  /** Frames decoded after `t`. */
  framesAfter(t: number): number {
    return this.frames.filter((f) => f > t).length
  }

  async stop(): Promise<void> {
    clearInterval(this.timer)
    await this.rx.stop()
  }
}

/** RTP packets on a UDP socket: per frame (marker bit), the arrival time and the RTP timestamp. */
export class RtpCounter {
  frames: { at: number; ts: number }[] = []
  packets = 0
  bytes = 0
  /** Packets missing between consecutive sequence numbers (reordering counts too: there is none on loopback). */
  missing = 0
  private lastSeq = -1
  private socket!: { close(): void }
  private port = 0

  /**
   * Packets the sender skipped: the missing ones less those the kernel discarded at this socket because
   * the test did not read fast enough (a loaded machine; /proc/net/udp counts them). A skip by the
   * service still shows; a slow test receiver no longer passes for one.
   */
  skipped(): number {
    return Math.max(0, this.missing - udpReceiveDrops(this.port))
  }

  static async open(port: number): Promise<RtpCounter> {
    const counter = new RtpCounter()
    counter.port = port
    counter.socket = await Bun.udpSocket({
      hostname: '127.0.0.1',
      port,
      socket: {
        data: (_s, buf) => {
          counter.packets++
          counter.bytes += buf.length
          const seq = buf.length >= 4 ? buf.readUInt16BE(2) : -1
          if (counter.lastSeq >= 0 && seq >= 0) counter.missing += (seq - counter.lastSeq - 1 + 0x10000) & 0xffff
          counter.lastSeq = seq
          if (buf.length >= 12 && buf[1]! & 0x80) counter.frames.push({ at: performance.now(), ts: buf.readUInt32BE(4) })
        },
      },
    })
    return counter
  }

  close(): void {
    this.socket.close()
  }
}

/** Datagrams the kernel discarded for the loopback UDP socket bound to `port` (receive buffer full), from /proc/net/udp. */
export function udpReceiveDrops(port: number): number {
  const local = `0100007F:${port.toString(16).toUpperCase().padStart(4, '0')}`
  for (const line of readFileSync('/proc/net/udp', 'utf8').split('\n').slice(1)) {
    const fields = line.trim().split(/\s+/)
    if (fields[1] === local) return Number(fields.at(-1))
  }
  throw new Error(`no UDP socket bound to 127.0.0.1:${port} in /proc/net/udp`)
}

/** Each packet's presentation time (s) in one stream of a file, in file order, as ffprobe reads it. */
export function packetTimes(path: string, stream = 'v:0'): number[] {
  const r = Bun.spawnSync(['ffprobe', '-v', 'error', '-select_streams', stream, '-show_entries', 'packet=pts_time', '-of', 'csv=p=0', path], { timeout: 60_000, killSignal: 'SIGKILL' })
  return r.stdout.toString().split('\n').filter(Boolean).map(Number)
}

export interface Discovered { codec: string; width: number; height: number; durationS: number; videoStreams: number }

export function discover(path: string): Discovered {
  const r = Bun.spawnSync(['gst-discoverer-1.0', path])
  const out = r.stdout.toString()
  const d = /Duration: (\d+):(\d+):([\d.]+)/.exec(out)
  return {
    codec: /video #\d+: (.*)/.exec(out)?.[1]?.trim() ?? '',
    width: Number(/Width: (\d+)/.exec(out)?.[1] ?? 0),
    height: Number(/Height: (\d+)/.exec(out)?.[1] ?? 0),
    durationS: d ? Number(d[1]) * 3600 + Number(d[2]) * 60 + Number(d[3]) : 0,
    videoStreams: (out.match(/video #\d+:/g) ?? []).length,
  }
}

const decodeArgs = (path: string) => ['gst-launch-1.0', '-v', 'filesrc', `location=${path}`, '!', 'matroskademux', '!', 'decodebin', '!', 'identity', 'name=out', 'silent=false', '!', 'fakesink']

/** The timestamp after the last frame gst-launch -v printed decoding a file (s), 0 if none. */
function lastDecodedSeconds(output: string): number {
  const stamps = [...output.matchAll(/GstIdentity:out: last-message = chain .*?pts: (\d+):(\d\d):(\d\d\.\d+), duration: (\d+):(\d\d):(\d\d\.\d+)/g)]
  const last = stamps.at(-1)
  if (!last) return 0
  const secs = (h: string, m: string, s: string) => Number(h) * 3600 + Number(m) * 60 + Number(s)
  return secs(last[1]!, last[2]!, last[3]!) + secs(last[4]!, last[5]!, last[6]!)
}

/**
 * Decodes a recording to its end: the timestamp after its last decoded frame (s), 0 if it does not
 * decode. A file with no frame yet (empty, or the Matroska header alone) makes matroskademux wait
 * forever: after `timeoutMs` that counts as 0 too.
 */
export function playableSeconds(path: string, timeoutMs = 30_000): number {
  const r = Bun.spawnSync(decodeArgs(path), { timeout: timeoutMs, killSignal: 'SIGKILL' })
  if (r.exitCode !== 0) return 0
  return lastDecodedSeconds(r.stdout.toString())
}

/**
 * playableSeconds without blocking the event loop (a streamer running in the test's own process keeps
 * forwarding its tap meanwhile), for a file still being written; gives up after `timeoutMs`.
 */
export async function playableSecondsNow(path: string, timeoutMs = 5_000): Promise<number> {
  const proc = Bun.spawn(decodeArgs(path), { stdout: 'pipe', stderr: 'ignore', stdin: 'ignore' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  const output = await new Response(proc.stdout).text()
  const code = await proc.exited
  clearTimeout(timer)
  return code === 0 ? lastDecodedSeconds(output) : 0
}

/**
 * The path of segment `n` of the recording the API names `file` (`<stem>.mkv`: the device's recording.file,
 * GET /api/recordings' name.format), written as `<stem>_seg001.mkv`, `_seg002` … (core/naming.ts).
 */
export const segmentFile = (dir: string, file: string, n = 1) => join(dir, segmentFileName(file.replace(/\.mkv$/, ''), n, 'mkv'))
