// Who holds a device node: another camera manager (BlueOS's mavlink-camera-manager opens every USB camera
// by default), a test tool, a forgotten gst-launch. Read from /proc/<pid>/fd, as fuser does, so the
// service can say "in use by <name> (pid N)" instead of GStreamer's bare "Device is busy". Processes in
// another PID namespace (a container without the host's) are not seen: the caller says so.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

export interface Holder {
  pid: number
  /** The process's name (/proc/<pid>/comm). */
  name: string
}

/** Processes other than `exclude` with `node` open, lowest pid first. */
export function holdersOf(node: string, exclude: ReadonlySet<number> = new Set(), proc = '/proc'): Holder[] {
  const holders: Holder[] = []
  let pids: string[]
  try {
    pids = readdirSync(proc).filter((name) => /^\d+$/.test(name))
  } catch {
    return holders
  }
  for (const entry of pids) {
    const pid = Number(entry)
    if (pid === process.pid || exclude.has(pid)) continue
    let fds: string[]
    try {
      fds = readdirSync(`${proc}/${pid}/fd`)
    } catch {
      continue // gone, or not ours to read
    }
    const holds = fds.some((fd) => {
      try {
        return readlinkSync(`${proc}/${pid}/fd/${fd}`) === node
      } catch {
        return false
      }
    })
    if (!holds) continue
    let name = '?'
    try {
      name = readFileSync(`${proc}/${pid}/comm`, 'utf8').trim()
    } catch {}
    holders.push({ pid, name })
  }
  return holders.sort((a, b) => a.pid - b.pid)
}

/** "gst-launch-1.0 (pid 812)", "a (pid 1) and b (pid 2)". */
export function describeHolders(holders: Holder[]): string {
  const named = holders.map((h) => `${h.name} (pid ${h.pid})`)
  return named.length <= 1 ? (named[0] ?? '') : `${named.slice(0, -1).join(', ')} and ${named.at(-1)}`
}

/** GStreamer's v4l2src says so when another process streams the node (EBUSY). */
export const BUSY = /Device '([^']+)' is busy/
