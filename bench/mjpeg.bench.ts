// The JPEG views (plugins/jpeg), on the real service with simulated cameras streaming 1280x720@30:
//  1. snapshot latency: from a running stream (MJPG: the camera's own next JPEG; H.264: the stream hub's
//     last group of pictures decoded by a one-shot child) against a one-shot capture of the same camera
//     stopped. With `--baseline <checkout>` (another Periscope tree, e.g. `git archive <commit>` with
//     node_modules linked), the same H.264 snapshots are also asked, turn about, of a second service
//     run from it, and the ratio printed (same run, same load).
//  2. CPU per MJPEG viewer (service + its children, curl excluded) for 0, 1, 4 and 8 viewers.
// `bun run bench/mjpeg.bench.ts [--shots 8] [--seconds 8] [--baseline DIR]`
import { createSocket } from 'node:dgram'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { argOf, cpuTicks, freePort, numberArg, waitHttp } from './lib'

const SHOTS = numberArg('shots', 8)
const SECONDS = numberArg('seconds', 8)
const BASELINE = argOf('baseline', '')
const ROOT = join(import.meta.dir, '..')
const WEBCAM = 'usb-0000:00:14.0-4' // MJPG
const EHD = 'usb-0000:00:14.0-1' // H.264

if (!Bun.which('gst-launch-1.0')) {
  console.error('gst-launch-1.0 is missing: run scripts/setup/gstreamer.sh')
  process.exit(1)
}

const childrenOf = (pid: number) =>
  Bun.spawnSync(['ps', '-o', 'pid=,args=', '--ppid', String(pid)]).stdout.toString().split('\n').map((l) => l.trim().split(/\s+/)).filter((f) => f[1]?.includes('gst-launch')).map((f) => ({ pid: Number(f[0]), args: f.join(' ') }))

/** A service run from the tree `root`, with the simulated cameras, on a free port. */
async function startService(root: string): Promise<{ url: string; proc: Subprocess }> {
  const port = await freePort()
  const proc = Bun.spawn([process.execPath, join(root, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(port), '--data-dir', mkdtempSync(join(tmpdir(), 'periscope-bench-mjpeg-')), '--simulate', 'default', '--rtsp-port', '0', '--log-level', 'error'], { cwd: root, stdout: 'ignore', stderr: 'inherit' })
  return { url: `http://127.0.0.1:${port}`, proc }
}
const { url, proc: service } = await startService(ROOT)
const older = BASELINE ? await startService(BASELINE) : null
const viewers: Subprocess[] = []
const sink = createSocket('udp4')
sink.on('message', () => {})
await new Promise<void>((resolve) => sink.bind(0, '127.0.0.1', resolve))
const sinkPort = sink.address().port

const post = (path: string, body: unknown, base = url) => fetch(base + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const configure = async (bus_info: string, encode_type: string, enabled: boolean, base = url) => {
  const r = await post('/api/devices/configure_stream', { bus_info, stream_type: 'UDP', encode_type, stream_format: { width: 1280, height: 720, interval: { numerator: 1, denominator: 30 } }, enabled, endpoints: [{ host: '127.0.0.1', port: sinkPort }] }, base)
  if (!r.ok) throw new Error(`configure_stream ${bus_info}: ${r.status} ${await r.text()}`)
  if (enabled) {
    for (let i = 0; i < 200; i++) {
      const devices = (await (await fetch(base + '/api/devices')).json()) as any[]
      if (devices.find((d) => d.bus_info === bus_info)?.stream_status?.state === 'running') return
      await Bun.sleep(100)
    }
    throw new Error(`${bus_info} did not start`)
  }
}

/**
 * Snapshot latencies (ms) of each service in `bases`, asked turn about, one request to each every 1.1 s
 * so none is served from the 1 s cache.
 */
async function snapshots(bus_info: string, bases = [url]): Promise<number[][]> {
  const out: number[][] = bases.map(() => [])
  for (let i = 0; i < SHOTS; i++) {
    for (const [k, base] of bases.entries()) {
      // A random point of the key-frame interval, as a client comes.
      await Bun.sleep(Math.random() * 1000)
      const t0 = performance.now()
      const r = await fetch(`${base}/api/streams/${bus_info}/snapshot.jpg`)
      await r.arrayBuffer()
      if (!r.ok) throw new Error(`snapshot ${bus_info} at ${base}: ${r.status}`)
      out[k]!.push(performance.now() - t0)
    }
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
  for (const [bus_info, encode] of [[WEBCAM, 'MJPG'], [EHD, 'H264']] as const) {
    await configure(bus_info, encode, true)
    const [running] = await snapshots(bus_info)
    await configure(bus_info, encode, false)
    await Bun.sleep(500)
    const [oneShot] = await snapshots(bus_info)
    console.log(`snapshot ${encode}: running median ${fmt(median(running!))} ms (max ${fmt(Math.max(...running!))}), one-shot median ${fmt(median(oneShot!))} ms (max ${fmt(Math.max(...oneShot!))}): ${(median(running!) / median(oneShot!)).toFixed(2)}× the one-shot`)
  }
  if (older) {
    await waitHttp(older.url + '/api/health')
    await Promise.all([configure(EHD, 'H264', true), configure(EHD, 'H264', true, older.url)])
    const [mine, theirs] = await snapshots(EHD, [url, older.url])
    await Promise.all([configure(EHD, 'H264', false), configure(EHD, 'H264', false, older.url)])
    older.proc.kill('SIGTERM')
    await older.proc.exited
    console.log(`snapshot H264 running, this tree against baseline ${BASELINE}, turn about: median ${fmt(median(mine!))} ms (max ${fmt(Math.max(...mine!))}) against ${fmt(median(theirs!))} ms (max ${fmt(Math.max(...theirs!))}): ${(median(mine!) / median(theirs!)).toFixed(2)}×`)
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
  if (older && older.proc.exitCode === null) older.proc.kill('SIGTERM')
  service.kill('SIGTERM')
  await service.exited
  sink.close()
}
