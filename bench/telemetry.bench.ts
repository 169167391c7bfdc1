// What the vehicle's telemetry track costs a recording (issue 22), on the whole service: a simulated
// 1080p30 H.264 camera streams to a loopback endpoint and is recorded while streaming for SECONDS
// (default 20) twice, in one run: first with no autopilot on the MAVLink link (the file has no text
// track), then with the tests' ArduSub autopilot (tests/mavlink-autopilot.ts) sending its telemetry at
// RATE Hz (default 10, as ArduSub streams to a ground station). For each: CPU of the recorder child and
// of the service's process (% of one core), and the file's write rate; then the ratios.
// `bun run bench/telemetry.bench.ts [--seconds 20] [--rate 10]`
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { segmentFileName } from '../core/naming'
import { TestAutopilot } from '../tests/mavlink-autopilot'
import { GroundStation } from '../tests/mavlink-gcs'
import { startService } from '../tests/integration/service.helpers'
import { TICK, cpuTicks, freePort, numberArg } from './lib'

const SECONDS = numberArg('seconds', 20)
const RATE = numberArg('rate', 10)
const BUS = 'usb-0000:00:14.0-1' // the default preset's exploreHD: H.264

if (!Bun.which('gst-launch-1.0')) {
  console.error('gst-launch-1.0 is missing: run scripts/setup/gstreamer.sh')
  process.exit(1)
}

/** The service's child whose command line names `file` (the recorder of that recording: its files' stem). */
function childWriting(parent: number, file: string): number {
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const ppid = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[1]
      if (ppid !== String(parent)) continue
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(file)) return Number(pid)
    } catch {}
  }
  throw new Error(`no child of ${parent} writes ${file}`)
}

const mavlinkPort = await freePort()
const service = await startService({ args: ['--mavlink', `udpin:127.0.0.1:${mavlinkPort}`, '--client-limits', 'off'] })
const call = service.call

async function recordOnce(label: string) {
  const started = await call('POST', '/api/devices/start_recording', { bus_info: BUS })
  if (started.status !== 200) throw new Error(`start_recording: ${started.status} ${JSON.stringify(started.body)}`)
  const file = (await call('GET', '/api/devices')).body.find((d: any) => d.bus_info === BUS).recording.file as string
  const stem = file.replace(/\.mkv$/, '')
  // Its first segment (docs/recordings.md), there once the first whole group of pictures is.
  const path = join(service.dataDir, 'recordings', segmentFileName(stem, 1, 'mkv'))
  for (let i = 0; !statSync(path, { throwIfNoEntry: false })?.size; i++) {
    if (i > 200) throw new Error('the recording wrote nothing')
    await Bun.sleep(50)
  }
  const recorder = childWriting(service.proc.pid, stem)
  const t0 = [recorder, service.proc.pid].map(cpuTicks)
  const bytes0 = statSync(path).size
  const start = performance.now()
  await Bun.sleep(SECONDS * 1000)
  const seconds = (performance.now() - start) / 1000
  const [rec, svc] = [recorder, service.proc.pid].map((p, i) => ((cpuTicks(p) - t0[i]!) / TICK / seconds) * 100)
  const rate = (statSync(path).size - bytes0) / seconds
  await call('POST', '/api/devices/stop_recording', { bus_info: BUS })
  const track = Bun.spawnSync(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_type', '-of', 'csv=p=0', path]).stdout.toString().trim().split('\n').join('+')
  return { label, recorder: rec!, service: svc!, rate, track }
}

try {
  const port = await freePort()
  const configured = await call('POST', '/api/devices/configure_stream', {
    bus_info: BUS,
    stream_type: 'UDP',
    stream_format: { width: 1920, height: 1080, interval: { numerator: 1, denominator: 30 } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port }],
  })
  if (configured.status !== 200) throw new Error(`configure_stream: ${configured.status} ${JSON.stringify(configured.body)}`)
  for (let i = 0; (await call('GET', '/api/devices')).body.find((d: any) => d.bus_info === BUS)?.stream_status?.state !== 'running'; i++) {
    if (i > 300) throw new Error('the stream did not start')
    await Bun.sleep(100)
  }

  const without = await recordOnce('no autopilot')
  const link = await GroundStation.udp()
  link.sendTo = { address: '127.0.0.1', port: mavlinkPort }
  const autopilot = new TestAutopilot(link, { armed: true, mode: 'MANUAL', depth: 12.3, heading: 271, roll: -1.5, pitch: 3.4, lat: 47.3769, lon: 8.5417, battery: 15.8, batteryPct: 62, pressure: 2250.5, waterTemp: 11.5 })
  autopilot.start(1000 / RATE)
  for (let i = 0; !(await call('GET', '/api/health')).body?.plugins?.mavlink?.vehicle?.battery_v; i++) {
    if (i > 200) throw new Error('the service did not hear the autopilot')
    await Bun.sleep(100)
  }
  const withTelemetry = await recordOnce(`autopilot at ${RATE} Hz`)
  autopilot.stop()
  link.close()

  console.log(`recording 1080p30 H.264 while streaming, ${SECONDS} s each, one run; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  console.log('                      tracks            recorder cpu %   service cpu %   write rate kB/s')
  for (const r of [without, withTelemetry]) console.log(`${r.label.padEnd(21)} ${r.track.padEnd(17)} ${r.recorder.toFixed(2).padStart(14)} ${r.service.toFixed(2).padStart(15)} ${(r.rate / 1000).toFixed(1).padStart(17)}`)
  const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : '—')
  console.log(`${'ratio (with / without)'.padEnd(39)} ${ratio(withTelemetry.recorder, without.recorder).padStart(14)} ${ratio(withTelemetry.service, without.service).padStart(15)} ${ratio(withTelemetry.rate, without.rate).padStart(17)}`)
} finally {
  await service.kill()
}
