// GET /api/devices with 8 simulated cameras under wrk (32 connections, 10 s) vs the same JSON served by
// a minimal FastAPI + uvicorn app (the anchor's stack) in the same run. Prints both and the ratios.
// Targets (issue 2): ≥ 5× the baseline's throughput, p99 ≤ 5 ms, RSS ≤ 80 MB.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, rssOf, waitHttp, wrk, type WrkResult } from './lib'

const ROOT = join(import.meta.dir, '..')
const DURATION = Number(process.env.BENCH_SECONDS ?? 10)
const dir = mkdtempSync(join(tmpdir(), 'periscope-bench-'))

const service = { port: await freePort(), proc: null as ReturnType<typeof Bun.spawn> | null }
const baseline = { port: await freePort(), proc: null as ReturnType<typeof Bun.spawn> | null }
try {
  service.proc = Bun.spawn(['bun', 'run', 'core/main.ts', '--host', '127.0.0.1', '--port', String(service.port), '--data-dir', join(dir, 'data'), '--simulate', 'fleet', '--plugins', 'cameras,dwe', '--log-level', 'warn'], {
    cwd: ROOT,
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${service.port}/api/devices`
  await waitHttp(url)
  const json = await (await fetch(url)).text()
  writeFileSync(join(dir, 'devices.json'), json)
  writeFileSync(
    join(dir, 'app.py'),
    `import json\nfrom fastapi import FastAPI\napp = FastAPI()\nDATA = json.load(open(${JSON.stringify(join(dir, 'devices.json'))}))\n@app.get("/api/devices")\ndef devices():\n    return DATA\n`,
  )
  baseline.proc = Bun.spawn(['/usr/bin/python3', '-m', 'uvicorn', 'app:app', '--host', '127.0.0.1', '--port', String(baseline.port), '--log-level', 'warning'], { cwd: dir, stdout: 'ignore', stderr: 'inherit' })
  const baseUrl = `http://127.0.0.1:${baseline.port}/api/devices`
  await waitHttp(baseUrl)
  if (((await (await fetch(baseUrl)).json()) as unknown[]).length !== 8) throw new Error('baseline does not serve the 8 devices')

  // Warm both, then measure each alone on the machine.
  await wrk(url, 2, 32)
  const ours: WrkResult = await wrk(url, DURATION, 32)
  const rss = rssOf(service.proc.pid)
  await wrk(baseUrl, 2, 32)
  const theirs: WrkResult = await wrk(baseUrl, DURATION, 32)

  const row = (name: string, r: WrkResult, rssMb?: number) =>
    `${name.padEnd(22)} ${r.rps.toFixed(0).padStart(9)} req/s   p50 ${r.p50.toFixed(2).padStart(7)} ms   p99 ${r.p99.toFixed(2).padStart(7)} ms${rssMb ? `   RSS ${rssMb.toFixed(1)} MB` : ''}`
  console.log(`GET /api/devices, 8 simulated cameras (${json.length} bytes), wrk 32 connections, ${DURATION} s each`)
  console.log(row('periscope (Bun)', ours, rss.current))
  console.log(row('FastAPI + uvicorn', theirs))
  console.log(`throughput ratio ${(ours.rps / theirs.rps).toFixed(1)}x (target >= 5x); p99 ${ours.p99.toFixed(2)} ms (target <= 5); peak RSS ${rss.peak.toFixed(1)} MB (target <= 80)`)
} finally {
  service.proc?.kill()
  baseline.proc?.kill()
  await Promise.all([service.proc?.exited, baseline.proc?.exited])
  rmSync(dir, { recursive: true, force: true })
}
