// What every supervised gst-launch-1.0 child shares, the stream runner's and the recorder's: reading its
// output line by line, stopping it (EOS first for a file, then SIGKILL), recording file names that never
// collide, and pushing a file being written to the disk.
import { existsSync, mkdirSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { recordingFileName } from '../storage/naming'
import { children } from './children'
import { RECORDING_EXT } from './pipeline'

/** "No space left on the resource." (filesink), "… on device" (errno). */
export const DISK_FULL = /No space left/i

/** Recording paths handed out and not yet on disk: two cameras with one nickname must not share a name. */
const reserved = new Set<string>()

/** A new recording path in `dir` (created if missing) named after `label`; throws when the directory cannot be made. */
export function reserveRecordingPath(dir: string, label: string): string {
  mkdirSync(dir, { recursive: true })
  const path = join(dir, recordingFileName(dir, label, RECORDING_EXT, new Date(), (p) => reserved.has(p) || existsSync(p)))
  reserved.add(path)
  setTimeout(() => reserved.delete(path), 10_000).unref() // by then filesink has created it, or the launch failed
  return path
}

/** A power cut keeps what the kernel has written out: the runner and the recorder call this every second. */
export function syncToDisk(path: string): void {
  void open(path, 'r')
    .then((fd) => fd.sync().finally(() => fd.close()))
    .catch(() => {})
}

/**
 * Ends a child: `signal` first (SIGINT makes gst-launch -e send EOS, so a muxer closes its file), then
 * SIGKILL after `timeoutMs`. Resolves once it is gone and out of the children registry.
 */
export async function endChild(child: Subprocess, signal: 'SIGINT' | 'SIGTERM', timeoutMs: number): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill(signal)
    const timedOut = await Promise.race([child.exited.then(() => false), Bun.sleep(timeoutMs).then(() => true)])
    if (timedOut) {
      child.kill('SIGKILL')
      await child.exited
    }
  }
  children.delete(child.pid)
}

/** Calls `onLine` for each line of a child's output, until it ends. */
export async function pumpLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder()
  let rest = ''
  try {
    for await (const chunk of stream) {
      const lines = (rest + decoder.decode(chunk, { stream: true })).split('\n')
      rest = lines.pop()!
      for (const line of lines) onLine(line)
    }
  } catch {
    // the child is gone
  }
  if (rest) onLine(rest)
}
