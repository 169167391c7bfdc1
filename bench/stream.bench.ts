// The streamer's overhead, measured against gst-launch-1.0 run by hand:
//  1. CPU time and RSS of the service + its child streaming 1080p30 H.264 from a simulated camera for
//     SECONDS (default 60), against the same pipeline run bare (no monitors, no -m) at the same time — target ≤ 1.05.
//  2. restart_stream → first RTP packet of the new child at a receiver, against a bare cold start — target ≤ 1.2×.
//  3. 8 simultaneous streams (640x480@30 H.264, simulated): CPU and RSS.
// `bun run bench/stream.bench.ts [--seconds 60] [--restarts 15] [--streams 8]`
// A simulated H.264 camera encodes in software (x264), so both sides spend most of their CPU on the
// simulation; a real camera encodes in hardware and the pipeline is only parse + payload + send.
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger } from '../core/log'
import { monitorTokens } from '../drivers/gstreamer/pipeline'
import { simulatedSource } from '../drivers/gstreamer/simulated'
import { GstStreamer } from '../drivers/gstreamer/streamer'
import { TICK, cpuTicks, freePort, numberArg, rssKb, waitHttp } from './lib'

const SECONDS = numberArg('seconds', 60)
const RESTARTS = numberArg('restarts', 15)
const STREAMS = numberArg('streams', 8)
const ROOT = join(import.meta.dir, '..')

if (!Bun.which('gst-launch-1.0')) {
  console.error('gst-launch-1.0 is missing: run scripts/setup/gstreamer.sh')
  process.exit(1)
}

// ---- /proc sampling ----
/** gst-launch-1.0 children of `pid`. */
function childrenOf(pid: number): number[] {
  const out = Bun.spawnSync(['ps', '-o', 'pid=,comm=', '--ppid', String(pid)]).stdout.toString()
  return out.split('\n').map((l) => l.trim().split(/\s+/)).filter(([, comm]) => comm?.startsWith('gst-launch')).map(([p]) => Number(p))
}

/** CPU seconds and mean RSS (MB) of `pids` over `seconds`. */
async function measure(pids: () => number[], seconds: number): Promise<{ cpu: number; rss: number; perPid: Map<number, number> }> {
  const start = new Map(pids().map((p) => [p, cpuTicks(p)]))
  const rss: number[] = []
  for (let s = 0; s < seconds; s++) {
    await Bun.sleep(1000)
    rss.push(pids().reduce((sum, p) => sum + rssKb(p), 0) / 1024)
  }
  const perPid = new Map([...start].map(([p, t0]) => [p, (cpuTicks(p) - t0) / TICK]))
  const cpu = [...perPid.values()].reduce((a, b) => a + b, 0)
  return { cpu, rss: rss.reduce((a, b) => a + b, 0) / rss.length, perPid }
}

// ---- RTP receiver: first packet of a new SSRC ----
async function rtpReceiver(port: number) {
  const seen: { at: number; ssrc: number }[] = []
  const socket = await Bun.udpSocket({
    hostname: '127.0.0.1',
    port,
    socket: {
      data: (_s, buf) => {
        if (buf.length >= 12) seen.push({ at: performance.now(), ssrc: buf.readUInt32BE(8) })
      },
    },
  })
  return {
    seen,
    /** When the first packet of an SSRC other than `old` arrived after `since`. */
    async firstNew(since: number, old: number | null, timeoutMs = 10_000): Promise<{ at: number; ssrc: number }> {
      const deadline = performance.now() + timeoutMs
      for (;;) {
        const hit = seen.find((p) => p.at >= since && p.ssrc !== old)
        if (hit) return hit
        if (performance.now() > deadline) throw new Error('no RTP packet from a new stream')
        await Bun.sleep(2)
      }
    },
    close: () => socket.close(),
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const fmt = (n: number, d = 1) => n.toFixed(d)

// ---- the service with simulated cameras ----
const dataDir = mkdtempSync(join(tmpdir(), 'periscope-bench-stream-'))
const httpPort = await freePort()
const url = `http://127.0.0.1:${httpPort}`
const service = Bun.spawn([process.execPath, join(ROOT, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(httpPort), '--data-dir', dataDir, '--simulate', 'default', '--log-level', 'error'], {
  stdout: 'ignore',
  stderr: 'inherit',
  cwd: ROOT,
})
const cleanup: (() => void)[] = [() => service.kill('SIGTERM')]
process.on('exit', () => cleanup.forEach((c) => c()))

try {
  await waitHttp(`${url}/api/devices`)
  const devices = (await (await fetch(`${url}/api/devices`)).json()) as any[]
  const dev = devices.find((d) => d.cameras?.some((c: any) => c.formats?.H264?.some((s: any) => s.width === 1920 && s.height === 1080)))
  if (!dev) throw new Error('no simulated device offers 1920x1080 H.264')
  const udpPort = 25000 + Math.floor(Math.random() * 10000) * 2
  const rx = await rtpReceiver(udpPort)
  cleanup.push(rx.close)
  const configure = () =>
    fetch(`${url}/api/devices/configure_stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        bus_info: dev.bus_info,
        stream_type: 'UDP',
        stream_format: { width: 1920, height: 1080, interval: { numerator: 1, denominator: 30 } },
        encode_type: 'H264',
        enabled: true,
        endpoints: [{ host: '127.0.0.1', port: udpPort }],
      }),
    })
  if (!(await configure()).ok) throw new Error('configure_stream failed')
  await rx.firstNew(0, null)
  const [child] = childrenOf(service.pid)
  if (!child) throw new Error('the service has no gst child')
  const argv = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').filter(Boolean)
  // The bare pipeline: the child's own, without setpriv, -e -m and the monitors.
  const tokens = argv.slice(argv.indexOf('-m') + 1)
  for (let i = 0; ; i++) {
    const mon = ['!', ...monitorTokens(i)]
    const at = tokens.findIndex((_, k) => mon.every((t, j) => tokens[k + j] === t))
    if (at < 0) break
    tokens.splice(at, mon.length)
  }

  // Both run at once over the same window: on a shared machine, sequential runs differ by more than the
  // overhead being measured; side by side, both see the same load.
  console.log(`1. 1080p30 H.264 from a simulated camera, service + child and bare side by side, ${SECONDS} s`)
  const bare = Bun.spawn(['gst-launch-1.0', ...tokens], { stdout: 'ignore', stderr: 'ignore' })
  cleanup.push(() => bare.kill('SIGKILL'))
  await Bun.sleep(2000) // past start-up
  const [svc, b] = await Promise.all([measure(() => [service.pid, ...childrenOf(service.pid)], SECONDS), measure(() => [bare.pid], SECONDS)])
  const childOnly = rssKb(childrenOf(service.pid)[0]!) / 1024
  const childCpu = svc.cpu - svc.perPid.get(service.pid)!
  bare.kill('SIGINT')
  await bare.exited
  await fetch(`${url}/api/devices/unconfigure_stream`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bus_info: dev.bus_info }) })
  console.log(`   service + child: CPU ${fmt(svc.cpu, 2)} s (child ${fmt(childCpu, 2)} s, service ${fmt(svc.cpu - childCpu, 2)} s), RSS ${fmt(svc.rss)} MB (child ${fmt(childOnly)} MB)`)
  console.log(`   bare gst-launch: CPU ${fmt(b.cpu, 2)} s, RSS ${fmt(b.rss)} MB`)
  console.log(`   ratio CPU service+child/bare ${fmt(svc.cpu / b.cpu, 3)} (target ≤ 1.05), child/bare ${fmt(childCpu / b.cpu, 3)}; RSS child/bare ${fmt(childOnly / b.rss, 3)}, service+child/bare ${fmt(svc.rss / b.rss, 2)}`)

  // Alternating, so both see the same machine: on a shared box cold starts alone vary 2× run to run.
  console.log(`2. restart → first RTP packet of the new child vs a bare cold start, alternating, median of ${RESTARTS} each`)
  const post = (path: string, body: unknown) => fetch(`${url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const restarts: number[] = []
  const colds: number[] = []
  for (let i = 0; i < RESTARTS; i++) {
    if (!(await configure()).ok) throw new Error('configure_stream failed')
    await rx.firstNew(performance.now(), null)
    await Bun.sleep(1500)
    const current = rx.seen.at(-1)!.ssrc
    const t0 = performance.now()
    const r = await post('/api/devices/restart_stream', { bus_info: dev.bus_info })
    if (!r.ok) throw new Error(`restart_stream: ${r.status}`)
    restarts.push((await rx.firstNew(t0, current)).at - t0)
    await Bun.sleep(500)
    await post('/api/devices/unconfigure_stream', { bus_info: dev.bus_info })
    await Bun.sleep(500)
    const t1 = performance.now()
    const p = Bun.spawn(['gst-launch-1.0', ...tokens], { stdout: 'ignore', stderr: 'ignore' })
    colds.push((await rx.firstNew(t1, null)).at - t1)
    p.kill('SIGKILL')
    await p.exited
  }
  console.log(`   restart_stream: ${fmt(median(restarts), 0)} ms (min ${fmt(Math.min(...restarts), 0)}, max ${fmt(Math.max(...restarts), 0)})`)
  console.log(`   bare cold start: ${fmt(median(colds), 0)} ms (min ${fmt(Math.min(...colds), 0)}, max ${fmt(Math.max(...colds), 0)})`)
  console.log(`   ratio ${fmt(median(restarts) / median(colds), 2)} (target ≤ 1.2)`)
  rx.close()

  console.log(`3. ${STREAMS} simultaneous streams, 640x480@30 H.264 from simulated cameras, 20 s`)
  const streamer = new GstStreamer({ log: createLogger('error'), emit: () => {} })
  cleanup.push(() => void streamer.stopAll())
  const interval = { numerator: 1, denominator: 30 }
  for (let i = 0; i < STREAMS; i++) {
    await streamer.start({
      bus_info: `bench-${i}`,
      recordings_dir: dataDir,
      stream: { device_path: '/dev/null', encode_type: 'H264', stream_type: 'UDP', endpoints: [{ host: '127.0.0.1', port: udpPort + 100 + 2 * i }], width: 640, height: 480, interval, enabled: true },
      members: [{ bus_info: `bench-${i}`, label: `bench ${i}`, source: { kind: 'gst', description: simulatedSource('H264', 640, 480, interval) } }],
    })
  }
  await Bun.sleep(3000)
  const running = Array.from({ length: STREAMS }, (_, i) => streamer.status(`bench-${i}`).state).filter((s) => s === 'running').length
  const pids = () => [process.pid, ...Array.from({ length: STREAMS }, (_, i) => streamer.pid(`bench-${i}`)).filter((p): p is number => p !== null)]
  const many = await measure(pids, 20)
  console.log(`   ${running}/${STREAMS} running; CPU ${fmt((many.cpu / 20) * 100, 0)} % of one core (this process + children), RSS ${fmt(many.rss)} MB, drops ${Array.from({ length: STREAMS }, (_, i) => streamer.frameDrops(`bench-${i}`)).reduce((a, b) => a + b, 0)}`)
  await streamer.stopAll()
} finally {
  service.kill('SIGTERM')
  await service.exited
}
