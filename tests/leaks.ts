// What a test leaves behind, read from /proc: processes (ours and their descendants), mounts, listening
// ports, and who holds a mount. Used by the per-file leak check (tests/per-file.preload.ts), the card
// helper (tests/cards.ts) and the helpers that stop a service and wait for its children. Kept cheap: the
// leak check reads these after every test file.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs'

export interface Proc {
  pid: number
  ppid: number
  /** R, S, D, Z…: a zombie (Z) has exited and only waits to be reaped (a container's PID 1 may be slow to). */
  state: string
  /** Clock ticks after boot: with the pid, tells a process from a later one given the same pid. */
  start: number
  comm: string
}

const read = (path: string) => {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return null
  }
}

function stat(pid: number): Proc | null {
  const text = read(`/proc/${pid}/stat`)
  if (!text) return null
  const close = text.lastIndexOf(')')
  const rest = text.slice(close + 2).split(' ')
  return { pid, ppid: Number(rest[1]), state: rest[0]!, start: Number(rest[19]), comm: text.slice(text.indexOf('(') + 1, close) }
}

/** Every process now, by pid. */
export function processes(): Map<number, Proc> {
  const all = new Map<number, Proc>()
  for (const name of readdirSync('/proc')) {
    if (name.charCodeAt(0) > 57) continue // not a pid
    const p = stat(Number(name))
    if (p) all.set(p.pid, p)
  }
  return all
}

/** The processes under `root` (children, their children…), zombies included. */
export function descendants(root: number, table = processes()): Proc[] {
  const children = new Map<number, Proc[]>()
  for (const p of table.values()) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p])
  const found: Proc[] = []
  const walk = (pid: number) => {
    for (const c of children.get(pid) ?? []) {
      found.push(c)
      walk(c.pid)
    }
  }
  walk(root)
  return found
}

export const key = (p: Proc) => `${p.pid}:${p.start}`

/** Still running: the same process (pid and start time), not a zombie. */
export function running(p: Proc): boolean {
  const now = stat(p.pid)
  return now !== null && now.start === p.start && now.state !== 'Z'
}

/** "1234 gst-launch-1.0 videotestsrc ! …": a process as a failure names it. */
export function describeProcess(p: Proc): string {
  const cmd = (read(`/proc/${p.pid}/cmdline`) ?? '').split('\0').join(' ').trim()
  return `${p.pid} ${cmd.length > 140 ? `${cmd.slice(0, 140)}…` : cmd || p.comm}`
}

/** The process's environment holds every one of `entries` ("NAME=value"). */
export function environHas(pid: number, entries: string[]): boolean {
  const env = read(`/proc/${pid}/environ`)
  if (!env) return false
  const vars = new Set(env.split('\0'))
  return entries.every((e) => vars.has(e))
}

/** Waits until none of `procs` runs (zombies count as gone), up to `timeoutMs`; returns those still running. */
export async function waitGone(procs: Proc[], timeoutMs: number): Promise<Proc[]> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const left = procs.filter(running)
    if (!left.length || Date.now() > deadline) return left
    await Bun.sleep(50)
  }
}

/** The mount points at or under `dir` (from /proc/self/mountinfo), with their file system type. */
export function mountsUnder(dir: string): { path: string; type: string }[] {
  const found: { path: string; type: string }[] = []
  for (const line of (read('/proc/self/mountinfo') ?? '').split('\n')) {
    const fields = line.split(' ')
    const path = fields[4]?.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)))
    if (path && (path === dir || path.startsWith(`${dir}/`))) found.push({ path, type: fields[fields.indexOf('-') + 1] ?? '?' })
  }
  return found
}

/** The processes with a file, directory or working directory under `dir`: who keeps a mount busy. */
export function holders(dir: string): string[] {
  const found: string[] = []
  for (const p of processes().values()) {
    const links: string[] = []
    for (const l of ['cwd', 'root', 'exe']) {
      try {
        links.push(readlinkSync(`/proc/${p.pid}/${l}`))
      } catch {}
    }
    try {
      for (const fd of readdirSync(`/proc/${p.pid}/fd`)) {
        try {
          links.push(readlinkSync(`/proc/${p.pid}/fd/${fd}`))
        } catch {}
      }
    } catch {}
    const held = links.filter((l) => l === dir || l.startsWith(`${dir}/`))
    if (held.length) found.push(`${describeProcess(p)} (holds ${[...new Set(held)].slice(0, 3).join(', ')})`)
  }
  return found
}

/**
 * The TCP sockets of this process in LISTEN, by socket inode: "tcp 127.0.0.1:41234". (UDP is left out: a
 * sending socket is bound by its first send and looks like a receiver, and the process keeps the media
 * relay's for its lifetime, media/relay-worker.ts.)
 */
export function listeningSockets(pid: number | 'self' = 'self'): Map<string, string> {
  const inodes = new Set<string>()
  try {
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      try {
        const link = readlinkSync(`/proc/${pid}/fd/${fd}`)
        if (link.startsWith('socket:[')) inodes.add(link.slice(8, -1))
      } catch {}
    }
  } catch {}
  const found = new Map<string, string>()
  if (!inodes.size) return found
  for (const table of ['tcp', 'tcp6']) {
    for (const line of (read(`/proc/net/${table}`) ?? '').split('\n').slice(1)) {
      const f = line.trim().split(/\s+/)
      const inode = f[9]
      if (!inode || !inodes.has(inode)) continue
      if (f[3] === '0A') found.set(inode, `${table} ${address(f[1]!)}`)
    }
  }
  return found
}

/** /proc/net's "0100007F:A0F2" as "127.0.0.1:41202" (IPv6: the hex words). */
function address(hex: string): string {
  const [ip, port] = hex.split(':')
  const p = parseInt(port!, 16)
  if (ip!.length === 8) return `${ip!.match(/../g)!.reverse().map((b) => parseInt(b, 16)).join('.')}:${p}`
  return `[${ip}]:${p}`
}

/** The temporary directories each test file made (by its path), where the leak check looks for mounts. */
const tempDirsByFile = new Map<string, string[]>()
/** Records `dir` as made by the test file running now (tempDir() in tests/helpers.ts calls it). */
export function noteTempDir(dir: string): void {
  tempDirsByFile.set(Bun.main, [...(tempDirsByFile.get(Bun.main) ?? []), dir])
}
export function tempDirsOf(file: string): string[] {
  return tempDirsByFile.get(file) ?? []
}
