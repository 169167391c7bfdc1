// V4L2 in the kernel-tier VM (QEMU TCG, Debian kernel, vivid n_devs=2: 20 nodes): enumerating every
// node with all controls — the service's backend vs `v4l2-ctl --all` per node — and one control set
// over HTTP vs one `v4l2-ctl -c` process. Target: faster than v4l2-ctl. The VM emulates its CPU, so
// absolute times are several times a real vehicle's; the ratios are the point.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { startStallService } from '../tests/kernel/host/stall-service'
import { REPO, runInVm } from '../tests/kernel/vm'

// On the host first: GET /api/health through the real service process (core/main.ts: the front, the
// cameras plugin, the V4L2 plugin and its worker pool; tests/kernel/host/stall-service.ts) while one
// camera's set_uvc_control is blocked for 3 s in its worker thread, against the same service idle.
const ROUNDS = 3
async function healthLatency(): Promise<{ idle: number[]; blocked: number[] }> {
  const service = await startStallService()
  const health = async () => {
    const t = performance.now()
    const r = await fetch(`${service.base}/api/health`)
    await r.text()
    if (r.status !== 200) throw new Error(`GET /api/health answered ${r.status}`)
    return performance.now() - t
  }
  /** One request every 20 ms while `more()` holds. */
  const sample = async (more: () => boolean) => {
    const xs: number[] = []
    while (more()) {
      xs.push(await health())
      await Bun.sleep(20)
    }
    return xs
  }
  try {
    const warm = performance.now() + 300
    await sample(() => performance.now() < warm)
    // Three rounds, idle and blocked alternating, so that load from elsewhere on the machine falls on both.
    const idle: number[] = []
    const blocked: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      const idleEnd = performance.now() + 3000
      idle.push(...(await sample(() => performance.now() < idleEnd)))
      let pending = true
      const started = performance.now()
      const set = service.stall(3000).finally(() => (pending = false))
      blocked.push(...(await sample(() => pending)))
      const answer = await set
      if (answer.status !== 200 || performance.now() - started < 2900) throw new Error(`the blocked set answered ${answer.status} after ${(performance.now() - started).toFixed(0)} ms`)
    }
    return { idle: idle.sort((a, b) => a - b), blocked: blocked.sort((a, b) => a - b) }
  } finally {
    await service.stop()
  }
}
const pct = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(xs.length * p))]!
const h = await healthLatency()
console.log(`GET /api/health, the service (core/main.ts + cameras + v4l2 over a stalling camera), one request per 20 ms, ${ROUNDS} rounds of 3 s each:`)
console.log(`                     idle (baseline):              p50 ${pct(h.idle, 0.5).toFixed(2)} ms  p99 ${pct(h.idle, 0.99).toFixed(2)} ms  max ${h.idle.at(-1)!.toFixed(2)} ms  (${h.idle.length} requests)`)
console.log(`                     set_uvc_control blocked 3 s:  p50 ${pct(h.blocked, 0.5).toFixed(2)} ms  p99 ${pct(h.blocked, 0.99).toFixed(2)} ms  max ${h.blocked.at(-1)!.toFixed(2)} ms  (${h.blocked.length} requests)`)
console.log(`                     ratio blocked / idle:         p50 ${(pct(h.blocked, 0.5) / pct(h.idle, 0.5)).toFixed(2)}x  p99 ${(pct(h.blocked, 0.99) / pct(h.idle, 0.99)).toFixed(2)}x`)
// `bun run bench/v4l2.bench.ts --host-only` stops here (no VM).
if (process.argv.includes('--host-only')) process.exit(0)

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
