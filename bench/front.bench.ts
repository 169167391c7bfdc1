// What the service's front (core/front.ts: Bun.serve routes beside node:http on one port, so that
// zip downloads keep their Content-Length) costs against Elysia's plain Bun.serve adapter:
// GET /api/devices with 8 simulated cameras under wrk (32 connections), the same app behind both.
// Run: npm run bench front   (or: bun run bench/front.bench.ts [--child])
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, waitHttp, wrk, type WrkResult } from './lib'

const ROOT = join(import.meta.dir, '..')
const DURATION = Number(process.env.BENCH_SECONDS ?? 10)

if (process.argv.includes('--child')) {
  // The service itself, listening on both fronts: its own on --port, and Elysia's Bun.serve adapter
  // (as the service shipped before the front) on --port + 1.
  const { createApp } = await import('../core/app')
  const { loadConfig } = await import('../core/config')
  const { loadPlugins } = await import('../core/loader')
  const { createLogger } = await import('../core/log')
  const config = loadConfig(process.argv.slice(2).filter((a) => a !== '--child'), process.env)
  const periscope = await createApp(config, await loadPlugins(config), createLogger('warn'))
  const { port } = await periscope.listen()
  periscope.app.listen({ hostname: '127.0.0.1', port: port + 1 })
} else {
  const dir = mkdtempSync(join(tmpdir(), 'periscope-front-'))
  let port = await freePort()
  while (port > 65000) port = await freePort()
  const child = Bun.spawn(
    [process.execPath, 'run', import.meta.path, '--child', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir, '--simulate', 'fleet', '--plugins', 'cameras,dwe', '--log-level', 'warn'],
    { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' },
  )
  try {
    const front = `http://127.0.0.1:${port}/api/devices`
    const bun = `http://127.0.0.1:${port + 1}/api/devices`
    await waitHttp(bun)
    await waitHttp(front)
    if ((await (await fetch(bun)).text()) !== (await (await fetch(front)).text())) throw new Error('the two fronts answer differently')
    // Alternating, twice each, so both see the same machine.
    const runs: { bun: WrkResult[]; front: WrkResult[] } = { bun: [], front: [] }
    for (let i = 0; i < 2; i++) {
      for (const [name, url] of [['bun', bun], ['front', front]] as const) {
        await wrk(url, 2, 32)
        runs[name].push(await wrk(url, DURATION, 32))
      }
    }
    const bestOf = (xs: WrkResult[]) => xs.reduce((a, b) => (b.rps > a.rps ? b : a))
    const row = (name: string, r: WrkResult) => `${name.padEnd(30)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms`
    const b = bestOf(runs.bun)
    const n = bestOf(runs.front)
    console.log(`GET /api/devices, 8 simulated cameras, wrk 32 connections, ${DURATION} s, best of 2 each`)
    console.log(row('the front (as shipped)', n))
    console.log(row('Bun.serve (Elysia adapter)', b))
    console.log(`front / Bun.serve throughput ${(n.rps / b.rps).toFixed(2)}×; p99 ${n.p99.toFixed(2)} vs ${b.p99.toFixed(2)} ms (issue 2's target ≤ 5 ms)`)
  } finally {
    child.kill()
    await child.exited
    rmSync(dir, { recursive: true, force: true })
  }
}
