// Shared benchmark helpers: free ports, readiness, wrk, RSS.
import { readFileSync } from 'node:fs'
import { createServer } from 'node:net'

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer()
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port
      srv.close(() => resolve(port))
    })
    srv.on('error', reject)
  })
}

export async function waitHttp(url: string, timeoutMs = 20000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if ((await fetch(url).catch(() => null))?.ok) return
    await Bun.sleep(100)
  }
  throw new Error(`${url} did not answer within ${timeoutMs} ms`)
}

export interface WrkResult { rps: number; p50: number; p99: number }

const ms = (value: string, unit: string) => Number(value) * ({ us: 0.001, ms: 1, s: 1000 }[unit] ?? NaN)

export async function wrk(url: string, seconds: number, connections: number): Promise<WrkResult> {
  const p = Bun.spawn(['wrk', '-t1', `-c${connections}`, `-d${seconds}s`, '--latency', url], { stdout: 'pipe', stderr: 'pipe' })
  const out = await new Response(p.stdout).text()
  if ((await p.exited) !== 0) throw new Error(`wrk failed: ${await new Response(p.stderr).text()}`)
  const pct = (q: string) => {
    const m = new RegExp(`^\\s*${q}%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(out)
    if (!m) throw new Error(`no ${q}% in wrk output:\n${out}`)
    return ms(m[1]!, m[2]!)
  }
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1])
  if (/Non-2xx/.test(out)) throw new Error(`wrk saw errors:\n${out}`)
  return { rps, p50: pct('50'), p99: pct('99') }
}

/** Current and peak resident memory of a process, in MB. */
export function rssOf(pid: number): { current: number; peak: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN)
  return { current: kb('VmRSS') / 1024, peak: kb('VmHWM') / 1024 }
}

/** `--name value` from the command line, or `def`. */
export function argOf(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i > 0 ? process.argv[i + 1]! : def
}
export const numberArg = (name: string, def: number): number => Number(argOf(name, String(def)))

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ, 100 on Linux). */
export const TICK = 100

/** CPU time a process has used (utime + stime, in ticks); 0 once it is gone. */
export function cpuTicks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return Number(f[11]) + Number(f[12])
  } catch {
    return 0
  }
}

/** A process's resident memory now (kB); 0 once it is gone. */
export function rssKb(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0)
  } catch {
    return 0
  }
}

/**
 * A time in ms on a clock every process of the machine shares, for arrivals timed in different
 * processes: Bun's performance.timeOrigin + performance.now() reads as CLOCK_REALTIME to within a
 * microsecond (its monotonic now() from an origin taken on the wall clock), with now()'s resolution.
 * (A step of the wall clock during a run would show; NTP's slewing of a few ppm does not.)
 */
export const sharedNow = (): number => performance.timeOrigin + performance.now()

/**
 * `connections` keep-alive HTTP connections looping GET `url` (wrk, one thread) for at most `seconds`:
 * API load on the service while something else is measured. `stop()` ends it early and says how many
 * requests per second it made.
 */
export function apiLoad(url: string, connections: number, seconds: number): { stop(): Promise<number> } {
  if (connections <= 0) return { stop: async () => 0 }
  const p = Bun.spawn(['wrk', '-t1', `-c${connections}`, `-d${Math.ceil(seconds)}s`, url], { stdout: 'pipe', stderr: 'ignore' })
  return {
    async stop() {
      p.kill('SIGINT') // wrk prints its summary on SIGINT
      const out = await new Response(p.stdout).text()
      await p.exited
      return Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN)
    },
  }
}

/** A browser page's real-time clock against ours: (page − this process) in ms, and half the round trip it was read in. */
export async function clockOffset(page: import('puppeteer-core').Page): Promise<{ offset: number; error: number }> {
  let best = { offset: NaN, error: Infinity }
  for (let i = 0; i < 5; i++) {
    const before = sharedNow()
    const pageNow = await page.evaluate(() => performance.timeOrigin + performance.now())
    const after = sharedNow()
    if ((after - before) / 2 < best.error) best = { offset: pageNow - (before + after) / 2, error: (after - before) / 2 }
  }
  return best
}
