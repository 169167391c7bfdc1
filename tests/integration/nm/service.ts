// The whole service (core/main.ts, simulated cameras) inside the NetworkManager lab's namespace, talking
// to the lab's NetworkManager over its private bus and listening on every address of the namespace, as
// on a vehicle: a client that reached it at an address loses it when that address changes. The test
// process stays outside, so it calls the service with curl run inside the namespace.
import { join } from 'node:path'
import { stopProcess, until } from '../../helpers'
import { freeTcpPort, tempDir } from '../gstreamer.helpers'
import type { Service } from '../service.helpers'
import type { NmLab } from './lab'

export interface LabService extends Service {
  port: number
  /** A call to the service at another of its addresses (`http://10.77.0.9:<port>`); status 0 when nothing answered. */
  callAt(origin: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
}

/** Starts the service in the lab, reached at `address` (one the lab gives an interface), once it answers there. */
export function startServiceInLab(lab: NmLab, address: string, args: string[] = []): Promise<LabService> {
  return startServiceInNamespace(lab.ns, address, args, { DBUS_SYSTEM_BUS_ADDRESS: lab.busAddress })
}

/** Starts the service in network namespace `ns` (a test's own), reached at `address` there, once it answers there. */
export async function startServiceInNamespace(ns: string, address: string, args: string[] = [], env: Record<string, string> = {}): Promise<LabService> {
  const dataDir = tempDir('periscope-lab-service-')
  const port = freeTcpPort() // any port is free inside the namespace; one chosen at run time all the same
  const proc = Bun.spawn(
    ['/usr/sbin/ip', 'netns', 'exec', ns, process.execPath, join(import.meta.dir, '../../../core/main.ts'), '--host', '0.0.0.0', '--port', String(port), '--data-dir', dataDir, '--simulate', 'default', '--log-level', 'error', ...(args.includes('--rtsp-port') ? [] : ['--rtsp-port', '0']), ...args],
    { stdout: 'ignore', stderr: 'inherit', cwd: join(import.meta.dir, '../../..'), env: { ...process.env, ...env } },
  )
  const url = `http://${address}:${port}`
  const callAt = async (origin: string, method: string, path: string, body?: unknown) => {
    const cmd = ['/usr/sbin/ip', 'netns', 'exec', ns, 'curl', '-sS', '-m', '20', '-X', method, '-o', '-', '-w', '\n%{http_code}', origin + path]
    if (body !== undefined) cmd.push('-H', 'content-type: application/json', '--data-binary', JSON.stringify(body))
    const curl = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'ignore' })
    const [out, code] = await Promise.all([new Response(curl.stdout).text(), curl.exited])
    if (code !== 0) return { status: 0, body: null }
    const cut = out.lastIndexOf('\n')
    const text = out.slice(0, cut)
    let parsed: unknown = text
    try {
      parsed = text ? JSON.parse(text) : null
    } catch {}
    return { status: Number(out.slice(cut + 1)), body: parsed }
  }
  const kill = () => stopProcess(proc)
  try {
    await until(`the service to answer in ${ns}`, () => callAt(url, 'GET', '/api/devices'), (r) => r.status === 200 || proc.exitCode !== null, 45_000)
  } catch (e) {
    await kill()
    throw e
  }
  if (proc.exitCode !== null) throw new Error(`the service exited with ${proc.exitCode} before answering in ${ns}`)
  return { proc, dataDir, url, port, call: (method, path, body) => callAt(url, method, path, body), callAt, kill }
}
