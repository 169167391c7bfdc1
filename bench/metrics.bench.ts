// What the metrics plugin costs: GET /api/devices (8 simulated cameras) under wrk with the plugin
// loaded (each request counted and timed by route into a histogram) beside the same service without
// it, alternating runs; then one scrape of GET /metrics (every camera's series, the routes' histograms,
// the process) timed against one GET /api/devices, and the RSS of each service.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freePort, numberArg, rssOf, waitHttp, wrk, type WrkResult } from './lib'

const ROOT = join(import.meta.dir, '..')
const SECONDS = numberArg('seconds', 10)
const ROUNDS = numberArg('rounds', 2)
const SCRAPES = numberArg('scrapes', 50)

async function service(plugins: string, dir: string) {
  const port = await freePort()
  const proc = Bun.spawn(['bun', 'run', 'core/main.ts', '--host', '127.0.0.1', '--port', String(port), '--data-dir', dir, '--simulate', 'fleet', '--plugins', plugins, '--log-level', 'warn'], {
    cwd: ROOT,
    stdout: 'ignore',
    stderr: 'inherit',
  })
  const url = `http://127.0.0.1:${port}`
  await waitHttp(`${url}/api/devices`)
  return { proc, url }
}

/** Median milliseconds of `count` sequential GETs of `url`, the body read whole. */
async function medianGet(url: string, count: number): Promise<{ ms: number; bytes: number }> {
  const times: number[] = []
  let bytes = 0
  for (let i = 0; i < count; i++) {
    const t0 = performance.now()
    bytes = (await (await fetch(url)).arrayBuffer()).byteLength
    times.push(performance.now() - t0)
  }
  times.sort((a, b) => a - b)
  return { ms: times[Math.floor(times.length / 2)]!, bytes }
}

const dir = mkdtempSync(join(tmpdir(), 'periscope-bench-metrics-'))
const bare = await service('cameras,dwe', join(dir, 'bare'))
const measured = await service('cameras,dwe,metrics', join(dir, 'metrics'))
try {
  const runs: { bare: WrkResult[]; metrics: WrkResult[] } = { bare: [], metrics: [] }
  await wrk(`${bare.url}/api/devices`, 2, 32)
  await wrk(`${measured.url}/api/devices`, 2, 32)
  for (let round = 0; round < ROUNDS; round++) {
    runs.bare.push(await wrk(`${bare.url}/api/devices`, SECONDS, 32))
    runs.metrics.push(await wrk(`${measured.url}/api/devices`, SECONDS, 32))
  }
  const best = (rs: WrkResult[]) => rs.reduce((a, b) => (b.rps > a.rps ? b : a))
  const row = (name: string, rs: WrkResult[], rss: { current: number; peak: number }) =>
    `${name.padEnd(26)} ${rs.map((r) => r.rps.toFixed(0)).join(' / ').padStart(17)} req/s   best p99 ${best(rs).p99.toFixed(2).padStart(6)} ms   RSS ${rss.current.toFixed(1)} MB (peak ${rss.peak.toFixed(1)})`
  console.log(`GET /api/devices, 8 simulated cameras, wrk 32 connections, ${ROUNDS} x ${SECONDS} s each way, alternating`)
  console.log(row('without metrics', runs.bare, rssOf(bare.proc.pid)))
  console.log(row('with metrics (timed)', runs.metrics, rssOf(measured.proc.pid)))
  console.log(`throughput with metrics / without: ${(best(runs.metrics).rps / best(runs.bare).rps).toFixed(2)}x (best runs)`)

  const scrape = await medianGet(`${measured.url}/metrics`, SCRAPES)
  const list = await medianGet(`${measured.url}/api/devices`, SCRAPES)
  console.log(`one scrape of /metrics: median ${scrape.ms.toFixed(2)} ms for ${scrape.bytes} bytes; one GET /api/devices: ${list.ms.toFixed(2)} ms (${list.bytes} bytes): ${(scrape.ms / list.ms).toFixed(1)}x`)
} finally {
  bare.proc.kill()
  measured.proc.kill()
  await Promise.all([bare.proc.exited, measured.proc.exited])
  rmSync(dir, { recursive: true, force: true })
}
