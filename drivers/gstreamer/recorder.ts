// A recording made while streaming: one supervised gst-launch-1.0 child per recording, fed from the
// job's live tap (tap.ts). Its RTP is forwarded over loopback to the child's udpsrc (one per member),
// depayloaded and muxed into the same crash-safe Matroska file end as a RECORDING stream (pipeline.ts):
// the camera's encoded frames as they are, no second encoder. The camera's child is never touched, so
// starting or stopping a recording costs the stream's viewers nothing.
import { createSocket, type Socket } from 'node:dgram'
import { statSync, unlinkSync } from 'node:fs'
import { basename } from 'node:path'
import type { Subprocess } from 'bun'
import type { Logger } from '../../core/log'
import type { DeviceRecording, LiveTap } from '../../core/types'
import { children } from './children'
import { DISK_FULL, endChild, pumpLines, syncProblem, syncToDisk } from './child'
import { parseChildLine } from './monitor'
import { buildRecorderPipeline, shellCommand } from './pipeline'

export interface RecorderOptions {
  gstLaunch: string
  /** `setpriv --pdeathsig KILL`, as for the stream's child. */
  prefix: string[]
  stopTimeoutMs: number
  /** How long the child may take to listen before the start counts as failed. */
  startTimeoutMs?: number
  log: Logger
}

/** How the camera's RTP and the recorder child meet: the tap, the file, and who to tell when it ends. */
export interface RecorderSpec {
  tap: LiveTap
  path: string
  /** Called once when the recording has ended, by stop() or by itself (then `error` says why). */
  onEnd(recorder: Recorder): void
  /** Called every second while it records (bytes grow). */
  onProgress(recorder: Recorder): void
}

export class Recorder {
  readonly started = new Date()
  error: string | null = null
  private child: Subprocess | null = null
  private sender: Socket | null = null
  private unsubscribes: (() => void)[] = []
  private timer: ReturnType<typeof setInterval> | null = null
  private stopping = false
  private ended = false
  private lastError: string | null = null
  private finalBytes = 0

  private constructor(private readonly spec: RecorderSpec, private readonly options: RecorderOptions) {}

  get path(): string {
    return this.spec.path
  }

  get active(): boolean {
    return !this.ended
  }

  get pid(): number | null {
    return this.child?.pid ?? null
  }

  bytes(): number {
    if (this.ended) return this.finalBytes
    try {
      return statSync(this.spec.path).size
    } catch {
      return 0 // not created yet
    }
  }

  state(): DeviceRecording {
    return { active: this.active, file: basename(this.spec.path), started: this.started.toISOString(), bytes: this.bytes(), error: this.error ?? (this.active ? syncProblem(this.spec.path) : null) }
  }

  /** Spawns the child, waits until it listens, then forwards the tap from each member's next key frame. */
  static async start(spec: RecorderSpec, options: RecorderOptions): Promise<Recorder> {
    const recorder = new Recorder(spec, options)
    try {
      await recorder.launch()
    } catch (err) {
      await recorder.stop(`the recorder did not start: ${(err as Error).message}`)
      throw err
    }
    return recorder
  }

  private async launch(): Promise<void> {
    const { tap } = this.spec
    const ports = await freeLoopbackPorts(tap.members)
    const tokens = buildRecorderPipeline(tap.encoding, ports, this.spec.path)
    this.options.log.info('starting recorder', { file: this.spec.path, command: shellCommand(tokens) })
    const child = (this.child = Bun.spawn([...this.options.prefix, this.options.gstLaunch, '-e', '-m', ...tokens], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' }))
    children.add(child.pid)
    let listening = false
    const onLine = (line: string) => {
      // udpsrc binds going to READY; PLAYING comes after, so then every port listens.
      if (line.startsWith('Setting pipeline to PLAYING')) listening = true
      const event = parseChildLine(line)
      if (event?.kind === 'error') this.lastError ??= event.text
      if (DISK_FULL.test(line)) this.lastError = line.trim()
    }
    void pumpLines(child.stdout as ReadableStream<Uint8Array>, onLine)
    void pumpLines(child.stderr as ReadableStream<Uint8Array>, onLine)
    void child.exited.then(() => {
      children.delete(child.pid)
      if (!this.stopping) void this.finish(this.endReason())
    })

    const deadline = Date.now() + (this.options.startTimeoutMs ?? 10_000)
    while (!listening) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(this.lastError ?? `gst-launch-1.0 exited (${child.signalCode ?? child.exitCode})`)
      if (Date.now() > deadline) throw new Error('it did not listen for the stream in time')
      await Bun.sleep(20)
    }

    const sender = (this.sender = createSocket('udp4'))
    sender.on('error', () => {}) // loopback to our own child: nothing to recover
    for (let member = 0; member < tap.members; member++) {
      const port = ports[member]!
      let started = false
      this.unsubscribes.push(
        tap.subscribe(member, (packet) => {
          // A file that starts mid-GOP opens on grey smears: begin at the member's next key frame.
          if (!started && !(started = startsKeyFrame(packet, tap.encoding))) return
          sender.send(packet, port, '127.0.0.1')
        }),
      )
    }
    this.timer = setInterval(() => {
      syncToDisk(this.spec.path, this.options.log)
      this.spec.onProgress(this)
    }, 1000)
  }

  private endReason(): string {
    const code = this.child?.signalCode ?? `code ${this.child?.exitCode}`
    if (this.lastError && DISK_FULL.test(this.lastError)) return `disk full: recording stopped, ${basename(this.spec.path)} kept`
    return `the recorder stopped by itself (${this.lastError ?? `gst-launch-1.0 exited, ${code}`}); ${basename(this.spec.path)} is kept`
  }

  /**
   * EOS to the child (the muxer closes the file), then SIGKILL after the stop timeout. The tap runs on.
   * `error`: why, when it is a failure rather than a request.
   */
  async stop(error: string | null = null): Promise<void> {
    if (this.stopping) return
    this.stopping = true
    this.detach()
    if (this.child) await endChild(this.child, 'SIGINT', this.options.stopTimeoutMs)
    await this.finish(error)
  }

  private detach(): void {
    for (const unsubscribe of this.unsubscribes.splice(0)) unsubscribe()
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    try {
      this.sender?.close()
    } catch {}
    this.sender = null
  }

  private async finish(error: string | null): Promise<void> {
    if (this.ended) return
    this.detach()
    this.finalBytes = this.bytes()
    this.ended = true
    this.error = error
    if (error) this.options.log.warn('recording ended', { file: this.spec.path, error })
    syncToDisk(this.spec.path)
    // Stopped before the first key frame: an empty file is no recording.
    if (this.finalBytes === 0) {
      try {
        unlinkSync(this.spec.path)
      } catch {}
    }
    this.spec.onEnd(this)
  }
}

/** Whether an RTP packet opens a frame a decoder can start from: H.264 SPS (sent before every IDR), or a JPEG's first fragment. */
export function startsKeyFrame(packet: Uint8Array, encoding: LiveTap['encoding']): boolean {
  if (packet.length < 13) return false
  let offset = 12 + 4 * (packet[0]! & 0x0f)
  if (packet[0]! & 0x10) {
    if (packet.length < offset + 4) return false
    offset += 4 + 4 * ((packet[offset + 2]! << 8) | packet[offset + 3]!)
  }
  const payload = packet.subarray(offset)
  if (encoding === 'JPEG') return payload.length >= 4 && payload[1] === 0 && payload[2] === 0 && payload[3] === 0
  const SPS = 7
  const type = payload[0]! & 0x1f
  if (type === 24) {
    // STAP-A: a whole access unit's small NAL units (an AUD may come before the SPS)
    for (let at = 1; at + 2 < payload.length; at += 2 + ((payload[at]! << 8) | payload[at + 1]!)) if ((payload[at + 2]! & 0x1f) === SPS) return true
    return false
  }
  if (type === 28) return payload.length > 1 && (payload[1]! & 0x80) !== 0 && (payload[1]! & 0x1f) === SPS // FU-A start
  return type === SPS
}

/** Ports free on loopback now (bound, noted, released): the child binds them a moment later. */
async function freeLoopbackPorts(count: number): Promise<number[]> {
  const sockets = await Promise.all(
    Array.from({ length: count }, () => new Promise<Socket>((resolve, reject) => {
      const socket = createSocket('udp4')
      socket.once('error', reject)
      socket.bind(0, '127.0.0.1', () => resolve(socket))
    })),
  )
  const ports = sockets.map((s) => s.address().port)
  for (const s of sockets) s.close()
  return ports
}
