// WHEP in a real browser (headless Chromium, tests/integration/browser.ts), against a plain RTP/UDP
// receiver of the same stream:
//  1. time to first decoded frame: POST of the offer → getStats() framesDecoded > 0, TRIALS times
//     (target ≤ 500 ms), beside the time a plain RTP receiver joining at the same instant waits for its
//     first key frame at the stream's UDP endpoint (a viewer can start no sooner: H.264 is passed
//     through, so nobody asks the camera for a key frame);
//  2. what the browser adds per frame once it plays (getStats: mean jitter-buffer delay and decode time).
// `bun run bench/whep.bench.ts [--trials 10] [--width 1920 --height 1080 --fps 30]`
// The simulated camera encodes with x264 (key-int-max = fps: a key frame every second).
import { createSocket } from 'node:dgram'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startsKeyFrame } from '../plugins/whep/h264'
import { launchBrowser, openPage, openSession, watch } from '../tests/integration/browser'
import { freePort, numberArg, waitHttp } from './lib'

const TRIALS = numberArg('trials', 10)
const WIDTH = numberArg('width', 1920)
const HEIGHT = numberArg('height', 1080)
const FPS = numberArg('fps', 30)
const ROOT = join(import.meta.dir, '..')
const EHD = 'usb-0000:00:14.0-1' // the default preset's exploreHD: it has an H.264 node

const port = await freePort()
const udpPort = await freePort()
const url = `http://127.0.0.1:${port}`
const service = Bun.spawn(
  [process.execPath, join(ROOT, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(port), '--data-dir', mkdtempSync(join(tmpdir(), 'periscope-whep-bench-')), '--simulate', 'default', '--log-level', 'error'],
  { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' },
)
const call = (method: string, path: string, body?: unknown) =>
  fetch(url + path, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined })

// The plain receiver: the stream's own UDP endpoint, on loopback. It notes when each key frame arrives.
const keyFrames: number[] = []
const udp = createSocket('udp4')
udp.on('message', (packet) => startsKeyFrame(packet) && keyFrames.push(performance.now()))
await new Promise<void>((resolve) => udp.bind(udpPort, '127.0.0.1', resolve))

const browser = await launchBrowser()
try {
  await waitHttp(`${url}/api/health`)
  const r = await call('POST', '/api/devices/configure_stream', {
    bus_info: EHD,
    stream_type: 'UDP',
    stream_format: { width: WIDTH, height: HEIGHT, interval: { numerator: 1, denominator: FPS } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: udpPort }],
  })
  if (r.status !== 200) throw new Error(`configure_stream: ${r.status} ${await r.text()}`)
  const started = performance.now()
  while (keyFrames.length < 2) {
    if (performance.now() - started > 30_000) throw new Error('no key frames at the UDP endpoint within 30 s')
    await Bun.sleep(50)
  }

  const page = await openPage(browser, url)
  const firstFrame: number[] = []
  const plainJoin: number[] = []
  let jitter = 0
  let decode = 0
  const whep = `/api/streams/${encodeURIComponent(EHD)}/whep`
  for (let i = 0; i < TRIALS; i++) {
    // Join at a random point of the key-frame interval, as a viewer does.
    await Bun.sleep(Math.random() * 1000)
    const postedAt = performance.now()
    const opened = await openSession(page, whep, `t${i}`)
    if (opened.status !== 201) throw new Error(`WHEP POST: ${opened.status} ${opened.detail}`)
    const v = await watch(page, `t${i}`, (v) => v.framesDecoded > 0, 20_000)
    firstFrame.push(v.firstFrameMs!)
    const nextKey = keyFrames.find((t) => t >= postedAt)
    if (nextKey !== undefined) plainJoin.push(nextKey - postedAt)
    const settled = await watch(page, `t${i}`, (w) => w.framesDecoded >= FPS * 2, 20_000)
    jitter += settled.jitterBufferMs
    decode += settled.decodeMs
    await fetch(url + opened.location!, { method: 'DELETE' })
  }
  await page.close()

  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
  const pct = (xs: number[], p: number) => sorted(xs)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
  const ms = (x: number) => `${Math.round(x)} ms`
  console.log(`WHEP, ${WIDTH}x${HEIGHT}@${FPS} H.264 (simulated, x264 key frame every ${1} s), ${TRIALS} joins, Chromium on loopback`)
  console.log(`  time to first decoded frame: p50 ${ms(pct(firstFrame, 50))}, p90 ${ms(pct(firstFrame, 90))}, max ${ms(Math.max(...firstFrame))}, mean ${ms(mean(firstFrame))} (target ≤ 500 ms)`)
  console.log(`  plain RTP receiver joining at the same instant, wait for its first key frame: mean ${ms(mean(plainJoin))}, max ${ms(Math.max(...plainJoin))}`)
  console.log(`  ratio WHEP / plain join (mean): ${(mean(firstFrame) / mean(plainJoin)).toFixed(2)}; WHEP's own share (mean difference): ${ms(mean(firstFrame) - mean(plainJoin))}`)
  console.log(`  in the browser, per frame once playing: jitter buffer ${(jitter / TRIALS).toFixed(1)} ms, decode ${(decode / TRIALS).toFixed(1)} ms`)
} finally {
  await browser.close()
  udp.close()
  service.kill('SIGTERM')
  await service.exited
}
