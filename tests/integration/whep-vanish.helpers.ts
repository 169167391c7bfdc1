// A WebRTC viewer that vanishes (issue 19), against a whole service (tests/integration/whep-vanish.test.ts:
// frozen for seconds in every run; tests/soak/whep-vanish.test.ts: 20 s, `npm run soak`): GStreamer's
// webrtcbin (a non-browser player, tests/integration/fixtures/whep-webrtcbin.py) watches an H.264 camera,
// then is frozen (SIGSTOP: it reads nothing, answers no ICE check, sends no RTCP) for `stallMs`, then
// killed (its port closes, so the service's next sends to it come back as ICMP errors on its socket).
// Meanwhile a Chromium viewer of the same camera decodes at the camera's rate and the stream's UDP
// endpoint loses no packet; the service stays up, and the vanished session is reaped by the idle timeout
// (--whep-idle-timeout `idleTimeoutS`, longer than the freeze, so the frozen session is still served when
// the peer is killed).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { join } from 'node:path'
import type { Browser } from 'puppeteer-core'
import { until } from '../helpers'
import { launchBrowser, openPage, openSession, videoStats, watch } from './browser'
import { freePort, requireGStreamer, RtpCounter } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

let service: Service
let browser: Browser
let endpoint: RtpCounter
let cam: { bus_info: string; fps: number }
const whep = () => `/api/streams/${encodeURIComponent(cam.bus_info)}/whep`
const sessions = async () => (await service.call('GET', '/api/health')).body.plugins.whep.sessions as number

/** The vanish test: a freeze of `stallMs`, a service whose idle timeout is `idleTimeoutS` (longer). */
export function whepVanish(stallMs: number, idleTimeoutS: number, timeoutMs: number): void {
  const STALL_MS = stallMs
  const IDLE_TIMEOUT_S = idleTimeoutS
  beforeAll(async () => {
    requireGStreamer()
    service = await startService({ args: ['--whep-idle-timeout', String(IDLE_TIMEOUT_S)] })
    const d = (await service.call('GET', '/api/devices')).body.find((x: any) => !x.leader && !x.followers?.length && (x.cameras ?? []).some((c: any) => c.formats?.H264))
    const size = d.cameras.flatMap((c: any) => c.formats?.H264 ?? []).sort((a: any, b: any) => a.width - b.width)[0]
    const port = freePort()
    endpoint = await RtpCounter.open(port)
    const r = await service.call('POST', '/api/devices/configure_stream', {
      bus_info: d.bus_info, stream_type: 'UDP', stream_format: { width: size.width, height: size.height, interval: size.intervals[0] },
      encode_type: 'H264', enabled: true, endpoints: [{ host: '127.0.0.1', port }],
    })
    expect(r.status).toBe(200)
    await until('the stream running', () => service.call('GET', '/api/devices'), (r) => r.body.find((x: any) => x.bus_info === d.bus_info)?.stream_status?.state === 'running', 30_000)
    cam = { bus_info: d.bus_info, fps: size.intervals[0].denominator / size.intervals[0].numerator }
    browser = await launchBrowser()
  }, 60_000)
  afterAll(async () => {
    await browser?.close()
    endpoint?.close()
    await service?.kill()
  })

  test(`a WebRTC viewer frozen for ${STALL_MS / 1000} s, then killed: the other viewer decodes at the rate, the UDP endpoint loses nothing, the service stays and reaps it (idle timeout ${IDLE_TIMEOUT_S} s)`, async () => {
    const page = await openPage(browser, service.url)
    const opened = await openSession(page, whep(), 'healthy')
    expect(opened.status).toBe(201)
    await watch(page, 'healthy', (v) => v.framesDecoded > 10, 30_000)

    // The viewer that will vanish: webrtcbin, printing its decoded count every 10 pictures.
    const peer = Bun.spawn(['/usr/bin/python3', join(import.meta.dir, 'fixtures/whep-webrtcbin.py'), service.url + whep(), '1000000', '300', 'progress'], { stdout: 'pipe', stderr: 'pipe' })
    try {
      let peerFrames = 0
      const lines = (async () => {
        const decoder = new TextDecoder()
        let buffered = ''
        for await (const chunk of peer.stdout as ReadableStream<Uint8Array>) {
          buffered += decoder.decode(chunk, { stream: true })
          for (let i; (i = buffered.indexOf('\n')) >= 0; buffered = buffered.slice(i + 1)) {
            const line = JSON.parse(buffered.slice(0, i))
            if (typeof line.frames === 'number') peerFrames = line.frames
          }
        }
      })()
      await until('webrtcbin decoding', async () => peerFrames, (n) => n >= 30 || peer.exitCode !== null, 60_000)
      expect(peer.exitCode).toBeNull()
      expect(await sessions()).toBe(2)

      // Frozen: it reads nothing and answers nothing, for STALL_MS.
      peer.kill('SIGSTOP')
      const before = await videoStats(page, 'healthy')
      const [endpointPackets, endpointSkipped] = [endpoint.packets, endpoint.skipped()]
      const from = Date.now()
      await Bun.sleep(STALL_MS) // the condition under test is time itself: a viewer that says nothing
      const seconds = (Date.now() - from) / 1000
      const after = await videoStats(page, 'healthy')
      console.log(`whep vanish: the other viewer decoded ${after.framesDecoded - before.framesDecoded} frames in ${seconds.toFixed(1)} s at ${cam.fps} fps; endpoint ${endpoint.packets - endpointPackets} packets, ${endpoint.skipped() - endpointSkipped} skipped`)
      expect(after.framesDecoded - before.framesDecoded).toBeGreaterThan(cam.fps * seconds * 0.85)
      expect(endpoint.skipped() - endpointSkipped).toBe(0)
      expect(service.proc.exitCode).toBeNull()
      expect(await sessions()).toBe(2) // still served: silent for less than the idle timeout

      // Gone: its port closes; the service's sends to it bounce, the idle reaper ends its session.
      peer.kill('SIGKILL')
      await peer.exited
      await lines.catch(() => {})
      const decoded = (await videoStats(page, 'healthy')).framesDecoded
      await until('the vanished session reaped, the other one kept', sessions, (n) => n === 1, (IDLE_TIMEOUT_S + 15) * 1000)
      await watch(page, 'healthy', (v) => v.framesDecoded > decoded + cam.fps, 15_000)
      expect(service.proc.exitCode).toBeNull()
      const health = (await service.call('GET', '/api/health')).body.plugins.whep
      expect(health.ended.idle).toBeGreaterThanOrEqual(1)
    } finally {
      if (peer.exitCode === null && peer.signalCode === null) peer.kill('SIGKILL')
      await page.close()
    }
  }, timeoutMs)
}
