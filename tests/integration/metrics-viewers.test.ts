// periscope_viewers and the recording gauges with real clients, end to end: the whole service
// (core/main.ts: simulated cameras, GStreamer, its RTSP server) streams a camera to a loopback UDP
// endpoint, and real viewers come and go: plain HTTP reads of the MJPEG stream, GStreamer's rtspsrc and
// ffmpeg over RTSP (one at the camera's path, one at its nickname alias), Chromium over WHEP. Each
// protocol's gauge rises with its own clients only, and falls back to 0 when they hang up, tear down or
// DELETE; the recording bytes gauge grows while a recording made while streaming runs; promtool
// accepts the exposition throughout.
import { afterAll, afterEach, beforeAll, expect, test } from 'bun:test'
import { statSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import type { Browser } from 'puppeteer-core'
import { freeTcpPort, until } from '../helpers'
import { launchBrowser, openPage, openSession, videoStats, watch } from './browser'
import { freePort, Receiver, requireRtspClients, RtpCounter, segmentFile } from './gstreamer.helpers'
import { promtoolCheck, requirePromtool, scrape } from './metrics.helpers'
import { startService, type Service } from './service.helpers'

const CAMERA = 'usb-0000:00:14.0-1' // simulated exploreHD: H.264, in no group
const NICKNAME = 'Viewers Cam' // its RTSP alias (a client there counts for the camera)
const PROTOCOLS = ['rtsp', 'whep', 'mjpeg'] as const
type Counts = Record<(typeof PROTOCOLS)[number], number>

let service: Service
let rtspPort: number
let endpoint: RtpCounter
let endpointPort: number
let browser: Browser | null = null
const children: Subprocess[] = []
/** What each viewer a test opened needs to leave: run after every test (passed or not), so none outlives it. */
const leave: (() => Promise<unknown>)[] = []

/** The camera's stream to the UDP endpoint, running, with its RTSP mounts (path and nickname alias) served. */
async function startStream(): Promise<void> {
  const configured = await service.call('POST', '/api/devices/configure_stream', {
    bus_info: CAMERA,
    stream_type: 'UDP',
    encode_type: 'H264',
    stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: endpointPort }],
  })
  if (configured.status !== 200) throw new Error(`configure_stream answered ${configured.status}: ${JSON.stringify(configured.body)}`)
  await until('the stream running', async () => (await scrape(service.url)).m.value('periscope_stream_state', { bus_info: CAMERA, state: 'running' }), (v) => v === 1, 30_000)
  const received = endpoint.frames.length
  await until('frames at the UDP endpoint', async () => endpoint.frames.length, (n) => n > received, 15_000)
  await until(
    'the RTSP mounts (path and alias)',
    () => service.call('GET', '/api/rtsp'),
    (r) => ['/' + CAMERA, '/' + encodeURIComponent(NICKNAME)].every((path) => r.body?.mounts?.some((m: any) => m.path === path)),
    20_000,
  )
}

beforeAll(async () => {
  requireRtspClients()
  requirePromtool()
  rtspPort = freeTcpPort()
  service = await startService({ args: ['--rtsp-port', String(rtspPort)] })
  endpointPort = freePort()
  endpoint = await RtpCounter.open(endpointPort)
  expect((await service.call('POST', '/api/devices/set_nickname', { bus_info: CAMERA, nickname: NICKNAME })).status).toBe(200)
  await startStream()
}, 90_000)

afterEach(async () => {
  for (const done of leave.splice(0).reverse()) await done().catch(() => {})
})

afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
  await browser?.close()
  endpoint?.close()
  await service?.kill()
})

/** The camera's viewer gauges, one sample per protocol (a missing or doubled series fails the read). */
async function viewerCounts(): Promise<Counts> {
  const { m } = await scrape(service.url)
  const counts = {} as Counts
  for (const protocol of PROTOCOLS) {
    const value = m.value('periscope_viewers', { bus_info: CAMERA, protocol })
    if (value === undefined) throw new Error(`no periscope_viewers sample for protocol ${protocol}`)
    counts[protocol] = value
  }
  return counts
}

/** Polls /metrics until every protocol's gauge is as given (others at 0): a viewer counted twice or under another protocol fails. */
function viewersBecome(what: string, expected: Partial<Counts>, timeoutMs = 20_000): Promise<Counts> {
  const want = { rtsp: 0, whep: 0, mjpeg: 0, ...expected }
  return until(what, viewerCounts, (c) => PROTOCOLS.every((p) => c[p] === want[p]), timeoutMs)
}

/** promtool accepts what /metrics serves now. */
async function expectPromtoolAccepts(): Promise<void> {
  const { text } = await scrape(service.url)
  expect(await promtoolCheck(text)).toEqual({ code: 0, output: '' })
}

/**
 * A plain HTTP client of the camera's MJPEG stream: one connection, reading the multipart body as it
 * comes; resolves once a whole JPEG part arrived. `close()` aborts the request (the connection closes).
 */
async function mjpegViewer(): Promise<{ parts: () => number; close: () => Promise<void> }> {
  const controller = new AbortController()
  const res = await fetch(`${service.url}/api/streams/${encodeURIComponent(CAMERA)}/mjpeg`, { signal: controller.signal })
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toStartWith('multipart/x-mixed-replace')
  const reader = res.body!.getReader()
  const decoder = new TextDecoder('latin1')
  let parts = 0
  const reading = (async () => {
    try {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        parts += decoder.decode(value).split('Content-Type: image/jpeg').length - 1
      }
    } catch {
      // aborted: this viewer left
    }
  })()
  const close = async () => {
    controller.abort()
    await reading
  }
  leave.push(close)
  await until('a JPEG part at the MJPEG viewer', async () => parts, (n) => n > 0, 20_000)
  return { parts: () => parts, close }
}

const rtspUrl = (path: string) => `rtsp://127.0.0.1:${rtspPort}/${path}`

/** rtspsrc (gst-launch-1.0) watching the camera's RTSP path; resolves once it decoded a frame. */
async function rtspsrcViewer(protocol: 'udp' | 'tcp'): Promise<Receiver> {
  const t0 = Date.now()
  const rx = Receiver.rtsp(rtspUrl(CAMERA), protocol)
  leave.push(() => rx.stop())
  await until('a frame decoded by rtspsrc', async () => rx.firstFrameAfter(t0), (at) => at !== undefined, 20_000)
  return rx
}

test('MJPEG: one then two plain HTTP readers count 1 then 2, and the gauge falls back as each hangs up', async () => {
  await viewersBecome('no viewer yet', {})
  const first = await mjpegViewer()
  await viewersBecome('one MJPEG viewer', { mjpeg: 1 })
  const second = await mjpegViewer()
  await viewersBecome('two MJPEG viewers', { mjpeg: 2 })
  // Both really watch: parts keep coming to each while they are counted.
  const seen = [first.parts(), second.parts()]
  await until('both viewers receiving', async () => [first.parts(), second.parts()], ([a, b]) => a! > seen[0]! && b! > seen[1]!, 15_000)
  expect((await service.call('GET', '/api/health')).body.plugins.jpeg.viewers).toBe(2)
  await expectPromtoolAccepts()

  await first.close()
  await viewersBecome('one MJPEG viewer left', { mjpeg: 1 })
  await second.close()
  await viewersBecome('no MJPEG viewer left', {})
}, 90_000)

test('RTSP: rtspsrc at the path and ffmpeg at the nickname alias count together; ffmpeg ending by itself and rtspsrc killed each take one off', async () => {
  await viewersBecome('no viewer yet', {})
  const rx = await rtspsrcViewer('udp')
  await viewersBecome('one RTSP viewer', { rtsp: 1 })
  expect((await service.call('GET', '/api/rtsp')).body.mounts.find((m: any) => m.path === '/' + CAMERA)?.viewers).toBe(1)

  // ffmpeg over TCP at the alias, reading 10 s of the live stream (150 frames at 15 fps, copied, not
  // decoded), then ending on its own (TEARDOWN, then it closes the connection).
  const ffmpeg = Bun.spawn(['ffmpeg', '-nostdin', '-v', 'error', '-rtsp_transport', 'tcp', '-i', rtspUrl(encodeURIComponent(NICKNAME)), '-map', '0:v', '-c', 'copy', '-frames:v', '150', '-f', 'null', '-'], {
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'pipe',
  })
  children.push(ffmpeg)
  const killer = setTimeout(() => ffmpeg.kill('SIGKILL'), 60_000) // bounded, whatever happens
  const ffmpegOutput = new Response(ffmpeg.stderr).text()
  try {
    await viewersBecome('rtspsrc and ffmpeg counted together', { rtsp: 2 }, 30_000)
    expect(ffmpeg.exitCode).toBeNull() // counted while it reads, not after
    await expectPromtoolAccepts()
    const code = await ffmpeg.exited
    if (code !== 0) throw new Error(`ffmpeg exited with ${code}: ${await ffmpegOutput}`)
  } finally {
    clearTimeout(killer)
  }
  await viewersBecome('ffmpeg gone, rtspsrc left', { rtsp: 1 })
  expect(rx.exited).toBe(false)

  await rx.stop() // SIGKILL: no TEARDOWN, the connection just ends
  await viewersBecome('no RTSP viewer left', {})
}, 120_000)

test('WHEP: Chromium sessions count 1 then 2, and each DELETE takes one off; with one viewer of each kind, each protocol counts 1', async () => {
  await viewersBecome('no viewer yet', {})
  browser = await launchBrowser()
  const page = await openPage(browser, service.url)
  leave.push(() => page.close())
  const whep = `/api/streams/${encodeURIComponent(CAMERA)}/whep`
  /** A session the page opened, DELETEd after the test if the test did not. */
  const opened = async (key: string) => {
    const session = await openSession(page, whep, key)
    if (session.location) leave.push(() => fetch(service.url + session.location, { method: 'DELETE' }))
    return session
  }
  const a = await opened('a')
  expect(a.status).toBe(201)
  await watch(page, 'a', (v) => v.framesDecoded > 0, 30_000)
  await viewersBecome('one WHEP viewer', { whep: 1 })
  const b = await opened('b')
  expect(b.status).toBe(201)
  await watch(page, 'b', (v) => v.framesDecoded > 0, 30_000)
  await viewersBecome('two WHEP viewers', { whep: 2 })

  // One viewer of each other kind too: every gauge counts its own clients only.
  const rx = await rtspsrcViewer('tcp')
  const mjpeg = await mjpegViewer()
  await viewersBecome('two WHEP, one RTSP and one MJPEG viewer', { whep: 2, rtsp: 1, mjpeg: 1 })
  await expectPromtoolAccepts()
  await mjpeg.close()
  await rx.stop()
  await viewersBecome('the WHEP viewers alone', { whep: 2 })

  expect((await fetch(service.url + a.location!, { method: 'DELETE' })).status).toBe(200)
  await viewersBecome('one WHEP viewer after a DELETE', { whep: 1 })
  expect((await fetch(service.url + b.location!, { method: 'DELETE' })).status).toBe(200)
  await viewersBecome('no WHEP viewer after both DELETEs', {})
}, 150_000)

test('recording while streaming: periscope_recording_bytes grows with the file (never past its size on disk) and is 0 again once stopped', async () => {
  const recordingOf = async () => {
    const { m, text } = await scrape(service.url)
    return { active: m.value('periscope_recording_active', { bus_info: CAMERA }), bytes: m.value('periscope_recording_bytes', { bus_info: CAMERA }), text }
  }
  expect(await recordingOf()).toMatchObject({ active: 0, bytes: 0 })
  const started = await service.call('POST', '/api/devices/start_recording', { bus_info: CAMERA })
  expect(started.status).toBe(200)
  const file = segmentFile(join(service.dataDir, 'recordings'), started.body.file)
  try {
    const first = await until('the recording bytes gauge above 0', recordingOf, (r) => r.active === 1 && r.bytes! > 0, 20_000)
    expect(first.bytes!).toBeLessThanOrEqual(statSync(file).size)
    // The file's size as each scrape finds it: it grows twice more, and never says more than the file holds.
    const second = await until('the gauge growing', recordingOf, (r) => r.bytes! > first.bytes!, 20_000)
    const third = await until('the gauge growing again', recordingOf, (r) => r.bytes! > second.bytes!, 20_000)
    expect(third.bytes!).toBeLessThanOrEqual(statSync(file).size)
    expect(await promtoolCheck(third.text)).toEqual({ code: 0, output: '' })
  } finally {
    const stopped = await service.call('POST', '/api/devices/stop_recording', { bus_info: CAMERA })
    expect(stopped.status).toBe(200)
  }
  expect(await recordingOf()).toMatchObject({ active: 0, bytes: 0 })
  // The stream ran on throughout, and the file stayed behind.
  expect((await scrape(service.url)).m.value('periscope_stream_state', { bus_info: CAMERA, state: 'running' })).toBe(1)
  expect(statSync(file).size).toBeGreaterThan(0)
}, 90_000)


test('a restarted stream: the WHEP session follows it (still 1), the RTSP and MJPEG clients it ended count 0; a stopped stream: every gauge 0', async () => {
  await viewersBecome('no viewer yet', {})
  browser ??= await launchBrowser()
  const page = await openPage(browser, service.url)
  leave.push(() => page.close())
  const session = await openSession(page, `/api/streams/${encodeURIComponent(CAMERA)}/whep`, 'restart')
  expect(session.status).toBe(201)
  leave.push(() => fetch(service.url + session.location, { method: 'DELETE' }))
  await watch(page, 'restart', (v) => v.framesDecoded > 0, 30_000)
  const rx = await rtspsrcViewer('tcp')
  await mjpegViewer()
  await viewersBecome('one viewer of each kind', { whep: 1, rtsp: 1, mjpeg: 1 })

  expect((await service.call('POST', '/api/devices/restart_stream', { bus_info: CAMERA })).status).toBe(200)
  await viewersBecome('the WHEP viewer alone after the restart', { whep: 1 })
  await until('rtspsrc ended by the server', async () => rx.exited, (exited) => exited, 15_000)
  const decoded = (await videoStats(page, 'restart')).framesDecoded
  await watch(page, 'restart', (v) => v.framesDecoded > decoded, 30_000) // and it still watches

  await rtspsrcViewer('udp')
  await mjpegViewer()
  await viewersBecome('one viewer of each kind again', { whep: 1, rtsp: 1, mjpeg: 1 })
  try {
    expect((await service.call('POST', '/api/devices/unconfigure_stream', { bus_info: CAMERA })).status).toBe(200)
    // The WHEP session is closed as its stream's hub says 'closed' (media/webrtc/session.ts).
    await viewersBecome('no viewer once the stream stopped', {}, 30_000)
    await expectPromtoolAccepts()
  } finally {
    await startStream() // as the other tests expect it
  }
}, 180_000)

test("the RTSP helper reports a camera's count under the lock that changed it: a report held up cannot leave a stale count behind", () => {
  // plugins/rtsp/server.py's Viewers, driven by two threads as two clients' threads would: one admitted
  // while its report is held up (a thread preempted just before writing), another leaving meanwhile.
  // The last report must be the count now, 1; were the report written after the lock, it would be 2.
  const harness = `
import importlib.util, sys, threading, time
spec = importlib.util.spec_from_file_location("rtsp_server", sys.argv[1])
server = importlib.util.module_from_spec(spec)
spec.loader.exec_module(server)
said, hold, held = [], threading.Event(), threading.Event()
def say(**event):
    if hold.is_set():
        hold.clear()
        held.set()
        time.sleep(0.3)
    said.append(event["count"])
server.say = say
viewers = server.Viewers(8)
a, b = object(), object()
viewers.admit("cam", a)
hold.set()
joining = threading.Thread(target=viewers.admit, args=("cam", b))
joining.start()
held.wait(5)
viewers.release(a)
joining.join()
print(said, len(viewers.watching.get("cam", ())))
`
  const run = Bun.spawnSync(['/usr/bin/python3', '-c', harness, join(import.meta.dir, '../../plugins/rtsp/server.py')], { stdout: 'pipe', stderr: 'pipe', timeout: 20_000 })
  expect(run.stderr.toString()).toBe('')
  expect(run.stdout.toString().trim()).toBe('[1, 2, 1] 1')
}, 30_000)
