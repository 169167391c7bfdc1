// How full the file system holding a path is: the recordings store, /metrics and MAVLink's storage
// information all read it, so it lives in the core (no driver needed for a statfs).
import { statfsSync } from 'node:fs'
import type { Static } from '@sinclair/typebox'
import type { DiskModel } from './schemas'

export type DiskUsage = Static<typeof DiskModel>

/** Size, used and free bytes (free: what an unprivileged writer may still use) of the file system holding `path`. */
export function diskUsage(path: string): DiskUsage {
  const s = statfsSync(path)
  const total = s.blocks * s.bsize
  return { total, used: (s.blocks - s.bfree) * s.bsize, free: s.bavail * s.bsize }
}
