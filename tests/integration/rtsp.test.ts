// The RTSP server (plugins/rtsp) in a whole service with simulated cameras: independent clients
// (ffprobe from ffmpeg, GStreamer's rtspsrc) over UDP and TCP decode the configured video; many clients
// at once; a group is one session with a track per camera; clients coming and going cost the UDP
// endpoint no packet; a stopped stream's mount goes; past --max-viewers a client gets 503 Service
// Unavailable; nothing of the helper outlives the plugin.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { connect, type Socket } from 'node:net'
import { join } from 'node:path'
import type { Config } from '../../core/config'
import { loadPlugin } from '../../core/loader'
import { startTestServer, stopProcess, until, type TestServer } from '../helpers'
import { alive, ffprobe, freePort, freeTcpPort, Receiver, requireRtspClients, RtpCounter, waitFor } from './gstreamer.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264
const LEADER = 'usb-0000:00:14.0-2' // stellarHD leader
const FOLLOWER = 'usb-0000:00:14.0-3' // stellarHD follower
const WEBCAM = 'usb-0000:00:14.0-4' // MJPG only

type Service = { server: TestServer; rtspPort: number }

async function startService(config: Partial<Config> = {}): Promise<Service> {
  const rtspPort = freeTcpPort()
  const plugins = await Promise.all(['mock', 'cameras', 'dwe', 'gstreamer', 'rtsp'].map(loadPlugin))
  const server = await startTestServer({ plugins, config: { simulate: 'default', rtspPort, ...config } })
  await until('the RTSP server ready', () => server.call('GET', '/api/health'), (r) => r.body?.plugins?.rtsp?.state === 'ok', 20_000)
  return { server, rtspPort }
}

/** The RTSP helper (server.py) that process `parent` (this one by default) runs for the server on `rtspPort`. */
function helperPids(rtspPort: number, parent = process.pid): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
      const args = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0')
      if (ppid === parent && args.some((a) => a.endsWith('plugins/rtsp/server.py')) && args.includes(String(rtspPort))) pids.push(Number(entry))
    } catch {
      // gone meanwhile
    }
  }
  return pids
}

/**
 * A raw RTSP connection to the server on loopback: one request at a time, each answer's status line
 * exactly as the server sent it (no client library in between to reword a refusal).
 */
class RtspConnection {
  private buffer = ''
  private wake: (() => void) | null = null
  private cseq = 0

  private constructor(private readonly socket: Socket) {
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => {
      this.buffer += chunk
      this.wake?.()
    })
    socket.on('close', () => this.wake?.())
  }

  static open(port: number): Promise<RtspConnection> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new RtspConnection(socket)))
      socket.once('error', reject)
    })
  }

  async request(method: string, url: string, headers: Record<string, string> = {}): Promise<{ status: string; headers: Record<string, string>; body: string }> {
    const head = [`${method} ${url} RTSP/1.0`, `CSeq: ${++this.cseq}`, 'User-Agent: periscope-test', ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)]
    this.socket.write(head.join('\r\n') + '\r\n\r\n')
    const deadline = Date.now() + 15_000
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n')
      if (end >= 0) {
        const [status, ...lines] = this.buffer.slice(0, end).split('\r\n')
        const answer = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
        const length = Number(answer['content-length'] ?? 0)
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.slice(end + 4, end + 4 + length)
          this.buffer = this.buffer.slice(end + 4 + length)
          return { status: status!, headers: answer, body }
        }
      }
      if (Date.now() > deadline || this.socket.destroyed) throw new Error(`no answer to ${method} ${url} (got ${JSON.stringify(this.buffer.slice(0, 200))})`)
      await new Promise<void>((resolve) => {
        this.wake = resolve
        setTimeout(resolve, 250)
      })
    }
  }

  close(): void {
    this.socket.destroy()
  }
}

let shared: Service
const receivers: Receiver[] = []
const counters: RtpCounter[] = []
const call = (method: string, path: string, body?: unknown) => shared.server.call(method, path, body)
const url = (path: string, service: Service = shared) => `rtsp://127.0.0.1:${service.rtspPort}/${path}`

beforeAll(async () => {
  requireRtspClients()
  shared = await startService()
}, 40_000)

afterAll(async () => {
  for (const r of receivers) await r.stop()
  for (const c of counters) c.close()
  await shared?.server.stop()
})

/** Streams `bus_info` over UDP to a fresh RTP counter, and waits for its RTSP mount. */
async function stream(bus_info: string, encode: 'H264' | 'MJPG', size: { width: number; height: number; fps: number }, service: Service = shared): Promise<RtpCounter> {
  const call = (method: string, path: string, body?: unknown) => service.server.call(method, path, body)
  const port = freePort()
  const endpoint = await RtpCounter.open(port)
  counters.push(endpoint)
  const r = await call('POST', '/api/devices/configure_stream', {
    bus_info,
    stream_type: 'UDP',
    stream_format: { width: size.width, height: size.height, interval: { numerator: 1, denominator: size.fps } },
    encode_type: encode,
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port }],
  })
  expect(r.status).toBe(200)
  await until(`the mount of ${bus_info}`, () => call('GET', '/api/rtsp'), (r) => r.body.mounts.some((m: any) => m.bus_info === bus_info && m.path === `/${bus_info}`), 15_000)
  await waitFor('packets at the UDP endpoint', () => endpoint.packets > 10, 15_000)
  return endpoint
}

async function unstream(bus_info: string): Promise<void> {
  expect((await call('POST', '/api/devices/unconfigure_stream', { bus_info })).status).toBe(200)
}

/** Starts an rtspsrc client; resolves with it once it decoded a frame, and how long that took. */
/** `firstMs`: from the server's answer to PLAY to the first decoded frame, the server's part of a viewer's wait
 * (the client's own start-up, which a loaded machine stretches to seconds, is not ours to bound). */
async function decodeWith(path: string, protocol: 'tcp' | 'udp', service: Service = shared): Promise<{ rx: Receiver; firstMs: number }> {
  const t0 = Date.now()
  const rx = Receiver.rtsp(url(path, service), protocol)
  receivers.push(rx)
  const first = await waitFor(`a frame decoded over RTSP/${protocol}`, () => rx.firstFrameAfter(t0), 15_000)
  const played = await waitFor(`rtspsrc's PLAY answered (its progress message)`, () => rx.playedAt, 5_000)
  return { rx, firstMs: first - played }
}

test('H.264 over UDP and TCP: ffprobe sees the configured codec and size; rtspsrc decodes frames of that size at its rate, the first within 2 s of PLAY', async () => {
  const size = { width: 640, height: 480, fps: 30 }
  await stream(EHD, 'H264', size)
  try {
    // The device says where to watch it (on the host the API was asked by: 127.0.0.1 here).
    const dev = (await call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD)
    expect(dev.watch.rtsp).toBe(url(EHD))
    for (const transport of ['udp', 'tcp'] as const) {
      const probed = await ffprobe(url(EHD), transport)
      // Over UDP a loaded machine may drop a packet at ffprobe's own socket: its H.264 decoder then says so
      // ("Missing reference picture"). Anything else it prints is the session's fault.
      const decoderOnly = (line: string) => transport === 'udp' && /^\[h264 @ 0x[0-9a-f]+\]/.test(line)
      expect(probed.error.split('\n').filter((l) => l && !decoderOnly(l))).toEqual([])
      expect(probed.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['h264', 640, 480]])

      const { rx, firstMs } = await decodeWith(EHD, transport)
      // The kept group of pictures is sent at PLAY, so the first frame decodes at once; 2 s leaves room for load.
      expect(firstMs, `${transport}: ms from PLAY to the first decoded frame`).toBeLessThan(2000)
      await waitFor('a decoded size', () => rx.width > 0)
      expect([rx.width, rx.height]).toEqual([640, 480])
      // The rate: frames decoded over two seconds of steady state (generous bounds: a loaded machine). The
      // window opens a second after the first frame: the kept group sent at PLAY (up to a second of frames at
      // once) is decoded by then even on a loaded machine, and would otherwise count as a faster rate.
      const from = rx.frames[0]! + 1000
      await waitFor('three more seconds of frames', () => rx.frames.at(-1)! >= from + 2000, 10_000)
      const perSecond = rx.framesBetween(from, from + 2000) / 2
      expect(perSecond, `${transport}: frames decoded per second`).toBeGreaterThan(size.fps * 0.7)
      expect(perSecond, `${transport}: frames decoded per second`).toBeLessThan(size.fps * 1.3)
      await rx.stop()
    }
  } finally {
    await unstream(EHD)
  }
}, 90_000)

test('MJPG: the camera JPEGs are served as JPEG over RTSP (never re-encoded), at the configured size', async () => {
  await stream(WEBCAM, 'MJPG', { width: 640, height: 480, fps: 30 })
  try {
    const probed = await ffprobe(url(WEBCAM), 'tcp')
    expect(probed.error).toBe('')
    expect(probed.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['mjpeg', 640, 480]])
    const { rx } = await decodeWith(WEBCAM, 'udp')
    await waitFor('a decoded size', () => rx.width > 0)
    expect([rx.width, rx.height]).toEqual([640, 480])
  } finally {
    await unstream(WEBCAM)
  }
}, 60_000)

test('three clients at once, and clients joining and leaving cost the UDP endpoint no packet', async () => {
  const endpoint = await stream(EHD, 'H264', { width: 640, height: 480, fps: 30 })
  try {
    const skippedBefore = endpoint.skipped()
    // Three independent clients at once: rtspsrc over UDP and TCP, and ffprobe, all decoding.
    const [udp, tcp, probed] = await Promise.all([decodeWith(EHD, 'udp'), decodeWith(EHD, 'tcp'), ffprobe(url(EHD), 'udp')])
    expect(probed.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['h264', 640, 480]])
    const frames = [udp.rx.frames.length, tcp.rx.frames.length]
    await waitFor('both rtspsrc clients still decoding', () => udp.rx.frames.length > frames[0]! + 15 && tcp.rx.frames.length > frames[1]! + 15, 15_000)
    // More come and go while the two watch.
    for (let i = 0; i < 3; i++) {
      const { rx } = await decodeWith(EHD, i % 2 ? 'tcp' : 'udp')
      await rx.stop()
    }
    await udp.rx.stop()
    await tcp.rx.stop()
    // The last client leaving and the next joining at once: served, not 503 (server.py keeps its media).
    for (let i = 0; i < 3; i++) {
      const { rx } = await decodeWith(EHD, 'tcp')
      await rx.stop()
    }
    const packets = endpoint.packets
    await waitFor('the endpoint still receiving', () => endpoint.packets > packets + 30, 10_000)
    expect(endpoint.skipped() - skippedBefore).toBe(0)
  } finally {
    await unstream(EHD)
  }
}, 90_000)

test('a leader/follower group: one session with a video track per camera at the leader; the follower alone at its own path', async () => {
  expect((await call('POST', '/api/devices/add_follower', { leader_bus_info: LEADER, follower_bus_info: FOLLOWER })).status).toBe(200)
  try {
    await stream(LEADER, 'H264', { width: 640, height: 480, fps: 30 })
    await until('the follower mount', () => call('GET', '/api/rtsp'), (r) => r.body.mounts.some((m: any) => m.path === `/${FOLLOWER}`), 15_000)
    const mounts = (await call('GET', '/api/rtsp')).body.mounts
    expect(mounts.find((m: any) => m.path === `/${LEADER}`)).toMatchObject({ tracks: 2, encoding: 'H264' })
    const group = await ffprobe(url(LEADER), 'tcp')
    expect(group.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['h264', 640, 480], ['h264', 640, 480]])
    const follower = await ffprobe(url(FOLLOWER), 'udp')
    expect(follower.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['h264', 640, 480]])
  } finally {
    await unstream(LEADER)
    await call('POST', '/api/devices/remove_follower', { leader_bus_info: LEADER, follower_bus_info: FOLLOWER })
  }
}, 60_000)

test('a nickname alias while the nickname is unique; a stopped stream loses its mount (its clients are ended, DESCRIBE says 404)', async () => {
  const nickname = 'Front Cam'
  expect((await call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname })).status).toBe(200)
  try {
    await stream(EHD, 'H264', { width: 640, height: 480, fps: 30 })
    await until('the alias', () => call('GET', '/api/rtsp'), (r) => r.body.mounts.some((m: any) => m.path === '/Front%20Cam'), 15_000)
    const alias = await ffprobe(url('Front%20Cam'), 'tcp')
    expect(alias.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['h264', 640, 480]])
    // A second camera with the same nickname: the name no longer says which, so the alias goes.
    expect((await call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname })).status).toBe(200)
    await until('the alias gone', () => call('GET', '/api/rtsp'), (r) => !r.body.mounts.some((m: any) => m.path === '/Front%20Cam'), 15_000)
    expect((await ffprobe(url('Front%20Cam'), 'tcp')).error).toContain('404')

    const { rx } = await decodeWith(EHD, 'tcp')
    await unstream(EHD)
    await until('the mount gone', () => call('GET', '/api/rtsp'), (r) => !r.body.mounts.some((m: any) => m.bus_info === EHD), 15_000)
    await waitFor('the client ended by the server', () => rx.exited, 15_000)
    const gone = await ffprobe(url(EHD), 'tcp')
    expect(gone.streams).toEqual([])
    expect(gone.error).toContain('404')
  } finally {
    await call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: '' })
    await call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: '' })
  }
}, 60_000)

test('restart_stream: the old sessions end, and the path serves the new stream', async () => {
  await stream(EHD, 'H264', { width: 640, height: 480, fps: 30 })
  try {
    const { rx } = await decodeWith(EHD, 'tcp')
    expect((await call('POST', '/api/devices/restart_stream', { bus_info: EHD })).status).toBe(200)
    await waitFor('the old client ended by the server', () => rx.exited, 15_000)
    const again = await decodeWith(EHD, 'udp')
    await waitFor('a decoded size', () => again.rx.width > 0)
    expect([again.rx.width, again.rx.height]).toEqual([640, 480])
    await again.rx.stop()
  } finally {
    await unstream(EHD)
  }
}, 60_000)

test('--max-viewers: a client beyond the cap on a camera gets 503 at DESCRIBE or SETUP (its nickname alias counts with it; a DESCRIBE takes a place); the others play on; a freed place is taken again; the UDP endpoint loses nothing', async () => {
  const capped = await startService({ maxViewers: 2 })
  const viewers = async () => (await capped.server.call('GET', '/api/rtsp')).body.mounts.find((m: any) => m.path === `/${EHD}`)?.viewers
  const raw: RtspConnection[] = []
  const DESCRIBE = { Accept: 'application/sdp' }
  try {
    expect((await capped.server.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'Capped' })).status).toBe(200)
    const endpoint = await stream(EHD, 'H264', { width: 640, height: 480, fps: 30 }, capped)
    await until('the alias', () => capped.server.call('GET', '/api/rtsp'), (r) => r.body.mounts.some((m: any) => m.path === '/Capped'), 15_000)
    expect((await capped.server.call('GET', '/api/rtsp')).body.max_viewers).toBe(2)
    const skippedBefore = endpoint.skipped()

    const first = await decodeWith(EHD, 'udp', capped)
    await until('one viewer counted', viewers, (n) => n === 1, 15_000)
    // A raw client that only DESCRIBEs takes the last place (it no longer escapes the cap) …
    const late = await RtspConnection.open(capped.rtspPort)
    raw.push(late)
    const described = await late.request('DESCRIBE', url(EHD, capped), DESCRIBE)
    expect(described.status).toBe('RTSP/1.0 200 OK')
    await until('two places taken', viewers, (n) => n === 2, 15_000)
    // … so a client at either path is refused at DESCRIBE, on the wire and as ffprobe reports it.
    for (const path of [EHD, 'Capped']) {
      const third = await RtspConnection.open(capped.rtspPort)
      raw.push(third)
      expect((await third.request('DESCRIBE', url(path, capped), DESCRIBE)).status).toBe('RTSP/1.0 503 Service Unavailable')
    }
    expect((await ffprobe(url(EHD, capped), 'tcp')).error).toContain('503')
    // The describing client leaves: its place is free, and a second client takes it through the alias.
    late.close()
    await until('the place freed', viewers, (n) => n === 1, 15_000)
    const second = await decodeWith('Capped', 'tcp', capped)
    await until('two viewers counted', viewers, (n) => n === 2, 15_000)
    // The two keep playing.
    const frames = [first.rx.frames.length, second.rx.frames.length]
    await waitFor('both clients still decoding', () => first.rx.frames.length > frames[0]! + 15 && second.rx.frames.length > frames[1]! + 15, 15_000)
    expect([first.rx.exited, second.rx.exited]).toEqual([false, false])

    // One leaves (killed: its connection drops): its place is free again, and a new client plays.
    await first.rx.stop()
    await until('the place freed', viewers, (n) => n === 1, 15_000)
    const next = await decodeWith(EHD, 'udp', capped)
    await waitFor('a decoded size', () => next.rx.width > 0)
    expect([next.rx.width, next.rx.height]).toEqual([640, 480])
    await until('two viewers again', viewers, (n) => n === 2, 15_000)
    expect(second.rx.exited).toBe(false)
    await next.rx.stop()
    await second.rx.stop()
    await until('no viewer left', viewers, (n) => n === 0, 15_000)

    const packets = endpoint.packets
    await waitFor('the endpoint still receiving', () => endpoint.packets > packets + 30, 10_000)
    expect(endpoint.skipped() - skippedBefore).toBe(0)
  } finally {
    for (const connection of raw) connection.close()
    await capped.server.stop()
  }
}, 90_000)

test('the helper is supervised: killed, or stuck (no answer to its pings), it comes back with every mount; the plugin stopped, no helper is left', async () => {
  // The stuck helper is judged after --rtsp-helper-timeout: 4 s here (12 s by default), still twice the
  // longest pause of a ready helper seen under load.
  const own = await startService({ rtspHelperTimeoutSeconds: 4 })
  let serving: number[] = []
  try {
    const port = freePort()
    const endpoint = await RtpCounter.open(port)
    counters.push(endpoint)
    const r = await own.server.call('POST', '/api/devices/configure_stream', {
      bus_info: EHD,
      stream_type: 'UDP',
      stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 30 } },
      encode_type: 'H264',
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port }],
    })
    expect(r.status).toBe(200)
    await until('the mount', () => own.server.call('GET', '/api/rtsp'), (r) => r.body.mounts.length > 0, 15_000)
    const [helper, ...more] = helperPids(own.rtspPort)
    expect(more).toEqual([])
    process.kill(helper!, 'SIGKILL')
    await until('the helper back', () => own.server.call('GET', '/api/health'), (r) => r.body.plugins.rtsp.state === 'ok' && r.body.plugins.rtsp.restarts === 1, 15_000)
    const probed = await ffprobe(`rtsp://127.0.0.1:${own.rtspPort}/${EHD}`, 'tcp')
    expect(probed.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['h264', 640, 480]])
    // A helper that stops answering (its main loop stuck, here stopped with SIGSTOP) looks alive but accepts
    // no client: it is killed and restarted as well.
    const [stuck] = helperPids(own.rtspPort)
    process.kill(stuck!, 'SIGSTOP')
    await until('the stuck helper replaced', () => own.server.call('GET', '/api/health'), (r) => r.body.plugins.rtsp.state === 'ok' && r.body.plugins.rtsp.restarts === 2, 30_000)
    expect(alive(stuck!)).toBe(false)
    await until('the mount again', () => own.server.call('GET', '/api/rtsp'), (r) => r.body.mounts.length > 0, 15_000)
    const again = await ffprobe(`rtsp://127.0.0.1:${own.rtspPort}/${EHD}`, 'tcp')
    expect(again.streams.map((s) => [s.codec_name, s.width, s.height])).toEqual([['h264', 640, 480]])
    serving = helperPids(own.rtspPort)
    expect(serving.length).toBe(1)
  } finally {
    await own.server.stop()
  }
  await waitFor('no helper left', () => serving.every((pid) => !alive(pid)) && helperPids(own.rtspPort).length === 0, 10_000)
  expect((await ffprobe(`rtsp://127.0.0.1:${own.rtspPort}/${EHD}`, 'tcp')).error).toMatch(/refused/i)
}, 60_000)

test('kill -9 of the service takes its RTSP helper along (parent-death signal)', async () => {
  const rtspPort = freeTcpPort()
  const httpPort = freeTcpPort()
  const dataDir = mkdtempSync(join(tmpdir(), 'periscope-rtsp-'))
  const service = Bun.spawn(
    [process.execPath, join(import.meta.dir, '../../core/main.ts'), '--host', '127.0.0.1', '--port', String(httpPort), '--data-dir', dataDir, '--simulate', 'default', '--rtsp-port', String(rtspPort), '--log-level', 'error', '--cockpit-port', 'off', '--cockpit-streams-port', 'off'],
    { stdout: 'ignore', stderr: 'inherit', cwd: join(import.meta.dir, '../..') },
  )
  try {
    const health = () => fetch(`http://127.0.0.1:${httpPort}/api/health`).then((r) => r.json() as Promise<any>).catch(() => null)
    await until('the service\'s RTSP server ready', health, (h) => h?.plugins?.rtsp?.state === 'ok', 30_000)
    const helpers = helperPids(rtspPort, service.pid)
    expect(helpers.length).toBe(1)
    service.kill('SIGKILL')
    await service.exited
    await waitFor('the helper gone', () => helpers.every((pid) => !alive(pid)), 10_000)
  } finally {
    await stopProcess(service)
    rmSync(dataDir, { recursive: true, force: true })
  }
}, 45_000)

test("every RTSP client's connection has TCP_NODELAY: interleaved frames never wait for a viewer's delayed ACK", async () => {
  // The option is read from the helper's own socket, in the kernel: its fd found by the connection's
  // inode (/proc/net/tcp), copied with pidfd_getfd, asked with getsockopt. Without it, Nagle's algorithm
  // held about 1 % of frames 7–15 ms (README, RTSP benchmark).
  const [helper] = helperPids(shared.rtspPort)
  expect(helper).toBeGreaterThan(0)
  const client = connect(shared.rtspPort, '127.0.0.1')
  await new Promise<void>((resolve, reject) => client.once('connect', resolve).once('error', reject))
  try {
    const probe = `
import ctypes, os, socket, sys, time
pid, server_port, client_port = (int(a) for a in sys.argv[1:4])
def inode():
    for line in open("/proc/net/tcp").read().splitlines()[1:]:
        f = line.split()
        if int(f[1].split(":")[1], 16) == server_port and int(f[2].split(":")[1], 16) == client_port:
            return f[9]
def fd_of(ino):
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") == f"socket:[{ino}]":
                return int(fd)
        except OSError:
            pass
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(pid)
deadline = time.time() + 10
while True:
    fd = fd_of(inode())
    if fd is not None:
        copy = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
        if copy < 0:
            sys.exit(f"pidfd_getfd: errno {ctypes.get_errno()}")
        s = socket.socket(fileno=copy)
        value = s.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
        s.detach()
        os.close(copy)
        # Set as the helper hears of the client: wait for that, not for a time.
        if value or time.time() > deadline:
            print(value)
            break
    elif time.time() > deadline:
        sys.exit("the helper holds no socket for this connection")
    time.sleep(0.05)
`
    const run = Bun.spawnSync(['/usr/bin/python3', '-c', probe, String(helper), String(shared.rtspPort), String(client.localPort)], { stdout: 'pipe', stderr: 'pipe', timeout: 20_000 })
    expect(run.stderr.toString()).toBe('')
    expect(run.stdout.toString().trim()).toBe('1')
  } finally {
    client.destroy()
  }
}, 30_000)

test('500 idle connections: the helper keeps a bounded thread pool, closes those past --rtsp-max-connections at once and the idle ones after --rtsp-idle-timeout; a real client then plays', async () => {
  const own = await startService({ rtspMaxConnections: 100, rtspIdleTimeoutSeconds: 3 })
  const sockets: Socket[] = []
  try {
    await stream(EHD, 'H264', { width: 640, height: 480, fps: 30 }, own)
    await until('the mount', () => own.server.call('GET', '/api/rtsp'), (r) => r.body.mounts.some((m: any) => m.path === `/${EHD}`), 15_000)
    const [helper] = helperPids(own.rtspPort)
    const threads = () => Number(/Threads:\s+(\d+)/.exec(readFileSync(`/proc/${helper}/status`, 'utf8'))![1])
    const before = threads()
    let closed = 0
    for (let batch = 0; batch < 5; batch++) {
      const opened = Array.from({ length: 100 }, () => {
        const socket = connect(own.rtspPort, '127.0.0.1')
        socket.on('error', () => {})
        socket.on('close', () => closed++)
        sockets.push(socket)
        return new Promise<void>((resolve) => socket.once('connect', () => resolve()).once('close', () => resolve()))
      })
      await Promise.all(opened)
    }
    // Those past the cap are closed as soon as they are accepted, the admitted ones (which never ask
    // anything) after the idle timeout: every one ends, however the kernel paces the accepts.
    let most = before
    await waitFor('every connection closed by the helper', () => (most = Math.max(most, threads())) && closed === 500, 90_000).catch((e) => {
      throw new Error(`${e.message}: ${closed} closed, ${threads()} threads, hits ${JSON.stringify([...own.server.ctx.registry.limitHits()])}`)
    })
    // A thread per connection made 392 threads for 500; now at most the pool's 16 serve them.
    expect(most - before).toBeLessThanOrEqual(16)
    const hits = own.server.ctx.registry.limitHits()
    expect(hits.get('rtsp_connections')).toBeGreaterThan(0)
    expect(hits.get('rtsp_idle')).toBeGreaterThanOrEqual(100)
    expect((hits.get('rtsp_connections') ?? 0) + (hits.get('rtsp_idle') ?? 0)).toBe(500)
    const client = await decodeWith(EHD, 'tcp', own)
    await waitFor('a decoded size', () => client.rx.width > 0, 20_000)
    expect([client.rx.width, client.rx.height]).toEqual([640, 480])
    // A client with a session is not idle: still playing after two idle periods.
    const frames = client.rx.frames.length
    await waitFor('7 s more of frames', () => client.rx.frames.length > frames + 7 * 25, 30_000)
    expect(client.rx.exited).toBe(false)
    await client.rx.stop()
  } finally {
    for (const socket of sockets) socket.destroy()
    await own.server.stop()
  }
}, 120_000)

