// V4L2 in the kernel-tier VM (QEMU TCG, Debian kernel, vivid n_devs=2: 20 nodes): enumerating every
// node with all controls — the service's backend vs `v4l2-ctl --all` per node — and one control set
// over HTTP vs one `v4l2-ctl -c` process. Target: faster than v4l2-ctl. The VM emulates its CPU, so
// absolute times are several times a real vehicle's; the ratios are the point.
import { spawnSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { V4l2Backend } from '../drivers/v4l2/backend'
import { STALL_BUS } from '../tests/kernel/host/stall'
import { REPO, runInVm } from '../tests/kernel/vm'

// On the host first: HTTP latency while a device's worker is blocked for 3 s in a system call (the
// stalling worker of tests/kernel/host) against the same requests with nothing blocked.
async function healthLatency(): Promise<{ idle: number[]; stalled: number[] }> {
  const root = mkdtempSync(join(tmpdir(), 'v4l2-bench-'))
  mkdirSync(join(root, 'devices/stall0'), { recursive: true })
  mkdirSync(join(root, 'class/video0'), { recursive: true })
  symlinkSync(join(root, 'devices/stall0'), join(root, 'class/video0/device'))
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => Response.json({ state: 'ok' }) })
  const backend = new V4l2Backend({ sysfsRoot: join(root, 'class'), workerUrl: new URL('../tests/kernel/host/stall-worker.ts', import.meta.url), ioTimeoutMs: 10_000 })
  const sample = async (ms: number) => {
    const xs: number[] = []
    const end = performance.now() + ms
    while (performance.now() < end) {
      const t = performance.now()
      await (await fetch(`http://127.0.0.1:${server.port}/api/health`)).text()
      xs.push(performance.now() - t)
      await Bun.sleep(20)
    }
    return xs.sort((a, b) => a - b)
  }
  try {
    await backend.list()
    await sample(300) // warm the connection
    const idle = await sample(2500)
    const stall = backend.setControl(STALL_BUS, 1, 3000)
    const stalled = await sample(2500)
    await stall
    return { idle, stalled }
  } finally {
    await backend.stop()
    server.stop(true)
    rmSync(root, { recursive: true, force: true })
  }
}
const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))]!
const h = await healthLatency()
console.log(`GET /api/health      idle:                 p50 ${pct(h.idle, 0.5).toFixed(2)} ms  p99 ${pct(h.idle, 0.99).toFixed(2)} ms  (${h.idle.length} requests)`)
console.log(`                     during a 3 s ioctl stall: p50 ${pct(h.stalled, 0.5).toFixed(2)} ms  p99 ${pct(h.stalled, 0.99).toFixed(2)} ms  (${h.stalled.length} requests)`)

// QEMU, the guest kernel, v4l-utils: idempotent, quick when all is there.
const setup = spawnSync('bash', [join(REPO, 'scripts/setup/kernel.sh')], { stdio: 'inherit' })
if (setup.status !== 0) process.exit(1)
const run = await runInVm('exec ./node_modules/.bin/bun run bench/v4l2-guest.ts /mnt/results/bench.json', { timeoutMs: 600_000 })
const file = join(run.resultsDir, 'bench.json')
if (run.rc !== 0 || !existsSync(file)) {
  console.error(`the benchmark failed in the VM (exit ${run.rc}):\n${await Bun.file(join(run.resultsDir, 'out.log')).text()}`)
  process.exit(1)
}
const r = (await Bun.file(file).json()) as Record<string, number>
const f = (ms: number) => `${ms.toFixed(1)} ms`
console.log(`vivid in QEMU TCG: ${r.nodes} nodes, ${r.controls} controls on the devices`)
console.log(`enumerate all nodes  service, formats re-read (after a plug)    ${f(r.fresh_list_ms!)}`)
console.log(`                     service, formats cached (GET, after a set) ${f(r.list_ms!)}`)
console.log(`                     v4l2-ctl --all per node                    ${f(r.v4l2ctl_all_ms!)}   ratio ${(r.v4l2ctl_all_ms! / r.fresh_list_ms!).toFixed(1)}x (fresh)`)
console.log(`                     v4l2-ctl --all --list-formats-ext --list-ctrls-menus per node  ${f(r.v4l2ctl_full_ms!)}   ratio ${(r.v4l2ctl_full_ms! / r.fresh_list_ms!).toFixed(1)}x (fresh)`)
console.log(`set one control      POST /api/devices/set_uvc_control          ${f(r.http_set_ms!)}`)
console.log(`                     v4l2-ctl -c brightness=N                   ${f(r.v4l2ctl_set_ms!)}   ratio ${(r.v4l2ctl_set_ms! / r.http_set_ms!).toFixed(1)}x`)
