// A running stream's health as the service sees it at its hub: the test feeds a real MediaHub (behind a
// stand-in streamer) at a chosen frame rate and reads the figures back from the API, /metrics, the event
// stream and the log; a rate below 90 % of the configured one for 2 s raises the alert, back for 2 s clears it.
import { afterEach, expect, test } from 'bun:test'
import { loadPlugin } from '../../core/loader'
import { createLogger } from '../../core/log'
import { MediaHub } from '../../media/hub'
import { listenEvents, parseMetrics, startTestServer, until, type TestServer } from '../helpers'
import { CONTRACT_PLUGINS, EHD, device, Feeder, standInStreamer } from './setup'

const FPS = 20
const KEY_EVERY = 10 // frames: a key frame every 0.5 s
const PAYLOAD = 1000

const servers: TestServer[] = []
const hubs: MediaHub[] = []
const feeders: Feeder[] = []
afterEach(async () => {
  for (const f of feeders.splice(0)) f.stop()
  for (const h of hubs.splice(0)) h.close()
  for (const s of servers.splice(0)) await s.stop()
  expect(hubs.every((h) => h.closed)).toBe(true)
})

async function withStream(delayAlertMs = 400): Promise<{ s: TestServer; hub: MediaHub }> {
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: FPS, members: [EHD], log: createLogger('error'), delayAlertMs })
  hubs.push(hub)
  const plugins = [...(await Promise.all([...CONTRACT_PLUGINS, 'metrics'].map(loadPlugin))), standInStreamer(hub)]
  const s = await startTestServer({ plugins, config: { simulate: 'default', delayAlertMs }, logLevel: 'info' })
  servers.push(s)
  return { s, hub }
}

const health = async (s: TestServer) => (await device(s, EHD)).stream_status.health

async function metric(s: TestServer, name: string): Promise<number | undefined> {
  const text = await (await fetch(`${s.url}/metrics`)).text()
  return parseMetrics(text).samples.find((m) => m.name === name && m.labels.bus_info === EHD)?.value
}

const near = (value: number | null | undefined, target: number, share: number) => value != null && Math.abs(value - target) <= target * share

test("the stream's health in the API and /metrics is what was fed: rate, bitrate, key-frame interval, lost packets; no alert at full rate", async () => {
  const { s, hub } = await withStream()
  const events = listenEvents(`${s.url}/api/events`)
  await events.ready
  try {
    expect(await health(s)).toBeNull() // no frame yet: nothing measured
    const feeder = new Feeder(hub, FPS, KEY_EVERY, PAYLOAD)
    feeders.push(feeder)
    const h = await until('a measured rate near the fed one', () => health(s), (h) => near(h?.fps, FPS, 0.1), 15_000)
    expect(h).toMatchObject({ configured_fps: FPS, lost_packets: 0, dropped_frames: 0, stalls: 0, stalled: false, alert: null })
    expect(near(h.bitrate, FPS * (PAYLOAD + 12) * 8, 0.2)).toBe(true)
    expect(near(h.keyframe_interval, KEY_EVERY / FPS, 0.3)).toBe(true)
    expect(h.frames).toBeGreaterThan(FPS)

    expect(await until('/metrics: the delivered rate', () => metric(s, 'periscope_stream_fps'), (v) => near(v, FPS, 0.1))).toBeDefined()
    expect(await metric(s, 'periscope_stream_configured_fps')).toBe(FPS)
    expect(near(await metric(s, 'periscope_stream_bytes_per_second'), FPS * (PAYLOAD + 12), 0.2)).toBe(true)
    expect(near(await metric(s, 'periscope_stream_keyframe_interval_seconds'), KEY_EVERY / FPS, 0.3)).toBe(true)
    expect(await metric(s, 'periscope_stream_health_alert')).toBe(0)
    expect(await metric(s, 'periscope_stream_stalled')).toBe(0)

    // The frame intervals' histogram (20 fps: 50 ms apart), every frame after the first, none past a stall.
    const samples = parseMetrics(await (await fetch(`${s.url}/metrics`)).text()).samples.filter((m) => m.labels.bus_info === EHD)
    const sample = (name: string, le?: string) => samples.find((m) => m.name === name && m.labels.le === le)?.value ?? NaN
    const count = sample('periscope_stream_frame_interval_seconds_count')
    expect(count).toBe(sample('periscope_stream_frames_total') - 1)
    expect(sample('periscope_stream_frame_interval_seconds_bucket', '+Inf')).toBe(count)
    expect(sample('periscope_stream_frame_interval_seconds_bucket', '1')).toBe(count)
    expect(sample('periscope_stream_frame_interval_seconds_bucket', '0.067')).toBeGreaterThanOrEqual(count / 2)
    expect(sample('periscope_stream_frame_interval_seconds_bucket', '0.02')).toBeLessThan(count / 2)
    expect(near(sample('periscope_stream_frame_interval_seconds_sum') / count, 1 / FPS, 0.2)).toBe(true)

    // The camera's own drops (the runner's frame stats) show beside the rest, as frame_stats does.
    s.ctx.registry.get('streamer')!.frameDrops = () => 7
    const dev = await until('the dropped frames', () => device(s, EHD), (d) => d.stream_status.health?.dropped_frames === 7)
    expect(dev.frame_stats.num_drops).toBe(7)

    feeder.lose(3)
    await until('three packets lost in the API', () => health(s), (h) => h?.lost_packets === 3)
    expect(await metric(s, 'periscope_stream_lost_packets_total')).toBe(3)

    // Full rate for more than the alert's 2 s after the first whole second: no alert, no event, no warning.
    await until('five seconds of frames', async () => hub.sent(0).frames, (n) => n >= 5 * FPS, 15_000)
    expect((await health(s)).alert).toBeNull()
    expect(events.events.filter((e) => e.type === 'stream_health')).toEqual([])
    expect(s.logs.filter((l) => String(l.msg).includes('fps of'))).toEqual([])
  } finally {
    events.close()
  }
}, 30_000)

test('a stream at half its rate raises the alert only after 2 s (event, warning, API, /metrics) and clears it by itself once back for 2 s', async () => {
  const { s, hub } = await withStream()
  const events = listenEvents(`${s.url}/api/events`)
  await events.ready
  try {
    const feeder = new Feeder(hub, FPS / 2, KEY_EVERY, PAYLOAD)
    feeders.push(feeder)
    const raised = await until('the alert', async () => events.events.find((e) => e.type === 'stream_health'), (e) => e !== undefined, 15_000)
    // Never in the stream's first 2 s: its first second (a warm-up) only starts the measure, then two whole seconds low.
    expect(raised!.at - feeder.firstAt).toBeGreaterThanOrEqual(2000)
    expect(raised!.data).toMatchObject({ bus_info: EHD, state: 'alert', health: { configured_fps: FPS } })
    expect(raised!.data.message).toMatch(/^exploreHD USB Camera: video at (9|10|11) fps of 20$/)
    expect(raised!.data.health.alert).toBe(raised!.data.message)
    const warning = s.logs.find((l) => l.msg === raised!.data.message)
    expect(warning).toMatchObject({ level: 'warn', bus_info: EHD })
    expect((await health(s)).alert).toMatch(/^exploreHD USB Camera: video at \d+ fps of 20$/)
    expect(await metric(s, 'periscope_stream_health_alert')).toBe(1)
    expect(near(await metric(s, 'periscope_stream_fps'), FPS / 2, 0.2)).toBe(true)

    feeder.setRate(FPS)
    const back = performance.now()
    const cleared = await until('the alert cleared', async () => events.events.filter((e) => e.type === 'stream_health')[1], (e) => e !== undefined, 15_000)
    expect(cleared!.at - back).toBeGreaterThanOrEqual(1000) // two whole seconds back, the first may have begun before the switch
    expect(cleared!.data).toMatchObject({ bus_info: EHD, state: 'ok', health: { alert: null } })
    expect(cleared!.data.message).toMatch(/^exploreHD USB Camera: video back at (18|19|20|21|22) fps of 20$/)
    const info = (await s.call('GET', '/api/logs?level=info')).body.entries.find((e: any) => e.msg === cleared!.data.message)
    expect(info).toMatchObject({ level: 'info', fields: { bus_info: EHD } })
    expect((await health(s)).alert).toBeNull()
    expect(await metric(s, 'periscope_stream_health_alert')).toBe(0)
    expect(events.events.filter((e) => e.type === 'stream_health')).toHaveLength(2)
  } finally {
    events.close()
  }
}, 30_000)

test("a viewer's delay past --delay-alert, and its loss past 5 %, for 2 s raise the alert at full rate (event, warning, API, /metrics); back for 2 s, it clears; a viewer that stops saying leaves no figure", async () => {
  const { s, hub } = await withStream(300)
  const events = listenEvents(`${s.url}/api/events`)
  await events.ready
  // A viewer saying its figures twice a second (the console's WebRTC views say theirs every second).
  let said = { delayMs: 650, loss: 0.12 }
  let saying = true
  const viewer = setInterval(() => saying && hub.viewerFigures(0, said.delayMs, said.loss), 500)
  try {
    feeders.push(new Feeder(hub, FPS, KEY_EVERY, PAYLOAD))
    const raised = await until('the alert', async () => events.events.find((e) => e.type === 'stream_health'), (e) => e !== undefined, 15_000)
    expect(raised!.data).toMatchObject({ bus_info: EHD, state: 'alert', health: { viewer_delay_ms: 650, viewer_loss: 0.12 } })
    expect(raised!.data.message).toBe('exploreHD USB Camera: video 650 ms behind, link losing 12 %')
    expect(s.logs.find((l) => l.msg === raised!.data.message)).toMatchObject({ level: 'warn', bus_info: EHD, viewer_delay_ms: 650 })
    expect(await metric(s, 'periscope_stream_health_alert')).toBe(1)
    expect(await metric(s, 'periscope_stream_viewer_delay_seconds')).toBe(0.65)
    expect(await metric(s, 'periscope_stream_viewer_loss_ratio')).toBe(0.12)
    const samples = parseMetrics(await (await fetch(`${s.url}/metrics`)).text()).samples.filter((m) => m.labels.bus_info === EHD && m.name.startsWith('periscope_viewer_delay_seconds'))
    const count = samples.find((m) => m.name === 'periscope_viewer_delay_seconds_count')!.value
    expect(count).toBeGreaterThanOrEqual(4)
    expect(samples.find((m) => m.name === 'periscope_viewer_delay_seconds_bucket' && m.labels.le === '0.5')!.value).toBe(0)
    expect(samples.find((m) => m.name === 'periscope_viewer_delay_seconds_bucket' && m.labels.le === '1')!.value).toBe(count)

    said = { delayMs: 40, loss: 0 }
    const cleared = await until('the alert cleared', async () => events.events.filter((e) => e.type === 'stream_health')[1], (e) => e !== undefined, 15_000)
    expect(cleared!.data).toMatchObject({ bus_info: EHD, state: 'ok', health: { alert: null, viewer_delay_ms: 40, viewer_loss: 0 } })
    expect(cleared!.data.message).toMatch(/^exploreHD USB Camera: video back at (18|19|20|21|22) fps of 20, 40 ms behind$/)

    saying = false
    expect(await until('no viewer figures once none says them', () => health(s), (h) => h?.viewer_delay_ms === null && h?.viewer_loss === null, 10_000)).toBeTruthy()
    expect((await health(s)).alert).toBeNull()
  } finally {
    clearInterval(viewer)
    events.close()
  }
}, 30_000)

test('a stream that stops with the alert raised clears it (event), and shows no health once stopped', async () => {
  const { s, hub } = await withStream()
  const events = listenEvents(`${s.url}/api/events`)
  await events.ready
  try {
    feeders.push(new Feeder(hub, FPS / 2, KEY_EVERY, PAYLOAD))
    await until('the alert', async () => events.events.find((e) => e.type === 'stream_health'), (e) => e !== undefined, 15_000)
    hub.close()
    const cleared = await until('the alert cleared', async () => events.events.filter((e) => e.type === 'stream_health')[1], (e) => e !== undefined)
    expect(cleared!.data).toMatchObject({ bus_info: EHD, state: 'ok', message: 'exploreHD USB Camera: the stream stopped', health: { alert: null } })
    expect(await until('no health once stopped', () => health(s), (h) => h === null)).toBeNull()
  } finally {
    events.close()
  }
}, 30_000)
