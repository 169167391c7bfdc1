// Runs the test files of a directory, each in a `bun test` of its own, `--jobs` of them at once (the
// integration tier: most of its time is waiting on real time — a stream's frames, a browser, a rollback
// window — so two files at once take about half as long on 2 cores, as two suites side by side showed).
// Each file's output is printed whole when it ends, so files never interleave and the runner's reading
// (scripts/child-output.ts) finds every file's header, results and failures; the closing lines are the
// totals (" N pass", " N fail"). Exits non-zero when any file failed or its `bun test` did. On SIGTERM
// (the tier's limit) it stops the files running, prints what each had printed under its header and says
// it was stopped, so the runner names them.
// Usage: bun run scripts/run-files.ts <directory> [--jobs N]  (or PERISCOPE_TEST_JOBS; default 2)
import { readdirSync, statSync } from 'node:fs'
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
  const running = new Map<string, { proc: Subprocess; output: string[] }>()
  const totals = { pass: 0, fail: 0 }
  let failedRuns = 0
  let stopping = false

  /** Runs one file; resolves once its output is printed. */
  const runFile = async (file: string): Promise<void> => {
    const name = relative(ROOT, file)
    const proc = Bun.spawn([process.execPath, 'test', file], { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: process.env })
    const output: string[] = []
    running.set(name, { proc, output })
    const pump = async (stream: ReadableStream<Uint8Array>) => {
      const decoder = new TextDecoder()
      for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) output.push(decoder.decode(chunk, { stream: true }))
    }
    await Promise.all([pump(proc.stdout as ReadableStream<Uint8Array>), pump(proc.stderr as ReadableStream<Uint8Array>), proc.exited])
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

  process.on('SIGTERM', () => {
    stopping = true
    for (const [name, { proc, output }] of running) {
      proc.kill(9)
      process.stdout.write(`${name}:\n${output.join('')}\n(fail) (stopped at the tier's limit while this file ran)\n`)
    }
    process.exit(143)
  })

  const worker = async () => {
    for (let file = queue.shift(); file && !stopping; file = queue.shift()) await runFile(file)
  }
  await Promise.all(Array.from({ length: Math.min(jobs, files.length) }, worker))
  const seconds = ((Date.now() - started) / 1000).toFixed(2)
  console.log(`\n ${totals.pass} pass\n ${totals.fail} fail\nRan ${files.length} files, ${jobs} at once, each in its own bun test. [${seconds}s]`)
  process.exit(totals.fail || failedRuns ? 1 : 0)
}
