// Test helpers: an isolated Periscope on port 0 with its own temporary data dir.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp, type PeriscopeApp } from '../core/app'
import { loadConfig, type Config } from '../core/config'
import { createLogger } from '../core/log'
import type { AppContext, PeriscopePlugin } from '../core/plugin'

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

export function tempDir(prefix = 'periscope-test-'): string {
  return mkdtempSync(join(tmpdir(), prefix))
}

export async function startTestServer(options: { plugins: PeriscopePlugin[]; config?: Partial<Config>; dataDir?: string; keepDataDir?: boolean }): Promise<TestServer> {
  const dataDir = options.dataDir ?? tempDir()
  const config = loadConfig([], {}, { host: '127.0.0.1', port: 0, dataDir, recordingsDir: join(dataDir, 'recordings'), simulate: null, logLevel: 'error', ...options.config })
  const verbose = process.env.PERISCOPE_TEST_LOG === '1'
  const logs: Record<string, unknown>[] = []
  const write = (line: string) => {
    const entry = JSON.parse(line) as Record<string, unknown>
    if (entry.level === 'warn' || entry.level === 'error') logs.push(entry)
    if (verbose || entry.level === 'error') process.stderr.write(line + '\n')
  }
  const app = await createApp(config, options.plugins, createLogger(verbose ? 'debug' : 'warn', {}, write))
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
