// MJPEG over HTTP and snapshots (plugins/jpeg), read by real clients: GStreamer's souphttpsrc +
// multipartdemux + jpegdec, ffprobe's mpjpeg demuxer, and jpegdec for every snapshot. An MJPG camera's
// parts are byte for byte what GStreamer's rtpjpegdepay makes of the packets its UDP endpoint receives
// (its own JPEGs, never re-encoded); the RFC 2435 depayloader equals rtpjpegdepay on the same packets.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createHash } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { loadPlugin } from '../../core/loader'
import { startTestServer, until, type TestServer } from '../helpers'
import { JpegSplitter, jpegSize } from '../../plugins/jpeg/jpeg'
import { readTimecode } from '../timecode'
import { RtpJpegDepayloader } from '../../plugins/jpeg/rtp-jpeg'
import { requireChromium, showImage, withPage } from './browser'
import { eachLine, freePort, requireGStreamer, RtpCounter, tempDir, udpBound, waitFor } from './gstreamer.helpers'

const WEBCAM = 'usb-0000:00:14.0-4' // simulated Logitech: MJPG only
const EHD = 'usb-0000:00:14.0-1' // simulated exploreHD: H.264

let s: TestServer
const spawned: Subprocess[] = []

beforeAll(async () => {
  requireGStreamer()
  const plugins = await Promise.all(['mock', 'cameras', 'preferences', 'gstreamer', 'jpeg'].map(loadPlugin))
  // A snapshot's decoder stays 3 s (not 30), so a test sees it leave.
  s = await startTestServer({ plugins, config: { simulate: 'default', snapshotWarmSeconds: 3 } })
}, 30_000)

afterAll(async () => {
  for (const proc of spawned) proc.kill('SIGKILL')
  await s?.stop()
})

function gst(args: string[]): Subprocess<'ignore', 'pipe', 'pipe'> {
  const proc = Bun.spawn(['gst-launch-1.0', ...args], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' })
  spawned.push(proc)
  return proc
}

async function stop(proc: Subprocess): Promise<void> {
  proc.kill('SIGKILL')
  await proc.exited
}

/** Streams `bus_info` as RTP over UDP to `port` (127.0.0.1) in `encode_type` at width×height, 30 fps. */
async function stream(bus_info: string, encode_type: 'MJPG' | 'H264', port: number, width = 640, height = 480): Promise<void> {
  const r = await s.call('POST', '/api/devices/configure_stream', {
    bus_info,
    stream_type: 'UDP',
    encode_type,
    stream_format: { width, height, interval: { numerator: 1, denominator: 30 } },
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port }],
  })
  expect(r.status).toBe(200)
  await until(`${bus_info} running`, async () => (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === bus_info)?.stream_status?.state, (st) => st === 'running', 20_000)
}

async function stopStream(bus_info: string): Promise<void> {
  const dev = (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === bus_info)
  await s.call('POST', '/api/devices/configure_stream', {
    bus_info,
    stream_type: 'UDP',
    encode_type: dev.stream.encode_type,
    stream_format: { width: dev.stream.width, height: dev.stream.height, interval: dev.stream.interval },
    enabled: false,
    endpoints: dev.stream.endpoints,
  })
  await until(`${bus_info} stopped`, async () => s.ctx.registry.get('streamer')!.live(bus_info), (live) => live === null, 15_000)
}

/** A real decoder's verdict on a JPEG: jpegdec's output size, or it throws with gst's error. */
async function decode(jpeg: Uint8Array): Promise<{ width: number; height: number }> {
  const file = join(tempDir('periscope-jpeg-'), 'frame.jpg')
  writeFileSync(file, jpeg)
  const proc = gst(['-v', 'filesrc', `location=${file}`, '!', 'jpegparse', '!', 'jpegdec', '!', 'fakesink'])
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  const caps = /jpegdec\d*\.GstPad:src: caps = video\/x-raw.*?width=\(int\)(\d+), height=\(int\)(\d+)/.exec(out)
  if (code !== 0 || !caps) throw new Error(`jpegdec could not decode the JPEG (exit ${code}): ${err.trim()}`)
  return { width: Number(caps[1]), height: Number(caps[2]) }
}

/** GStreamer as an MJPEG client: souphttpsrc ! multipartdemux ! jpegdec, each decoded frame with its time and size. */
class MjpegClient {
  frames: number[] = []
  width = 0
  height = 0
  readonly proc: Subprocess<'ignore', 'pipe', 'pipe'>
  constructor(url: string) {
    this.proc = gst(['-v', 'souphttpsrc', `location=${url}`, 'is-live=true', '!', 'multipartdemux', '!', 'jpegdec', '!', 'identity', 'name=rx', 'silent=false', '!', 'fakesink', 'sync=false'])
    void eachLine(this.proc.stdout, (line) => {
      if (line.includes('GstIdentity:rx: last-message = chain')) this.frames.push(performance.now())
      const caps = /GstIdentity:rx\.GstPad:src: caps = video\/x-raw.*?width=\(int\)(\d+), height=\(int\)(\d+)/.exec(line)
      if (caps) [this.width, this.height] = [Number(caps[1]), Number(caps[2])]
    })
  }
}

/** Reads `count` parts of an MJPEG answer with fetch, by their Content-Length, then hangs up. */
async function readParts(url: string, count: number): Promise<{ parts: Uint8Array[]; contentType: string }> {
  const abort = new AbortController()
  const res = await fetch(url, { signal: abort.signal })
  expect(res.status).toBe(200)
  const contentType = res.headers.get('content-type') ?? ''
  const reader = res.body!.getReader()
  let buffer = new Uint8Array(0)
  const parts: Uint8Array[] = []
  const text = new TextDecoder('latin1')
  while (parts.length < count) {
    const { value, done } = await reader.read()
    if (done) break
    const joined = new Uint8Array(buffer.length + value.length)
    joined.set(buffer)
    joined.set(value, buffer.length)
    buffer = joined
    // A loaded machine delivers several parts in one chunk: `count` parts are taken, no more.
    while (parts.length < count) {
      const head = text.decode(buffer.subarray(0, Math.min(buffer.length, 200)))
      const end = head.indexOf('\r\n\r\n')
      if (end < 0) break
      const length = Number(/Content-Length: (\d+)/i.exec(head.slice(0, end))?.[1])
      expect(head.startsWith('--')).toBe(true)
      if (buffer.length < end + 4 + length + 2) break
      parts.push(buffer.slice(end + 4, end + 4 + length))
      buffer = buffer.slice(end + 4 + length + 2)
    }
  }
  abort.abort()
  return { parts, contentType }
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex')
const snapshot = (bus_info: string, query = '') => fetch(`${s.url}/api/streams/${bus_info}/snapshot.jpg${query}`)

/** Transcoder children of this process (the jpeg plugin's H.264 → JPEG), by their command line. */
/** The frames multifilesink has finished in `dir` (it writes each under a temporary name, then renames it). */
const finished = (dir: string) => readdirSync(dir).filter((f) => /^\d+\.jpg$/.test(f))

function transcoders(): number[] {
  const out = Bun.spawnSync(['ps', '-eo', 'pid=,ppid=,args=']).stdout.toString()
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => Number(f[1]) === process.pid && f.join(' ').includes('gst-launch-1.0') && f.includes('jpegenc') && f.includes('udpsrc'))
    .map((f) => Number(f[0]))
}

test('RFC 2435 depayloader: the same JPEGs as GStreamer\'s rtpjpegdepay from the same packets, byte for byte (4:2:0 and 4:2:2); a frame missing a packet is dropped', async () => {
  for (const format of ['I420', 'YUY2']) {
    // Packets from GStreamer's payloader, kept in order: its SSRC only (another suite's camera may still
    // send to a port its test let go, and this one took).
    const packets: Uint8Array[] = []
    const port = freePort()
    const ssrc = (Math.random() * 0x7fffffff) >>> 0
    const fromPayloader = (buf: Buffer) => buf.length >= 12 && buf.readUInt32BE(8) === ssrc
    const socket = await Bun.udpSocket({ hostname: '127.0.0.1', port, socket: { data: (_s, buf) => void (fromPayloader(buf) && packets.push(new Uint8Array(buf))) } })
    const pay = gst(['videotestsrc', 'num-buffers=20', 'pattern=ball', '!', `video/x-raw,format=${format},width=640,height=480,framerate=30/1`, '!', 'jpegenc', '!', 'rtpjpegpay', 'mtu=1400', `ssrc=${ssrc}`, '!', 'udpsink', 'host=127.0.0.1', `port=${port}`])
    await pay.exited
    await waitFor('every packet', () => packets.some((p) => p[1]! & 0x80) && packets.length > 20, 5_000)
    await Bun.sleep(100)
    socket.close()

    const ours = new RtpJpegDepayloader({ width: 640, height: 480 })
    const mine = packets.map((p) => ours.push(p)).filter((f): f is Uint8Array => f !== null)
    expect(mine.length).toBeGreaterThanOrEqual(15)

    // rtpjpegdepay from the same packets.
    const dir = tempDir('periscope-depay-')
    const rx = freePort()
    const depay = gst(['udpsrc', 'address=127.0.0.1', `port=${rx}`, 'buffer-size=4194304', 'caps=application/x-rtp,media=video,encoding-name=JPEG,clock-rate=90000,payload=26', '!', 'rtpjpegdepay', '!', 'multifilesink', `location=${dir}/%05d.jpg`])
    await waitFor('rtpjpegdepay bound', () => udpBound(depay.pid, rx), 15_000)
    const sender = await Bun.udpSocket({})
    for (const p of packets) {
      sender.send(p, rx, '127.0.0.1')
      if (p[1]! & 0x80) await Bun.sleep(5) // paced by frame, as a camera sends
    }
    await waitFor(`rtpjpegdepay's ${mine.length} frames`, () => finished(dir).length >= mine.length, 15_000)
    sender.close()
    await stop(depay)
    const theirs = finished(dir).sort().map((f) => new Uint8Array(readFileSync(join(dir, f))))
    expect(theirs.map(sha)).toEqual(mine.map(sha))
    expect(new Set(mine.map(sha)).size).toBeGreaterThan(10) // a moving picture: frames differ
    expect(await decode(mine[0]!)).toEqual({ width: 640, height: 480 })

    // One packet lost in the middle of a frame: that frame is not handed on, the next ones are.
    const lossy = new RtpJpegDepayloader({ width: 640, height: 480 })
    const cut = packets.findIndex((p, i) => i > 0 && !(p[1]! & 0x80) && !(packets[i - 1]![1]! & 0x80))
    const frames = packets.filter((_, i) => i !== cut).map((p) => lossy.push(p)).filter((f): f is Uint8Array => f !== null)
    expect(frames.length).toBe(mine.length - 1)
    expect(lossy.dropped).toBe(1)
    expect(frames.every((f) => mine.some((m) => sha(m) === sha(f)))).toBe(true)
  }
}, 60_000)

test('JpegSplitter cuts concatenated JPEGs at their EOI, whatever the chunking', async () => {
  const proc = gst(['-q', 'videotestsrc', 'num-buffers=5', 'pattern=snow', '!', 'video/x-raw,width=320,height=240', '!', 'jpegenc', '!', 'fdsink', 'fd=1'])
  const bytes = new Uint8Array(await new Response(proc.stdout).arrayBuffer())
  for (const size of [1, 7, 4096, bytes.length]) {
    const splitter = new JpegSplitter()
    const frames: Uint8Array[] = []
    for (let at = 0; at < bytes.length; at += size) frames.push(...splitter.push(bytes.subarray(at, at + size)))
    expect(frames.length).toBe(5)
    expect(frames.reduce((n, f) => n + f.length, 0)).toBe(bytes.length)
    expect(frames.map(jpegSize)).toEqual(Array(5).fill({ width: 320, height: 240 }))
  }
}, 30_000)

test('MJPG camera: MJPEG parts are the camera\'s own JPEGs — identical to rtpjpegdepay\'s output at the UDP endpoint — and decode at the stream\'s size and rate', async () => {
  // The UDP endpoint is GStreamer itself, depayloading every frame to a file.
  const dir = tempDir('periscope-endpoint-')
  const port = freePort()
  // A large socket buffer: on a loaded machine a default one overflows, and a frame short of a packet
  // is not the camera's JPEG.
  const endpoint = gst(['udpsrc', 'address=127.0.0.1', `port=${port}`, 'buffer-size=8388608', 'caps=application/x-rtp,media=video,encoding-name=JPEG,clock-rate=90000,payload=26', '!', 'rtpjpegdepay', '!', 'multifilesink', `location=${dir}/%05d.jpg`])
  await waitFor('the endpoint bound', () => udpBound(endpoint.pid, port), 15_000)
  try {
    await stream(WEBCAM, 'MJPG', port)
    // The device says where: its watch links, on the host the request came to.
    const watch = (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === WEBCAM).watch
    const url = `${s.url}/api/streams/${encodeURIComponent(WEBCAM)}/mjpeg`
    expect(watch).toMatchObject({ mjpeg: url, snapshot: `${s.url}/api/streams/${encodeURIComponent(WEBCAM)}/snapshot.jpg` })
    const { parts, contentType } = await readParts(url, 10)
    expect(contentType).toBe('multipart/x-mixed-replace; boundary=periscope-frame')
    expect(parts.length).toBe(10)
    const atEndpoint = () => new Set(finished(dir).map((f) => sha(readFileSync(join(dir, f)))))
    await waitFor('every part among the endpoint\'s frames', () => parts.every((p) => atEndpoint().has(sha(p))), 10_000)
    expect(await decode(parts[9]!)).toEqual({ width: 640, height: 480 })

    // A real MJPEG client decodes the stream at the camera's size, at its rate: as many frames as the
    // UDP endpoint received over the same two seconds (a loaded 2-core box may drop a few for a slow
    // viewer, never most of them).
    const client = new MjpegClient(url)
    await waitFor('frames at the MJPEG client', () => client.frames.length >= 10, 20_000)
    const from = client.frames.at(-1)!
    const endpointFrom = readdirSync(dir).length
    await waitFor('two more seconds of frames', () => client.frames.at(-1)! - from >= 2000, 20_000)
    const decoded = client.frames.filter((t) => t > from).length
    const sent = readdirSync(dir).length - endpointFrom
    console.log(`MJPEG client: ${decoded} frames decoded while the UDP endpoint received ${sent}`)
    expect({ width: client.width, height: client.height }).toEqual({ width: 640, height: 480 })
    expect(sent).toBeGreaterThan(0)
    expect(decoded).toBeGreaterThanOrEqual(sent * 0.5)
    await stop(client.proc)
  } finally {
    await stopStream(WEBCAM)
    await stop(endpoint)
  }
}, 90_000)

test('H.264 camera: MJPEG decodes at the stream\'s size; ffprobe reads it; the transcoder is one child for all viewers and exits with the last one', async () => {
  const port = freePort()
  try {
    await stream(EHD, 'H264', port)
    const url = `${s.url}/api/streams/${EHD}/mjpeg`
    const a = new MjpegClient(url)
    const b = new MjpegClient(url)
    await waitFor('frames at both clients', () => a.frames.length >= 10 && b.frames.length >= 10, 30_000)
    expect([a.width, a.height, b.width, b.height]).toEqual([640, 480, 640, 480])
    expect(transcoders().length).toBe(1)
    const probe = Bun.spawn(['ffprobe', '-v', 'error', '-f', 'mpjpeg', '-read_intervals', '%+#5', '-count_frames', '-show_entries', 'stream=codec_name,width,height,nb_read_frames', '-of', 'json', url], { stdout: 'pipe', stderr: 'pipe' })
    spawned.push(probe)
    const [probed, code] = (await Promise.all([new Response(probe.stdout).json(), probe.exited])) as [any, number]
    expect(code).toBe(0)
    expect(probed.streams[0]).toMatchObject({ codec_name: 'mjpeg', width: 640, height: 480 })
    expect(Number(probed.streams[0].nb_read_frames)).toBeGreaterThanOrEqual(5)
    // Both hang up: the last one gone, the transcoder exits and the feed is forgotten.
    await stop(a.proc)
    expect(transcoders().length).toBe(1)
    await stop(b.proc)
    await waitFor('no transcoder left', () => transcoders().length === 0, 15_000)
    await until('health shows no feed', async () => (await s.call('GET', '/api/health')).body.plugins.jpeg, (h: any) => h.feeds === 0 && h.transcoders === 0, 10_000)
  } finally {
    await stopStream(EHD)
  }
}, 90_000)

test('snapshots: a decodable JPEG of the stream\'s size and of ?height=; concurrent requests share one capture, kept at most 1 s; MJPG and H.264', async () => {
  for (const [bus_info, encode] of [[WEBCAM, 'MJPG'], [EHD, 'H264']] as const) {
    const port = freePort()
    try {
      await stream(bus_info, encode, port)
      const [r1, r2] = await Promise.all([snapshot(bus_info), snapshot(bus_info)])
      expect([r1.status, r2.status]).toEqual([200, 200])
      expect(r1.headers.get('content-type')).toBe('image/jpeg')
      expect(r1.headers.get('x-capture-id')).toBe(r2.headers.get('x-capture-id'))
      const full = new Uint8Array(await r1.arrayBuffer())
      expect(await decode(full)).toEqual({ width: 640, height: 480 })
      const [small1, small2] = await Promise.all([snapshot(bus_info, '?height=120'), snapshot(bus_info, '?height=120')])
      expect(await decode(new Uint8Array(await small1.arrayBuffer()))).toEqual({ width: 160, height: 120 })
      expect(small2.status).toBe(200)
      // After the 1 s the cache may keep an answer, a new capture.
      await Bun.sleep(1100)
      const r3 = await snapshot(bus_info)
      expect(r3.status).toBe(200)
      expect(r3.headers.get('x-capture-id')).not.toBe(r1.headers.get('x-capture-id'))
      await r3.arrayBuffer()
    } finally {
      await stopStream(bus_info)
    }
  }
  // The H.264 camera's warm decoder ends with its stream.
  await waitFor('no transcoder left', () => transcoders().length === 0, 15_000)
}, 90_000)

test("an H.264 snapshot is decoded from the tap's last group of pictures at once; its decoder then stays --snapshot-warm seconds, and the next snapshot is its newest frame, current, with no decode of its own", async () => {
  const port = freePort()
  try {
    await stream(EHD, 'H264', port)
    const { hub, member } = s.ctx.registry.get('streamer')!.live(EHD)!
    await waitFor('a kept group of pictures', () => hub.lastGop(member).length > 0, 20_000)
    const feedsBefore = (await s.call('GET', '/api/health')).body.plugins.jpeg.feeds
    const r = await snapshot(EHD)
    expect(r.status).toBe(200)
    // Not a wait for the next key frame: the tap's group, decoded once.
    expect(r.headers.get('x-snapshot-source')).toBe('group')
    expect(await decode(new Uint8Array(await r.arrayBuffer()))).toEqual({ width: 640, height: 480 })
    expect((await s.call('GET', '/api/health')).body.plugins.jpeg.feeds, 'MJPEG feeds').toBe(feedsBefore)
    const small = await snapshot(EHD, '?height=120')
    expect(await decode(new Uint8Array(await small.arrayBuffer()))).toEqual({ width: 160, height: 120 })
    // The decoder stays: once it has a frame, a snapshot (past the 1 s an answer is kept) is its newest.
    await until('the warm decoder', async () => (await s.call('GET', '/api/health')).body.plugins.jpeg.warm_snapshot_decoders, (n) => n === 1, 10_000)
    expect(transcoders().length, 'one decoder child').toBe(1)
    let warm: Response | null = null
    for (const deadline = Date.now() + 15_000; Date.now() < deadline && !warm; await Bun.sleep(1100)) {
      const asked = Date.now()
      const r2 = await snapshot(EHD)
      expect(r2.status).toBe(200)
      if (r2.headers.get('x-snapshot-source') !== 'decoder') {
        await r2.arrayBuffer()
        continue
      }
      warm = r2
      // Current: painted at most the 1 s a snapshot may be kept before it was asked for (simulated frames carry their capture time).
      const jpeg = new Uint8Array(await r2.arrayBuffer())
      expect(await decode(jpeg)).toEqual({ width: 640, height: 480 })
      const gray = Bun.spawnSync(['ffmpeg', '-v', 'error', '-i', '-', '-f', 'rawvideo', '-pix_fmt', 'gray', '-'], { stdin: jpeg })
      const code = readTimecode(new Uint8Array(gray.stdout), 640, 480)
      expect(code, 'the time code in the warm snapshot').not.toBeNull()
      expect(asked - code!.ms, 'how much older than the request the warm snapshot is (ms)').toBeLessThan(1000)
    }
    expect(warm, 'a snapshot from the warm decoder within 15 s').not.toBeNull()
    // --snapshot-warm (3 s here) without a snapshot: the decoder exits.
    await waitFor('the warm decoder gone', () => transcoders().length === 0, 15_000)
    expect((await s.call('GET', '/api/health')).body.plugins.jpeg.warm_snapshot_decoders).toBe(0)
  } finally {
    await stopStream(EHD)
  }
}, 60_000)

test('a snapshot of a stopped camera is a one-shot capture of its configured size; MJPEG of it is 409 with what to do', async () => {
  await stopStream(WEBCAM).catch(() => {})
  const r = await snapshot(WEBCAM)
  expect(r.status).toBe(200)
  const dev = (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === WEBCAM)
  expect(await decode(new Uint8Array(await r.arrayBuffer()))).toEqual({ width: dev.stream.width, height: dev.stream.height })
  expect(dev.watch.mjpeg).toBeNull() // not while the stream is stopped; a snapshot is always there
  expect(dev.watch.snapshot).toBe(`${s.url}/api/streams/${encodeURIComponent(WEBCAM)}/snapshot.jpg`)
  expect(s.ctx.registry.get('streamer')!.live(WEBCAM)).toBeNull() // the capture started no stream
  const m = await s.call('GET', `/api/streams/${WEBCAM}/mjpeg`)
  expect(m.status).toBe(409)
  expect(m.body.detail).toContain('restart_stream')
  expect((await s.call('GET', '/api/streams/usb-nope/mjpeg')).status).toBe(404)
}, 60_000)

test('the UDP endpoint loses no packet while MJPEG viewers and snapshots come and go; a ninth viewer is refused with 503', async () => {
  const port = freePort()
  const endpoint = await RtpCounter.open(port)
  try {
    await stream(WEBCAM, 'MJPG', port)
    await waitFor('packets at the endpoint', () => endpoint.packets > 50, 15_000)
    const url = `${s.url}/api/streams/${WEBCAM}/mjpeg`
    for (let round = 0; round < 3; round++) {
      const viewers = await Promise.all(Array.from({ length: 8 }, () => readParts(url, 2)))
      expect(viewers.every((v) => v.parts.length === 2)).toBe(true)
      const shots = await Promise.all([snapshot(WEBCAM), snapshot(WEBCAM, '?height=240')])
      expect(shots.map((r) => r.status)).toEqual([200, 200])
      await Promise.all(shots.map((r) => r.arrayBuffer()))
    }
    // Eight at once is the limit; the ninth gets 503 while they watch.
    const held = await Promise.all(Array.from({ length: 8 }, () => fetch(url)))
    expect(held.map((r) => r.status)).toEqual(Array(8).fill(200))
    const ninth = await s.call('GET', `/api/streams/${WEBCAM}/mjpeg`)
    expect(ninth.status).toBe(503)
    expect(ninth.body.detail).toContain('8 MJPEG viewers')
    await Promise.all(held.map((r) => r.body!.cancel()))
    await until('the viewers gone', async () => (await s.call('GET', '/api/health')).body.plugins.jpeg, (h: any) => h.viewers === 0 && h.feeds === 0, 10_000)
    const before = endpoint.packets
    await waitFor('more packets', () => endpoint.packets > before + 30, 10_000)
    expect(endpoint.skipped()).toBe(0)
  } finally {
    await stopStream(WEBCAM)
    endpoint.close()
  }
}, 90_000)

test('a client that stops reading for seconds never gets a broken part and does not slow another viewer', async () => {
  const port = freePort()
  const { connect } = await import('node:net')
  try {
    await stream(WEBCAM, 'MJPG', port, 1280, 720)
    const path = `/api/streams/${WEBCAM}/mjpeg`
    const chunks: Buffer[] = []
    const slow = connect(Number(new URL(s.url).port), '127.0.0.1')
    slow.on('data', (c: Buffer) => void chunks.push(c))
    await new Promise((resolve) => slow.once('connect', resolve))
    slow.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
    await waitFor('the first bytes', () => chunks.length > 0, 15_000)
    slow.pause() // stops reading: the kernel's buffers fill, then the service's queue for it
    const other = new MjpegClient(s.url + path)
    await waitFor('frames at the other viewer', () => other.frames.length >= 5, 20_000)
    const from = other.frames.at(-1)!
    await waitFor('three more seconds at the other viewer', () => other.frames.at(-1)! - from >= 3000, 20_000)
    const rate = (other.frames.filter((t) => t > from).length * 1000) / (other.frames.at(-1)! - from)
    expect(rate).toBeGreaterThan(15)
    await stop(other.proc)
    slow.resume()
    const before = Buffer.concat(chunks).length
    await waitFor('the slow client reading again', () => Buffer.concat(chunks).length > before + 500_000, 15_000)
    slow.destroy()
    // Every part it got is whole: boundary, headers, exactly Content-Length bytes of JPEG, CRLF.
    const body = Buffer.concat(chunks)
    let at = body.indexOf('\r\n\r\n') + 4 // after the response head (chunked framing removed below)
    const raw = dechunk(body.subarray(at))
    at = 0
    let parts = 0
    for (;;) {
      const headEnd = raw.indexOf('\r\n\r\n', at)
      if (headEnd < 0) break
      const head = raw.subarray(at, headEnd).toString('latin1')
      const length = Number(/Content-Length: (\d+)/.exec(head)?.[1])
      if (headEnd + 4 + length + 2 > raw.length) break // the last part, cut by our hang-up
      expect(head.startsWith('--periscope-frame\r\n')).toBe(true)
      const jpeg = raw.subarray(headEnd + 4, headEnd + 4 + length)
      expect([jpeg[0], jpeg[1], jpeg.at(-2), jpeg.at(-1)]).toEqual([0xff, 0xd8, 0xff, 0xd9])
      expect(jpegSize(jpeg)).toEqual({ width: 1280, height: 720 })
      expect(raw.subarray(headEnd + 4 + length, headEnd + 4 + length + 2).toString()).toBe('\r\n')
      at = headEnd + 4 + length + 2
      parts++
    }
    expect(parts).toBeGreaterThan(5)
  } finally {
    await stopStream(WEBCAM)
  }
}, 90_000)

/** The body of a chunked HTTP/1.1 answer, as far as it arrived (a streamed body has no Content-Length). */
function dechunk(data: Buffer): Buffer {
  const out: Buffer[] = []
  let at = 0
  for (;;) {
    const line = data.indexOf('\r\n', at)
    if (line < 0) break
    const size = parseInt(data.subarray(at, line).toString(), 16)
    if (!Number.isFinite(size) || size === 0) break
    out.push(data.subarray(line + 2, Math.min(data.length, line + 2 + size)))
    at = line + 2 + size + 2
    if (at > data.length) break
  }
  return Buffer.concat(out)
}

test('stopping the service while an H.264 camera has MJPEG viewers leaves no transcoder behind', async () => {
  const plugins = await Promise.all(['mock', 'cameras', 'preferences', 'gstreamer', 'jpeg'].map(loadPlugin))
  const other = await startTestServer({ plugins, config: { simulate: 'single' } })
  let client: MjpegClient | undefined
  try {
    const dev = (await other.call('GET', '/api/devices')).body[0]
    const r = await other.call('POST', '/api/devices/configure_stream', {
      bus_info: dev.bus_info,
      stream_type: 'UDP',
      encode_type: 'H264',
      stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 30 } },
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port: freePort() }],
    })
    expect(r.status).toBe(200)
    await until('the stream running', async () => other.ctx.registry.get('streamer')!.live(dev.bus_info), (live) => live !== null, 20_000)
    client = new MjpegClient(`${other.url}/api/streams/${dev.bus_info}/mjpeg`)
    await waitFor('frames at the client', () => client!.frames.length >= 3, 30_000)
    expect(transcoders().length).toBe(1)
  } finally {
    await other.stop()
  }
  expect(transcoders()).toEqual([])
  if (client) await stop(client.proc)
}, 60_000)

test("Chromium's <img> shows an MJPEG stream at the camera's size and holds it open; closing the page frees it", async () => {
  requireChromium()
  await stream(WEBCAM, 'MJPG', freePort())
  const path = `/api/streams/${encodeURIComponent(WEBCAM)}/mjpeg`
  await withPage(s.url, async (page) => {
    expect(await showImage(page, path, 20_000)).toEqual({ width: 640, height: 480 })
    // Still one viewer afterwards: the browser keeps reading the multipart stream, frame after frame.
    await until('the <img> counted as a viewer', async () => (await s.call('GET', '/api/health')).body.plugins.jpeg, (h: any) => h.viewers === 1, 10_000)
  })
  await until('the viewer gone with the page', async () => (await s.call('GET', '/api/health')).body.plugins.jpeg, (h: any) => h.viewers === 0, 15_000)
}, 90_000)
