// WHEP in a real browser (headless Chromium, tests/integration/browser.ts), against a plain RTP/UDP
// receiver of the same stream:
//  1. time to first decoded frame: POST of the offer → getStats() framesDecoded > 0, TRIALS times
//     (target ≤ 500 ms), beside the time a plain RTP receiver joining at the same instant waits for its
//     first key frame at the stream's UDP endpoint (what a viewer waits without the tap's last group of
//     pictures: H.264 is passed through, so nobody asks the camera for a key frame). With
//     `--baseline <checkout>` (another Periscope tree, e.g. `git archive <commit>` with node_modules
//     linked), a second service runs from it beside this one and the joins alternate between the two:
//     both figures come from the same run, under the same load, with their ratio. Also the cost of
//     keeping the last group of pictures (drivers/gstreamer/tap.ts GopCache) per packet of this stream;
//  2. what the browser adds per frame once it plays (getStats: mean jitter-buffer delay and decode time);
//  3. the latency a WHEP viewer pays over a plain RTP/UDP receiver (issue 12's target: ≤ 5 ms at p99):
//     per frame, when its last packet reaches a werift WHEP client in this process minus when the same
//     packet reached the stream's UDP endpoint (also in this process). Frames are paired by the end of
//     the last packet's payload (the service rewrites the RTP header, never the payload);
//  4. CPU and RSS of the service process alone per extra viewer (target ≤ 2 % of a core each), with 0
//     and then each of --viewers werift WHEP clients in this process (Chromium decoding 1080p eight times
//     would swamp a 2-core machine; the service's work per viewer is the same: SRTP and send).
// `bun run bench/whep.bench.ts [--trials 10] [--seconds 20] [--viewers 1,4,8] [--width 1920 --height 1080 --fps 30] [--baseline DIR]`
// The simulated camera encodes with x264 (key-int-max = fps: a key frame every second).
import { createSocket } from 'node:dgram'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Browser } from 'puppeteer-core'
import { RTCPeerConnection, type RtpPacket } from 'werift'
import { GopCache } from '../drivers/gstreamer/tap'
import { payloadOffset, startsKeyFrame } from '../plugins/whep/h264'
import { H264_CODEC } from '../plugins/whep/session'
import { launchBrowser, openPage, openSession, watch } from '../tests/integration/browser'
import { TICK, argOf, cpuTicks, freePort, numberArg, rssKb, waitHttp } from './lib'

const TRIALS = numberArg('trials', 10)
const WIDTH = numberArg('width', 1920)
const HEIGHT = numberArg('height', 1080)
const FPS = numberArg('fps', 30)
const SECONDS = numberArg('seconds', 20)
const VIEWERS = argOf('viewers', '1,4,8').split(',').map(Number)
const BASELINE = argOf('baseline', '')
const ROOT = join(import.meta.dir, '..')
const EHD = 'usb-0000:00:14.0-1' // the default preset's exploreHD: it has an H.264 node
/** Packets of the stream kept to time the GOP cache on (a minute of 1080p30 at 2 Mbit/s is ~12 000). */
const SAMPLE_PACKETS = 20_000

/** A frame by the end of its last packet's payload: the service rewrites RTP headers, never payloads. */
const frameKey = (payload: Uint8Array) => Buffer.from(payload.subarray(Math.max(0, payload.length - 64))).toString('base64')

/**
 * A service (from the tree `root`) streaming the simulated exploreHD to a plain receiver of its own: the
 * stream's UDP endpoint on loopback, which notes when each key frame arrives, and when each frame's last
 * packet (marker bit) arrives, by frame.
 */
async function startService(root: string, name: string) {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const proc = Bun.spawn(
    [process.execPath, join(root, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(port), '--data-dir', mkdtempSync(join(tmpdir(), 'periscope-whep-bench-')), '--simulate', 'default', '--rtsp-port', '0', '--log-level', 'error'],
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
    onUdpFrame: null as ((key: string, at: number) => void) | null,
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
    const offset = payloadOffset(packet)
    if (offset > 0 && (packet[1]! & 0x80) !== 0) service.onUdpFrame?.(frameKey(packet.subarray(offset)), at)
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
      endpoints: [{ host: '127.0.0.1', port: udp.address().port }],
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

/** A WHEP viewer in this process: werift offers recvonly H.264, POSTs it, and hands over each RTP packet. */
class WhepViewer {
  frames = 0
  private constructor(private readonly pc: RTCPeerConnection, readonly location: string) {}

  static async open(url: string, onRtp: (packet: RtpPacket, at: number) => void): Promise<WhepViewer> {
    // Loopback only: its one candidate is 127.0.0.1, and the service (on 127.0.0.1) offers only its own.
    const pc = new RTCPeerConnection({
      codecs: { video: [H264_CODEC()], audio: [] },
      iceUseIpv4: false,
      iceUseIpv6: false,
      iceAdditionalHostAddresses: ['127.0.0.1'],
      iceInterfaceAddresses: { udp4: '127.0.0.1' },
      iceFilterCandidatePair: (pair) => pair.remoteCandidate.host.startsWith('127.'),
    })
    let viewer!: WhepViewer
    pc.onTrack.subscribe((track) =>
      track.onReceiveRtp.subscribe((packet) => {
        const at = performance.now()
        if (packet.header.marker) viewer.frames++
        onRtp(packet, at)
      }),
    )
    pc.addTransceiver('video', { direction: 'recvonly' })
    await pc.setLocalDescription(await pc.createOffer())
    if (pc.iceGatheringState !== 'complete') {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5_000)
        pc.iceGatheringStateChange.subscribe((state) => state === 'complete' && (clearTimeout(timer), resolve()))
      })
    }
    const res = await fetch(`${url}/api/streams/${encodeURIComponent(EHD)}/whep`, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: pc.localDescription!.sdp })
    const text = await res.text()
    if (res.status !== 201) throw new Error(`WHEP POST: ${res.status} ${text}`)
    viewer = new WhepViewer(pc, url + res.headers.get('location')!)
    await pc.setRemoteDescription({ type: 'answer', sdp: text })
    return viewer
  }

  async playing(timeoutMs = 30_000): Promise<void> {
    const started = performance.now()
    while (this.frames < 2) {
      if (performance.now() - started > timeoutMs) throw new Error(`a werift viewer got no frame within ${timeoutMs} ms`)
      await Bun.sleep(50)
    }
  }

  async close(): Promise<void> {
    await fetch(this.location, { method: 'DELETE' })
    await this.pc.close()
  }
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
const pct = (xs: number[], p: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
const ms = (x: number) => `${Math.round(x)} ms`
/** The service's child processes (the camera's gst-launch-1.0): the same in every row, no encoder per viewer. */
const children = () => Bun.spawnSync(['ps', '-o', 'pid=', '--ppid', String(service.proc.pid)]).stdout.toString().trim().split('\n').filter(Boolean).length

const service = await startService(ROOT, 'this tree')
let older: Service | null = null
let browser: Browser | null = null
try {
  if (TRIALS > 0) {
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
    const rate = service.sample.length / ((service.sampled.to - service.sampled.from) / 1000)
    console.log(`\nGOP cache (tap.ts): ${perPacketUs.toFixed(2)} µs per packet over ${service.sample.length} packets of this stream; at its ~${Math.round(rate)} packets/s that is ${((perPacketUs * rate) / 1e4).toFixed(3)} % of a core`)
  }

  // 3. Latency: one werift viewer against the UDP endpoint, frame by frame.
  console.log(`\nlatency added per frame (werift WHEP client arrival − UDP endpoint arrival of the same last packet), ${SECONDS} s`)
  console.log('viewers  frames  matched   p50 ms   p99 ms   max ms   p99 / 5 ms target')
  const latencyRow = async (n: number) => {
    // Either side may come first (the tap and the endpoint are two sends of the camera's child): pair
    // each frame when its second arrival comes; what stays unpaired a second was another frame.
    const udpAt = new Map<string, number>()
    const whepAt = new Map<string, number>()
    const added: number[] = []
    const pair = (mine: Map<string, number>, other: Map<string, number>, sign: number) => (key: string, at: number) => {
      const then = other.get(key)
      if (then === undefined || Math.abs(at - then) > 1000) return void mine.set(key, at)
      other.delete(key)
      added.push(sign * (at - then))
    }
    service.onUdpFrame = pair(udpAt, whepAt, -1)
    const onWhepFrame = pair(whepAt, udpAt, 1)
    const onRtp = (packet: RtpPacket, at: number) => void (packet.header.marker && onWhepFrame(frameKey(packet.payload), at))
    const viewers: WhepViewer[] = []
    for (let i = 0; i < n; i++) viewers.push(await WhepViewer.open(service.url, i === 0 ? onRtp : () => {}))
    await Promise.all(viewers.map((v) => v.playing()))
    await Bun.sleep(2000) // steady: the join's key-frame burst is over
    added.length = 0
    const framesBefore = viewers[0]!.frames
    await Bun.sleep(SECONDS * 1000)
    const frames = viewers[0]!.frames - framesBefore
    const matched = sorted(added)
    service.onUdpFrame = null
    await Promise.all(viewers.map((v) => v.close()))
    if (!matched.length) throw new Error(`no frame of the WHEP viewer matched one of the UDP endpoint (${frames} frames)`)
    const p99 = pct(matched, 99)
    console.log(`${String(n).padStart(7)} ${String(frames).padStart(7)} ${String(matched.length).padStart(8)} ${pct(matched, 50).toFixed(2).padStart(8)} ${p99.toFixed(2).padStart(8)} ${matched.at(-1)!.toFixed(2).padStart(8)}   ${(p99 / 5).toFixed(2)}`)
  }
  for (const n of VIEWERS) await latencyRow(n)
  console.log('(with n viewers, the first one is timed; the others load the service — and this process, which decrypts every viewer\'s SRTP)')

  // 4. CPU and RSS of the service process by number of viewers.
  console.log(`\nCPU (% of one core) and RSS of the service process, by werift WHEP viewers of the one stream, ${SECONDS} s per row`)
  console.log('viewers   cpu %   per extra viewer   rss MB   children   frames/s at each viewer (min)')
  let baseline = 0
  let baselineRss = 0
  for (const n of [0, ...VIEWERS]) {
    const viewers: WhepViewer[] = []
    for (let i = 0; i < n; i++) viewers.push(await WhepViewer.open(service.url, () => {}))
    await Promise.all(viewers.map((v) => v.playing()))
    await Bun.sleep(2000) // joined and steady
    const framesBefore = viewers.map((v) => v.frames)
    const t0 = cpuTicks(service.proc.pid)
    const started = performance.now()
    await Bun.sleep(SECONDS * 1000)
    const seconds = (performance.now() - started) / 1000
    const cpu = (100 * (cpuTicks(service.proc.pid) - t0)) / TICK / seconds
    const rss = rssKb(service.proc.pid) / 1024
    if (n === 0) [baseline, baselineRss] = [cpu, rss]
    const perViewer = n ? `${((cpu - baseline) / n).toFixed(2)} %, ${((rss - baselineRss) / n).toFixed(1)} MB` : '—'
    const slowest = n ? Math.min(...viewers.map((v, i) => (v.frames - framesBefore[i]!) / seconds)).toFixed(1) : '—'
    console.log(`${String(n).padStart(7)} ${cpu.toFixed(1).padStart(7)} ${perViewer.padStart(18)} ${rss.toFixed(0).padStart(8)} ${String(children()).padStart(10)} ${slowest.padStart(10)}`)
    await Promise.all(viewers.map((v) => v.close()))
    await Bun.sleep(1000) // sessions gone before the next row
  }
  console.log("(the camera's gst child is the same in every row: viewers are sent the live tap's H.264, never re-encoded)")
} finally {
  await browser?.close()
  await older?.stop()
  await service.stop()
}
