// The real service process (core/main.ts) with the cameras plugin and the V4L2 plugin over one stalling
// camera (stall-plugin.ts), on a free loopback port: used by service-stall.test.ts and bench/v4l2.bench.ts.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { STALL_BUS, STALL_CONTROL } from './stall'

const REPO = join(import.meta.dir, '../../..')

export interface StallService {
  base: string
  pid: number
  /** POST set_uvc_control on the stalling camera: its worker thread blocks for `ms` in a system call. */
  stall(ms: number): Promise<Response>
  stop(): Promise<void>
}

export async function startStallService(timeoutMs = 60_000): Promise<StallService> {
  const dataDir = mkdtempSync(join(tmpdir(), 'periscope-stall-'))
  const args = ['run', 'core/main.ts', '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--simulate', 'off', '--plugins', 'cameras,./tests/kernel/host/stall-plugin.ts', '--log-level', 'info']
  const proc: ChildProcess = spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'] })
  let log = ''
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) {
      const exited = new Promise((r) => proc.once('exit', r))
      proc.kill('SIGTERM')
      if ((await Promise.race([exited, Bun.sleep(5000).then(() => 'late')])) === 'late') proc.kill('SIGKILL')
    }
    rmSync(dataDir, { recursive: true, force: true })
  }
  try {
    const base = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the service did not listen within ${timeoutMs} ms:\n${log.slice(-3000)}`)), timeoutMs)
      proc.stderr!.on('data', (d) => {
        log += d
        const url = /"msg":"listening".*?"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(log)?.[1]
        if (url) {
          clearTimeout(timer)
          resolve(url)
        }
      })
      proc.once('exit', (code) => reject(new Error(`the service exited (${code}) before listening:\n${log.slice(-3000)}`)))
    })
    // The camera is listed once the cameras plugin has adopted it.
    const deadline = Date.now() + timeoutMs
    for (;;) {
      const list = (await (await fetch(`${base}/api/devices`)).json()) as { bus_info: string }[]
      if (list.some((d) => d.bus_info === STALL_BUS)) break
      if (Date.now() > deadline) throw new Error(`the stalling camera was not listed within ${timeoutMs} ms:\n${log.slice(-3000)}`)
      await Bun.sleep(50)
    }
    const stall = (ms: number) =>
      fetch(`${base}/api/devices/set_uvc_control`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bus_info: STALL_BUS, control_id: STALL_CONTROL, value: ms }) })
    return { base, pid: proc.pid!, stall, stop }
  } catch (e) {
    await stop()
    throw e
  }
}
