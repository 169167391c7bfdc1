// Inside the VM: what the kernel itself saw, for counting a request's work without instrumenting the
// service — opens of one device node (inotify) and V4L2 ioctls by command (the sys_enter_ioctl
// tracepoint, filtered by command number). Both count every process, so a test measures a window in
// which nothing else touches V4L2.
import { dlopen, ptr } from 'bun:ffi'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { spawnSync } from 'node:child_process'
import { IOCTLS } from '../../../drivers/v4l2/abi'

const libc = dlopen('libc.so.6', {
  inotify_init1: { args: ['i32'], returns: 'i32' },
  inotify_add_watch: { args: ['i32', 'ptr', 'u32'], returns: 'i32' },
  read: { args: ['i32', 'ptr', 'u64'], returns: 'i64' },
  close: { args: ['i32'], returns: 'i32' },
})
const IN_OPEN = 0x20
// Closes are watched too: inotify merges identical consecutive events, so open, open would count once.
const IN_CLOSE = 0x08 | 0x10
const IN_NONBLOCK = 0o4000

/** Counts opens of one node from now on. */
export class NodeOpens {
  private fd: number
  private buf = new Uint8Array(64 * 1024)
  private seen = 0
  constructor(path: string) {
    this.fd = libc.symbols.inotify_init1(IN_NONBLOCK)
    if (this.fd < 0) throw new Error('inotify_init1 failed')
    if (libc.symbols.inotify_add_watch(this.fd, Buffer.from(`${path}\0`), IN_OPEN | IN_CLOSE) < 0) throw new Error(`inotify_add_watch ${path} failed`)
  }
  /** Opens since the watch began (every open of the node is closed before its request answers). */
  count(): number {
    for (;;) {
      const n = Number(libc.symbols.read(this.fd, ptr(this.buf), this.buf.length))
      if (n <= 0) return this.seen
      const view = new DataView(this.buf.buffer, 0, n)
      for (let off = 0; off < n; off += 16 + view.getUint32(off + 12, true)) if (view.getUint32(off + 4, true) & IN_OPEN) this.seen++
    }
  }
  close() {
    libc.symbols.close(this.fd)
  }
}

type IoctlName = keyof typeof IOCTLS
const TRACING = '/sys/kernel/tracing'
const EVENT = `${TRACING}/events/syscalls/sys_enter_ioctl`

/**
 * Counts the given V4L2 ioctls, system-wide, from start() on. The buffer is not cleared (truncating
 * `trace` hung a TCG guest once): counts are taken against what it held at start(), and a buffer that
 * overwrote entries meanwhile fails the count rather than skew it.
 */
export class IoctlTrace {
  private names = new Map<number, IoctlName>()
  private baseline: Record<string, number> = {}
  constructor(which: IoctlName[]) {
    for (const name of which) this.names.set(IOCTLS[name] >>> 0, name)
  }
  start() {
    if (!existsSync(`${TRACING}/trace`)) {
      const r = spawnSync('mount', ['-t', 'tracefs', 'nodev', TRACING], { encoding: 'utf8' })
      if (r.status !== 0) throw new Error(`mounting tracefs failed: ${r.stderr}`)
    }
    if (!existsSync(`${EVENT}/enable`)) throw new Error(`${EVENT} is missing: the guest kernel needs CONFIG_FTRACE_SYSCALLS`)
    writeFileSync(`${EVENT}/enable`, '0')
    writeFileSync(`${EVENT}/filter`, [...this.names.keys()].map((cmd) => `cmd == 0x${cmd.toString(16)}`).join(' || '))
    this.baseline = this.tally()
    writeFileSync(`${EVENT}/enable`, '1')
    writeFileSync(`${TRACING}/tracing_on`, '1')
  }
  /** ioctl name → how many were issued since start(). */
  counts(): Record<string, number> {
    const now = this.tally()
    return Object.fromEntries(Object.entries(now).map(([name, n]) => [name, n - (this.baseline[name] ?? 0)]))
  }
  private tally(): Record<string, number> {
    const text = readFileSync(`${TRACING}/trace`, 'utf8')
    const held = text.match(/entries-in-buffer\/entries-written: (\d+)\/(\d+)/)
    if (!held) throw new Error('the trace buffer has no entries header')
    if (held[1] !== held[2]) throw new Error(`the trace buffer overwrote entries (${held[1]} held of ${held[2]} written): counts would be wrong`)
    const out: Record<string, number> = Object.fromEntries([...this.names.values()].map((n) => [n, 0]))
    for (const m of text.matchAll(/sys_ioctl\(fd: [0-9a-f]+, cmd: ([0-9a-f]+),/g)) {
      const name = this.names.get(parseInt(m[1]!, 16))
      if (name) out[name]!++
    }
    return out
  }
  stop() {
    writeFileSync(`${EVENT}/enable`, '0')
    writeFileSync(`${EVENT}/filter`, '0')
  }
}
