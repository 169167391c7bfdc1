// What the stream runner's and the recorder's children share beyond media/children.ts (spawning,
// stopping, reading output): recording file names that never collide, and pushing a file being written
// to the disk.
import { existsSync, mkdirSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { join } from 'node:path'
import type { Logger } from '../../core/log'
import { segmentedRecordingStem, segmentFileName } from '../../core/naming'
import { RECORDING_EXT } from './pipeline'

/** "No space left on the resource." (filesink), "… on device" (errno). */
export const DISK_FULL = /No space left/i


/** Recording bases handed out and not yet on disk: two cameras with one nickname must not share a name. */
const reserved = new Set<string>()

/**
 * A new recording in `dir` (created if missing) named after `label`: its base path `<dir>/<stem>`, to which
 * the recorder adds `_seg001.mkv`, `_seg002.mkv` … (core/naming.ts). Throws when the directory cannot be made.
 */
export function reserveRecordingPath(dir: string, label: string): string {
  mkdirSync(dir, { recursive: true })
  const base = join(dir, segmentedRecordingStem(dir, label, RECORDING_EXT, new Date(), (p) => reserved.has(p) || existsSync(p)))
  reserved.add(base)
  setTimeout(() => reserved.delete(base), 10_000).unref() // by then the first segment exists, or the launch failed
  return base
}

/** Segment `index` (from 1) of the recording at `base`. */
export const segmentPath = (base: string, index: number) => `${base.slice(0, base.lastIndexOf('/') + 1)}${segmentFileName(base.slice(base.lastIndexOf('/') + 1), index, RECORDING_EXT)}`

/**
 * Files whose push to the disk fails now, and why: an episode begins with the first failure (logged
 * once) and ends with the next success (logged too). Bounded: an episode of a file no longer written
 * ends when newer ones crowd it out.
 */
const syncTrouble = new Map<string, string>()
const SYNC_TROUBLE_KEPT = 64

/**
 * A power cut keeps what the kernel has written out: the runner and the recorder call this every second.
 * A failing fsync (a dying card: EIO) is logged once per episode; syncProblem() says why meanwhile.
 */
export function syncToDisk(path: string, log?: Logger): void {
  void open(path, 'r')
    .then((fd) => fd.sync().finally(() => fd.close()))
    .then(
      () => {
        if (syncTrouble.delete(path)) log?.info('a recording reaches the disk again', { file: path })
      },
      (e: NodeJS.ErrnoException) => {
        if (e?.code === 'ENOENT' || syncTrouble.has(path)) return // not created yet (filesink opens it), or already said
        const reason = `the disk does not take ${path} (fsync: ${e?.code ?? e?.message}); a power cut may lose its last seconds`
        syncTrouble.set(path, reason)
        if (syncTrouble.size > SYNC_TROUBLE_KEPT) syncTrouble.delete(syncTrouble.keys().next().value!)
        log?.warn('a recording cannot be pushed to the disk', { file: path, err: e })
      },
    )
}

/** Why the latest fsync of `path` failed, while it still fails; null when it succeeds (or was never tried). */
export const syncProblem = (path: string): string | null => syncTrouble.get(path) ?? null
