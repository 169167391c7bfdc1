// Camera-to-screen delay, read from the picture itself (issue 32, docs/latency.md): simulated cameras paint
// each frame's capture time (ms since the Unix epoch) into it before the encoder; each client here decodes
// the stream, reads the code back from every frame, and the delay of that frame is
//     (when the client has the decoded frame) − (the code painted in it),
// both on this machine's real-time clock. Per path, p50/p95/max over --frames frames after --warmup s:
//  - RTSP into GStreamer (rtspsrc latency=0 … GRAY8 to stdout) and into ffmpeg (raw gray to stdout): the
//    moment the frame's last byte reaches this process;
//  - the MJPEG endpoint into ffmpeg, and into an <img> in Chromium (the first animation frame that shows
//    a new code: to within one 60 Hz frame);
//  - WHEP into a <video> in Chromium: requestVideoFrameCallback, the presented frame's row of cells drawn
//    to a canvas and read in the page; expectedDisplayTime on the page's clock;
//  - the floor, in the same run: the same source, encoder (x264, the simulated camera's settings) and payloader
//    (the stream's own h264parse and rtph264pay settings) with no Periscope between, RTP/UDP straight
//    into the same GStreamer and ffmpeg receivers.
// Each path beside its floor (GStreamer's for GStreamer and Chromium, ffmpeg's for ffmpeg), with the ratio
// and the difference; the issue's goals for 720p30 printed as met or missed (a measurement: a missed goal
// does not fail the bench; a path that read no code does). The camera is the simulated exploreHD at H.264;
// its stream is stopped while the floor runs (one encoder at a time), and the two alternate in --rounds.
// The ffmpeg receivers run as a low-latency viewer would (-fflags nobuffer -flags low_delay: no input
// buffering, no frame threading); the RTSP clients take their default transport (UDP on loopback).
// Loopback only. Every path stops by itself (a deadline per path), and every child is stopped by pid.
// `bun run bench/latency.bench.ts [--frames 300] [--warmup 3] [--sizes 1280x720,1920x1080]
//     [--paths floor-gst,floor-ffmpeg,rtsp-gst,rtsp-ffmpeg,mjpeg-ffmpeg,mjpeg-img,whep] [--rounds 2] [--api-load 0] [--viewers 1]`
import { createSocket } from 'node:dgram'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import type { Browser } from 'puppeteer-core'
import { withElements } from '../drivers/gstreamer/elements'
import { H264_PARSE } from '../drivers/gstreamer/pipeline'
import { launchBrowser, openPage, openSession } from '../tests/integration/browser'
import { readTimecode } from '../tests/timecode'
import { apiLoad, argOf, clockOffset, freePort, numberArg, sharedNow, waitHttp } from './lib'
import { Receiver } from './whep-receiver'

const FRAMES = numberArg('frames', 300)
const WARMUP_S = numberArg('warmup', 3)
const FPS = 30
const SIZES = argOf('sizes', '1280x720,1920x1080').split(',').map((s) => s.split('x').map(Number) as [number, number])
const ALL_PATHS = ['floor-gst', 'floor-ffmpeg', 'rtsp-gst', 'rtsp-ffmpeg', 'mjpeg-ffmpeg', 'mjpeg-img', 'whep'] as const
type PathName = (typeof ALL_PATHS)[number]
const PATHS = argOf('paths', ALL_PATHS.join(',')).split(',') as PathName[]
/** Each path measured with this many HTTP connections looping GET /api/devices on the service (wrk); 0: none. */
const API_LOAD = numberArg('api-load', 0)
/**
 * Viewers of the stream while a path is measured: the measured one and VIEWERS − 1 more of the same
 * protocol that only receive (RTSP: ffmpeg copying to nowhere; MJPEG: curl; WHEP: werift, each in a process
 * of its own, bench/whep-receiver.ts): what the service's fan-out costs the measured viewer, without seven
 * decoders swamping a 2-core machine.
 */
const VIEWERS = numberArg('viewers', 1)
/** Each path measured this many times (--frames each), in alternating order, the figures pooled. */
const ROUNDS = numberArg('rounds', 2)
const ROOT = join(import.meta.dir, '..')
const EHD = 'usb-0000:00:14.0-1' // the default preset's exploreHD: H.264 at 720p and 1080p, 30 fps
/** Time a path has to start and deliver its first frame, beyond the frames it is asked for (2× their time). */
const START_S = 30

for (const p of PATHS) if (!ALL_PATHS.includes(p)) throw new Error(`unknown path ${p}; there are ${ALL_PATHS.join(', ')}`)
for (const tool of ['gst-launch-1.0', 'ffmpeg']) if (!Bun.which(tool)) throw new Error(`${tool} is missing: run scripts/setup/gstreamer.sh`)

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')

interface Result {
  /** Delay of each frame read past the warm-up (ms). */
  delays: number[]
  /** Frames past the warm-up whose code could not be read. */
  unread: number
  /** Frames showing the same code as the one before (a repeated frame). */
  repeats: number
  timedOut: boolean
  note?: string
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
const pct = (xs: number[], p: number) => (xs.length ? sorted(xs)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]! : NaN)

/** Every child started, stopped at the end whatever happens. */
const children = new Set<Subprocess>()
async function stop(proc: Subprocess): Promise<void> {
  proc.kill('SIGTERM')
  const done = await Promise.race([proc.exited.then(() => true), Bun.sleep(3000).then(() => false)])
  if (!done) {
    proc.kill('SIGKILL')
    await proc.exited
  }
  children.delete(proc)
}
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL')
})

/**
 * A receiver whose stdout is raw 8-bit luma frames of `width`×`height` (stride = width: both sizes are
 * multiples of 4, GStreamer's row alignment): each frame's code read when its last byte reaches us.
 */
async function rawReceiver(argv: string[], width: number, height: number, env?: Record<string, string | undefined>): Promise<Result> {
  const proc = Bun.spawn(argv, { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore', env })
  children.add(proc)
  const load = apiLoad(`${api}/api/devices`, API_LOAD, START_S + WARMUP_S + (2 * FRAMES) / FPS)
  const size = width * height
  // Only the rows down to the one the reader reads are kept.
  const keep = (Math.floor(height / 32) + 1) * width
  const head = new Uint8Array(keep)
  const result: Result = { delays: [], unread: 0, repeats: 0, timedOut: false }
  let pos = 0
  let firstAt = 0
  let last = -1
  const deadline = setTimeout(() => {
    result.timedOut = true
    proc.kill('SIGTERM')
  }, (START_S + WARMUP_S + (2 * FRAMES) / FPS) * 1000)
  const stderr = new Response(proc.stderr).text()
  try {
    outer: for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) {
      const at = sharedNow()
      let offset = 0
      while (offset < chunk.length) {
        const n = Math.min(chunk.length - offset, size - pos)
        if (pos < keep) head.set(chunk.subarray(offset, offset + Math.min(n, keep - pos)), pos)
        pos += n
        offset += n
        if (pos < size) continue
        pos = 0
        firstAt ||= at
        if (at - firstAt < WARMUP_S * 1000) continue
        const code = readTimecode(head, width, height)
        if (!code) result.unread++
        else {
          if (code.ms === last) result.repeats++
          last = code.ms
          result.delays.push(at - code.ms)
        }
        if (result.delays.length + result.unread >= FRAMES) break outer
      }
    }
  } finally {
    clearTimeout(deadline)
    await load.stop()
    await stop(proc)
  }
  if (!result.delays.length) result.note = (await stderr).trim().split('\n').slice(-3).join(' | ')
  return result
}

const gstGray = ['!', 'videoconvert', '!', 'video/x-raw,format=GRAY8', '!', 'fdsink', 'fd=1', 'sync=false']
const ffmpegIn = ['ffmpeg', '-v', 'error', '-fflags', 'nobuffer', '-flags', 'low_delay']
const ffmpegOut = ['-fps_mode', 'passthrough', '-f', 'rawvideo', '-pix_fmt', 'gray', '-flush_packets', '1', '-']

// ---- the floor: the simulated camera's source and encoder, bare, to RTP/UDP on loopback ----

async function floor(width: number, height: number, which: 'gst' | 'ffmpeg'): Promise<Result> {
  const port = await freePort()
  const sender = Bun.spawn(
    ['gst-launch-1.0', '-q', 'videotestsrc', 'is-live=true', 'pattern=ball', '!', `video/x-raw,format=I420,width=${width},height=${height},framerate=${FPS}/1`, '!', 'periscopetimecode',
      '!', 'x264enc', 'tune=zerolatency', 'speed-preset=ultrafast', `key-int-max=${FPS}`, 'bitrate=2000', '!', 'video/x-h264,stream-format=byte-stream,alignment=au',
      '!', ...H264_PARSE, '!', 'rtph264pay', 'aggregate-mode=zero-latency', 'pt=96', '!', 'udpsink', 'host=127.0.0.1', `port=${port}`, 'sync=false'],
    { stdout: 'ignore', stderr: 'pipe', stdin: 'ignore', env: withElements() },
  )
  children.add(sender)
  const dir = mkdtempSync(join(tmpdir(), 'periscope-latency-bench-'))
  try {
    if (which === 'gst') {
      return await rawReceiver(
        ['gst-launch-1.0', '-q', 'udpsrc', 'address=127.0.0.1', `port=${port}`, 'buffer-size=4194304', 'caps=application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=96',
          '!', 'decodebin', ...gstGray], // decodebin: the same depayloader, parser and decoder rtspsrc's gets
        width, height,
      )
    }
    const sdp = join(dir, 'floor.sdp')
    writeFileSync(sdp, ['v=0', 'o=- 0 0 IN IP4 127.0.0.1', 's=floor', 'c=IN IP4 127.0.0.1', 't=0 0', `m=video ${port} RTP/AVP 96`, 'a=rtpmap:96 H264/90000', 'a=fmtp:96 packetization-mode=1', ''].join('\n'))
    return await rawReceiver([...ffmpegIn, '-protocol_whitelist', 'file,udp,rtp', '-i', sdp, ...ffmpegOut], width, height)
  } finally {
    await stop(sender)
    rmSync(dir, { recursive: true, force: true })
  }
}

// ---- in Chromium ----

let browser: Browser | null = null

/**
 * In the page: reads the code of each picture `kind` shows (the <video>'s presented frames through
 * requestVideoFrameCallback, or the <img>'s through requestAnimationFrame, kept when the code changes),
 * from one row of the band drawn to a canvas; the reader's thresholds on limited-range luma, as
 * tests/timecode.ts reads it. Samples collect in window.latency.
 */
function startReading(kind: string): Promise<string> {
  const w = globalThis as any // the page's window (this project's tsconfig has no DOM types)
  const document = w.document
  const state = { samples: [] as { code: number | null; shown: number }[], last: -1 as number | null }
  w.latency = state
  const canvas = document.createElement('canvas')
  const ctx = canvas.getContext('2d', { willReadFrequently: true })
  const read = (source: any, width: number, height: number): number | null => {
    if (canvas.width !== width) [canvas.width, canvas.height] = [width, 1]
    const row = Math.floor(height / 16 / 2)
    ctx.drawImage(source, 0, row, width, 1, 0, 0, width, 1)
    const px = ctx.getImageData(0, 0, width, 1).data
    let ms = 0
    for (let i = 0; i < 48; i++) {
      const x = Math.floor(((i + 0.5) * width) / 48)
      // Full-range RGB back to the code's limited-range luma (white 235, black 16).
      const y = 16 + ((0.299 * px[4 * x] + 0.587 * px[4 * x + 1] + 0.114 * px[4 * x + 2]) * 219) / 255
      if (y >= 200) ms = ms * 2 + 1
      else if (y <= 50) ms = ms * 2
      else return null
    }
    return ms
  }
  return new Promise((resolve) => {
    const started = performance.now()
    const find = () => {
      const el = document.querySelector(kind)
      const ready = el && (kind === 'video' ? el.videoWidth > 0 : el.naturalWidth > 0)
      if (!ready) {
        if (performance.now() - started > 20_000) return resolve(`no ${kind} showed a picture within 20 s`)
        return setTimeout(find, 20)
      }
      if (kind === 'video') {
        const onFrame = (_now: number, meta: any) => {
          state.samples.push({ code: read(el, el.videoWidth, el.videoHeight), shown: performance.timeOrigin + meta.expectedDisplayTime })
          el.requestVideoFrameCallback(onFrame)
        }
        el.requestVideoFrameCallback(onFrame)
      } else {
        const onAnimationFrame = (now: number) => {
          const code = read(el, el.naturalWidth, el.naturalHeight)
          // Each new picture once (an unreadable one too).
          if (code !== state.last) state.samples.push({ code, shown: performance.timeOrigin + now })
          state.last = code
          w.requestAnimationFrame(onAnimationFrame)
        }
        w.requestAnimationFrame(onAnimationFrame)
      }
      resolve('ok')
    }
    find()
  })
}

async function inChromium(kind: 'whep' | 'img'): Promise<Result> {
  browser ??= await launchBrowser()
  const page = await openPage(browser, api)
  const load = apiLoad(`${api}/api/devices`, API_LOAD, START_S + WARMUP_S + (2 * FRAMES) / FPS)
  let location: string | undefined
  try {
    if (kind === 'whep') {
      const opened = await openSession(page, `/api/streams/${encodeURIComponent(EHD)}/whep`, 'latency')
      if (opened.status !== 201) throw new Error(`WHEP POST: ${opened.status} ${opened.detail}`)
      location = opened.location
    } else {
      await page.evaluate((src: string) => {
        const img = (globalThis as any).document.createElement('img')
        img.src = src
        ;(globalThis as any).document.body.appendChild(img)
      }, `/api/streams/${encodeURIComponent(EHD)}/mjpeg`)
    }
    const started = await page.evaluate(startReading, kind === 'whep' ? 'video' : 'img')
    if (started !== 'ok') return { delays: [], unread: 0, repeats: 0, timedOut: true, note: started }
    const clock = await clockOffset(page)
    const deadline = Date.now() + (START_S + WARMUP_S + (2 * FRAMES) / FPS) * 1000
    let samples: { code: number | null; shown: number }[] = []
    const past = () => samples.filter((s) => s.shown - samples[0]!.shown >= WARMUP_S * 1000)
    while (Date.now() < deadline) {
      await Bun.sleep(500)
      samples = await page.evaluate(() => (globalThis as any).latency.samples)
      if (samples.length && past().length >= FRAMES) break
    }
    const kept = past().slice(0, FRAMES)
    const result: Result = { delays: [], unread: 0, repeats: 0, timedOut: samples.length === 0 || past().length < FRAMES }
    let last = -1
    for (const s of kept) {
      if (s.code === null) result.unread++
      else {
        if (s.code === last) result.repeats++
        last = s.code
        // The page's instant on our clock (the same real-time clock, read by another process).
        result.delays.push(s.shown - clock.offset - s.code)
      }
    }
    result.note = `page clock − ours ${clock.offset.toFixed(1)} ± ${clock.error.toFixed(1)} ms (corrected)`
    return result
  } finally {
    await load.stop()
    if (location) await fetch(api + location, { method: 'DELETE' }).catch(() => {})
    await page.close()
  }
}

// ---- the service ----

const httpPort = await freePort()
const rtspPort = await freePort()
const dataDir = mkdtempSync(join(tmpdir(), 'periscope-latency-bench-'))
const service = Bun.spawn(
  [process.execPath, join(ROOT, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(httpPort), '--data-dir', dataDir, '--simulate', 'default', '--rtsp-port', String(rtspPort), '--log-level', 'error',
    // Every viewer here is one client (loopback), which may hold half of a camera's places: room for them all.
    '--max-viewers', String(Math.max(8, 2 * VIEWERS))],
  { stdout: 'ignore', stderr: 'inherit', cwd: ROOT },
)
children.add(service)
const api = `http://127.0.0.1:${httpPort}`
// The stream's own UDP endpoint (the service streams to one): read and dropped.
const sink = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
sink.on('message', () => {})
await new Promise<void>((resolve) => sink.bind(0, '127.0.0.1', resolve))

async function unconfigure(): Promise<void> {
  const r = await fetch(`${api}/api/devices/unconfigure_stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bus_info: EHD }) })
  if (!r.ok && r.status !== 404) throw new Error(`unconfigure_stream: ${r.status} ${await r.text()}`)
}

async function configure(width: number, height: number): Promise<void> {
  const r = await fetch(`${api}/api/devices/configure_stream`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ bus_info: EHD, stream_type: 'UDP', stream_format: { width, height, interval: { numerator: 1, denominator: FPS } }, encode_type: 'H264', enabled: true, endpoints: [{ host: '127.0.0.1', port: sink.address().port }] }),
  })
  if (!r.ok) throw new Error(`configure_stream: ${r.status} ${await r.text()}`)
  for (let i = 0; ; i++) {
    const mounts = (await (await fetch(`${api}/api/rtsp`)).json()) as { mounts: { path: string }[] }
    const devices = (await (await fetch(`${api}/api/devices`)).json()) as any[]
    if (mounts.mounts.some((m) => m.path === `/${EHD}`) && devices.find((d) => d.bus_info === EHD)?.stream_status?.state === 'running') return
    if (i > 300) throw new Error('the stream did not start, or its RTSP mount did not appear')
    await Bun.sleep(100)
  }
}

const FLOOR_OF: Record<PathName, PathName | null> = { 'floor-gst': null, 'floor-ffmpeg': null, 'rtsp-gst': 'floor-gst', 'rtsp-ffmpeg': 'floor-ffmpeg', 'mjpeg-ffmpeg': 'floor-ffmpeg', 'mjpeg-img': 'floor-gst', whep: 'floor-gst' }
const LABEL: Record<PathName, string> = {
  'floor-gst': 'floor: x264 → RTP/UDP → GStreamer',
  'floor-ffmpeg': 'floor: x264 → RTP/UDP → ffmpeg',
  'rtsp-gst': 'RTSP → GStreamer (rtspsrc latency=0)',
  'rtsp-ffmpeg': 'RTSP → ffmpeg',
  'mjpeg-ffmpeg': 'MJPEG → ffmpeg',
  'mjpeg-img': 'MJPEG → <img> in Chromium (rAF)',
  whep: 'WHEP → <video> in Chromium (rVFC)',
}
/** The issue's goals, at 720p30: [p50, p95] in ms, null where none. */
const GOALS: Partial<Record<PathName, [number | null, number | null]>> = { whep: [80, 120], 'rtsp-gst': [60, null] }

/** VIEWERS − 1 viewers of `path`'s protocol that only receive, started before it is measured; stop() ends them. */
async function extraViewers(path: PathName): Promise<{ stop(): Promise<void> }> {
  const procs: Subprocess[] = []
  const receivers: Receiver[] = []
  const stopAll = async () => {
    await Promise.all(receivers.map((r) => r.close()))
    for (const p of procs) await stop(p)
  }
  try {
    for (let i = 1; i < VIEWERS; i++) {
      if (path === 'whep') receivers.push(await Receiver.spawn(['whep', api, EHD]))
      else {
        const argv = path.startsWith('rtsp')
          ? ['ffmpeg', '-v', 'error', '-i', `rtsp://127.0.0.1:${rtspPort}/${EHD}`, '-map', '0', '-c', 'copy', '-f', 'null', '-']
          : ['curl', '-sN', '-o', '/dev/null', `${api}/api/streams/${EHD}/mjpeg`]
        const p = Bun.spawn(argv, { stdout: 'ignore', stderr: 'ignore', stdin: 'ignore' })
        children.add(p)
        procs.push(p)
      }
    }
  } catch (err) {
    await stopAll()
    throw err
  }
  return { stop: stopAll }
}

async function measure(path: PathName, width: number, height: number): Promise<Result> {
  if (FLOOR_OF[path] === null || VIEWERS <= 1) return measureOne(path, width, height)
  const extra = await extraViewers(path)
  try {
    return await measureOne(path, width, height)
  } finally {
    await extra.stop()
  }
}

async function measureOne(path: PathName, width: number, height: number): Promise<Result> {
  const rtsp = `rtsp://127.0.0.1:${rtspPort}/${EHD}`
  const mjpeg = `${api}/api/streams/${EHD}/mjpeg`
  switch (path) {
    case 'floor-gst':
      return floor(width, height, 'gst')
    case 'floor-ffmpeg':
      return floor(width, height, 'ffmpeg')
    case 'rtsp-gst':
      // The simulated camera has sound too: its track goes to a fakesink (an unlinked pad would stop rtspsrc).
      return rawReceiver(['gst-launch-1.0', '-q', 'rtspsrc', `location=${rtsp}`, 'latency=0', 'name=src', 'src.', '!', 'application/x-rtp,media=video', '!', 'decodebin', ...gstGray, 'src.', '!', 'application/x-rtp,media=audio', '!', 'fakesink', 'sync=false'], width, height)
    case 'rtsp-ffmpeg':
      return rawReceiver([...ffmpegIn, '-i', rtsp, ...ffmpegOut], width, height)
    case 'mjpeg-ffmpeg':
      return rawReceiver([...ffmpegIn, '-f', 'mpjpeg', '-i', mjpeg, ...ffmpegOut], width, height)
    case 'mjpeg-img':
      return inChromium('img')
    case 'whep':
      return inChromium('whep')
  }
}

let failed = 0
const f = (x: number) => (Number.isFinite(x) ? x.toFixed(1) : '—')
try {
  await waitHttp(`${api}/api/devices`)
  const startLoad = loadavg()
  console.log(`${new Date().toISOString()}; load average at the start ${startLoad}; ${ROUNDS} × ${FRAMES} frames per path, each after ${WARMUP_S} s of warm-up; ${API_LOAD ? `${API_LOAD} API connections looping GET /api/devices` : 'no API load'}; ${VIEWERS === 1 ? '1 viewer' : `${VIEWERS} viewers (the measured one and ${VIEWERS - 1} that only receive)`}`)
  for (const [width, height] of SIZES) {
    const results = new Map<PathName, Result>()
    const floors = PATHS.filter((p) => FLOOR_OF[p] === null)
    const viewers = PATHS.filter((p) => FLOOR_OF[p] !== null)
    const run = async (paths: PathName[]) => {
      // One encoder at a time, as on a vehicle: the camera's stream is off while the floor's runs.
      if (paths === floors) await unconfigure()
      else await configure(width, height)
      for (const path of paths) {
        let r: Result
        try {
          r = await measure(path, width, height)
        } catch (err) {
          r = { delays: [], unread: 0, repeats: 0, timedOut: false, note: String(err) }
        }
        const before = results.get(path)
        if (before) r = { delays: [...before.delays, ...r.delays], unread: before.unread + r.unread, repeats: before.repeats + r.repeats, timedOut: before.timedOut || r.timedOut, note: [before.note, r.note].filter(Boolean).join('; ') || undefined }
        results.set(path, r)
      }
    }
    // Rounds in the order floors, viewers, viewers, floors, …: a load that drifts during the run weighs
    // on both alike.
    for (let round = 0; round < ROUNDS; round++) {
      const groups = round % 2 === 0 ? [floors, viewers] : [viewers, floors]
      for (const group of groups) if (group.length) await run(group)
    }
    const order = [...floors, ...viewers]
    console.log(`\n${width}x${height} at ${FPS} fps, H.264 (x264, key frame every second), camera-to-screen delay per frame in ms (load average now ${loadavg()})`)
    console.log(`${'path'.padEnd(40)} ${'frames'.padStart(6)} ${'unread'.padStart(6)} ${'p50'.padStart(7)} ${'p95'.padStart(7)} ${'max'.padStart(7)}   vs floor: p50 ×, +ms   p95 ×, +ms   goal`)
    for (const path of order) {
      const r = results.get(path)!
      const [p50, p95] = [pct(r.delays, 50), pct(r.delays, 95)]
      const fl = FLOOR_OF[path] ? results.get(FLOOR_OF[path]!) : undefined
      const [f50, f95] = fl ? [pct(fl.delays, 50), pct(fl.delays, 95)] : [NaN, NaN]
      const versus = fl ? `${(p50 / f50).toFixed(2).padStart(5)}× ${(p50 - f50 >= 0 ? '+' : '') + f(p50 - f50)}`.padEnd(18) + `${(p95 / f95).toFixed(2).padStart(5)}× ${(p95 - f95 >= 0 ? '+' : '') + f(p95 - f95)}`.padEnd(16) : ''.padEnd(34)
      const goal = GOALS[path] && width === 1280 && height === 720 ? GOALS[path]! : null
      const goalText = goal
        ? [goal[0] !== null ? `p50 ≤ ${goal[0]}: ${p50 <= goal[0] ? 'met' : 'MISSED'}` : '', goal[1] !== null ? `p95 ≤ ${goal[1]}: ${p95 <= goal[1] ? 'met' : 'MISSED'}` : ''].filter(Boolean).join(', ')
        : ''
      console.log(`${LABEL[path].padEnd(40)} ${String(r.delays.length).padStart(6)} ${String(r.unread).padStart(6)} ${f(p50).padStart(7)} ${f(p95).padStart(7)} ${f(Math.max(...r.delays)).padStart(7)}   ${versus} ${goalText}`)
      const notes = [r.timedOut ? 'timed out before all frames' : '', r.repeats ? `${r.repeats} repeated codes` : '', r.note ?? ''].filter(Boolean)
      if (notes.length) console.log(`${''.padEnd(40)}   (${notes.join('; ')})`)
      if (!r.delays.length) {
        console.log(`${''.padEnd(40)}   FAILED: no code read`)
        failed++
      }
    }
  }
  console.log(`\nload average at the end ${loadavg()}`)
  console.log("(the floor: videotestsrc → periscopetimecode → x264enc (the simulated camera's settings) → h264parse → rtph264pay (the stream's) → udpsink, bare; the Chromium paths are beside GStreamer's floor)")
} finally {
  await (browser as Browser | null)?.close().catch(() => {}) // (set inside inChromium: not narrowed to null)
  sink.close()
  for (const c of [...children]) await stop(c)
  rmSync(dataDir, { recursive: true, force: true })
}
process.exit(failed ? 1 : 0)
