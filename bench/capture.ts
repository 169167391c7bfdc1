// RTP packets timed by the kernel: tcpdump on loopback, for the WHEP benchmark (bench/whep.bench.ts).
// On `lo` a packet is stamped as its sender's sendto() hands it over, which is also when it lands in the
// receiver's socket: the time a plain receiver or a viewer *could* see it, whatever the receiving
// process is busy with. The RTP header stays in the clear under SRTP (RFC 3711), so the service's
// encrypted packets can be followed by their RTP timestamp and marker bit.
import { readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** The last packet of a frame (RTP marker bit) as it crossed loopback. */
export interface FrameEnd {
  /** Kernel time, ms (CLOCK_REALTIME, as sharedNow in bench/lib.ts). */
  at: number
  /** Its RTP timestamp. */
  rtpTime: number
}

/** A running capture of UDP packets to some loopback ports. */
export class Capture {
  private constructor(private readonly proc: ReturnType<typeof Bun.spawn>, private readonly file: string, private readonly stderr: Promise<string>) {}

  /** Starts tcpdump on `lo` for UDP to `ports` (headers only), once it listens. */
  static async start(ports: number[]): Promise<Capture> {
    const file = join(tmpdir(), `periscope-whep-capture-${process.pid}-${Date.now()}.pcap`)
    const filter = `udp and (${ports.map((p) => `dst port ${p}`).join(' or ')})`
    // Headers only (Ethernet 14 + IPv4 20 + UDP 8 + RTP 12 bytes); nanosecond stamps; written as they come.
    const proc = Bun.spawn(['tcpdump', '-i', 'lo', '-n', '-U', '-s', '96', '-B', '8192', '--time-stamp-precision=nano', '-w', file, filter], { stdout: 'ignore', stderr: 'pipe' })
    const reader = proc.stderr.getReader()
    let text = ''
    const decoder = new TextDecoder()
    const deadline = performance.now() + 10_000
    while (!text.includes('listening on')) {
      const chunk = await Promise.race([reader.read(), Bun.sleep(Math.max(0, deadline - performance.now())).then(() => null)])
      if (!chunk || chunk.done) {
        proc.kill()
        throw new Error(`tcpdump did not start (run as root, with tcpdump installed: bench/setup.sh): ${text.trim()}`)
      }
      text += decoder.decode(chunk.value)
    }
    const rest = (async () => {
      for (;;) {
        const chunk = await reader.read()
        if (chunk.done) return text
        text += decoder.decode(chunk.value)
      }
    })()
    return new Capture(proc, file, rest)
  }

  /** Stops the capture; per destination port, its RTP frame ends in order. Throws when the kernel dropped packets. */
  async stop(): Promise<Map<number, FrameEnd[]>> {
    this.proc.kill('SIGINT')
    await this.proc.exited
    const stderr = await this.stderr
    const dropped = Number(/(\d+) packets? dropped by kernel/.exec(stderr)?.[1] ?? 0)
    try {
      if (dropped) throw new Error(`tcpdump: ${dropped} packets dropped by the kernel: the figures would miss frames`)
      return frameEnds(readFileSync(this.file))
    } finally {
      rmSync(this.file, { force: true })
    }
  }
}

/** Parses a pcap file (nanosecond stamps, Ethernet link as Linux's `lo` has) into RTP frame ends by UDP port. */
export function frameEnds(pcap: Buffer): Map<number, FrameEnd[]> {
  const byPort = new Map<number, FrameEnd[]>()
  if (pcap.length < 24) return byPort
  if (pcap.readUInt32LE(0) !== 0xa1b23c4d) throw new Error('not a little-endian nanosecond pcap file')
  if (pcap.readUInt32LE(20) !== 1) throw new Error(`link type ${pcap.readUInt32LE(20)}, not Ethernet`)
  for (let at = 24; at + 16 <= pcap.length; ) {
    const seconds = pcap.readUInt32LE(at)
    const nanos = pcap.readUInt32LE(at + 4)
    const caught = pcap.readUInt32LE(at + 8)
    const frame = pcap.subarray(at + 16, at + 16 + caught)
    at += 16 + caught
    if (frame.length < 14 + 20 || frame.readUInt16BE(12) !== 0x0800) continue // IPv4 only
    const ip = 14
    const udp = ip + (frame[ip]! & 0x0f) * 4
    if (frame[ip + 9] !== 17 || frame.length < udp + 8 + 12) continue
    const rtp = udp + 8
    // RTP version 2, not RTCP (payload types 72–79 with the marker bit are RTCP's 200–207), marker bit set.
    if (frame[rtp]! >> 6 !== 2) continue
    const second = frame[rtp + 1]!
    if ((second & 0x7f) >= 72 && (second & 0x7f) <= 79) continue
    if (!(second & 0x80)) continue
    const port = frame.readUInt16BE(udp + 2)
    const list = byPort.get(port) ?? []
    list.push({ at: seconds * 1000 + nanos / 1e6, rtpTime: frame.readUInt32BE(rtp + 4) })
    byPort.set(port, list)
  }
  return byPort
}

/**
 * How much later each frame crossed loopback towards a viewer than towards the plain receiver (ms). The
 * service rewrites RTP timestamps by a constant per session (its own clock base): the offset is the one
 * most viewer frames agree on when each is set beside the plain frame sent nearest to it in time (a
 * frame's two copies leave well under a frame interval apart; the next frame would be another offset).
 */
export function addedInKernel(plain: FrameEnd[], viewer: FrameEnd[]): number[] {
  if (!plain.length || !viewer.length) return []
  const votes = new Map<number, number>()
  let p = 0
  for (const v of viewer) {
    // Both lists are in time order: walk the plain one to the frame nearest this viewer frame.
    while (p + 1 < plain.length && Math.abs(plain[p + 1]!.at - v.at) <= Math.abs(plain[p]!.at - v.at)) p++
    const offset = (v.rtpTime - plain[p]!.rtpTime) >>> 0
    votes.set(offset, (votes.get(offset) ?? 0) + 1)
  }
  const offset = [...votes.entries()].sort((a, b) => b[1] - a[1])[0]![0]
  const plainAt = new Map(plain.map((f) => [f.rtpTime, f.at]))
  const added: number[] = []
  for (const v of viewer) {
    const then = plainAt.get((v.rtpTime - offset) >>> 0)
    if (then !== undefined && Math.abs(v.at - then) < 1000) added.push(v.at - then)
  }
  return added
}
