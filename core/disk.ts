// How full the file system holding a path is: the recordings store, /metrics and MAVLink's storage
// information all read it, so it lives in the core (no driver needed for a statfs).
import { statfsSync } from 'node:fs'
import { dirname } from 'node:path'
import type { Static } from '@sinclair/typebox'
import type { DiskModel } from './schemas'

const MiB = 1 << 20

export type DiskUsage = Static<typeof DiskModel>

/** Size, used and free bytes (free: what an unprivileged writer may still use) of the file system holding `path`. */
export function diskUsage(path: string): DiskUsage {
  const s = statfsSync(path)
  const total = s.blocks * s.bsize
  return { total, used: (s.blocks - s.bfree) * s.bsize, free: s.bavail * s.bsize }
}

/** Bytes an unprivileged writer may still use where `dir` (or its nearest existing parent) lives; null when unknown. */
export function freeBytes(dir: string): number | null {
  for (let at = dir; ; at = dirname(at)) {
    try {
      const s = statfsSync(at)
      return s.bavail * s.bsize
    } catch {
      if (dirname(at) === at) return null
    }
  }
}

/**
 * The free-space floor (--min-free-to-record) before anything is written to the recordings directory (a
 * recording, a still): the free bytes when `dir` has less than `floorMiB` MiB free, else null (unknown: let the writer try).
 */
export function belowFloor(dir: string, floorMiB: number): number | null {
  const free = freeBytes(dir)
  return free !== null && free < floorMiB * MiB ? free : null
}

/** The sentence of a 507 at the floor: how much is free, what `thing` needs, and what to do. */
export function noRoomDetail(free: number, floorMiB: number, thing: 'a recording' | 'a still'): string {
  const mb = (free / MiB).toFixed(free < 10 * MiB ? 1 : 0)
  const then = thing === 'a recording' ? 'then start it again' : 'then take it again'
  return `The recordings disk has ${mb} MB free; ${thing} needs at least ${floorMiB} MB to start (--min-free-to-record). Delete recordings (DELETE /api/recordings/{name}), ${then}`
}

/**
 * Why a recording ended when the disk filled up (its `error`, and the stream's): `file` is the last file
 * written. The recorders write it and the recordings plugin reads it back (DISK_FULL_STOP) to keep such a
 * recording from the retention policy (docs/streams.md#retention), so it lives here, below both.
 */
export const diskFullStop = (file: string) => `disk full: recording stopped, ${file} kept`
export const DISK_FULL_STOP = /^disk full: recording stopped, (.+) kept$/
