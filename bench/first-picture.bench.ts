// Instant picture (issue 32, item 3): how long a viewer waits for its first picture of a running stream,
// wherever in the camera's group of pictures it joins. Per key-frame interval (--gops, the simulated
// camera's PERISCOPE_SIMULATED_GOP_SECONDS; the service is started once per interval), --trials joins per path:
//  - WHEP into Chromium: the offer POSTed → the first frame presented (requestVideoFrameCallback's
//    presentationTime, on the page's clock); goal p95 ≤ 300 ms;
//  - a snapshot: GET /api/streams/<camera>/snapshot.jpg → the whole JPEG received; goal p95 ≤ 150 ms; also
//    by where it came from (X-Snapshot-Source: the kept group decoded, or the decoder kept warm since an
//    earlier snapshot, plugins/jpeg --snapshot-warm);
//  - RTSP into GStreamer (rtspsrc latency=0 → decodebin): the client's pipeline set to PLAYING (its
//    process and GStreamer loaded before) → its first decoded frame; goal p95 ≤ 500 ms;
//  - RTSP into ffmpeg: its spawn → its first decoded frame, its own start-up included (printed apart).
// The baseline, for each join: a plain RTP receiver of the same stream (the stream's own UDP endpoint,
// read here) joining at the same instant, which waits for the camera's next key frame. Each path prints
// p50/p95/max beside it, with the ratio of the p95s, and the goal as met or missed (a missed goal does
// not fail the bench; a path with no first picture does).
// Loopback only; every join ends by itself (a deadline each), every child is stopped by pid.
// `bun run bench/first-picture.bench.ts [--trials 20] [--gops 1,10] [--size 1280x720] [--paths whep,snapshot,rtsp-gst,rtsp-ffmpeg]`
import { createSocket } from 'node:dgram'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import type { Browser, Page } from 'puppeteer-core'
import { startsKeyFrame, timestampOf } from '../media/rtp'
import { launchBrowser, openPage } from '../tests/integration/browser'
import { argOf, clockOffset, freePort, numberArg, sharedNow, waitHttp } from './lib'

const TRIALS = numberArg('trials', 20)
const GOPS = argOf('gops', '1,10').split(',').map(Number)
const [WIDTH, HEIGHT] = argOf('size', '1280x720').split('x').map(Number) as [number, number]
const FPS = 30
const ALL_PATHS = ['whep', 'snapshot', 'rtsp-gst', 'rtsp-ffmpeg'] as const
type PathName = (typeof ALL_PATHS)[number]
const PATHS = argOf('paths', ALL_PATHS.join(',')).split(',') as PathName[]
for (const p of PATHS) if (!ALL_PATHS.includes(p)) throw new Error(`unknown path ${p}; there are ${ALL_PATHS.join(', ')}`)
const GOALS: Record<PathName, number | null> = { whep: 300, snapshot: 150, 'rtsp-gst': 500, 'rtsp-ffmpeg': null }
const LABEL: Record<PathName, string> = {
  whep: 'WHEP → <video> in Chromium',
  snapshot: 'snapshot.jpg',
  'rtsp-gst': 'RTSP → GStreamer (PLAYING → frame)',
  'rtsp-ffmpeg': 'RTSP → ffmpeg (spawn → frame)',
}
/** A join that shows no picture within this long counts as a failure. */
const JOIN_TIMEOUT_MS = 15_000
const ROOT = join(import.meta.dir, '..')
const EHD = 'usb-0000:00:14.0-1' // the default preset's exploreHD: H.264

const loadavg = () => readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ')
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]! : NaN
}
const f = (x: number) => (Number.isFinite(x) ? x.toFixed(0) : '—')

const children = new Set<Subprocess>()
async function stop(proc: Subprocess): Promise<void> {
  proc.kill('SIGTERM')
  if (!(await Promise.race([proc.exited.then(() => true), Bun.sleep(3000).then(() => false)]))) {
    proc.kill('SIGKILL')
    await proc.exited
  }
  children.delete(proc)
}
process.on('exit', () => {
  for (const c of children) c.kill('SIGKILL')
})

/** One join: when it began (our clock, ms since the epoch) and how long its first picture took (null: none). */
interface Join { at: number; ms: number | null; note?: string; /** A snapshot's X-Snapshot-Source. */ source?: string }

// A GStreamer RTSP client (Debian's python3, which has GStreamer's bindings): loads, says "ready", sets PLAYING on a line from stdin, prints
// {"playing": epoch ms, "first": epoch ms} at its first decoded frame (the sound's track to a fakesink).
const GST_CLIENT = `
import json, sys, time, gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst, GLib
Gst.init(None)
p = Gst.parse_launch("rtspsrc location=%s latency=0 name=src src. ! application/x-rtp,media=video ! decodebin ! fakesink name=v signal-handoffs=true sync=false src. ! application/x-rtp,media=audio ! fakesink sync=false" % sys.argv[1])
loop = GLib.MainLoop()
out = {}
def handoff(*_):
    if "first" not in out:
        out["first"] = time.time() * 1000
        GLib.idle_add(loop.quit)
p.get_by_name("v").connect("handoff", handoff)
print("ready", flush=True)
sys.stdin.readline()
out["playing"] = time.time() * 1000
p.set_state(Gst.State.PLAYING)
GLib.timeout_add(${JOIN_TIMEOUT_MS}, loop.quit)
loop.run()
p.set_state(Gst.State.NULL)
print(json.dumps(out), flush=True)
`

async function rtspGst(url: string): Promise<Join> {
  const proc = Bun.spawn(['/usr/bin/python3', '-c', GST_CLIENT, url], { stdin: 'pipe', stdout: 'pipe', stderr: 'ignore' })
  children.add(proc)
  try {
    const reader = (proc.stdout as ReadableStream<Uint8Array>).getReader()
    let text = ''
    const line = async () => {
      for (;;) {
        const at = text.indexOf('\n')
        if (at >= 0) {
          const l = text.slice(0, at)
          text = text.slice(at + 1)
          return l
        }
        const { value, done } = await reader.read()
        if (done) return null
        text += new TextDecoder().decode(value)
      }
    }
    if ((await line()) !== 'ready') return { at: sharedNow(), ms: null, note: 'the client did not start' }
    proc.stdin.write('go\n')
    proc.stdin.flush()
    const out = JSON.parse((await line()) ?? '{}')
    return { at: out.playing ?? sharedNow(), ms: out.first ? out.first - out.playing : null }
  } finally {
    await stop(proc)
  }
}

async function rtspFfmpeg(url: string): Promise<Join> {
  const at = sharedNow()
  const first = await firstBytes(['ffmpeg', '-nostdin', '-v', 'error', '-rtsp_transport', 'udp', '-i', url, '-map', '0:v', '-vf', 'scale=64:36', '-pix_fmt', 'gray', '-frames:v', '1', '-f', 'rawvideo', '-'])
  return { at, ms: first === null ? null : first - at }
}

/** ffmpeg's own start-up: spawn → its first frame of a generated source, the same output. */
async function ffmpegStartup(): Promise<number | null> {
  const at = sharedNow()
  const first = await firstBytes(['ffmpeg', '-nostdin', '-v', 'error', '-f', 'lavfi', '-i', 'color=size=64x36', '-pix_fmt', 'gray', '-frames:v', '1', '-f', 'rawvideo', '-'])
  return first === null ? null : first - at
}

/** Spawns `argv` and returns when its stdout's first bytes came (our clock), or null at its end or the deadline. */
async function firstBytes(argv: string[]): Promise<number | null> {
  const proc = Bun.spawn(argv, { stdout: 'pipe', stderr: 'ignore', stdin: 'ignore' })
  children.add(proc)
  const deadline = setTimeout(() => proc.kill('SIGKILL'), JOIN_TIMEOUT_MS)
  try {
    for await (const chunk of proc.stdout as unknown as AsyncIterable<Uint8Array>) if (chunk.length) return sharedNow()
    return null
  } finally {
    clearTimeout(deadline)
    await stop(proc)
  }
}

async function snapshot(api: string): Promise<Join> {
  const at = sharedNow()
  const r = await fetch(`${api}/api/streams/${EHD}/snapshot.jpg`, { signal: AbortSignal.timeout(JOIN_TIMEOUT_MS) }).catch((err) => err as Error)
  if (r instanceof Error) return { at, ms: null, note: r.message }
  const body = new Uint8Array(await r.arrayBuffer())
  const ms = sharedNow() - at
  return r.status === 200 && body[0] === 0xff && body[1] === 0xd8 ? { at, ms, source: r.headers.get('x-snapshot-source') ?? '?' } : { at, ms: null, note: `${r.status}` }
}

/** In the page: a recvonly video session offered, POSTed, and its first presented frame; both on the page's clock. */
function whepInPage(path: string, timeoutMs: number): Promise<{ posted: number; presented: number | null; location: string | null; error?: string }> {
  const w = globalThis as any // the page's window (this project's tsconfig has no DOM types)
  return (async () => {
    const pc = new w.RTCPeerConnection({ iceServers: [] })
    pc.addTransceiver('video', { direction: 'recvonly' })
    const video = w.document.createElement('video')
    video.muted = true
    video.autoplay = true
    w.document.body.appendChild(video)
    const presented = new Promise<number>((resolve) => video.requestVideoFrameCallback((_now: number, meta: any) => resolve(meta.presentationTime)))
    pc.ontrack = (e: any) => (video.srcObject = e.streams[0] ?? new w.MediaStream([e.track]))
    await pc.setLocalDescription(await pc.createOffer())
    await new Promise<void>((resolve) => {
      if (pc.iceGatheringState === 'complete') return resolve()
      pc.addEventListener('icegatheringstatechange', () => pc.iceGatheringState === 'complete' && resolve())
      setTimeout(resolve, 3000)
    })
    const posted = performance.now()
    const res = await fetch(path, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: pc.localDescription.sdp })
    const text = await res.text()
    const finish = (presentedAt: number | null, error?: string) => {
      pc.close()
      video.remove()
      return { posted: performance.timeOrigin + posted, presented: presentedAt === null ? null : performance.timeOrigin + presentedAt, location: res.headers.get('location'), error }
    }
    if (res.status !== 201) return finish(null, `${res.status} ${text}`)
    await pc.setRemoteDescription({ type: 'answer', sdp: text })
    const at = await Promise.race([presented, new Promise<null>((resolve) => setTimeout(() => resolve(null), timeoutMs))])
    return finish(at, at === null ? 'no frame' : undefined)
  })()
}

async function whep(page: Page, api: string): Promise<Join> {
  const clock = await clockOffset(page)
  const r = await page.evaluate(whepInPage, `/api/streams/${encodeURIComponent(EHD)}/whep`, JOIN_TIMEOUT_MS)
  if (r.location) await fetch(api + r.location, { method: 'DELETE' }).catch(() => {})
  return { at: r.posted - clock.offset, ms: r.presented === null ? null : r.presented - r.posted, note: r.error }
}

let browser: Browser | null = null
let failed = 0
const dataDirs: string[] = []
console.log(`${new Date().toISOString()}; load average at the start ${loadavg()}; ${TRIALS} joins per path at ${WIDTH}x${HEIGHT}@${FPS} H.264, key frame every ${GOPS.join(' / ')} s`)
try {
  for (const gop of GOPS) {
    const httpPort = await freePort()
    const rtspPort = await freePort()
    const dataDir = mkdtempSync(join(tmpdir(), 'periscope-first-picture-'))
    dataDirs.push(dataDir)
    const service = Bun.spawn(
      [process.execPath, join(ROOT, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(httpPort), '--data-dir', dataDir, '--simulate', 'default', '--rtsp-port', String(rtspPort), '--log-level', 'error', '--max-viewers', '8'],
      { stdout: 'ignore', stderr: 'inherit', cwd: ROOT, env: { ...process.env, PERISCOPE_SIMULATED_GOP_SECONDS: String(gop) } },
    )
    children.add(service)
    const api = `http://127.0.0.1:${httpPort}`
    // The stream's own UDP endpoint: the baseline's plain receiver, noting when each key frame comes.
    const keyFrames: number[] = []
    let lastKeyTs = -1
    const sink = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
    sink.on('message', (packet) => {
      if (startsKeyFrame(packet) && timestampOf(packet) !== lastKeyTs) {
        lastKeyTs = timestampOf(packet)
        keyFrames.push(sharedNow())
      }
    })
    await new Promise<void>((resolve) => sink.bind(0, '127.0.0.1', resolve))
    try {
      await waitHttp(`${api}/api/devices`)
      const r = await fetch(`${api}/api/devices/configure_stream`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ bus_info: EHD, stream_type: 'UDP', stream_format: { width: WIDTH, height: HEIGHT, interval: { numerator: 1, denominator: FPS } }, encode_type: 'H264', enabled: true, endpoints: [{ host: '127.0.0.1', port: sink.address().port }] }),
      })
      if (!r.ok) throw new Error(`configure_stream: ${r.status} ${await r.text()}`)
      // Running, its RTSP mount there, and two key frames seen (a group of pictures kept).
      for (const deadline = Date.now() + 30_000; ; await Bun.sleep(100)) {
        const mounts = (await (await fetch(`${api}/api/rtsp`)).json()) as { mounts: { path: string }[] }
        if (mounts.mounts.some((m) => m.path === `/${EHD}`) && keyFrames.length >= 2) break
        if (Date.now() > deadline) throw new Error('the stream did not start, or its RTSP mount did not appear')
      }
      const rtsp = `rtsp://127.0.0.1:${rtspPort}/${EHD}`
      const results = new Map<PathName, Join[]>(PATHS.map((p) => [p, []]))
      let page: Page | null = null
      if (PATHS.includes('whep')) page = await openPage((browser ??= await launchBrowser()), api)
      // The paths in turn, each join at a random moment of the group of pictures.
      for (let trial = 0; trial < TRIALS; trial++) {
        for (const path of PATHS) {
          // (A snapshot is served again for 1 s: each join here is past that, a capture of its own.)
          await Bun.sleep((path === 'snapshot' ? 1100 : 0) + Math.random() * Math.min(1000, gop * 1000))
          const j = path === 'whep' ? await whep(page!, api) : path === 'snapshot' ? await snapshot(api) : path === 'rtsp-gst' ? await rtspGst(rtsp) : await rtspFfmpeg(rtsp)
          results.get(path)!.push(j)
        }
      }
      // Each baseline needs the key frame after its join: wait for one after the last.
      const lastJoin = Math.max(...[...results.values()].flat().map((j) => j.at))
      for (const deadline = Date.now() + (gop + 5) * 1000; keyFrames.at(-1)! < lastJoin && Date.now() < deadline; ) await Bun.sleep(50)
      const baseline = (at: number) => {
        const next = keyFrames.find((k) => k >= at)
        return next === undefined ? NaN : next - at
      }
      const startup = PATHS.includes('rtsp-ffmpeg') ? await ffmpegStartup() : null
      console.log(`\nkey frame every ${gop} s (load average now ${loadavg()}); first picture after the join, ms`)
      console.log(`${'path'.padEnd(36)} ${'joins'.padStart(5)} ${'none'.padStart(4)} ${'p50'.padStart(6)} ${'p95'.padStart(6)} ${'max'.padStart(6)}   baseline p50/p95 (next key frame)   ×p95   goal`)
      for (const path of PATHS) {
        const joins = results.get(path)!
        const ms = joins.flatMap((j) => (j.ms === null ? [] : [j.ms]))
        const base = joins.map((j) => baseline(j.at)).filter(Number.isFinite)
        const goal = GOALS[path]
        const goalText = goal === null ? '' : `p95 ≤ ${goal}: ${pct(ms, 95) <= goal ? 'met' : 'MISSED'}`
        console.log(`${LABEL[path].padEnd(36)} ${String(joins.length).padStart(5)} ${String(joins.length - ms.length).padStart(4)} ${f(pct(ms, 50)).padStart(6)} ${f(pct(ms, 95)).padStart(6)} ${f(Math.max(...ms)).padStart(6)}   ${`${f(pct(base, 50))} / ${f(pct(base, 95))}`.padEnd(34)} ${(pct(ms, 95) / pct(base, 95)).toFixed(2).padStart(5)}   ${goalText}`)
        const notes = [...new Set(joins.flatMap((j) => (j.note ? [j.note] : [])))]
        if (notes.length) console.log(`${''.padEnd(36)}   (${notes.slice(0, 3).join('; ')})`)
        const sources = [...new Set(joins.flatMap((j) => (j.source ? [j.source] : [])))]
        for (const source of sources) {
          const of = joins.flatMap((j) => (j.source === source && j.ms !== null ? [j.ms] : []))
          console.log(`${''.padEnd(36)}   from ${source}: ${of.length} joins, p50 ${f(pct(of, 50))}, p95 ${f(pct(of, 95))}, max ${f(Math.max(...of))}`)
        }
        if (path === 'rtsp-ffmpeg' && startup !== null) console.log(`${''.padEnd(36)}   (of which ffmpeg's own start-up, a generated source: ${f(startup)} ms)`)
        if (ms.length < joins.length) failed++
      }
      await page?.close()
    } finally {
      sink.close()
      await stop(service)
    }
  }
  console.log(`\nload average at the end ${loadavg()}`)
} finally {
  await browser?.close().catch(() => {})
  for (const c of [...children]) await stop(c)
  for (const d of dataDirs) rmSync(d, { recursive: true, force: true })
}
process.exit(failed ? 1 : 0)
