// Preloaded into every `bun test` run from the repository (bunfig.toml): after each test FILE, the leak
// check and the file's time. bun test runs many files in one process and has no per-file hook of its
// own (a preload's afterAll runs once, after the last file), so a Bun plugin sees each test file as it
// loads, notes what runs before it, and appends one line that registers a file-level afterAll: it runs
// after the file's own afterAll hooks, before the next file loads, and a failure in it is reported under
// the file's name (scripts/child-output.ts reads it as "(a beforeAll or afterAll hook)").
//
// The leak check fails the file, naming each thing it left behind, after waiting up to LEAK_WAIT_MS for
// it to go (a child killed in an afterAll may take a moment to exit; zombies count as gone):
// - a process: a descendant of this bun test process started during the file, or any process carrying
//   this file's mark in its environment (PERISCOPE_TEST_RUNNER and PERISCOPE_TEST_FILE, set here and
//   inherited by what the file spawns, so an orphan whose parent died is found too); it is then killed;
// - a mount under a temporary directory the file made (tempDir() in tests/helpers.ts, tests/cards.ts);
// - a TCP port this process listens on that it did not before the file (a server never stopped).
// Then it prints "(file) <path> [<ms>ms]", the file's whole time, hooks included.
// The kernel and container tiers' files are left alone (they run in a VM or drive podman).
import { afterAll } from 'bun:test'
import { plugin } from 'bun'
import { readFileSync } from 'node:fs'
import { relative } from 'node:path'
import { describeProcess, descendants, environHas, key, listeningSockets, mountsUnder, processes, running, tempDirsOf, type Proc } from './leaks'

/** How long the leak check waits for what a file started to go before it fails the file. */
const LEAK_WAIT_MS = Number(process.env.PERISCOPE_LEAK_WAIT_MS ?? 10_000)
const END = Symbol.for('periscope.fileEnd')
const TICKS_PER_S = 100 // USER_HZ, the unit of /proc/<pid>/stat's start time

interface FileStart {
  path: string
  rel: string
  at: number
  /** Uptime in clock ticks, less a second: processes started before it cannot be the file's. */
  ticks: number
  procs: Set<string>
  sockets: Set<string>
}
let current: FileStart | null = null
process.env.PERISCOPE_TEST_RUNNER = String(process.pid)

const uptimeTicks = () => Math.floor((Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]) - 1) * TICKS_PER_S)

function begin(path: string): void {
  const rel = relative(process.cwd(), path)
  process.env.PERISCOPE_TEST_FILE = rel
  current = { path, rel, at: performance.now(), ticks: uptimeTicks(), procs: new Set(descendants(process.pid).map(key)), sockets: new Set(listeningSockets().keys()) }
}

/** What the file left: processes, mounts, ports (empty: nothing). */
function leftovers(start: FileStart): { procs: Proc[]; things: string[] } {
  const table = processes()
  const mark = [`PERISCOPE_TEST_RUNNER=${process.pid}`, `PERISCOPE_TEST_FILE=${start.rel}`]
  const procs = new Map<number, Proc>()
  for (const p of descendants(process.pid, table)) if (p.state !== 'Z' && !start.procs.has(key(p))) procs.set(p.pid, p)
  for (const p of table.values()) {
    if (p.state !== 'Z' && p.start >= start.ticks && p.pid !== process.pid && !procs.has(p.pid) && environHas(p.pid, mark)) procs.set(p.pid, p)
  }
  const things = [...procs.values()].map((p) => `process ${describeProcess(p)}`)
  for (const dir of tempDirsOf(start.path)) for (const m of mountsUnder(dir)) things.push(`mount ${m.path} (${m.type})`)
  for (const [inode, what] of listeningSockets()) if (!start.sockets.has(inode)) things.push(`port ${what}`)
  return { procs: [...procs.values()], things }
}

async function end(start: FileStart): Promise<void> {
  const deadline = Date.now() + LEAK_WAIT_MS
  const first = leftovers(start)
  let left = first
  const waitFrom = performance.now()
  while (left.things.length && Date.now() < deadline) {
    await Bun.sleep(100)
    left = leftovers(start)
  }
  // A teardown that does not wait for what it stopped: shown, though it went in time.
  if (first.things.length && !left.things.length) console.error(`(leak check) ${start.rel}: waited ${Math.round(performance.now() - waitFrom)} ms after its last hook for ${first.things.join(', ')}`)
  console.error(`(file) ${start.rel} [${(performance.now() - start.at).toFixed(2)}ms]`)
  if (!left.things.length) return
  // Stopped here, so the next file starts clean (they are this run's own processes).
  for (const p of left.procs) if (running(p)) process.kill(p.pid, 'SIGKILL')
  throw new Error(`leak check: ${start.rel} left behind, ${LEAK_WAIT_MS / 1000} s after its last test:\n  ${left.things.join('\n  ')}`)
}

;(globalThis as Record<symbol, unknown>)[END] = (path: string) => {
  const start = current
  if (start?.path !== path) return
  afterAll(() => end(start), LEAK_WAIT_MS + 20_000)
}

plugin({
  name: 'periscope per-file check',
  setup(build) {
    build.onLoad({ filter: /\.test\.[cm]?[jt]sx?$/ }, (args) => {
      const source = readFileSync(args.path, 'utf8')
      const loader = (/\.([cm]?[jt]sx?)$/.exec(args.path)![1]!.replace(/^[cm]/, '') as 'ts' | 'tsx' | 'js' | 'jsx')
      if (/\/tests\/(?:kernel|container)\//.test(args.path)) return { contents: source, loader }
      begin(args.path)
      // One line at the end: the file's own line numbers stay as they are.
      return { contents: `${source}\n;globalThis[Symbol.for('periscope.fileEnd')]?.(import.meta.path);\n`, loader }
    })
  },
})
