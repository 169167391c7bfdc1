// What an RTSP viewer pays, against a plain RTP/UDP receiver of the same stream (issue 19's target:
// ≤ 3 ms added at p99, with and without API load):
//  1. Latency: per frame, when its last packet reaches an RTSP client (over UDP, and over TCP
//     interleaved) minus when the same packet reached the stream's UDP endpoint, both in this process.
//     Frames are paired by the last bytes of their last packet (the end of the frame's last NAL unit,
//     the same on both paths however each payloader cut or grouped the NAL units). Each row again
//     with --api-load connections (32) looping GET /api/devices on the service.
//  2. CPU and RSS of the service + its RTSP helper with 0, 1, 4 and 8 RTSP viewers of one stream.
// The service runs with simulated cameras (core/main.ts), streaming 1080p30 H.264 to loopback.
// `bun run bench/rtsp.bench.ts [--seconds 20] [--viewers 1,4,8] [--api-load 32]`
import { createSocket, type Socket } from 'node:dgram'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { TICK, apiLoad, argOf, cpuTicks, freePort, rssKb, waitHttp } from './lib'

const SECONDS = Number(argOf('seconds', '20'))
const VIEWERS = argOf('viewers', '1,4,8').split(',').map(Number)
/** Each latency row again with this many HTTP connections looping GET /api/devices on the service (wrk); 0: none. */
const API_LOAD = Number(argOf('api-load', '32'))
const ROOT = join(import.meta.dir, '..')
const BUS = 'usb-0000:00:14.0-1' // the default preset's exploreHD

for (const tool of ['gst-launch-1.0', 'ps']) if (!Bun.which(tool)) throw new Error(`${tool} is missing: run scripts/setup/gstreamer.sh`)

type OnRtp = (track: number, packet: Buffer, at: number) => void

/** A loopback UDP socket with a receive buffer for a 1080p key frame's burst (both sides alike). */
async function receiver(onPacket: (packet: Buffer, at: number) => void, port = 0): Promise<Socket> {
  const socket = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
  socket.on('message', (packet) => onPacket(packet, performance.now()))
  await new Promise<void>((resolve) => socket.bind(port, '127.0.0.1', resolve))
  return socket
}

/** A minimal RTSP client (DESCRIBE, SETUP each track, PLAY) that hands over raw RTP with arrival times. */
class RtspClient {
  private buffer = Buffer.alloc(0)
  private waiting: ((r: { status: number; headers: Record<string, string>; body: string }) => void) | null = null
  private cseq = 0
  private session = ''
  private udp: { close(): void }[] = []
  private constructor(private readonly socket: { write(b: string): number; end(): void }, private readonly onRtp: OnRtp) {}

  static async open(url: string, transport: 'tcp' | 'udp', onRtp: OnRtp): Promise<RtspClient> {
    const { hostname, port } = new URL(url.replace(/^rtsp:/, 'http:'))
    let client!: RtspClient
    const socket = await Bun.connect({
      hostname,
      port: Number(port),
      socket: { data: (_s, chunk) => client.onData(Buffer.from(chunk), performance.now()) },
    })
    client = new RtspClient(socket, onRtp)
    const described = await client.request('DESCRIBE', url, { Accept: 'application/sdp' })
    if (described.status !== 200) throw new Error(`DESCRIBE ${url}: ${described.status}`)
    const base = described.headers['content-base'] ?? url
    const controls = described.body.split('\n').filter((l) => l.startsWith('m=') || l.startsWith('a=control:'))
    const tracks: string[] = []
    controls.forEach((line, i) => {
      if (line.startsWith('a=control:') && controls[i - 1]?.startsWith('m=')) tracks.push(line.slice('a=control:'.length).trim())
    })
    for (const [i, control] of tracks.entries()) {
      const target = control.startsWith('rtsp://') ? control : base.replace(/\/?$/, '/') + control
      let spec = `RTP/AVP/TCP;unicast;interleaved=${2 * i}-${2 * i + 1}`
      if (transport === 'udp') {
        const rtp = await receiver((packet, at) => onRtp(i, packet, at))
        const rtcp = await receiver(() => {})
        client.udp.push(rtp, rtcp)
        spec = `RTP/AVP;unicast;client_port=${rtp.address().port}-${rtcp.address().port}`
      }
      const setup = await client.request('SETUP', target, { Transport: spec })
      if (setup.status !== 200) throw new Error(`SETUP ${target}: ${setup.status}`)
      client.session ||= setup.headers.session!.split(';')[0]!
    }
    const play = await client.request('PLAY', base, {})
    if (play.status !== 200) throw new Error(`PLAY: ${play.status}`)
    return client
  }

  private request(method: string, url: string, headers: Record<string, string>) {
    const lines = [`${method} ${url} RTSP/1.0`, `CSeq: ${++this.cseq}`, ...(this.session ? [`Session: ${this.session}`] : []), ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)]
    return new Promise<{ status: number; headers: Record<string, string>; body: string }>((resolve) => {
      this.waiting = resolve
      this.socket.write(lines.join('\r\n') + '\r\n\r\n')
    })
  }

  private onData(chunk: Buffer, at: number): void {
    this.buffer = Buffer.concat([this.buffer, chunk])
    for (;;) {
      if (this.buffer[0] === 0x24) {
        if (this.buffer.length < 4) return
        const length = this.buffer.readUInt16BE(2)
        if (this.buffer.length < 4 + length) return
        const channel = this.buffer[1]!
        if (channel % 2 === 0) this.onRtp(channel / 2, this.buffer.subarray(4, 4 + length), at)
        this.buffer = this.buffer.subarray(4 + length)
        continue
      }
      const end = this.buffer.indexOf('\r\n\r\n')
      if (end < 0) return
      const head = this.buffer.subarray(0, end).toString().split('\r\n')
      const headers: Record<string, string> = {}
      for (const line of head.slice(1)) {
        const colon = line.indexOf(':')
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
      }
      const length = Number(headers['content-length'] ?? 0)
      if (this.buffer.length < end + 4 + length) return
      const body = this.buffer.subarray(end + 4, end + 4 + length).toString()
      this.buffer = this.buffer.subarray(end + 4 + length)
      const waiting = this.waiting
      this.waiting = null
      waiting?.({ status: Number(head[0]!.split(' ')[1]), headers, body })
    }
  }

  close(): void {
    this.socket.end()
    for (const s of this.udp) s.close()
  }
}

/** A frame's last packet (marker bit). */
const isMarker = (p: Buffer) => p.length > 12 && (p[1]! & 0x80) !== 0

/**
 * A frame by the last bytes of its last packet: the end of its last NAL unit, the same on both paths
 * however each payloader cut (FU-A) or grouped (STAP-A) the NAL units before it.
 */
const frameKey = (p: Buffer) => p.subarray(Math.max(12, p.length - 64)).toString('base64')

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!
}

function helperOf(pid: number): number {
  const out = Bun.spawnSync(['ps', '-o', 'pid=,args=', '--ppid', String(pid)]).stdout.toString()
  const line = out.split('\n').find((l) => l.includes('plugins/rtsp/server.py'))
  if (!line) throw new Error('no RTSP helper under the service')
  return Number(line.trim().split(/\s+/)[0])
}

// ---- the service ----
const httpPort = await freePort()
const rtspPort = await freePort()
const udpPort = await freePort()
const dataDir = mkdtempSync(join(tmpdir(), 'periscope-rtsp-bench-'))
const service = Bun.spawn(
  [process.execPath, join(ROOT, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(httpPort), '--data-dir', dataDir, '--simulate', 'default', '--rtsp-port', String(rtspPort), '--log-level', 'error'],
  { stdout: 'ignore', stderr: 'inherit', cwd: ROOT },
)
process.on('exit', () => service.kill('SIGKILL'))
const api = `http://127.0.0.1:${httpPort}`
await waitHttp(`${api}/api/devices`)

const udpArrivals = new Map<string, number>()
const endpoint = await receiver((packet, at) => void (isMarker(packet) && udpArrivals.set(frameKey(packet), at)), udpPort)
const configured = await fetch(`${api}/api/devices/configure_stream`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({
    bus_info: BUS,
    stream_type: 'UDP',
    stream_format: { width: 1920, height: 1080, interval: { numerator: 1, denominator: 30 } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: udpPort }],
  }),
})
if (!configured.ok) throw new Error(`configure_stream: ${configured.status} ${await configured.text()}`)
const url = `rtsp://127.0.0.1:${rtspPort}/${BUS}`
for (let i = 0; ; i++) {
  const mounts = (await (await fetch(`${api}/api/rtsp`)).json()) as { mounts: { path: string }[] }
  if (mounts.mounts.some((m) => m.path === `/${BUS}`)) break
  if (i > 200) throw new Error('the RTSP mount did not appear')
  await Bun.sleep(100)
}

console.log(`1080p30 H.264 from a simulated camera; ${SECONDS} s per row; rtsp://127.0.0.1:${rtspPort}/${BUS}`)
console.log('\nlatency added per frame (RTSP client arrival − UDP endpoint arrival of the same last packet)')
console.log('transport   API load        frames  matched   p50 ms   p99 ms   max ms   p99 / 3 ms target')
for (const transport of ['udp', 'tcp'] as const) for (const connections of [0, ...(API_LOAD ? [API_LOAD] : [])]) {
  const added: number[] = []
  let frames = 0
  const client = await RtspClient.open(url, transport, (_track, packet, at) => {
    if (!isMarker(packet)) return
    frames++
    const sent = udpArrivals.get(frameKey(packet))
    if (sent !== undefined && at - sent < 1000) added.push(at - sent) // older: another frame that ended alike
  })
  const load = apiLoad(`${api}/api/devices`, connections, SECONDS + 5)
  await Bun.sleep(SECONDS * 1000)
  const rps = await load.stop()
  client.close()
  added.sort((a, b) => a - b)
  const p99 = quantile(added, 0.99)
  const loadLabel = connections ? `${connections} conns ${Math.round(rps)}/s` : 'none'
  console.log(
    `${transport.padEnd(10)}  ${loadLabel.padEnd(16)} ${String(frames).padStart(7)} ${String(added.length).padStart(8)} ${quantile(added, 0.5).toFixed(2).padStart(8)} ${p99.toFixed(2).padStart(8)} ${added.at(-1)!.toFixed(2).padStart(8)}   ${(p99 / 3).toFixed(2)}`,
  )
  udpArrivals.clear()
}

console.log('\nCPU (% of one core) and RSS of the service + RTSP helper, by RTSP viewers (TCP) of the one stream')
console.log('viewers   cpu %   per extra viewer   rss MB   frames/s at each viewer (min)')
const helper = helperOf(service.pid)
let baseline = 0
for (const n of [0, ...VIEWERS]) {
  const frames = Array.from({ length: n }, () => 0)
  const clients = await Promise.all(frames.map((_, i) => RtspClient.open(url, 'tcp', (_track, packet) => void (isMarker(packet) && frames[i]!++))))
  await Bun.sleep(2000) // joined and steady
  const framesBefore = [...frames]
  const pids = [service.pid, helper]
  const t0 = pids.map(cpuTicks)
  const started = performance.now()
  await Bun.sleep(SECONDS * 1000)
  const cpu = (100 * pids.reduce((sum, p, i) => sum + (cpuTicks(p) - t0[i]!), 0)) / TICK / ((performance.now() - started) / 1000)
  const rss = pids.reduce((sum, p) => sum + rssKb(p), 0) / 1024
  if (n === 0) baseline = cpu
  const perViewer = n ? ((cpu - baseline) / n).toFixed(2) : '—'
  const seconds = (performance.now() - started) / 1000
  const slowest = n ? Math.min(...frames.map((f, i) => (f - framesBefore[i]!) / seconds)).toFixed(1) : '—'
  console.log(`${String(n).padStart(7)} ${cpu.toFixed(1).padStart(7)} ${perViewer.padStart(18)} ${rss.toFixed(0).padStart(8)} ${slowest.padStart(10)}`)
  for (const c of clients) c.close()
}
console.log('\n(the camera\'s gst child is the same in every row: viewers are served from the stream hub, never re-encoded)')
endpoint.close()
service.kill('SIGTERM')
await service.exited
