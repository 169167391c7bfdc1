// What the stream runner's and the recorder's children share beyond media/children.ts (spawning,
// stopping, reading output): recording file names that never collide, and pushing a file being written
// to the disk.
import { existsSync, mkdirSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import { recordingFileName } from '../storage/naming'
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
