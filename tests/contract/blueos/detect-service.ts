// BlueOS's helper scanning a port (detect_service.py beside this file: written from BlueOS's code, Python's
// standard library only), for the contract and integration tiers.
import { join } from 'node:path'

export interface DetectedService {
  valid: boolean
  title: string
  documentation_url: string
  versions: string[]
  port: number
  metadata: Record<string, unknown> | null
  /** Every request the helper made, in order. */
  requests: { path: string; status: number | null; seconds: number; timeout: boolean; error: string | null }[]
  /** The whole scan. */
  seconds: number
}

/** Runs the helper's `detect_service(port)`; killed (and this throws) after `limitMs`. */
export async function detectService(port: number, limitMs = 20_000): Promise<DetectedService> {
  const proc = Bun.spawn(['python3', join(import.meta.dir, 'detect_service.py'), String(port)], { stdout: 'pipe', stderr: 'pipe' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), limitMs)
  try {
    const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
    if (code !== 0) throw new Error(`detect_service.py exited with ${code ?? proc.signalCode} (killed after ${limitMs} ms?): ${err.slice(-500)}`)
    return JSON.parse(out) as DetectedService
  } finally {
    clearTimeout(timer)
  }
}
