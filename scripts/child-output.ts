// What the test runners (scripts/test.ts, tests/arm64/run.ts) do with a child's output: show it as it
// comes and keep it, then read bun test's report from it: the closing counts, each failure with its file
// and test, the time of each test and file. The rules are tested in tests/contract/runner.test.ts against
// outputs bun test printed (tests/contract/fixtures/bun-output/).

/**
 * Echoes a child's stdout and stderr as they arrive; resolves with all of it once the child has exited.
 * Kept whole line by line: a line of one stream never has the other's text in its middle (bun test writes
 * its report on stderr, the tests' console.log on stdout).
 */
export async function echoAndCollect(child: { stdout: ReadableStream<Uint8Array>; stderr: ReadableStream<Uint8Array>; exited: Promise<number> }): Promise<string> {
  let output = ''
  const pump = async (stream: ReadableStream<Uint8Array>, sink: NodeJS.WriteStream) => {
    const decoder = new TextDecoder()
    let partial = ''
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
      const text = decoder.decode(chunk, { stream: true })
      sink.write(text)
      partial += text
      const end = partial.lastIndexOf('\n') + 1
      output += partial.slice(0, end)
      partial = partial.slice(end)
    }
    output += partial + decoder.decode()
  }
  await Promise.all([pump(child.stdout, process.stdout), pump(child.stderr, process.stderr), child.exited])
  return output
}

/** bun test's last "N pass" and "N fail" lines (or a tier's "N passed"), or null when it printed none. */
export function testCounts(output: string): { passed: number; failed: number } | null {
  const pass = [...output.matchAll(/^\s*(\d+) pass(?:ed)?\s*$/gm)].at(-1)
  const fail = [...output.matchAll(/^\s*(\d+) fail(?:ed)?\s*$/gm)].at(-1)
  return pass ? { passed: Number(pass[1]), failed: Number(fail?.[1] ?? 0) } : null
}

export interface TestResult {
  file: string
  /** As bun test prints it: "describe > test". */
  name: string
  passed: boolean
  /** The time bun test printed, if any. */
  ms: number | null
}

export interface Failure {
  file: string
  /** The test, or what failed outside one: "(a beforeAll or afterAll hook)", "(an error outside any test)". */
  test: string
  /** The first error line printed for it, or how it timed out. */
  reason: string | null
}

export interface BunReport {
  tests: TestResult[]
  failures: Failure[]
  /** Each file's whole time, hooks included, from the per-file preload's "(file) path [N ms]" lines. */
  fileMs: Map<string, number>
  /** The last file header seen: the file that was running if the output stops short. */
  lastFile: string | null
}

/** Where bun test has no test name for a failure: a failing beforeAll or afterAll (it prints "(unnamed)"). */
export const HOOK = '(a beforeAll or afterAll hook)'
export const OUTSIDE = '(an error outside any test)'
/** Until a file header, what the output says belongs to the runner printing it. */
export const NO_FILE = '(before any test file)'

/**
 * Reads bun test's report (also behind a prefix such as the kernel VM's "[vm]"): file headers
 * ("tests/x.test.ts:", or a runner's own "tests/kernel/run.ts:"), "(pass|fail|skip|todo) name [12.3ms]" lines, the "error: …" line before a failure,
 * "^ this test timed out after Nms.", "# Unhandled error between tests", and the repeat of the failures
 * bun test prints after "N tests failed:" (ignored: each failure is kept once, with its file).
 */
export function readBunOutput(output: string): BunReport {
  const tests: TestResult[] = []
  const failures: Failure[] = []
  const fileMs = new Map<string, number>()
  let file: string | null = null
  let lastFile: string | null = null
  let inRepeat = false
  let error: string | null = null
  let lastFailure: Failure | null = null
  let unhandled = false
  for (const raw of output.split('\n')) {
    const line = raw.replace(/\x1b\[[0-9;]*m/g, '').replace(/^\s*(?:\[[\w-]+\]\s*)?/, '').trimEnd()
    const header = /^(\S+\.[cm]?[jt]sx?):$/.exec(line) // a test file, or a runner naming itself (tests/kernel/run.ts)
    if (header) {
      file = lastFile = header[1]!
      inRepeat = unhandled = false
      error = lastFailure = null
      continue
    }
    if (/^\d+ tests? (?:failed|skipped|todo):$/.test(line)) {
      inRepeat = true
      continue
    }
    const fileTime = /^\(file\) (\S+) \[([\d.]+)ms\]$/.exec(line)
    if (fileTime) {
      fileMs.set(fileTime[1]!, Number(fileTime[2]))
      continue
    }
    const result = /^\((pass|fail|skip|todo)\) (.*?)(?: \[([\d.]+)(ms|s)\])?$/.exec(line)
    if (result) {
      if (inRepeat) continue
      const [, status, name, time, unit] = result
      const ms = time === undefined ? null : Number(time) * (unit === 's' ? 1000 : 1)
      const where = file ?? NO_FILE
      if (status === 'fail') {
        const unnamed = /(?:^|> )\(unnamed\)$/.test(name!)
        lastFailure = { file: where, test: unnamed ? name!.replace(/\(unnamed\)$/, HOOK) : name!, reason: error }
        failures.push(lastFailure)
        if (!unnamed) tests.push({ file: where, name: name!, passed: false, ms })
      } else if (status === 'pass') tests.push({ file: where, name: name!, passed: true, ms })
      error = null
      continue
    }
    const timedOut = /^\^ (this test timed out after \d+ms|a beforeEach\/afterEach hook timed out for this test)\.?$/.exec(line)
    if (timedOut && lastFailure) {
      lastFailure.reason = timedOut[1]!.replace('this test ', '')
      continue
    }
    if (line === '# Unhandled error between tests') {
      unhandled = true
      continue
    }
    const thrown = /^(?:error|[A-Z]\w*Error): (.+)$/.exec(line)
    if (thrown) {
      if (unhandled) {
        failures.push({ file: file ?? NO_FILE, test: OUTSIDE, reason: thrown[1]! })
        unhandled = false
      } else error ??= thrown[1]!
    }
  }
  return { tests, failures, fileMs, lastFile }
}

/** The failures of a bun test output (see readBunOutput), each once, in order. */
export function failedTests(output: string): Failure[] {
  const seen = new Set<string>()
  return readBunOutput(output).failures.filter((f) => {
    const key = `${f.file}\n${f.test}`
    return !seen.has(key) && seen.add(key)
  })
}

/** The runner's closing lines for a tier's failures: each failing file, then its failed tests under it. */
export function formatFailures(tier: string, failures: Failure[], max = 25): string[] {
  const byFile = new Map<string, Failure[]>()
  for (const f of failures) byFile.set(f.file, [...(byFile.get(f.file) ?? []), f])
  const lines: string[] = []
  let shown = 0
  for (const [file, list] of byFile) {
    lines.push(`  ${tier}: ${file}`)
    for (const f of list) {
      if (shown++ >= max) break
      const reason = f.reason ? `: ${f.reason.length > 160 ? `${f.reason.slice(0, 160)}…` : f.reason}` : ''
      lines.push(`      ${f.test}${reason}`)
    }
  }
  if (shown > max) lines.push(`  ${tier}: … and ${failures.length - max} more failed tests`)
  return lines
}

// ---- slowness: the slowest files and tests, and the tests near their own timeout ----

/**
 * The timeouts a test file gives its tests, read from its source: `test(name, fn, 60_000)`,
 * `test(name, fn, { timeout: 30_000 })`, `it(…)`; a test with none has the file's `setDefaultTimeout(N)`
 * or `defaultMs` (bun test's 5 s, or the tier's --timeout). A template name's `${…}` matches anything.
 * A timeout that is not a number literal (or a product of them) is unknown: such tests get no warning.
 */
export function testTimeouts(source: string, defaultMs: number): { matches: (name: string) => boolean; ms: number | null }[] {
  const fileDefault = /\bsetDefaultTimeout\(\s*([\d_]+)\s*\)/.exec(source)
  const base = fileDefault ? Number(fileDefault[1]!.replaceAll('_', '')) : defaultMs
  const found: { matches: (name: string) => boolean; ms: number | null }[] = []
  for (const call of source.matchAll(/(?<![.\w$])(?:test|it)(?:\.(?:serial|concurrent|only|failing))?\s*\(/g)) {
    const args = callArguments(source, call.index! + call[0].length - 1)
    if (!args || args.length < 2) continue
    const title = /^\s*(['"`])([\s\S]*)\1\s*$/.exec(args[0]!)
    if (!title) continue
    const parts = title[1] === '`' ? title[2]!.split(/\$\{[\s\S]*?\}/) : [title[2]!]
    const pattern = new RegExp(`(?:^|> )${parts.map((p) => p.replace(/\\(.)/g, '$1').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`)
    let ms: number | null = base
    if (args.length >= 3) {
      const limit = args[2]!.trim().replace(/^\{\s*timeout\s*:\s*([^,}]+?)\s*,?\s*\}$/, '$1')
      ms = /^[\d_]+(?:\s*\*\s*[\d_]+)*$/.test(limit) ? limit.split('*').reduce((p, n) => p * Number(n.trim().replaceAll('_', '')), 1) : null
    }
    found.push({ matches: (name) => pattern.test(name), ms })
  }
  return found
}

/** The top-level arguments' text of the call whose "(" is at `open`, or null if it never closes. */
function callArguments(src: string, open: number): string[] | null {
  const args: string[] = []
  let start = open + 1
  const end = scanCode(src, open + 1, ')', (i) => {
    args.push(src.slice(start, i))
    start = i + 1
  })
  if (end < 0) return null
  args.push(src.slice(start, end))
  return args.filter((a, i) => i < args.length - 1 || a.trim() !== '')
}

/**
 * Scans code from `i` to the `close` that ends it (skipping strings, templates, comments, regex literals
 * and nested brackets); calls `onComma` at each comma at its own level. Returns the close's index, or -1.
 */
function scanCode(src: string, i: number, close: string, onComma?: (at: number) => void): number {
  let depth = 0
  let prev = '(' // the last significant character: tells a regex literal from a division
  for (; i < src.length; i++) {
    const c = src[i]!
    if (c === '"' || c === "'") {
      for (i++; i < src.length && src[i] !== c; i++) if (src[i] === '\\') i++
    } else if (c === '`') {
      for (i++; i < src.length && src[i] !== '`'; i++) {
        if (src[i] === '\\') i++
        else if (src[i] === '$' && src[i + 1] === '{') {
          i = scanCode(src, i + 2, '}')
          if (i < 0) return -1
        }
      }
    } else if (c === '/' && src[i + 1] === '/') i = src.indexOf('\n', i) < 0 ? src.length : src.indexOf('\n', i)
    else if (c === '/' && src[i + 1] === '*') i = src.indexOf('*/', i + 2) < 0 ? src.length : src.indexOf('*/', i + 2) + 1
    else if (c === '/' && /[(,=:[!&|?{};+\-*%<>~^]/.test(prev)) {
      for (i++; i < src.length && src[i] !== '/' && src[i] !== '\n'; i++) {
        if (src[i] === '\\') i++
        else if (src[i] === '[') while (i < src.length && src[i] !== ']') i += src[i] === '\\' ? 2 : 1
      }
    } else if (c === '(' || c === '[' || c === '{') depth++
    else if (c === ')' || c === ']' || c === '}') {
      if (depth === 0) return c === close ? i : -1
      depth--
    } else if (c === ',' && depth === 0) onComma?.(i)
    if (!/\s/.test(c)) prev = c === '/' ? 'x' : c
  }
  return -1
}

export interface Slowness {
  files: { file: string; ms: number }[]
  tests: { file: string; name: string; ms: number }[]
  /** Tests that used more than half their own timeout. */
  nearLimit: { file: string; name: string; ms: number; limitMs: number }[]
}

/**
 * The `top` slowest files (their whole time when the per-file preload printed it, else the sum of their
 * tests) and tests, and every test that used more than half its timeout (`timeoutOf`, null: unknown).
 */
export function slowness(report: BunReport, timeoutOf: (file: string, name: string) => number | null, top = 10): Slowness {
  const timed = report.tests.filter((t): t is TestResult & { ms: number } => t.ms !== null)
  const sums = new Map<string, number>()
  for (const t of timed) sums.set(t.file, (sums.get(t.file) ?? 0) + t.ms)
  for (const [file, ms] of report.fileMs) sums.set(file, ms)
  const files = [...sums].map(([file, ms]) => ({ file, ms })).sort((a, b) => b.ms - a.ms).slice(0, top)
  const tests = [...timed].sort((a, b) => b.ms - a.ms).slice(0, top).map(({ file, name, ms }) => ({ file, name, ms }))
  const nearLimit = timed.flatMap(({ file, name, ms }) => {
    const limitMs = timeoutOf(file, name)
    return limitMs !== null && ms > limitMs / 2 ? [{ file, name, ms, limitMs }] : []
  })
  return { files, tests, nearLimit }
}

/** A timeout lookup reading each test file once (relative to `root`); a file it cannot read: unknown. */
export function timeoutsFromSources(root: string, defaultMs: (file: string) => number, read: (path: string) => string): (file: string, name: string) => number | null {
  const cache = new Map<string, ReturnType<typeof testTimeouts> | null>()
  return (file, name) => {
    if (!cache.has(file)) {
      try {
        cache.set(file, testTimeouts(read(file.startsWith('/') ? file : `${root}/${file}`), defaultMs(file)))
      } catch {
        cache.set(file, null)
      }
    }
    return cache.get(file)?.find((t) => t.matches(name))?.ms ?? null
  }
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`

/** The lines a runner prints after a tier: its slowest files and tests, then the warnings. */
export function formatSlowness(tier: string, s: Slowness): string[] {
  if (!s.files.length && !s.tests.length) return []
  const lines = [`${tier}: slowest files`, ...s.files.map((f) => `  ${seconds(f.ms).padStart(8)}  ${f.file}`)]
  lines.push(`${tier}: slowest tests`, ...s.tests.map((t) => `  ${seconds(t.ms).padStart(8)}  ${t.file} > ${t.name}`))
  for (const t of s.nearLimit) lines.push(`WARNING ${tier}: ${t.file} > ${t.name} took ${seconds(t.ms)}, more than half its ${seconds(t.limitMs)} timeout`)
  return lines
}
