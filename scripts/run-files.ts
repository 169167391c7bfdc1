// Runs the test files of a directory, each in a `bun test` of its own, `--jobs` of them at once (the
// integration tier: most of its time is waiting on real time — a stream's frames, a browser, a rollback
// window — so two files at once take about 60 % as long on 2 cores). Past the first, a job waits while
// another suite's runner runs on the machine (see worker below).
// Each file's output is printed whole when it ends, so files never interleave and the runner's reading
// (scripts/child-output.ts) finds every file's header, results and failures; the closing lines are the
// totals (" N pass", " N fail"). Exits non-zero when any file failed or its `bun test` did. On SIGTERM
// (the tier's limit) it stops the files running, prints what each had printed under its header and says
// it was stopped, so the runner names them.
// Usage: bun run scripts/run-files.ts <directory> [--jobs N]  (or PERISCOPE_TEST_JOBS; default 2)
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import type { Subprocess } from 'bun'
import { testCounts } from './child-output'

const ROOT = join(import.meta.dir, '..')

/** The test files of `dir`, largest first: a rough stand-in for the longest first, so a long file does not start last. */
export function testFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((f) => /\.test\.[cm]?[jt]sx?$/.test(f))
    .map((f) => join(dir, f))
    .sort((a, b) => statSync(b).size - statSync(a).size || a.localeCompare(b))
}

/** The jobs asked for: `--jobs N`, else PERISCOPE_TEST_JOBS, else 2; refused unless a whole number from 1 to 16. */
export function jobsFrom(args: string[], env: string | undefined): number {
  const i = args.indexOf('--jobs')
  const raw = i >= 0 ? args[i + 1] : (env ?? '2')
  const n = Number(raw)
  if (!Number.isInteger(n) || n < 1 || n > 16) throw new Error(`--jobs (or PERISCOPE_TEST_JOBS) must be a whole number from 1 to 16, got '${raw}'`)
  return n
}

/** What a job past the first waits for: another suite's runner of this script, or a container image being built (scripts/container/build.sh, in the background of `npm test`). */
const BUSY = ['scripts/run-files.ts', 'scripts/container/build.sh']

/** Other processes on this machine that keep a second job waiting (see BUSY), by their command line in /proc: their pids. */
export function otherRunners(self = process.pid): number[] {
  const pids: number[] = []
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === self) continue
    try {
      const args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
      if (args.some((a) => BUSY.some((b) => a.endsWith(b)))) pids.push(Number(pid))
    } catch {} // gone meanwhile
  }
  return pids
}

if (import.meta.main) {
  const args = process.argv.slice(2)
  const dir = args.find((a, i) => !a.startsWith('--') && args[i - 1] !== '--jobs')
  if (!dir) {
    console.error('usage: bun run scripts/run-files.ts <directory> [--jobs N]')
    process.exit(2)
  }
  let jobs: number
  try {
    jobs = jobsFrom(args, process.env.PERISCOPE_TEST_JOBS)
  } catch (e) {
    console.error((e as Error).message)
    process.exit(2)
  }
  const files = testFiles(resolve(dir))
  if (!files.length) {
    console.error(`no test files in ${dir}`)
    process.exit(1)
  }
  const started = Date.now()
  const queue = [...files]
  const running = new Map<string, { proc: Subprocess; output: string[]; done: Promise<unknown> }>()
  const totals = { pass: 0, fail: 0 }
  let failedRuns = 0
  let stopping = false

  /** Runs one file; resolves once its output is printed. */
  const runFile = async (file: string): Promise<void> => {
    const name = relative(ROOT, file)
    const proc = Bun.spawn([process.execPath, 'test', file], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: process.env })
    const output: string[] = []
    const pump = async (stream: ReadableStream<Uint8Array>) => {
      const decoder = new TextDecoder()
      for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) output.push(decoder.decode(chunk, { stream: true }))
    }
    const done = Promise.all([pump(proc.stdout as ReadableStream<Uint8Array>), pump(proc.stderr as ReadableStream<Uint8Array>), proc.exited])
    running.set(name, { proc, output, done })
    await done
    running.delete(name)
    if (stopping) return
    const text = output.join('')
    // A file whose bun test printed no header of its own (it failed to start) is still named.
    process.stdout.write(text.includes(`${name}:`) ? text : `${name}:\n${text}`)
    process.stdout.write('\n')
    const counts = testCounts(text)
    totals.pass += counts?.passed ?? 0
    totals.fail += counts?.failed ?? 0
    if (proc.exitCode !== 0) {
      failedRuns++
      // Failed with no failed test counted (it crashed, or never loaded): named all the same.
      if (!counts?.failed) {
        totals.fail++
        process.stdout.write(`${name}:\n(fail) (its bun test exited ${proc.exitCode ?? proc.signalCode} with no failed test)\n\n`)
      }
    }
  }

  process.on('SIGTERM', async () => {
    stopping = true
    const stopped = [...running]
    for (const [, { proc }] of stopped) proc.kill(9)
    // Everything each printed, to the end of its pipes (within 5 s: the runner's KILL comes at 10).
    await Promise.race([Promise.all(stopped.map(([, r]) => r.done)), Bun.sleep(5000)])
    for (const [name, { output }] of stopped) process.stdout.write(`${name}:\n${output.join('')}\n(fail) (stopped at the tier's limit while this file ran)\n`)
    process.exit(143)
  })

  // The first worker always runs; the others take a next file only while no other suite's runner runs
  // on the machine (two clones' `npm test` side by side) and no container image is being built: two
  // suites then run one file each, the load their tests were made to pass under, not four at once on 2
  // cores (load 10-11: a recording's sound ended 0.8 s after its lagging video, a telemetry cue after
  // its last frames, a segment's sound 0.7 s past its video).
  const worker = async (index: number) => {
    for (;;) {
      while (index > 0 && !stopping && queue.length && otherRunners().length > 0) await Bun.sleep(1000)
      const file = queue.shift()
      if (!file || stopping) return
      await runFile(file)
    }
  }
  await Promise.all(Array.from({ length: Math.min(jobs, files.length) }, (_, i) => worker(i)))
  const seconds = ((Date.now() - started) / 1000).toFixed(2)
  console.log(`\n ${totals.pass} pass\n ${totals.fail} fail\nRan ${files.length} files, ${jobs} at once, each in its own bun test. [${seconds}s]`)
  process.exit(totals.fail || failedRuns ? 1 : 0)
}
