// The JPEG views (plugins/jpeg), on the real service with simulated cameras streaming 1280x720@30:
//  1. snapshot latency: from a running stream (MJPG: the camera's own next JPEG; H.264: a transcoder
//     child decodes from the next key frame) against a one-shot capture of the same camera stopped.
//  2. CPU per MJPEG viewer (service + its children, curl excluded) for 0, 1, 4 and 8 viewers.
// `bun run bench/mjpeg.bench.ts [--shots 8] [--seconds 8]`
import { createSocket } from 'node:dgram'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { cpuTicks, freePort, numberArg, waitHttp } from './lib'

const SHOTS = numberArg('shots', 8)
const SECONDS = numberArg('seconds', 8)
const ROOT = join(import.meta.dir, '..')
const WEBCAM = 'usb-0000:00:14.0-4' // MJPG
const EHD = 'usb-0000:00:14.0-1' // H.264

if (!Bun.which('gst-launch-1.0')) {
  console.error('gst-launch-1.0 is missing: run scripts/setup/gstreamer.sh')
  process.exit(1)
}

const childrenOf = (pid: number) =>
  Bun.spawnSync(['ps', '-o', 'pid=,args=', '--ppid', String(pid)]).stdout.toString().split('\n').map((l) => l.trim().split(/\s+/)).filter((f) => f[1]?.includes('gst-launch')).map((f) => ({ pid: Number(f[0]), args: f.join(' ') }))

const port = await freePort()
const url = `http://127.0.0.1:${port}`
const service = Bun.spawn([process.execPath, join(ROOT, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(port), '--data-dir', mkdtempSync(join(tmpdir(), 'periscope-bench-mjpeg-')), '--simulate', 'default', '--log-level', 'error'], { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' })
const viewers: Subprocess[] = []
const sink = createSocket('udp4')
sink.on('message', () => {})
await new Promise<void>((resolve) => sink.bind(0, '127.0.0.1', resolve))
const sinkPort = sink.address().port

const post = (path: string, body: unknown) => fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const configure = async (bus_info: string, encode_type: string, enabled: boolean) => {
  const r = await post('/api/devices/configure_stream', { bus_info, stream_type: 'UDP', encode_type, stream_format: { width: 1280, height: 720, interval: { numerator: 1, denominator: 30 } }, enabled, endpoints: [{ host: '127.0.0.1', port: sinkPort }] })
  if (!r.ok) throw new Error(`configure_stream ${bus_info}: ${r.status} ${await r.text()}`)
  if (enabled) {
    for (let i = 0; i < 200; i++) {
      const devices = (await (await fetch(url + '/api/devices')).json()) as any[]
      if (devices.find((d) => d.bus_info === bus_info)?.stream_status?.state === 'running') return
      await Bun.sleep(100)
    }
    throw new Error(`${bus_info} did not start`)
  }
}

/** Snapshot latencies (ms), one request every 1.1 s so none is served from the 1 s cache. */
async function snapshots(bus_info: string): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < SHOTS; i++) {
    const t0 = performance.now()
    const r = await fetch(`${url}/api/streams/${bus_info}/snapshot.jpg`)
    await r.arrayBuffer()
    if (!r.ok) throw new Error(`snapshot ${bus_info}: ${r.status}`)
    out.push(performance.now() - t0)
    await Bun.sleep(1100)
  }
  return out
}

/** CPU (% of one core) of the service and its children over SECONDS with `n` curl viewers of bus_info's MJPEG. */
async function cpuWith(bus_info: string, n: number, cameraPid: () => number[]): Promise<{ total: number; camera: number }> {
  while (viewers.length < n) viewers.push(Bun.spawn(['curl', '-sN', '-o', '/dev/null', `${url}/api/streams/${bus_info}/mjpeg`], { stdout: 'ignore', stderr: 'ignore' }))
  while (viewers.length > n) {
    const v = viewers.pop()!
    v.kill()
    await v.exited
  }
  await Bun.sleep(1500) // viewers connected, transcoder warm
  const pids = () => [service.pid, ...childrenOf(service.pid).map((c) => c.pid)]
  const before = new Map(pids().map((p) => [p, cpuTicks(p)]))
  const cam = cameraPid()
  const camBefore = cam.map(cpuTicks)
  await Bun.sleep(SECONDS * 1000)
  let ticks = 0
  for (const p of new Set([...before.keys(), ...pids()])) ticks += cpuTicks(p) - (before.get(p) ?? 0)
  const camTicks = cam.reduce((n, p, i) => n + cpuTicks(p) - camBefore[i]!, 0)
  return { total: ticks / SECONDS, camera: camTicks / SECONDS }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (x: number) => x.toFixed(1)

try {
  await waitHttp(url + '/api/health')
  console.log(`simulated cameras at 1280x720@30; ${SHOTS} snapshots each, 1.1 s apart; CPU over ${SECONDS} s per row`)
  const rows: [string, number[]][] = []
  for (const [bus_info, encode] of [[WEBCAM, 'MJPG'], [EHD, 'H264']] as const) {
    await configure(bus_info, encode, true)
    const running = await snapshots(bus_info)
    await configure(bus_info, encode, false)
    await Bun.sleep(500)
    const oneShot = await snapshots(bus_info)
    rows.push([`${encode} running`, running], [`${encode} stopped (one-shot)`, oneShot])
    console.log(`snapshot ${encode}: running median ${fmt(median(running))} ms (max ${fmt(Math.max(...running))}), one-shot median ${fmt(median(oneShot))} ms (max ${fmt(Math.max(...oneShot))}): ${(median(running) / median(oneShot)).toFixed(2)}× the one-shot`)
  }
  for (const [bus_info, encode] of [[WEBCAM, 'MJPG'], [EHD, 'H264']] as const) {
    await configure(bus_info, encode, true)
    const camera = () => childrenOf(service.pid).filter((c) => !c.args.includes('udpsrc')).map((c) => c.pid)
    const base = await cpuWith(bus_info, 0, camera)
    console.log(`\nCPU, ${encode} 1280x720@30 (% of one core: service + children; the camera's own pipeline in brackets)`)
    console.log(`  0 viewers: ${fmt(base.total)} % [camera ${fmt(base.camera)} %]`)
    for (const n of [1, 4, 8]) {
      const r = await cpuWith(bus_info, n, camera)
      console.log(`  ${n} viewer${n > 1 ? 's' : ' '}: ${fmt(r.total)} % [camera ${fmt(r.camera)} %]  → +${fmt((r.total - base.total) / n)} % per viewer`)
    }
    await cpuWith(bus_info, 0, camera)
    await configure(bus_info, encode, false)
  }
} finally {
  for (const v of viewers) v.kill()
  service.kill('SIGTERM')
  await service.exited
  sink.close()
}
