// WHEP in a real browser (headless Chromium, tests/integration/browser.ts), against a plain RTP/UDP
// receiver of the same stream:
//  1. time to first decoded frame: POST of the offer → getStats() framesDecoded > 0, TRIALS times
//     (target ≤ 500 ms), beside the time a plain RTP receiver joining at the same instant waits for its
//     first key frame at the stream's UDP endpoint (what a viewer waits without the tap's last group of
//     pictures: H.264 is passed through, so nobody asks the camera for a key frame). With
//     `--baseline <checkout>` (another Periscope tree, e.g. `git archive <commit>` with node_modules
//     linked), a second service runs from it beside this one and the joins alternate between the two:
//     both figures come from the same run, under the same load, with their ratio. Also the cost of
//     keeping the last group of pictures (media/hub.ts GopCache) per packet of this stream;
//  2. what the browser adds per frame once it plays (getStats: mean jitter-buffer delay and decode time);
//  3. the latency a WHEP viewer pays over a plain RTP/UDP receiver (issue 12's target: ≤ 5 ms at p99):
//     per frame, when its last packet reaches a werift WHEP client minus when the same packet reached
//     the stream's plain UDP endpoint. Every receiver — the plain one and each viewer — runs in a
//     process of its own (bench/whep-receiver.ts) and times arrivals the same way, on a clock the
//     processes share; this process only pairs the lists afterwards. (Eight werift clients in one
//     process delayed each other's arrivals: each decrypts its SRTP in JavaScript on the one event loop.)
//     Frames are paired by the end of the last packet's payload (the service rewrites the RTP header,
//     never the payload); with n viewers, every viewer's frames count. A second plain receiver (the
//     control), measured against the first the same way, shows what the machine's load alone adds.
//     The same frames are also timed in the kernel (tcpdump on loopback, bench/capture.ts: root): when
//     the service sent each frame's last SRTP packet to each viewer against when the camera's child sent
//     it to the plain receiver — the service's own delay, with no receiving process's work in it;
//  4. CPU and RSS of the service process alone per extra viewer (target ≤ 2 % of a core each), with 0
//     and then each of --viewers werift WHEP clients, each in its own process (Chromium decoding 1080p
//     eight times would swamp a 2-core machine; the service's work per viewer is the same: SRTP and send);
//  5. the send path alone, with neither the camera nor the receivers in the figure: the stream's real key
//     frames handed by a stand-in hub to n WebRtcViewers (media/webrtc/session.ts) in this process, whose
//     werift peers run in processes of their own; the time until every session has sent the whole frame
//     (the sends all happen before the event loop's next turn) beside plain node:dgram sending the same
//     packets to n loopback ports. A key frame is what the p99 of 3. is made of: one frame in FPS.
// `bun run bench/whep.bench.ts [--trials 10] [--seconds 20] [--viewers 1,4,8] [--width 1920 --height 1080 --fps 30] [--baseline DIR] [--profile DIR] [--skip firstframe,latency,cpu,send] [--bursts 60] [--idle-receivers] [--api-load 32]`
// The simulated camera encodes with x264 (key-int-max = fps: a key frame every second).
import { createSocket } from 'node:dgram'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'puppeteer-core'
import { createLogger } from '../core/log'
import { GopCache, MediaHub } from '../media/hub'
import { WebRtcViewer } from '../media/webrtc/session'
import { startsKeyFrame } from '../media/rtp'
import { launchBrowser, openPage, openSession, watch } from '../tests/integration/browser'
import { TICK, apiLoad, argOf, cpuTicks, freePort, numberArg, rssKb, waitHttp } from './lib'
import { Receiver, type Arrivals } from './whep-receiver'
import { Capture, addedInKernel } from './capture'

const TRIALS = numberArg('trials', 10)
const WIDTH = numberArg('width', 1920)
const HEIGHT = numberArg('height', 1080)
const FPS = numberArg('fps', 30)
const SECONDS = numberArg('seconds', 20)
const VIEWERS = argOf('viewers', '1,4,8').split(',').map(Number)
const BASELINE = argOf('baseline', '')
/** A directory for a CPU profile of this tree's service (Bun's --cpu-prof, in Markdown), written when it stops. */
const PROFILE = argOf('profile', '')
/** Sections to leave out: firstframe, latency, cpu, send. */
const SKIP = argOf('skip', '').split(',')
/** Key frames handed to the sessions per row of the send-path section. */
const BURSTS = numberArg('bursts', 60)
/** Each latency row again with this many HTTP connections looping GET /api/devices on the service (wrk); 0: none. */
const API_LOAD = numberArg('api-load', 32)
/** Receivers under SCHED_IDLE, out of the service's way: then only the kernel-timed figures are the service's. */
Receiver.idle = process.argv.includes('--idle-receivers')
const ROOT = join(import.meta.dir, '..')
const EHD = 'usb-0000:00:14.0-1' // the default preset's exploreHD: it has an H.264 node
/** Packets of the stream kept to time the GOP cache on (a minute of 1080p30 at 2 Mbit/s is ~12 000). */
const SAMPLE_PACKETS = 20_000

/**
 * A service (from the tree `root`) streaming the simulated exploreHD to a plain receiver of its own: the
 * stream's UDP endpoint on loopback, which notes when each key frame arrives; and to `alsoTo`, more
 * loopback UDP ports (the plain receiver process the latency is measured against).
 */
async function startService(root: string, name: string, alsoTo: number[] = []) {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const proc = Bun.spawn(
    [process.execPath, ...(PROFILE && root === ROOT ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${PROFILE}`] : []), join(root, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(port), '--data-dir', mkdtempSync(join(tmpdir(), 'periscope-whep-bench-')), '--simulate', 'default', '--rtsp-port', '0', '--log-level', 'error',
      // Every viewer here is one client (loopback), which may hold half of --max-viewers: room for all.
      '--max-viewers', String(Math.max(8, 2 * Math.max(...VIEWERS)))],
    { cwd: root, stdout: 'ignore', stderr: 'inherit' },
  )
  const keyFrames: number[] = []
  const sample: Uint8Array[] = []
  /** When the first and the last packet of `sample` arrived. */
  const sampled = { from: 0, to: 0 }
  const udp = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
  const service = {
    name,
    url,
    proc,
    keyFrames,
    sample,
    sampled,
    udp,
    call: (method: string, path: string, body?: unknown) =>
      fetch(url + path, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined }),
    async stop() {
      udp.close()
      proc.kill('SIGTERM')
      await proc.exited
    },
  }
  udp.on('message', (packet) => {
    const at = performance.now()
    if (sample.length < SAMPLE_PACKETS) {
      if (!sample.length) sampled.from = at
      sample.push(packet)
      sampled.to = at
    }
    if (startsKeyFrame(packet)) keyFrames.push(at)
  })
  try {
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve))
    await waitHttp(`${url}/api/health`)
    const r = await service.call('POST', '/api/devices/configure_stream', {
      bus_info: EHD,
      stream_type: 'UDP',
      stream_format: { width: WIDTH, height: HEIGHT, interval: { numerator: 1, denominator: FPS } },
      encode_type: 'H264',
      enabled: true,
      endpoints: [udp.address().port, ...alsoTo].map((port) => ({ host: '127.0.0.1', port })),
    })
    if (r.status !== 200) throw new Error(`configure_stream (${name}): ${r.status} ${await r.text()}`)
    const started = performance.now()
    while (keyFrames.length < 2) {
      if (performance.now() - started > 30_000) throw new Error(`no key frames at the UDP endpoint of ${name} within 30 s`)
      await Bun.sleep(50)
    }
  } catch (err) {
    await service.stop()
    throw err
  }
  return service
}
type Service = Awaited<ReturnType<typeof startService>>

/** Packets per second of the stream, over the sample kept so far. */
const packetRate = () => service.sample.length / ((service.sampled.to - service.sampled.from) / 1000)

/** The frames of a run of the stream's RTP (a frame ends at the marker bit), key frames apart. */
function framesOf(packets: Uint8Array[]) {
  const keyFrames: Uint8Array[][] = []
  const otherFrames: Uint8Array[][] = []
  let frame: Uint8Array[] = []
  for (const packet of packets) {
    frame.push(packet)
    if (packet[1]! & 0x80) {
      ;(startsKeyFrame(frame[0]!) ? keyFrames : otherFrames).push(frame)
      frame = []
    }
  }
  return { keyFrames, otherFrames }
}
/** Packets per frame, key frames apart. */
function packetsPerFrame(packets: Uint8Array[]) {
  const { keyFrames, otherFrames } = framesOf(packets)
  return { keyFrame: keyFrames.map((f) => f.length), otherFrame: otherFrames.map((f) => f.length) }
}

/** The send-path section's hub: a real one (media/hub.ts) that never listens; the bench hands it the packets. */
function standInHub(width: number, height: number, fps: number): MediaHub {
  return new MediaHub({ encoding: 'H264', width, height, fps, members: [EHD], log: createLogger('error') })
}

/** Resolves once what the current turn of the event loop queued (ticks, microtasks: the sends) has run. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve))

async function sendPath() {
  const { keyFrames } = framesOf(service.sample)
  if (!keyFrames.length) throw new Error('no key frame in the sample of the stream')
  const packets = mean(keyFrames.map((f) => f.length))
  console.log(`\nthe send path alone: one key frame of the stream (${packets.toFixed(0)} packets on average, ${keyFrames.length} different ones) handed at once to n WebRtcViewers in this`)
  console.log(`process (their werift peers each in a process of their own), until the last SRTP packet is sent; beside node:dgram sending the same packets n times; ${BURSTS} key frames per row`)
  console.log('viewers   WHEP p50 ms   p90 ms   max ms   plain fan-out p50 ms   ratio (p50)   CPU µs per packet per viewer: WHEP   plain   ratio')
  const fanOut = createSocket('udp4')
  await new Promise<void>((resolve) => fanOut.bind(0, '127.0.0.1', resolve))
  for (const n of VIEWERS) {
    const hub = standInHub(WIDTH, HEIGHT, FPS)
    const sessions: WebRtcViewer[] = []
    const peers: Receiver[] = []
    try {
      for (let i = 0; i < n; i++) {
        const session = new WebRtcViewer({ id: `send-path-${i}`, reader: 'whep', bus_info: EHD, hub, member: 0, listenHost: '127.0.0.1', peer: '127.0.0.1', label: 'bench', onEnd: () => {} })
        sessions.push(session)
        peers.push(await Receiver.spawn(['peer'], (offer) => session.answer(offer)))
      }
      const started = performance.now()
      while (hub.readerStats().readers < n) {
        if (performance.now() - started > 30_000) throw new Error(`${hub.readerStats().readers} of ${n} sessions connected within 30 s`)
        await Bun.sleep(20)
      }
      const whep: number[] = []
      const plainTimes: number[] = []
      // CPU time of this process over the bursts (µs): unlike the wall time, not stretched by the machine's load.
      let [whepCpu, plainCpu] = [0, 0]
      const cpuOf = (from: NodeJS.CpuUsage) => {
        const used = process.cpuUsage(from)
        return used.user + used.system
      }
      for (let b = 0; b < BURSTS; b++) {
        const frame = keyFrames[b % keyFrames.length]!
        await Bun.sleep(1000 / FPS) // the peers take theirs in between
        let [t0, c0] = [performance.now(), process.cpuUsage()]
        for (const packet of frame) hub.receive(0, packet)
        await nextTurn()
        whep.push(performance.now() - t0)
        whepCpu += cpuOf(c0)
        await Bun.sleep(1000 / FPS)
        ;[t0, c0] = [performance.now(), process.cpuUsage()]
        for (const packet of frame) for (let k = 0; k < n; k++) fanOut.send(packet, control.port!, '127.0.0.1')
        await nextTurn()
        plainTimes.push(performance.now() - t0)
        plainCpu += cpuOf(c0)
      }
      const p50 = pct(whep, 50)
      const sends = BURSTS * packets * n
      console.log(`${String(n).padStart(7)} ${p50.toFixed(2).padStart(13)} ${pct(whep, 90).toFixed(2).padStart(8)} ${Math.max(...whep).toFixed(2).padStart(8)} ${pct(plainTimes, 50).toFixed(2).padStart(22)} ${(p50 / pct(plainTimes, 50)).toFixed(2).padStart(13)} ${(whepCpu / sends).toFixed(1).padStart(36)} ${(plainCpu / sends).toFixed(1).padStart(7)} ${(whepCpu / plainCpu).toFixed(2).padStart(7)}`)
    } finally {
      await Promise.all(sessions.map((s) => s.close('stopped')))
      await Promise.all(peers.map((p) => p.close()))
    }
  }
  fanOut.close()
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
const pct = (xs: number[], p: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
const ms = (x: number) => `${Math.round(x)} ms`
/** The service's child processes (the camera's gst-launch-1.0): the same in every row, no encoder per viewer. */
const children = () => Bun.spawnSync(['ps', '-o', 'pid=', '--ppid', String(service.proc.pid)]).stdout.toString().trim().split('\n').filter(Boolean).length

/** Every receiver process started, closed at the end whatever happens. */
const opened: Receiver[] = []
/**
 * The plain RTP/UDP receiver the latency is measured against: one more endpoint of the stream; and a
 * second one, the control, measured against it the same way as the viewers.
 */
const [plain, control] = [await Receiver.spawn(['udp']), await Receiver.spawn(['udp'])]
opened.push(plain, control)
const service = await startService(ROOT, 'this tree', [plain.port!, control.port!])
/** `n` WHEP viewers of the simulated exploreHD, each in its own process, once each receives frames. */
const openViewers = async (n: number) => {
  const viewers: Receiver[] = []
  for (let i = 0; i < n; i++) {
    const viewer = await Receiver.spawn(['whep', service.url, EHD])
    opened.push(viewer)
    viewers.push(viewer)
  }
  return viewers
}
/**
 * Per frame a viewer and the plain receiver both saw, how much later it reached the viewer (ms). Either
 * side may come first (the tap and the endpoint are two sends of the camera's child); a frame key seen
 * more than a second apart is another frame.
 */
const added = (base: Arrivals, viewer: Arrivals) => {
  const plainAt = new Map(base.keys.map((key, i) => [key, base.at[i]!]))
  const out: number[] = []
  viewer.keys.forEach((key, i) => {
    const then = plainAt.get(key)
    if (then !== undefined && Math.abs(viewer.at[i]! - then) <= 1000) out.push(viewer.at[i]! - then)
  })
  return out
}
let older: Service | null = null
let browser: Browser | null = null
try {
  if (TRIALS > 0 && !SKIP.includes('firstframe')) {
    browser = await launchBrowser()
    if (BASELINE) older = await startService(BASELINE, `baseline ${BASELINE}`)
    const services = older ? [service, older] : [service]
    const results = services.map(() => ({ firstFrame: [] as number[], plainJoin: [] as number[], jitter: 0, decode: 0 }))
    const pages = await Promise.all(services.map((s) => openPage(browser!, s.url)))
    const whep = `/api/streams/${encodeURIComponent(EHD)}/whep`
    for (let i = 0; i < TRIALS; i++) {
      for (let k = 0; k < services.length; k++) {
        const at = (i + k) % services.length // alternate which goes first
        const [s, page, result] = [services[at]!, pages[at]!, results[at]!]
        // Join at a random point of the key-frame interval, as a viewer does.
        await Bun.sleep(Math.random() * 1000)
        const opened = await openSession(page, whep, `t${i}`)
        if (opened.status !== 201) throw new Error(`WHEP POST (${s.name}): ${opened.status} ${opened.detail}`)
        const v = await watch(page, `t${i}`, (v) => v.framesDecoded > 0, 20_000)
        result.firstFrame.push(v.firstFrameMs!)
        // The POST's instant on this process's clock: the page's clock has another origin, read between two
        // readings of ours (the error is at most half that round trip).
        const before = performance.now()
        const pageNow = await page.evaluate(() => performance.now())
        const postedAt = opened.postedAt + ((before + performance.now()) / 2 - pageNow)
        const settled = await watch(page, `t${i}`, (w) => w.framesDecoded >= FPS * 2, 20_000)
        // Looked up two seconds of frames later: the next key frame may come after WHEP's first frame.
        const nextKey = s.keyFrames.find((t) => t >= postedAt)
        if (nextKey !== undefined) result.plainJoin.push(nextKey - postedAt)
        result.jitter += settled.jitterBufferMs
        result.decode += settled.decodeMs
        await fetch(s.url + opened.location!, { method: 'DELETE' })
      }
    }
    await Promise.all(pages.map((p) => p.close()))

    console.log(`WHEP, ${WIDTH}x${HEIGHT}@${FPS} H.264 (simulated, x264 key frame every ${1} s), ${TRIALS} joins per service, Chromium on loopback`)
    services.forEach((s, k) => {
      const { firstFrame, plainJoin, jitter, decode } = results[k]!
      console.log(`  ${s.name}:`)
      console.log(`    time to first decoded frame: p50 ${ms(pct(firstFrame, 50))}, p90 ${ms(pct(firstFrame, 90))}, max ${ms(Math.max(...firstFrame))}, mean ${ms(mean(firstFrame))} (target ≤ 500 ms)`)
      console.log(`    plain RTP receiver joining at the same instant, wait for its first key frame: mean ${ms(mean(plainJoin))}, max ${ms(Math.max(...plainJoin))}`)
      console.log(`    ratio WHEP / plain join (mean): ${(mean(firstFrame) / mean(plainJoin)).toFixed(2)}`)
      console.log(`    in the browser, per frame over the first ${FPS * 2} frames: jitter buffer ${(jitter / TRIALS).toFixed(1)} ms, decode ${(decode / TRIALS).toFixed(1)} ms`)
    })
    if (older) {
      const [mine, theirs] = results.map((r) => mean(r.firstFrame))
      console.log(`  ratio this tree / baseline, mean time to first decoded frame: ${(mine! / theirs!).toFixed(2)} (${ms(mine!)} against ${ms(theirs!)})`)
      await older.stop()
      older = null
    }
  }

  // The cost of keeping the last group of pictures, paid on every packet of every H.264 stream.
  if (service.sample.length > 100) {
    const rounds = 20
    const started = performance.now()
    for (let r = 0; r < rounds; r++) {
      const cache = new GopCache()
      for (const packet of service.sample) cache.push(packet)
    }
    const perPacketUs = ((performance.now() - started) * 1000) / (rounds * service.sample.length)
    const rate = packetRate()
    console.log(`\nGOP cache (media/hub.ts): ${perPacketUs.toFixed(2)} µs per packet over ${service.sample.length} packets of this stream; at its ~${Math.round(rate)} packets/s that is ${((perPacketUs * rate) / 1e4).toFixed(3)} % of a core`)
  }

  // 3. Latency: every werift viewer against the plain receiver, frame by frame, each in its own process.
  if (!SKIP.includes('latency')) {
  console.log(`\nlatency added per frame (werift WHEP client arrival − plain UDP receiver arrival of the same last packet; each receiver a process of its own), ${SECONDS} s`)
  console.log('viewers  API load          frames/viewer  matched   p50 ms   p99 ms   max ms   worst viewer p99   p99 / 3 ms target   control p50 / p99 ms')
  const kernelRows: string[] = []
  const latencyRow = async (n: number, connections: number) => {
    const viewers = await openViewers(n)
    await Bun.sleep(2000) // steady: the join's key-frame burst is over
    const capture = await Capture.start([plain.port!, ...viewers.map((v) => v.port!)])
    for (const r of [plain, control, ...viewers]) r.record()
    const load = apiLoad(`${service.url}/api/devices`, connections, SECONDS + 5)
    await Bun.sleep(SECONDS * 1000)
    const rps = await load.stop()
    const label = `${String(n).padStart(7)} ${(connections ? `${connections} conns ${Math.round(rps)}/s` : 'none').padEnd(17)}`
    const [base, again, ...seen] = await Promise.all([plain, control, ...viewers].map((r) => r.report()))
    const captured = await capture.stop()
    const inKernel = viewers.map((v) => addedInKernel(captured.get(plain.port!) ?? [], captured.get(v.port!) ?? []))
    const kernelAll = sorted(inKernel.flat())
    kernelRows.push(
      kernelAll.length
        ? `${label} ${String(kernelAll.length).padStart(8)} ${pct(kernelAll, 50).toFixed(2).padStart(8)} ${pct(kernelAll, 99).toFixed(2).padStart(8)} ${kernelAll.at(-1)!.toFixed(2).padStart(8)} ${Math.max(...inKernel.map((xs) => (xs.length ? pct(xs, 99) : Infinity))).toFixed(2).padStart(18)}   ${(pct(kernelAll, 99) / 3).toFixed(2)}`
        : `${label}  no frame paired in the capture`,
    )
    const floor = sorted(added(base!, again!))
    await Promise.all(viewers.map((v) => v.close()))
    const perViewer = seen.map((arrivals) => added(base!, arrivals))
    const all = sorted(perViewer.flat())
    if (!all.length) throw new Error(`no frame of a WHEP viewer matched one of the plain receiver (${seen.map((a) => a.frames).join(', ')} frames)`)
    const p99 = pct(all, 99)
    const worst = Math.max(...perViewer.map((xs) => (xs.length ? pct(xs, 99) : Infinity)))
    const frames = Math.min(...seen.map((a) => a.frames))
    console.log(`${label} ${String(frames).padStart(14)} ${String(all.length).padStart(8)} ${pct(all, 50).toFixed(2).padStart(8)} ${p99.toFixed(2).padStart(8)} ${all.at(-1)!.toFixed(2).padStart(8)} ${worst.toFixed(2).padStart(18)}   ${(p99 / 3).toFixed(2).padStart(17)}   ${pct(floor, 50).toFixed(2).padStart(8)} / ${pct(floor, 99).toFixed(2)}`)
  }
  for (const n of VIEWERS) for (const connections of [0, ...(API_LOAD ? [API_LOAD] : [])]) await latencyRow(n, connections)
  console.log(`\nthe same frames timed in the kernel (tcpdump on lo, bench/capture.ts): the service's sendto() of a frame's last SRTP packet to each viewer − the camera child's sendto() of it to the plain receiver; no receiver's own work in it`)
  console.log('viewers  API load          matched   p50 ms   p99 ms   max ms   worst viewer p99   p99 / 3 ms target')
  for (const row of kernelRows) console.log(row)
  const { keyFrame, otherFrame } = packetsPerFrame(service.sample)
  console.log(`(the stream: ${keyFrame.length} key frames of ${mean(keyFrame).toFixed(0)} packets on average (max ${Math.max(...keyFrame)}), other frames ${mean(otherFrame).toFixed(1)}; one frame in ${FPS} is a key frame, so the p99 is the key frames': their packets leave the service in one burst, one SRTP packet per viewer each)`)
  console.log('(p50/p99/max over every viewer\'s frames together; "worst viewer p99" is the highest of each viewer\'s own p99;')
  console.log(' "control": a second plain UDP receiver process against the first, over the same frames — what the machine\'s load alone puts on the measurement, no service in between)')

  }

  // 4. CPU and RSS of the service process by number of viewers.
  if (!SKIP.includes('cpu')) {
  console.log(`\nCPU (% of one core) and RSS of the service process, by werift WHEP viewers (one process each) of the one stream, ${SECONDS} s per row`)
  console.log('viewers   cpu %   per extra viewer   rss MB   children   frames/s at each viewer (min)')
  let baseline = 0
  let baselineRss = 0
  for (const n of [0, ...VIEWERS]) {
    const viewers = await openViewers(n)
    await Bun.sleep(2000) // joined and steady
    for (const v of viewers) v.record()
    const t0 = cpuTicks(service.proc.pid)
    const started = performance.now()
    await Bun.sleep(SECONDS * 1000)
    const seconds = (performance.now() - started) / 1000
    const cpu = (100 * (cpuTicks(service.proc.pid) - t0)) / TICK / seconds
    const rss = rssKb(service.proc.pid) / 1024
    const seen = await Promise.all(viewers.map((v) => v.report()))
    if (n === 0) [baseline, baselineRss] = [cpu, rss]
    const perViewer = n ? `${((cpu - baseline) / n).toFixed(2)} %, ${((rss - baselineRss) / n).toFixed(1)} MB` : '—'
    const slowest = n ? Math.min(...seen.map((a) => a.frames / a.seconds)).toFixed(1) : '—'
    console.log(`${String(n).padStart(7)} ${cpu.toFixed(1).padStart(7)} ${perViewer.padStart(18)} ${rss.toFixed(0).padStart(8)} ${String(children()).padStart(10)} ${slowest.padStart(10)}`)
    await Promise.all(viewers.map((v) => v.close()))
    await Bun.sleep(1000) // sessions gone before the next row
  }
  console.log("(the camera's gst child is the same in every row: viewers are sent the stream hub's H.264, never re-encoded)")
  }

  // 5. The send path alone: key frames to n sessions, beside a plain fan-out of the same packets.
  if (!SKIP.includes('send')) await sendPath()
} finally {
  await Promise.all(opened.map((r) => r.close()))
  await browser?.close()
  await older?.stop()
  await service.stop()
}
