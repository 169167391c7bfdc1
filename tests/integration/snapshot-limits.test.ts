// Snapshots under a flood (issue 25, item 3): each distinct `snapshot.jpg?height=` used to start its own
// gst-launch, with no cap: 120 concurrent requests ran 78 children and an H.264 camera's own video fell
// from 38 to 5 packets/s. Now heights snap to a few size classes, a capture and its scaled sizes are
// shared and kept briefly, at most --snapshot-children run at once (the rest wait in a short queue,
// 503 with Retry-After past it), and they run below the stream's priority. Seen from outside: a plain UDP
// receiver at the camera's loopback endpoint counts its packets, and `ps` counts the children.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { loadPlugin } from '../../core/loader'
import { parseMetrics, startTestServer, until, type TestServer } from '../helpers'
import { jpegSize } from '../../plugins/jpeg/jpeg'
import { freePort, requireGStreamer, RtpCounter, waitFor } from './gstreamer.helpers'

const EHD = 'usb-0000:00:14.0-1' // simulated exploreHD: H.264
const CAP = 2

let s: TestServer
beforeAll(async () => {
  requireGStreamer()
  const plugins = await Promise.all(['mock', 'cameras', 'preferences', 'gstreamer', 'jpeg', 'metrics'].map(loadPlugin))
  s = await startTestServer({ plugins, config: { simulate: 'default', snapshotChildren: CAP } })
}, 30_000)
afterAll(async () => {
  await s?.stop()
})

/** The snapshot children of this process now (scalers, decoders of a kept group of pictures, stills): gst-launch writing JPEGs to stdout, not the camera's pipeline or a transcoder. */
function snapshotChildren(): number {
  const out = Bun.spawnSync(['ps', '-eo', 'pid=,ppid=,stat=,args=']).stdout.toString()
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => Number(f[1]) === process.pid && !f[2]!.startsWith('Z') && f.some((a) => a.endsWith('gst-launch-1.0')) && f.includes('fd=1') && !f.includes('udpsrc')).length
}

/** Packets per second at the endpoint over `ms`. */
async function packetRate(counter: RtpCounter, ms: number): Promise<number> {
  const from = counter.packets
  const t = performance.now()
  await Bun.sleep(ms)
  return ((counter.packets - from) * 1000) / (performance.now() - t)
}

test('120 concurrent snapshots of distinct heights: the camera keeps its packet rate within 5 %, the children stay within the cap, every answer a JPEG or a 503 with Retry-After', async () => {
  const port = freePort()
  const endpoint = await RtpCounter.open(port)
  try {
    const r = await s.call('POST', '/api/devices/configure_stream', {
      bus_info: EHD,
      stream_type: 'UDP',
      encode_type: 'H264',
      stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 30 } },
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port }],
    })
    expect(r.status).toBe(200)
    const { hub, member } = await until('the stream live', async () => s.ctx.registry.get('streamer')?.live(EHD), (live) => !!live, 20_000).then((l) => l!)
    await waitFor('a kept group of pictures', () => hub.lastGop(member).length > 0, 20_000)
    await waitFor('packets at the endpoint', () => endpoint.packets > 100, 15_000)
    const before = await packetRate(endpoint, 4000)

    let most = 0
    const watching = setInterval(() => (most = Math.max(most, snapshotChildren())), 50)
    const from = endpoint.packets
    const t = performance.now()
    const answers = await Promise.all(
      Array.from({ length: 120 }, async (_, i) => {
        const res = await fetch(`${s.url}/api/streams/${EHD}/snapshot.jpg?height=${100 + i * 3}`)
        const body = new Uint8Array(await res.arrayBuffer())
        return { status: res.status, retry: res.headers.get('retry-after'), type: res.headers.get('content-type'), body }
      }),
    )
    // At least 4 s of the flood's effect, however fast it was answered.
    const elapsed = performance.now() - t
    if (elapsed < 4000) await Bun.sleep(4000 - elapsed)
    const during = ((endpoint.packets - from) * 1000) / (performance.now() - t)
    clearInterval(watching)

    expect(most).toBeGreaterThan(0)
    expect(most).toBeLessThanOrEqual(CAP)
    const ok = answers.filter((a) => a.status === 200)
    for (const a of ok) {
      expect(a.type).toBe('image/jpeg')
      expect(jpegSize(a.body)).not.toBeNull()
    }
    for (const a of answers.filter((a) => a.status !== 200)) {
      expect(a.status).toBe(503)
      expect(Number(a.retry)).toBeGreaterThan(0)
      expect(JSON.parse(new TextDecoder().decode(a.body)).detail).toContain('--snapshot-children')
    }
    expect(ok.length).toBeGreaterThan(60)
    expect(Math.abs(during / before - 1), `${before.toFixed(1)} packets/s before, ${during.toFixed(1)} during`).toBeLessThanOrEqual(0.05)
    const metrics = parseMetrics(await (await fetch(`${s.url}/metrics`)).text())
    expect(metrics.value('periscope_limit_hits_total', { limit: 'snapshot_children' }) ?? 0).toBe(answers.length - ok.length)
  } finally {
    await s.call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD })
    endpoint.close()
  }
}, 120_000)
