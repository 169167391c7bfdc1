// Runs inside the kernel-tier VM (bench/v4l2.bench.ts boots it): the service's V4L2 work against
// v4l2-ctl on the same vivid nodes. Writes its figures as JSON to the path given as argv[2].
import { spawn, spawnSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { V4l2Backend } from '../drivers/v4l2/backend'
import { nodeNames } from '../drivers/v4l2/sysfs'

const REPO = join(import.meta.dir, '..')
const out = process.argv[2]!
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
async function time(n: number, f: () => unknown): Promise<number> {
  const xs: number[] = []
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await f()
    xs.push(performance.now() - t)
  }
  return median(xs)
}
const v4l2ctl = (args: string[]) => {
  const r = spawnSync('v4l2-ctl', args, { stdio: 'ignore' })
  if (r.status !== 0) throw new Error(`v4l2-ctl ${args.join(' ')} failed`)
}

const nodes = nodeNames().map((n) => `/dev/${n}`)
const results: Record<string, number | string> = { nodes: nodes.length }

// 1. Enumeration of every node with every control (and, for us, every format, size and interval).
const backend = new V4l2Backend()
await backend.list() // warm the worker, as a running service is
const controls = (await backend.list()).reduce((n, d) => n + d.controls.length, 0)
results.controls = controls
results.list_ms = await time(10, () => backend.list())
results.fresh_list_ms = await time(5, () => backend.list({ fresh: true }))
results.v4l2ctl_all_ms = await time(3, () => nodes.forEach((n) => v4l2ctl(['-d', n, '--all'])))
results.v4l2ctl_full_ms = await time(3, () => nodes.forEach((n) => v4l2ctl(['-d', n, '--all', '--list-formats-ext', '--list-ctrls-menus'])))
await backend.stop()

// 2. One control set: over HTTP to the running service vs one v4l2-ctl -c process.
const port = 18090
const service = spawn(join(REPO, 'node_modules/.bin/bun'), ['run', 'core/main.ts', '--host', '127.0.0.1', '--port', String(port), '--data-dir', mkdtempSync('/tmp/bench-'), '--simulate', 'off', '--plugins', 'cameras,v4l2,dwe', '--log-level', 'warn'], { cwd: REPO, stdio: 'ignore' })
try {
  const deadline = Date.now() + 60_000
  while (!(await fetch(`http://127.0.0.1:${port}/api/devices`).then((r) => r.ok, () => false))) {
    if (Date.now() > deadline) throw new Error('the service did not start')
    await Bun.sleep(200)
  }
  let v = 0
  const set = async () => {
    const r = await fetch(`http://127.0.0.1:${port}/api/devices/set_uvc_control`, {
      method: 'POST', headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ bus_info: 'platform:vivid-000', control_id: 0x00980900, value: 100 + (v++ % 50) }),
    })
    if (!r.ok) throw new Error(`set_uvc_control answered ${r.status}: ${await r.text()}`)
  }
  await set()
  results.http_set_ms = await time(20, set)
  results.v4l2ctl_set_ms = await time(20, () => v4l2ctl(['-d', '/dev/video0', '-c', `brightness=${100 + (v++ % 50)}`]))
} finally {
  service.kill('SIGKILL')
}
writeFileSync(out, JSON.stringify(results))
console.log(JSON.stringify(results))
