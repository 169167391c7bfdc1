// A whole Periscope (core/main.ts) in a child process with simulated cameras and GStreamer, for the
// tests that drive streams over HTTP (stream-service, record-while-streaming).
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { freeTcpPort, stopProcess, until } from '../helpers'
import { tempDir } from './gstreamer.helpers'

export interface Service {
  proc: Subprocess
  dataDir: string
  /** http://127.0.0.1:<port> */
  url: string
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
  /** SIGKILL if still running, then waits for its children to exit too (afterAll). */
  kill(): Promise<void>
}

/**
 * core/main.ts in a child process with simulated cameras, on a free port (or `port`: a service that
 * comes back where it was, with `dataDir`: its settings), answering; `args` are more flags, `env` more
 * environment.
 */
export async function startService(options: { args?: string[]; port?: number; env?: Record<string, string>; dataDir?: string } = {}): Promise<Service> {
  const dataDir = options.dataDir ?? tempDir('periscope-stream-')
  const port = options.port ?? freeTcpPort()
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, '../../core/main.ts'), '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--simulate', 'default', '--log-level', 'error', ...(options.args?.includes('--cockpit-port') ? [] : ['--cockpit-port', 'off']), ...(options.args?.includes('--cockpit-streams-port') ? [] : ['--cockpit-streams-port', 'off']), ...(options.args?.includes('--rtsp-port') ? [] : ['--rtsp-port', String(freeTcpPort())]), ...(options.args ?? [])], {
    stdout: 'ignore',
    stderr: 'inherit',
    cwd: join(import.meta.dir, '../..'),
    env: { ...process.env, ...options.env },
  })
  const url = `http://127.0.0.1:${port}`
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null }
  }
  const kill = () => stopProcess(proc)
  try {
    // 401: --token-scope all (reads need the token): the service answers all the same.
    await until('the service to answer', () => call('GET', '/api/devices').catch(() => ({ status: 0, body: null })), (r) => r.status === 200 || r.status === 401 || proc.exitCode !== null, 30_000)
  } catch (e) {
    await kill() // never left running behind a failed start
    throw e
  }
  if (proc.exitCode !== null) throw new Error(`the service exited with ${proc.exitCode} before answering`)
  return { proc, dataDir, url, call, kill }
}

/** A simulated device with an H.264 node, and a size (at most 1280 wide) and interval (15 fps when offered) it offers. */
export async function h264Device(service: Pick<Service, 'call'>): Promise<{ bus_info: string; width: number; height: number; fps: number }> {
  const { body } = await service.call('GET', '/api/devices')
  for (const d of body) {
    for (const cam of d.cameras ?? []) {
      const size = cam.formats?.H264?.find((s: any) => s.width <= 1280) ?? cam.formats?.H264?.[0]
      if (!size) continue
      const iv = size.intervals.find((i: any) => i.denominator / i.numerator === 15) ?? size.intervals[0]
      return { bus_info: d.bus_info, width: size.width, height: size.height, fps: iv.denominator / iv.numerator }
    }
  }
  throw new Error('no simulated device offers H264')
}
