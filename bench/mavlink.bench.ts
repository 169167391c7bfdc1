// What the MAVLink camera protocol costs the service, and how fast it answers:
//  1. The service (core/main.ts, simulated cameras, two MJPG streams at 640x480@15) for SECONDS
//     (default 20) with MAVLink off, then with `--mavlink udpout` to a ground station on loopback that
//     asks every 100 ms for a camera's VIDEO_STREAM_INFORMATION: the service process's CPU and RSS
//     (its GStreamer children excluded), on against off (ratios).
//  2. In the same run, the time from each COMMAND_LONG to its VIDEO_STREAM_INFORMATION, beside the
//     same question over HTTP (GET /api/devices, asked as often) as the baseline; and the heartbeats'
//     spacing (target 1 s).
// `bun run bench/mavlink.bench.ts [--seconds 20]`. The ground station is tests/mavlink-gcs.ts (not the
// service's library). On a loaded machine the figures are upper bounds.
import { GroundStation, MAV } from '../tests/mavlink-gcs'
import { freePort as freeUdpPort } from '../tests/integration/gstreamer.helpers'
import { startService, type Service } from '../tests/integration/service.helpers'
import { until } from '../tests/helpers'
import { freePort, numberArg, rssKb, TICK, cpuTicks } from './lib'

const SECONDS = numberArg('seconds', 20)
const CAMERAS = ['usb-0000:00:14.0-1', 'usb-0000:00:14.0-4'] // exploreHD and the webcam, both as MJPG

if (!Bun.which('gst-launch-1.0')) {
  console.error('gst-launch-1.0 is missing: run scripts/setup/gstreamer.sh')
  process.exit(1)
}

const pct = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] ?? NaN
const fmt = (n: number, d = 1) => n.toFixed(d)

async function streaming(s: Service): Promise<void> {
  for (const bus_info of CAMERAS) {
    const r = await s.call('POST', '/api/devices/configure_stream', {
      bus_info,
      stream_type: 'UDP',
      stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
      encode_type: 'MJPG',
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port: freeUdpPort() }],
    })
    if (r.status !== 200) throw new Error(`configure_stream ${bus_info}: ${r.status} ${JSON.stringify(r.body)}`)
  }
  await until('both streams running', () => s.call('GET', '/api/devices'), (r) => CAMERAS.every((b) => r.body.find((d: any) => d.bus_info === b)?.stream_status?.state === 'running'), 60_000)
}

interface Run {
  cpu: number
  rss: number
  mavlinkMs: number[]
  httpMs: number[]
  heartbeatGaps: number[]
}

async function run(mavlink: boolean): Promise<Run> {
  const gcs = mavlink ? await GroundStation.udp() : null
  const s = await startService({ args: ['--rtsp-port', String(await freePort()), ...(gcs ? ['--mavlink', `udpout:127.0.0.1:${gcs.port}`] : [])] })
  const pid = s.proc.pid
  try {
    await streaming(s)
    const components: number[] = []
    if (gcs) {
      const health = await until('both cameras on the link', () => s.call('GET', '/api/health'), (r) => r.body.plugins.mavlink.cameras.length === CAMERAS.length, 30_000)
      components.push(...health.body.plugins.mavlink.cameras.map((c: any) => c.component_id))
      await gcs.next('a first heartbeat', (m) => m.name === 'HEARTBEAT' && m.fields.type === MAV.TYPE_CAMERA)
    }
    await Bun.sleep(2000) // settle after the streams started
    const mavlinkMs: number[] = []
    const httpMs: number[] = []
    const since = gcs?.messages.length ?? 0
    const t0 = cpuTicks(pid)
    const started = Date.now()
    for (let i = 0; Date.now() - started < SECONDS * 1000; i++) {
      const tick = Date.now()
      if (gcs) {
        const compid = components[i % components.length]!
        const sent = performance.now()
        await gcs.request(compid, 'VIDEO_STREAM_INFORMATION')
        mavlinkMs.push(performance.now() - sent)
      }
      const asked = performance.now()
      await s.call('GET', '/api/devices')
      httpMs.push(performance.now() - asked)
      await Bun.sleep(Math.max(0, 100 - (Date.now() - tick)))
    }
    const elapsed = (Date.now() - started) / 1000
    const cpu = ((cpuTicks(pid) - t0) / TICK / elapsed) * 100
    const heartbeatGaps: number[] = []
    if (gcs) {
      for (const compid of components) {
        const beats = gcs.messages.slice(since).filter((m) => m.name === 'HEARTBEAT' && m.compid === compid).map((m) => m.at)
        for (let i = 1; i < beats.length; i++) heartbeatGaps.push(beats[i]! - beats[i - 1]!)
      }
    }
    return { cpu, rss: rssKb(pid) / 1024, mavlinkMs, httpMs, heartbeatGaps }
  } finally {
    await s.kill()
    gcs?.close()
  }
}

const off = await run(false)
const on = await run(true)
console.log(`\nservice process, ${SECONDS} s, 2 MJPG streams 640x480@15 (its GStreamer children excluded)`)
console.log('| | CPU, % of a core | RSS |')
console.log('|---|---|---|')
console.log(`| MAVLink off | ${fmt(off.cpu)} | ${fmt(off.rss)} MB |`)
console.log(`| MAVLink on (udpout, 10 requests/s) | ${fmt(on.cpu)} | ${fmt(on.rss)} MB |`)
console.log(`| on / off | ${fmt(on.cpu / off.cpu, 2)}× | ${fmt(on.rss / off.rss, 2)}× (+${fmt(on.rss - off.rss)} MB) |`)
console.log(`\nanswers (${on.mavlinkMs.length} of each)`)
console.log('| | p50 | p99 | max |')
console.log('|---|---|---|---|')
console.log(`| COMMAND_LONG → VIDEO_STREAM_INFORMATION | ${fmt(pct(on.mavlinkMs, 0.5), 2)} ms | ${fmt(pct(on.mavlinkMs, 0.99), 2)} ms | ${fmt(Math.max(...on.mavlinkMs), 2)} ms |`)
console.log(`| GET /api/devices (baseline) | ${fmt(pct(on.httpMs, 0.5), 2)} ms | ${fmt(pct(on.httpMs, 0.99), 2)} ms | ${fmt(Math.max(...on.httpMs), 2)} ms |`)
console.log(`| ratio | ${fmt(pct(on.mavlinkMs, 0.5) / pct(on.httpMs, 0.5), 2)}× | ${fmt(pct(on.mavlinkMs, 0.99) / pct(on.httpMs, 0.99), 2)}× | |`)
console.log(`\nheartbeat spacing (${on.heartbeatGaps.length} gaps): p50 ${fmt(pct(on.heartbeatGaps, 0.5), 0)} ms, p99 ${fmt(pct(on.heartbeatGaps, 0.99), 0)} ms, max ${fmt(Math.max(...on.heartbeatGaps), 0)} ms (target 1000)`)
