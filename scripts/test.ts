// The whole test suite, tier by tier: `npm test` (all), or `bun run scripts/test.ts contract` (one).
// Each tier first runs its setup scripts (system packages); a tier that cannot set up or run FAILS and
// says why: nothing is skipped, and a tier that ran no test fails too. The whole run fits a time budget
// (CI has 90 minutes): each step's own limit is cut to what is left of it. Prints one closing line:
// "N passed, N failed", after the list of each failing file with its failed tests (a hook, a timeout, an
// error between tests or a tier stopped at its limit all named with their file). After each tier it prints
// its slowest files and tests, and warns of each test that used more than half its own timeout. The rules
// are pure functions, tested in tests/contract/runner.test.ts.
import { spawn } from 'node:child_process'
import { createWriteStream, mkdirSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { echoAndCollect, failedTests, formatFailures, formatSlowness, readBunOutput, slowness, testCounts, timeoutsFromSources, type Failure } from './child-output'

const ROOT = join(import.meta.dir, '..')
const SETUP = join(ROOT, 'scripts', 'setup')
const setupScripts = (filter: (name: string) => boolean) =>
  readdirSync(SETUP)
    .filter((f) => f.endsWith('.sh') && filter(f))
    .sort()
    .map((f) => join(SETUP, f))

export interface Tier {
  name: string
  setup: string[]
  command: string[]
  /** The tier's own limit; cut further when less is left of the run's budget. */
  minutes: number
  /** The timeout of a test that sets none (bun test's 5 s, or the --timeout its runner passes). */
  testTimeoutMs?: (file: string) => number
  /** What the tier's tests need built first (the container image); see Build. */
  build?: Build
}

/**
 * A build a tier's tests need, with its own limit. When the tier `startWith` runs too (npm test), the
 * build starts in the background as that tier starts its tests (after the building tier's own setup
 * scripts), and its tier waits for it; a tier run alone builds in the foreground. Its output goes to
 * `log` (and the screen, in the foreground); the tests are given the log's path in the environment
 * variable `env`, and use that build.
 */
export interface Build {
  command: string[]
  minutes: number
  log: string
  env: string
  startWith: string
}

/** A setup script's own limit (package installs). */
export const SETUP_MINUTES = 20
/** The whole run's budget: CI's 90 minutes, less 10 for checkout, npm ci and the runner's own start. */
export const BUDGET_MINUTES = 80

export const TIERS: Tier[] = [
  // fastapi.sh: the reference FastAPI app that the contract tier's 422s are compared against.
  { name: 'contract', setup: [join(ROOT, 'scripts', 'typecheck.sh'), join(SETUP, 'fastapi.sh')], command: ['bun', 'test', 'tests/contract'], minutes: 10 },
  // Two files at once, each in its own bun test (scripts/run-files.ts): its files mostly wait on real time.
  { name: 'integration', setup: setupScripts((f) => !['kernel.sh', 'fastapi.sh', 'arm64.sh', 'container.sh'].includes(f)), command: ['bun', 'run', 'scripts/run-files.ts', 'tests/integration'], minutes: 35 },
  // The VM's files run with --timeout 60000 (tests/kernel/run.ts).
  { name: 'kernel', setup: setupScripts((f) => f === 'kernel.sh'), command: ['bun', 'run', 'tests/kernel/run.ts'], minutes: 35, testTimeoutMs: (file) => (file.startsWith('tests/kernel/vm/') ? 60_000 : 5_000) },
  // The ABI checks and a slice of the contract tier (tests/arm64/slice.ts: the files that reach native
  // code or byte layouts, each with why), by Bun's aarch64 build under qemu-user (~1-2 min here).
  { name: 'arm64', setup: [join(SETUP, 'fastapi.sh'), join(SETUP, 'arm64.sh')], command: ['bun', 'run', 'tests/arm64/run.ts'], minutes: 20, testTimeoutMs: () => 30_000 },
  // Runs the image (built first by scripts/container/build.sh: an mmdebstrap base, then podman); the
  // receiver of its stream is the host's GStreamer, its NetworkManager the lab's. In the whole run the
  // build (~2.5 min cold, apt and dpkg work: disk, network, one core) overlaps the integration tier, the
  // longest (~19 min): it is done long before its tier, and it does not slow the short contract tier, whose
  // timing the first minutes of the run would share. A re-run reuses the base and podman's layers.
  {
    name: 'container',
    setup: [join(SETUP, 'container.sh'), join(SETUP, 'gstreamer.sh')],
    command: ['bun', 'test', 'tests/container'],
    minutes: 10,
    build: { command: ['bash', 'scripts/container/build.sh', debianArch()], minutes: 20, log: '.tmp/container/build.log', env: 'PERISCOPE_CONTAINER_BUILD_LOG', startWith: 'integration' },
  },
]

/** This machine's architecture as Debian (and the image's tag) names it. */
function debianArch(): string {
  return process.arch === 'x64' ? 'amd64' : process.arch
}

/** What a build's closing line (scripts/container/build.sh's) says was reused, for the tier's summary line. */
export function buildNote(log: string, seconds: number, background: boolean): string {
  const where = background ? 'in the background' : 'first'
  const closing = log.trim().split('\n').at(-1) ?? ''
  const reused = closing.match(/reused: base (\d+) of (\d+), image steps (\d+) of (\d+)/)
  if (!reused) return `built ${where} in ${seconds} s`
  const [, base, bases, cached, steps] = reused.map(Number)
  const baseSays = base === bases ? 'base reused' : base === 0 ? 'base made' : `${base} of ${bases} bases reused`
  return `built ${where} in ${seconds} s: ${baseSays}, ${cached} of ${steps} image steps from cache`
}

/** Why a tier cannot run its tests after its build, or '' when the build passed. */
export function buildVerdict(build: Pick<Build, 'command' | 'log'>, result: { code: number; timedOut: boolean; minutes: number }, log: string, tailLines = 20): string {
  if (!result.timedOut && result.code === 0) return ''
  const why = result.timedOut ? `was stopped at its ${fmt(result.minutes)}-minute limit` : `exited ${result.code}`
  const tail = log.trimEnd().split('\n').slice(-tailLines).map((l) => `    | ${l}`)
  return `FAILED: the build (${build.command.join(' ')}) ${why}; the last lines of ${build.log}:\n${tail.join('\n')}`
}

/** A step's time limit: its own, or what is left of the budget when that is less (then `cut`). */
export function stepLimit(ownMinutes: number, elapsedMinutes: number, budgetMinutes: number): { minutes: number; cut: boolean } {
  const left = Math.max(0, budgetMinutes - elapsedMinutes)
  return left < ownMinutes ? { minutes: left, cut: true } : { minutes: ownMinutes, cut: false }
}

/** What the runner says of a tier's command: ok only when it exited 0 within its limit and passed at least one test. */
export function tierVerdict(
  result: { code: number; timedOut: boolean },
  counts: { passed: number; failed: number } | null,
  limit: { minutes: number; cut: boolean; own: number; budget: number },
): string {
  if (result.timedOut) {
    const why = limit.cut ? `its limit, cut from ${limit.own} to ${fmt(limit.minutes)} minutes to fit the ${limit.budget}-minute budget` : `its ${limit.own}-minute limit`
    return `FAILED: over ${why}`
  }
  if (result.code !== 0) return `FAILED (exit ${result.code})${counts ? `: ${counts.failed} failed, ${counts.passed} passed` : ''}`
  if (!counts || counts.passed === 0) return 'FAILED: it ran no test'
  return `ok: ${counts.passed} passed`
}

const fmt = (minutes: number) => String(Math.round(minutes * 10) / 10)

/**
 * Every failure of a tier's run, each with a file: bun test's own (failedTests), and when the tier failed
 * with none named (stopped at its limit, crashed, exited non-zero), the file that was running then.
 */
export function tierFailures(tier: Pick<Tier, 'command'>, output: string, result: { code: number; timedOut: boolean }, verdict: string): Failure[] {
  const named = failedTests(output)
  if (!verdict.startsWith('FAILED') || (named.length && !result.timedOut)) return named
  const file = readBunOutput(output).lastFile ?? `(${tier.command.join(' ')})`
  const test = result.timedOut ? '(running when the tier was stopped at its limit)' : '(no failed test named)'
  return [...named, { file, test, reason: verdict }]
}

interface BuildJob {
  done: Promise<{ code: number; timedOut: boolean; minutes: number; log: string; seconds: number }>
  background: boolean
  stop: () => void
}

/**
 * Starts a build in a process group of its own (so its limit stops podman and buildah too: TERM, then
 * KILL 10 s later), its output written to its log, and echoed when in the foreground.
 */
function startBuild(build: Build, minutes: number, background: boolean): BuildJob {
  const logPath = join(ROOT, build.log)
  mkdirSync(join(logPath, '..'), { recursive: true })
  const log = createWriteStream(logPath)
  const started = Date.now()
  const child = spawn(build.command[0]!, build.command.slice(1), { cwd: ROOT, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  let text = ''
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.on('data', (chunk: Buffer) => {
      log.write(chunk)
      text += chunk.toString()
      if (!background) (stream === child.stdout ? process.stdout : process.stderr).write(chunk)
    })
  }
  let timedOut = false
  const signal = (sig: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, sig)
    } catch {} // the group has ended
  }
  let killer: ReturnType<typeof setTimeout> | undefined
  const stop = () => {
    signal('SIGTERM')
    killer = setTimeout(() => signal('SIGKILL'), 10_000)
  }
  const timer = setTimeout(() => {
    timedOut = true
    stop()
  }, minutes * 60_000)
  const done = new Promise<{ code: number; timedOut: boolean; minutes: number; log: string; seconds: number }>((resolve) => {
    child.on('close', (code) => {
      clearTimeout(timer)
      clearTimeout(killer)
      log.end(() => resolve({ code: code ?? 1, timedOut, minutes, log: text, seconds: Math.round((Date.now() - started) / 1000) }))
    })
  })
  return { done, background, stop }
}

async function run(command: string[], minutes: number, env: Record<string, string> = {}): Promise<{ code: number; output: string; timedOut: boolean }> {
  const child = Bun.spawn(command, { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, ...env, PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}` } })
  let timedOut = false
  let kill: ReturnType<typeof setTimeout> | undefined
  // TERM first, so a runner of its own (scripts/run-files.ts) stops its files and names them; KILL 10 s later.
  const timer = setTimeout(() => {
    timedOut = true
    child.kill('SIGTERM')
    kill = setTimeout(() => child.kill(9), 10_000)
  }, minutes * 60_000)
  const output = await echoAndCollect(child)
  clearTimeout(timer)
  clearTimeout(kill)
  return { code: child.exitCode ?? 1, output, timedOut }
}

if (import.meta.main) {
  const wanted = process.argv.slice(2)
  const unknown = wanted.filter((w) => !TIERS.some((t) => t.name === w))
  if (unknown.length) {
    console.error(`unknown tier(s): ${unknown.join(', ')}; tiers are ${TIERS.map((t) => t.name).join(', ')}`)
    process.exit(2)
  }
  const tiers = wanted.length ? TIERS.filter((t) => wanted.includes(t.name)) : TIERS

  const budget = Number(process.env.PERISCOPE_TEST_BUDGET_MINUTES ?? BUDGET_MINUTES)
  if (!(budget > 0)) {
    console.error(`PERISCOPE_TEST_BUDGET_MINUTES must be a number of minutes above 0, got '${process.env.PERISCOPE_TEST_BUDGET_MINUTES}'`)
    process.exit(2)
  }
  const own = tiers.reduce((sum, t) => sum + t.minutes + (t.build?.minutes ?? 0) + t.setup.length * SETUP_MINUTES, 0)
  console.log(
    `time budget: ${budget} minutes for ${tiers.map((t) => t.name).join(', ')} (their own limits, setups included, add up to ${own}); ` +
      'each step is cut to what is left of the budget',
  )
  const runStarted = Date.now()
  const elapsedMinutes = () => (Date.now() - runStarted) / 60_000

  // A setup script that passed once in this run is not run again for a later tier (they are idempotent
  // installers; gstreamer.sh and fastapi.sh serve two tiers each).
  const setUp = new Set<string>()
  /** Seconds spent in setup scripts (installs) so far, so each tier's line says its installs apart. */
  let setupSeconds = 0
  const runSetup = async (scripts: string[]): Promise<string> => {
    for (const script of scripts) {
      if (setUp.has(script)) continue
      const limit = stepLimit(SETUP_MINUTES, elapsedMinutes(), budget)
      if (limit.minutes <= 0) return `FAILED: no time left of the ${budget}-minute budget`
      const setupStarted = Date.now()
      const r = await run(['bash', script], limit.minutes)
      const took = Math.round((Date.now() - setupStarted) / 1000)
      setupSeconds += took
      console.log(`setup ${script.replace(ROOT + '/', '')}: ${took} s`)
      if (r.code !== 0) return `FAILED: setup ${script.replace(ROOT + '/', '')} exited ${r.code}${r.timedOut ? ` (timed out after ${fmt(limit.minutes)} minutes)` : ''}`
      setUp.add(script)
    }
    return ''
  }
  // Builds started early, by the name of the tier that waits for them.
  const builds = new Map<string, BuildJob>()
  const stopBuilds = () => {
    for (const job of builds.values()) job.stop()
  }
  for (const sig of ['SIGINT', 'SIGTERM'] as const)
    process.on(sig, () => {
      stopBuilds()
      process.exit(130)
    })
  // Only when the tier that starts a build runs too (npm test): a tier run alone builds in the foreground.
  const startEarlyBuilds = async (current: string) => {
    for (const t of tiers.filter((t) => t.build?.startWith === current)) {
      // Its tier's setup (podman, mmdebstrap) first, here in the foreground: apt holds one lock for all.
      const why = await runSetup(t.setup)
      const limit = stepLimit(t.build!.minutes, elapsedMinutes(), budget)
      if (why || limit.minutes <= 0) {
        console.log(`${t.name}: its build is not started early (${why || 'no time left'}); its tier will try again`)
        continue
      }
      console.log(`${t.name}: building in the background while ${current} runs (${t.build!.command.join(' ')}; output in ${t.build!.log})`)
      builds.set(t.name, startBuild(t.build!, limit.minutes, true))
    }
  }

  let passed = 0
  let failed = 0
  const summary: string[] = []
  const failures: string[] = []
  const warnings: string[] = []
  for (const tier of tiers) {
    console.log(`\n=== ${tier.name} tier ===`)
    const started = Date.now()
    const setupBefore = setupSeconds
    const noTimeLeft = `FAILED: no time left of the ${budget}-minute budget`
    let verdict = await runSetup(tier.setup)
    await startEarlyBuilds(tier.name)
    let note = ''
    let env: Record<string, string> = {}
    if (!verdict && tier.build) {
      let job = builds.get(tier.name)
      if (job) console.log(`${tier.name}: waiting for its build, started in the background (${tier.build.log})`)
      else {
        const buildLimit = stepLimit(tier.build.minutes, elapsedMinutes(), budget)
        if (buildLimit.minutes > 0) job = startBuild(tier.build, buildLimit.minutes, false)
        else verdict = noTimeLeft
      }
      if (job) {
        const b = await job.done
        builds.delete(tier.name)
        verdict = buildVerdict(tier.build, b, b.log)
        if (!verdict) note = `; ${buildNote(b.log, b.seconds, job.background)}`
        env = { [tier.build.env]: join(ROOT, tier.build.log) }
        if (verdict) console.log(`\n${tier.name}: ${verdict}`)
      }
    }
    // A build its tier did not wait for (its setup failed) is stopped, not left running.
    const unwaited = builds.get(tier.name)
    if (unwaited) {
      unwaited.stop()
      await unwaited.done
      builds.delete(tier.name)
    }
    const limit = stepLimit(tier.minutes, elapsedMinutes(), budget)
    if (!verdict && limit.minutes <= 0) verdict = noTimeLeft
    if (!verdict) {
      if (limit.cut) console.log(`${tier.name}: limit cut from ${tier.minutes} to ${fmt(limit.minutes)} minutes (what is left of the ${budget}-minute budget)`)
      const r = await run(tier.command, limit.minutes, env)
      const c = testCounts(r.output)
      if (c) {
        passed += c.passed
        failed += c.failed
      }
      verdict = tierVerdict(r, c, { ...limit, own: tier.minutes, budget })
      if (verdict.startsWith('FAILED') && (!c || c.failed === 0)) failed += 1 // count the tier itself
      failures.push(...formatFailures(tier.name, tierFailures(tier, r.output, r, verdict)))
      const timeoutOf = timeoutsFromSources(ROOT, tier.testTimeoutMs ?? (() => 5_000), (path) => readFileSync(path, 'utf8'))
      const slow = formatSlowness(tier.name, slowness(readBunOutput(r.output), timeoutOf))
      if (slow.length) console.log(`\n${slow.join('\n')}`)
      warnings.push(...slow.filter((l) => l.startsWith('WARNING')))
    } else {
      failed += 1
      failures.push(`  ${tier.name}: ${verdict}`)
    }
    summary.push(`${tier.name.padEnd(12)} ${verdict.replace(/; the last lines of [^]*$/, '')} (${Math.round((Date.now() - started) / 1000)} s, setups ${setupSeconds - setupBefore} s${note})`)
  }

  console.log('\n=== summary ===')
  for (const line of summary) console.log(line)
  if (warnings.length) console.log(`${warnings.length} tests used more than half their timeout:\n${warnings.map((w) => `  ${w}`).join('\n')}`)
  if (failures.length) console.log(`failed, by file:\n${failures.join('\n')}`)
  console.log(`took ${fmt(elapsedMinutes())} of the ${budget}-minute budget, of which setups (installs) ${fmt(setupSeconds / 60)} minutes`)
  console.log(`${passed} passed, ${failed} failed`)
  process.exit(failed ? 1 : 0)
}
