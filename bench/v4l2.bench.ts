// V4L2 in the kernel-tier VM (QEMU TCG, Debian kernel, vivid n_devs=2: 20 nodes): enumerating every
// node with all controls — the service's backend vs `v4l2-ctl --all` per node — and one control set
// over HTTP vs one `v4l2-ctl -c` process. Target: faster than v4l2-ctl. The VM emulates its CPU, so
// absolute times are several times a real vehicle's; the ratios are the point.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { CACHE, REPO, runInVm } from '../tests/kernel/vm'

if (!existsSync(join(CACHE, 'root/boot'))) {
  const setup = spawnSync('bash', [join(REPO, 'scripts/setup/kernel.sh')], { stdio: 'inherit' })
  if (setup.status !== 0) process.exit(1)
}
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
