// Why the service is not served through node:http (the one way Bun 1.4.5 keeps a handler-set
// Content-Length on a streamed body, wanted for zip downloads): GET /api/devices with 8 simulated
// cameras under wrk (32 connections), the same app behind Bun.serve (as shipped) and behind Bun's
// node:http with the smallest bridge we found. Prints both and the ratio.
// Run: npm run bench front   (or: bun run bench/front.bench.ts [--child])
import http from 'node:http'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, waitHttp, wrk, type WrkResult } from './lib'

const ROOT = join(import.meta.dir, '..')
const DURATION = Number(process.env.BENCH_SECONDS ?? 10)

if (process.argv.includes('--child')) {
  // The service itself, listening on both fronts: Bun.serve on --port, node:http on --port + 1.
  const { createApp } = await import('../core/app')
  const { loadConfig } = await import('../core/config')
  const { loadPlugins } = await import('../core/loader')
  const { createLogger } = await import('../core/log')
  const config = loadConfig(process.argv.slice(2).filter((a) => a !== '--child'), process.env)
  const periscope = await createApp(config, await loadPlugins(config), createLogger('warn'))
  const { port } = await periscope.listen()
  const base = `http://127.0.0.1:${port + 1}`
  http
    .createServer(async (req, res) => {
      const request = new Request(base + req.url, { method: req.method, headers: req.headers as Record<string, string> })
      const answer = await periscope.app.handle(request)
      const headers: string[] = []
      answer.headers.forEach((v, k) => void headers.push(k, v))
      const body = await answer.bytes()
      res.writeHead(answer.status, headers)
      res.end(body)
    })
    .listen(port + 1, '127.0.0.1')
} else {
  const dir = mkdtempSync(join(tmpdir(), 'periscope-front-'))
  let port = await freePort()
  while (port > 65000) port = await freePort()
  const child = Bun.spawn(
    [process.execPath, 'run', import.meta.path, '--child', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir, '--simulate', 'fleet', '--plugins', 'cameras,dwe', '--log-level', 'warn'],
    { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' },
  )
  try {
    const bun = `http://127.0.0.1:${port}/api/devices`
    const node = `http://127.0.0.1:${port + 1}/api/devices`
    await waitHttp(bun)
    await waitHttp(node)
    if ((await (await fetch(bun)).text()) !== (await (await fetch(node)).text())) throw new Error('the two fronts answer differently')
    // Alternating, twice each, so both see the same machine.
    const runs: { bun: WrkResult[]; node: WrkResult[] } = { bun: [], node: [] }
    for (let i = 0; i < 2; i++) {
      for (const [name, url] of [['bun', bun], ['node', node]] as const) {
        await wrk(url, 2, 32)
        runs[name].push(await wrk(url, DURATION, 32))
      }
    }
    const bestOf = (xs: WrkResult[]) => xs.reduce((a, b) => (b.rps > a.rps ? b : a))
    const row = (name: string, r: WrkResult) => `${name.padEnd(30)} ${r.rps.toFixed(0).padStart(7)} req/s   p50 ${r.p50.toFixed(2)} ms   p99 ${r.p99.toFixed(2)} ms`
    const b = bestOf(runs.bun)
    const n = bestOf(runs.node)
    console.log(`GET /api/devices, 8 simulated cameras, wrk 32 connections, ${DURATION} s, best of 2 each`)
    console.log(row('Bun.serve (as shipped)', b))
    console.log(row("Bun's node:http + bridge", n))
    console.log(`node:http / Bun.serve throughput ${(n.rps / b.rps).toFixed(2)}×; p99 ${n.p99.toFixed(2)} vs ${b.p99.toFixed(2)} ms (issue 2's target ≤ 5 ms)`)
  } finally {
    child.kill()
    await child.exited
    rmSync(dir, { recursive: true, force: true })
  }
}
