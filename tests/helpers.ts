// Test helpers: an isolated Periscope on port 0 with its own temporary data dir.
import type { Subprocess } from 'bun'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp, type PeriscopeApp } from '../core/app'
import { loadConfig, type Config, type LogLevel } from '../core/config'
import { createLogger } from '../core/log'
import type { AppContext, PeriscopePlugin } from '../core/plugin'
import { describeProcess, descendants, noteTempDir, waitGone } from './leaks'

export interface TestServer {
  url: string
  dataDir: string
  ctx: AppContext
  app: PeriscopeApp
  /** The service's warn and error log lines, parsed (errors also go to stderr; PERISCOPE_TEST_LOG=1 shows all). */
  logs: Record<string, unknown>[]
  stop(): Promise<void>
  /** fetch + JSON: `await s.call('POST', '/api/x', body)` → { status, body } */
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; body: any; headers: Headers }>
}

/** The Bun a test starts as a child process: the one running the tests. Under the arm64 tier that one is
 * an aarch64 binary run by qemu-user, which cannot exec a foreign binary itself (no binfmt), so the tier
 * names its qemu wrapper in PERISCOPE_TEST_BUN (tests/arm64/bun) and the children run on arm64 too. */
export const BUN = process.env.PERISCOPE_TEST_BUN || process.execPath

/** A TCP port free on loopback right now, for a child process that takes no port 0 (or must be told it). */
export function freeTcpPort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  return port
}

/** Local ports some socket holds now, IPv4 and IPv6, as the kernel lists them. */
function portsInUse(): Set<number> {
  const used = new Set<number>()
  for (const table of ['udp', 'udp6', 'tcp', 'tcp6']) {
    let text = ''
    try {
      text = readFileSync(`/proc/net/${table}`, 'utf8')
    } catch {
      continue
    }
    for (const line of text.split('\n').slice(1)) {
      const local = line.trim().split(/\s+/)[1]
      if (local) used.add(parseInt(local.slice(local.lastIndexOf(':') + 1), 16))
    }
  }
  return used
}

/**
 * The pairs' range: from 21000 up to the kernel's ephemeral ports (ip_local_port_range, 32768 by
 * default), which it hands to every unbound sender, this suite's or another's beside it: a port picked
 * there could be taken by one before the receiver binds it.
 */
const UDP_LOW = 21000
const UDP_HIGH = (() => {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0])
    if (low - 2 > UDP_LOW + 1000) return low - 2
  } catch {}
  return 60000 // no such range to keep out of (not Linux): the old one
})()
let nextUdpPort = UDP_LOW + Math.floor((Math.random() * (UDP_HIGH - UDP_LOW)) / 4) * 4
/**
 * Blocks of 4 ports claimed by this machine's test processes, one file each (its name the block's first
 * port, its text the claimer's pid): a suite beside this one never takes a block this one has, even one
 * no socket holds yet (a test picks a port, then streams to it before it binds it, or never binds it: a
 * stream's endpoint, a sound's port + 2). Beside another suite, two audio tests met on such a port. A
 * claim lasts as long as its process; a dead process's claim is taken over.
 */
const CLAIMS = join(tmpdir(), 'periscope-udp-claims')

function claim(port: number): boolean {
  const file = join(CLAIMS, String(port))
  try {
    mkdirSync(CLAIMS, { recursive: true })
    writeFileSync(file, String(process.pid), { flag: 'wx' })
    return true
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') return true // no claims here (a read-only /tmp): as before
  }
  const owner = Number(readFileSync(file, 'utf8').trim())
  if (owner === process.pid) return true
  try {
    process.kill(owner, 0)
    return false // another live process's
  } catch {
    rmSync(file, { force: true }) // its process is gone
    return claim(port)
  }
}

/**
 * An even UDP port whose odd neighbour is free too (RTP and RTCP), for a receiver a test binds, and the
 * two above it (a sound beside the video): a random base so concurrent suites rarely meet, ports a socket
 * already holds skipped, and each block claimed for this process (claim), so no suite beside it takes it.
 */
export function freeUdpPortPair(): number {
  const used = portsInUse()
  for (let tries = 0; tries < 3000; tries++) {
    nextUdpPort += 4
    if (nextUdpPort + 3 > UDP_HIGH) nextUdpPort = UDP_LOW
    if ([0, 1, 2, 3].some((k) => used.has(nextUdpPort + k))) continue
    if (claim(nextUdpPort)) return nextUdpPort
  }
  throw new Error(`no free UDP port block found between ${UDP_LOW} and ${UDP_HIGH}`)
}

/** A new temporary directory, noted as the running test file's (the leak check looks for mounts in it). */
export function tempDir(prefix = 'periscope-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  noteTempDir(dir)
  return dir
}

export async function startTestServer(options: {
  plugins: PeriscopePlugin[]
  config?: Partial<Config>
  dataDir?: string
  keepDataDir?: boolean
  /** The level the service logs at (default warn; PERISCOPE_TEST_LOG=1: debug). */
  logLevel?: LogLevel
}): Promise<TestServer> {
  const dataDir = options.dataDir ?? tempDir()
  // Cockpit's signalling and stream list keep to the HTTP port's paths unless a test asks for their own
  // ports: test apps run side by side and would all want 6021 and 6020.
  const pluginFlags = { 'cockpit-port': null, 'cockpit-streams-port': null, ...options.config?.pluginFlags }
  const config = loadConfig([], {}, { host: '127.0.0.1', port: 0, rtspPort: freeTcpPort(), dataDir, recordingsDir: join(dataDir, 'recordings'), simulate: null, logLevel: 'error', ...options.config, pluginFlags })
  const verbose = process.env.PERISCOPE_TEST_LOG === '1'
  const logs: Record<string, unknown>[] = []
  const write = (line: string) => {
    const entry = JSON.parse(line) as Record<string, unknown>
    if (entry.level === 'warn' || entry.level === 'error') logs.push(entry)
    if (verbose || entry.level === 'error') process.stderr.write(line + '\n')
  }
  const app = await createApp(config, options.plugins, createLogger(verbose ? 'debug' : (options.logLevel ?? 'warn'), {}, write))
  const { url } = await app.listen()
  return {
    url,
    dataDir,
    ctx: app.ctx,
    app,
    logs,
    async stop() {
      await app.stop()
      if (!options.keepDataDir && !options.dataDir) rmSync(dataDir, { recursive: true, force: true })
    },
    async call(method, path, body, headers = {}) {
      const init: RequestInit = { method, headers: { ...headers } }
      if (body !== undefined) {
        init.body = typeof body === 'string' ? body : JSON.stringify(body)
        ;(init.headers as Record<string, string>)['content-type'] ??= 'application/json'
      }
      const res = await fetch(url + path, init)
      const text = await res.text()
      let parsed: unknown = text
      try {
        parsed = text ? JSON.parse(text) : null
      } catch {}
      return { status: res.status, body: parsed, headers: res.headers }
    },
  }
}

/**
 * Kills a process this test started (SIGKILL unless told) and waits for it and every process under it to
 * exit (its children die with it by their parent-death signal, a moment later), so what they wrote can be
 * removed; fails naming any still running after `timeoutMs`.
 */
export async function stopProcess(proc: Pick<Subprocess, 'pid' | 'exitCode' | 'signalCode' | 'exited' | 'kill'>, signal: NodeJS.Signals = 'SIGKILL', timeoutMs = 10_000): Promise<void> {
  const runningNow = proc.exitCode === null && proc.signalCode === null
  // Its children now (an exited process's pid may be another's already: none then).
  const family = runningNow ? descendants(proc.pid) : []
  if (runningNow) proc.kill(signal)
  await proc.exited
  const left = await waitGone(family, timeoutMs)
  if (left.length) throw new Error(`still running ${timeoutMs / 1000} s after their parent ${proc.pid} was killed: ${left.map(describeProcess).join('; ')}`)
}

/** Probes until `ok` holds; fails naming `what` and the last value seen. */
export async function until<T>(what: string, probe: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = await probe()
    if (ok(v)) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last value: ${JSON.stringify(v)}`)
    await Bun.sleep(50)
  }
}

/** What an EventSource sends: GET /api/events streams only to a client that asks for it. */
export const FOLLOW_EVENTS = { accept: 'text/event-stream' } as const

/** Reads server-sent events (GET /api/events) into `events` until `close()`; `ready` resolves with the response. */
export function listenEvents(url: string) {
  const events: { type: string; data: any; at: number }[] = []
  const controller = new AbortController()
  const ready = (async () => {
    const res = await fetch(url, { signal: controller.signal, headers: FOLLOW_EVENTS })
    const reader = res.body!.getReader()
    const decoder = new TextDecoder()
    let buffer = ''
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read()
          if (done) return
          buffer += decoder.decode(value, { stream: true })
          let cut: number
          while ((cut = buffer.indexOf('\n\n')) >= 0) {
            const block = buffer.slice(0, cut)
            buffer = buffer.slice(cut + 2)
            const type = /^event: (.*)$/m.exec(block)?.[1]
            const data = /^data: (.*)$/m.exec(block)?.[1]
            if (type && data) events.push({ type, data: JSON.parse(data), at: performance.now() })
          }
        }
      } catch {}
    })()
    return res
  })()
  return { events, ready, close: () => controller.abort() }
}

export interface MetricSample {
  name: string
  labels: Record<string, string>
  value: number
}

/**
 * The Prometheus text exposition format (0.0.4), read strictly: a line that is neither a comment nor a
 * well-formed sample fails. `value(name, labels)` is the one sample whose labels include `labels`.
 */
export function parseMetrics(text: string) {
  const samples: MetricSample[] = []
  const types = new Map<string, string>()
  const help = new Map<string, string>()
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    const comment = /^# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.*)$/.exec(line)
    if (comment) {
      ;(comment[1] === 'HELP' ? help : types).set(comment[2]!, comment[3]!)
      continue
    }
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (!sample) throw new Error(`not a metric line: ${JSON.stringify(line)}`)
    const labels: Record<string, string> = {}
    const body = sample[2] ?? ''
    const pairs = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/gy
    let m: RegExpExecArray | null
    let read = 0
    while ((m = pairs.exec(body))) {
      labels[m[1]!] = m[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c))
      read = pairs.lastIndex
    }
    if (read !== body.length) throw new Error(`malformed labels: ${JSON.stringify(line)}`)
    // As Prometheus reads values (Go's ParseFloat): NaN and Inf in any case (prom-client writes 'Nan').
    const raw = sample[3]!.toLowerCase()
    const value = /^[+-]?inf$/.test(raw) ? (raw.startsWith('-') ? -Infinity : Infinity) : raw === 'nan' ? NaN : Number(raw)
    if (Number.isNaN(value) && raw !== 'nan') throw new Error(`malformed value: ${JSON.stringify(line)}`)
    samples.push({ name: sample[1]!, labels, value })
  }
  const matching = (name: string, labels: Record<string, string> = {}) =>
    samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  return {
    samples,
    types,
    help,
    matching,
    value(name: string, labels: Record<string, string> = {}): number | undefined {
      const found = matching(name, labels)
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
      return found[0]?.value
    },
  }
}
