// The real service (core/main.ts) started inside the kernel-tier VM, for the tests that talk HTTP to it.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'

const REPO = join(import.meta.dir, '../../..')

/** Alive and not a zombie (an orphan waits for the VM's init to reap it). */
export function running(pid: number): boolean {
  try {
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

export class VmService {
  readonly base: string
  private proc: ChildProcess | null = null
  private log = ''
  private readonly dataDir = mkdtempSync('/tmp/periscope-vm-')

  constructor(
    private readonly port: number,
    private readonly plugins: string,
    /** More command-line flags (e.g. `--rtsp-port N`). */
    private readonly extraArgs: string[] = [],
  ) {
    this.base = `http://127.0.0.1:${port}`
  }

  get pid(): number | undefined {
    return this.proc?.pid
  }

  get exited(): boolean {
    return !!this.proc && (this.proc.exitCode !== null || this.proc.signalCode !== null)
  }

  async start(): Promise<void> {
    const args = ['run', 'core/main.ts', '--port', String(this.port), '--host', '127.0.0.1', '--data-dir', this.dataDir, '--simulate', 'off', '--plugins', this.plugins, ...this.extraArgs]
    this.proc = spawn(join(REPO, 'node_modules/.bin/bun'), args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] })
    this.proc.stdout!.on('data', (d) => (this.log += d))
    this.proc.stderr!.on('data', (d) => (this.log += d))
    await this.until('the service answering /api/health', async () => (await fetch(`${this.base}/api/health`)).ok, 60_000)
  }

  /** Polls `f` until it answers truthy; the failure carries the service's log. */
  async until<T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs: number, stepMs = 100): Promise<T> {
    const deadline = Date.now() + timeoutMs
    let last: unknown
    while (Date.now() < deadline) {
      try {
        const v = await f()
        if (v) return v
      } catch (e) {
        last = e
      }
      await Bun.sleep(stepMs)
    }
    throw new Error(`${what}: not within ${timeoutMs} ms (${last ?? 'no answer'})\n--- service log ---\n${this.log.slice(-4000)}`)
  }

  post(path: string, body: unknown): Promise<Response> {
    return fetch(`${this.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  }

  /** SIGTERM, then SIGKILL after `graceMs`; removes the data dir unless `keepData` (a restart follows). */
  async stop(graceMs = 5000, keepData = false): Promise<void> {
    const proc = this.proc
    if (proc?.pid && proc.exitCode === null) {
      proc.kill('SIGTERM')
      const exited = new Promise((r) => proc.once('exit', r))
      if ((await Promise.race([exited, Bun.sleep(graceMs).then(() => 'late')])) === 'late') process.kill(proc.pid, 'SIGKILL')
    }
    if (!keepData) rmSync(this.dataDir, { recursive: true, force: true })
  }
}
