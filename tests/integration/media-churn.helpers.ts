// Viewer churn on the media plane (media/hub.ts), with real clients against a whole service, `rounds`
// rounds (tests/integration/media-churn.test.ts: a few in every run; tests/soak/media-churn.test.ts: 20,
// `npm run soak`): an MJPEG viewer of an H.264 camera (a transcoder child fed by a loopback feeder) and an
// RTSP session over UDP come and go, a snapshot is taken (its decoder staying 1 s), and every `recordEvery`th round a recording is
// made while streaming. The UDP endpoint loses nothing; afterwards the hub has no reader left (an RTSP
// client's media is fed only while it lasts), and the process's file descriptors, threads, children and
// memory are back within 5 % of where they were.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { loadPlugin } from '../../core/loader'
import { freeTcpPort, freeUdpPortPair, startTestServer, until, type TestServer } from '../helpers'
import { freePort, requireRtspClients, RtpCounter, waitFor } from './gstreamer.helpers'
import { RawRtsp, teardown } from './rtsp-client.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264

let server: TestServer
let rtspPort = 0

/** What this process holds: file descriptors, threads, child processes, resident memory (bytes). */
function held() {
  const status = readFileSync('/proc/self/status', 'utf8')
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1])
  let children = 0
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) children++
    } catch {
      // gone meanwhile
    }
  }
  return { fds: readdirSync('/proc/self/fd').length, threads: field('Threads'), children, rss: field('VmRSS') * 1024 }
}

const byName = () => server.ctx.registry.get('streamer')!.live(EHD)?.hub.readerStats().byName
const readers = () => server.ctx.registry.get('streamer')!.live(EHD)?.hub.readerStats().readers ?? -1

/** One MJPEG viewer: reads until it has a whole part's worth of bytes, then hangs up. */
async function mjpegViewer(): Promise<void> {
  const abort = new AbortController()
  const res = await fetch(`${server.url}/api/streams/${EHD}/mjpeg`, { signal: abort.signal })
  expect(res.status).toBe(200)
  const reader = res.body!.getReader()
  let bytes = 0
  while (bytes < 5_000) {
    const { value, done } = await reader.read()
    if (done) break
    bytes += value.length
  }
  abort.abort()
  await reader.cancel().catch(() => {})
  expect(bytes).toBeGreaterThanOrEqual(5_000)
}

/** One RTSP session over UDP: DESCRIBE, SETUP, PLAY, RTP at our port, TEARDOWN. */
async function rtspViewer(url: string): Promise<void> {
  const port = freeUdpPortPair()
  const rtp = await RtpCounter.open(port)
  const client = await RawRtsp.open(rtspPort)
  try {
    await client.play(url, `RTP/AVP;unicast;client_port=${port}-${port + 1}`)
    await waitFor('RTP over the RTSP session', () => rtp.packets > 5, 15_000)
    await teardown(client, url)
  } finally {
    client.socket.destroy()
    rtp.close()
  }
}

/** The churn test: `rounds` rounds after a warm-up round, a recording every `recordEvery`th, with its server. */
export function mediaChurn(rounds: number, recordEvery: number, timeoutMs: number): void {
  const ROUNDS = rounds
  beforeAll(async () => {
    requireRtspClients()
    rtspPort = freeTcpPort()
    const plugins = await Promise.all(['mock', 'cameras', 'dwe', 'gstreamer', 'rtsp', 'jpeg'].map(loadPlugin))
    // A snapshot's decoder stays 1 s (not 30): it comes and goes with every round's snapshot, and must leave nothing either.
    server = await startTestServer({ plugins, config: { simulate: 'default', rtspPort, snapshotWarmSeconds: 1 } })
    await until('the RTSP server ready', () => server.call('GET', '/api/health'), (r) => r.body?.plugins?.rtsp?.state === 'ok', 20_000)
  }, 40_000)

  afterAll(async () => {
    await server?.stop()
  })

  test(`${ROUNDS} rounds of MJPEG, RTSP, snapshot and recording viewers (a recording ${recordEvery === 1 ? 'every round' : `every ${recordEvery}th round`}) coming and going: no packet lost at the endpoint, no viewer's reader left, fds, threads, children and memory back within 5 %`, async () => {
    const port = freePort()
    const endpoint = await RtpCounter.open(port)
    try {
      const configured = await server.call('POST', '/api/devices/configure_stream', {
        bus_info: EHD,
        stream_type: 'UDP',
        stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 30 } },
        encode_type: 'H264',
        enabled: true,
        endpoints: [{ host: '127.0.0.1', port }],
      })
      expect(configured.status).toBe(200)
      await until('the mount', () => server.call('GET', '/api/rtsp'), (r) => r.body.mounts.some((m: any) => m.bus_info === EHD), 15_000)
      await waitFor('packets at the UDP endpoint', () => endpoint.packets > 30, 15_000)
      const url = `rtsp://127.0.0.1:${rtspPort}/${EHD}`

      const round = async (i: number) => {
        await Promise.all([mjpegViewer(), rtspViewer(url)])
        expect((await server.call('GET', `/api/streams/${EHD}/snapshot.jpg`)).status).toBe(200)
        if (i % recordEvery === 0) {
          expect((await server.call('POST', '/api/devices/start_recording', { bus_info: EHD })).status).toBe(200)
          await waitFor('the recording grows', () => server.ctx.registry.get('streamer')!.recording(EHD).bytes > 10_000, 15_000)
          expect((await server.call('POST', '/api/devices/stop_recording', { bus_info: EHD })).status).toBe(200)
        }
      }
      // A first round warms everything up (the transcoder's libraries, the helper's pipeline); then the baseline.
      await round(0)
      // Nothing stays: each RTSP client has a media of its own in the helper, fed while it lasts and no longer.
      const settle = async () => {
        await waitFor('no viewer reading the hub', () => Object.keys(byName() ?? { unknown: 1 }).length === 0, 15_000)
        await until('the transcoder and the snapshot decoder gone', () => server.call('GET', '/api/health'), (r) => r.body.plugins.jpeg.transcoders === 0 && r.body.plugins.jpeg.warm_snapshot_decoders === 0, 15_000)
      }
      await settle()
      Bun.gc(true)
      const before = held()
      expect(readers()).toBe(0)
      const skippedBefore = endpoint.skipped()
      for (let i = 1; i <= ROUNDS; i++) await round(i)
      await settle()
      expect(readers()).toBe(0)
      // The figures come back as children exit and sockets close: wait for them, within the 5 %.
      const within = (now: number, then: number) => now <= then * 1.05 + 1
      const after = await waitFor('fds, threads and children back', () => {
        Bun.gc(true)
        const now = held()
        return within(now.fds, before.fds) && within(now.threads, before.threads) && now.children <= before.children ? now : undefined
      }, 30_000, 500)
      console.log(`after ${ROUNDS} rounds: fds ${before.fds} → ${after.fds}, threads ${before.threads} → ${after.threads}, children ${before.children} → ${after.children}, RSS ${Math.round(before.rss / 1e6)} → ${Math.round(after.rss / 1e6)} MB`)
      expect(after.rss).toBeLessThanOrEqual(before.rss * 1.05 + 4e6)
      expect(endpoint.skipped() - skippedBefore).toBe(0)
    } finally {
      endpoint.close()
      await server.call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD })
    }
  }, timeoutMs)
}
