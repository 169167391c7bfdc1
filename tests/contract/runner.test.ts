// The test runner's own rules (scripts/test.ts, tests/kernel/run.ts): a tier or a part of one that ran no
// test fails, a PERISCOPE_VM_TESTS filter that names nothing is refused, and the tiers' limits fit CI's
// time through the run's budget; every failure is named with its file (hooks, timeouts, errors between
// tests, a killed file, a tier stopped at its limit), read from outputs bun test printed
// (fixtures/bun-output: failures.txt came from the files in failures.sources.txt); the slowest files and
// tests and the tests past half their timeout; the per-file leak check (tests/per-file.preload.ts); a
// directory's files run several at once (scripts/run-files.ts), each output whole and every failure named.
import { describe, expect, test } from 'bun:test'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { echoAndCollect, failedTests, formatFailures, formatSlowness, HOOK, OUTSIDE, readBunOutput, slowness, testCounts, testTimeouts, timeoutsFromSources } from '../../scripts/child-output'
import { BUDGET_MINUTES, buildNote, buildVerdict, SETUP_MINUTES, stepLimit, tierFailures, tierVerdict, TIERS } from '../../scripts/test'
import { partFailure, selectVmTests, sumCounts, VM_TEST_FILES } from '../kernel/select'
import { ARM64_SLICE } from '../arm64/slice'
import { BUN, tempDir, until } from '../helpers'
import { jobsFrom, otherRunners } from '../../scripts/run-files'

const uncut = { minutes: 10, cut: false, own: 10, budget: BUDGET_MINUTES }

/** Runs `bun test` on a fake tier: a directory holding one test file with `body` (with `preload`s, if given). */
function runFakeTier(body: string, preload: string[] = [], env: Record<string, string> = {}): { code: number; output: string } {
  const dir = tempDir('periscope-runner-')
  writeFileSync(join(dir, 'fake.test.ts'), `import { test } from 'bun:test'\n${body}\n`)
  const r = Bun.spawnSync([BUN, 'test', ...preload.flatMap((p) => ['--preload', p]), './fake.test.ts'], { cwd: dir, env: { ...process.env, NO_COLOR: '1', ...env } })
  return { code: r.exitCode ?? 1, output: `${r.stdout.toString()}${r.stderr.toString()}` }
}

const FIXTURES = join(import.meta.dir, 'fixtures', 'bun-output')
const fixture = (name: string) => readFileSync(join(FIXTURES, name), 'utf8')

describe('a tier that ran no test fails', () => {
  test('a fake tier whose only test is skipped: bun test exits 0, the runner says FAILED', () => {
    const r = runFakeTier("test.skip('nothing runs', () => {})")
    const counts = testCounts(r.output)
    expect(counts?.passed ?? 0).toBe(0)
    expect(tierVerdict({ code: r.code, timedOut: false }, counts, uncut)).toBe('FAILED: it ran no test')
  }, 60_000)

  test('the same fake tier with one passing test is ok (the check is not always failing)', () => {
    const r = runFakeTier("test('one', () => {})")
    expect(r.code).toBe(0)
    expect(tierVerdict({ code: r.code, timedOut: false }, testCounts(r.output), uncut)).toBe('ok: 1 passed')
  }, 60_000)

  test("the failed tests are named, each once, from bun test's own output and from the VM's", () => {
    const r = runFakeTier("import { expect } from 'bun:test'\ntest('fails, the answer is not 41', () => expect(1 + 41).toBe(41))\ntest('passes', () => {})")
    expect(r.code).toBe(1)
    expect(failedTests(r.output)).toEqual([{ file: 'fake.test.ts', test: 'fails, the answer is not 41', reason: 'expect(received).toBe(expected)' }])
    const vm = '  [vm] tests/kernel/vm/sound.test.ts:\n  [vm] (fail) sound > the tone [12.50ms]\n(pass) fine [1ms]\n  [vm] (fail) sound > the tone [12.50ms]\n'
    expect(failedTests(vm)).toEqual([{ file: 'tests/kernel/vm/sound.test.ts', test: 'sound > the tone', reason: null }])
  }, 60_000)

  test('no counts at all (a runner that printed nothing) with exit 0 is a failure', () => {
    expect(tierVerdict({ code: 0, timedOut: false }, testCounts('all good\n'), uncut)).toBe('FAILED: it ran no test')
  })

  test('a time-out names the limit, and the budget when the limit was cut', () => {
    expect(tierVerdict({ code: 137, timedOut: true }, null, uncut)).toBe('FAILED: over its 10-minute limit')
    expect(tierVerdict({ code: 137, timedOut: true }, null, { minutes: 7.25, cut: true, own: 35, budget: 80 })).toBe(
      'FAILED: over its limit, cut from 35 to 7.3 minutes to fit the 80-minute budget',
    )
  })
})

describe('the kernel tier: the VM filter and each part counted apart', () => {
  test('PERISCOPE_VM_TESTS unset runs every VM file, in the order that keeps vivid bound for the early ones', () => {
    expect(selectVmTests(undefined)).toEqual([...VM_TEST_FILES])
  })

  test('a filter that is set but names nothing is refused, not read as "run nothing"', () => {
    for (const empty of ['', ',', ' , ']) expect(() => selectVmTests(empty)).toThrow(/names no VM test file/)
  })

  test('a filter keeps the tier order and refuses unknown names', () => {
    expect(selectVmTests('rtsp,stream')).toEqual(['stream', 'rtsp'])
    expect(() => selectVmTests('stream,nope')).toThrow(/no VM test file nope/)
  })

  test('host tests passing do not cover a VM that ran zero tests', () => {
    const hostOut = ' 12 pass\n 0 fail\n'
    const vmOut = 'rc=0\n' // the VM exited 0 having run no bun test
    expect(partFailure('host tests', 0, sumCounts(hostOut))).toBeNull()
    expect(partFailure('VM tests', 0, sumCounts(vmOut))).toBe('VM tests ran no test')
    expect(partFailure('VM tests', 1, sumCounts(' 3 pass\n 1 fail\n'))).toBe('VM tests failed (exit 1, 1 failed)')
  })

  test('one pass/fail pair per bun process is summed', () => {
    expect(sumCounts(' 3 pass\n 0 fail\n...\n 4 pass\n 1 fail\n')).toEqual({ pass: 7, fail: 1 })
  })
})

describe("the tiers' limits fit CI's 90 minutes", () => {
  test('a step keeps its own limit while the budget allows, and is cut to what is left after', () => {
    expect(stepLimit(35, 0, 80)).toEqual({ minutes: 35, cut: false })
    expect(stepLimit(35, 60, 80)).toEqual({ minutes: 20, cut: true })
    expect(stepLimit(25, 80, 80)).toEqual({ minutes: 0, cut: true })
    expect(stepLimit(25, 95, 80)).toEqual({ minutes: 0, cut: true })
  })

  test('the own limits add up to more than CI has, hence the budget', () => {
    const own = TIERS.reduce((sum, t) => sum + t.minutes + (t.build?.minutes ?? 0) + t.setup.length * SETUP_MINUTES, 0)
    expect(own).toBeGreaterThan(90)
    expect(BUDGET_MINUTES).toBeLessThanOrEqual(80)
  })

  test('even if every step uses all the time it is given, the run ends within the budget', () => {
    let elapsed = 0
    const ran: string[] = []
    for (const tier of TIERS) {
      for (const _ of tier.setup) elapsed += stepLimit(SETUP_MINUTES, elapsed, BUDGET_MINUTES).minutes
      // A build waited for in the foreground (one started early ends within its limit, cut the same way).
      if (tier.build) elapsed += stepLimit(tier.build.minutes, elapsed, BUDGET_MINUTES).minutes
      const limit = stepLimit(tier.minutes, elapsed, BUDGET_MINUTES)
      if (limit.minutes > 0) ran.push(tier.name)
      elapsed += limit.minutes
    }
    expect(elapsed).toBeLessThanOrEqual(BUDGET_MINUTES)
    expect(ran.length).toBeGreaterThan(0)
  })
})

describe("a tier's build (the container image)", () => {
  const build = { command: ['bash', 'scripts/container/build.sh', 'amd64'], log: '.tmp/container/build.log' }
  const closing = (reused: string) => `container build: localhost/periscope:0.1.0-amd64 built; base 0.1 s, image 3.2 s, total 3.3 s; size 328 MB; reused: ${reused}\n`

  test('the summary line says whether the base and the image layers were reused', () => {
    expect(buildNote('apt output\n' + closing('base 1 of 1, image steps 30 of 30'), 4, true)).toBe('built in the background in 4 s: base reused, 30 of 30 image steps from cache')
    expect(buildNote(closing('base 0 of 1, image steps 2 of 30'), 150, false)).toBe('built first in 150 s: base made, 2 of 30 image steps from cache')
    expect(buildNote('podman build failed\n', 9, true)).toBe('built in the background in 9 s')
  })

  test('a failed or stopped build fails its tier, naming the build and showing the end of its log', () => {
    expect(buildVerdict(build, { code: 0, timedOut: false, minutes: 20 }, closing('base 1 of 1, image steps 30 of 30'))).toBe('')
    const log = Array.from({ length: 30 }, (_, i) => `line ${i + 1}`).join('\n') + '\ncontainer build: podman build failed\n'
    const failed = buildVerdict(build, { code: 1, timedOut: false, minutes: 20 }, log)
    expect(failed.split('\n')[0]).toBe('FAILED: the build (bash scripts/container/build.sh amd64) exited 1; the last lines of .tmp/container/build.log:')
    expect(failed).toContain('    | container build: podman build failed')
    expect(failed).toContain('    | line 12')
    expect(failed).not.toContain('line 11\n')
    expect(buildVerdict(build, { code: 1, timedOut: true, minutes: 12.5 }, log).split('\n')[0]).toBe(
      'FAILED: the build (bash scripts/container/build.sh amd64) was stopped at its 12.5-minute limit; the last lines of .tmp/container/build.log:',
    )
  })

  test('the container tier builds first, with its own limit; in the whole run its build starts with the integration tier', () => {
    const container = TIERS.find((t) => t.name === 'container')!
    expect(container.build?.command.slice(0, 2)).toEqual(['bash', 'scripts/container/build.sh'])
    expect(container.build?.env).toBe('PERISCOPE_CONTAINER_BUILD_LOG')
    const names = TIERS.map((t) => t.name)
    // Started by a tier that runs before it, or it would never start early.
    expect(names.indexOf(container.build!.startWith)).toBeGreaterThanOrEqual(0)
    expect(names.indexOf(container.build!.startWith)).toBeLessThan(names.indexOf('container'))
  })
})

describe("the arm64 tier's slice of the contract tier (tests/arm64/slice.ts)", () => {
  test('names contract files that exist, each once and with why: a renamed file fails here, natively, not as a smaller slice', () => {
    const root = join(import.meta.dir, '..', '..')
    expect(ARM64_SLICE.length).toBeGreaterThan(5)
    for (const { file, why } of ARM64_SLICE) {
      expect({ file, exists: existsSync(join(root, file)), contract: /^tests\/contract\/[^/]+\.test\.ts$/.test(file), why: why.length > 10 }).toEqual({ file, exists: true, contract: true, why: true })
    }
    expect(new Set(ARM64_SLICE.map((s) => s.file)).size).toBe(ARM64_SLICE.length)
  })
})

/** What bun test printed for the files of failures.sources.txt, failure by failure, each with its file. */
const EXPECTED_FAILURES = [
  { file: 'tests/fake/after-all.test.ts', test: 'a fails', reason: 'expect(received).toBe(expected)' },
  { file: 'tests/fake/after-all.test.ts', test: HOOK, reason: 'afterAll boom' },
  { file: 'tests/fake/ebusy.test.ts', test: HOOK, reason: "EBUSY: resource busy or locked, rmdir '/tmp/x/card'" },
  { file: 'tests/fake/before-all.test.ts', test: HOOK, reason: 'top beforeAll boom' },
  { file: 'tests/fake/timeout.test.ts', test: 'c times out', reason: 'timed out after 100ms' },
  { file: 'tests/fake/describe-before-all.test.ts', test: `group b > ${HOOK}`, reason: 'beforeAll boom' },
  { file: 'tests/fake/before-each.test.ts', test: 'K > k one', reason: 'beforeEach boom' },
  { file: 'tests/fake/hook-timeout.test.ts', test: HOOK, reason: 'a beforeEach/afterEach hook timed out for this test' },
  { file: 'tests/fake/between.test.ts', test: 'd waits', reason: 'between boom' },
  { file: 'tests/fake/load.test.ts', test: OUTSIDE, reason: 'module load boom' },
]

describe('every failure is named with its file and test', () => {
  test("bun test's own output: failing hooks (its '(unnamed)'), timeouts, an error between tests, a module that fails to load", () => {
    const output = fixture('failures.txt')
    expect(output).toContain('(fail) (unnamed)') // what bun test prints for a hook
    expect(failedTests(output)).toEqual(EXPECTED_FAILURES)
    expect(testCounts(output)).toEqual({ passed: 6, failed: 10 }) // bun test counts the error between tests as a failure
  })

  test("the same behind a runner's prefix (the kernel tier's [vm] and [host])", () => {
    const prefixed = fixture('failures.txt').split('\n').map((l) => `  [vm] ${l}`).join('\n')
    expect(failedTests(prefixed)).toEqual(EXPECTED_FAILURES)
  })

  test('the repeat bun test prints after "N tests failed:" is not read as the last file', () => {
    // A real output of 30 files, trimmed to two of them and their lines in the repeat.
    expect(failedTests(fixture('repeat.txt'))).toEqual([
      { file: 'tests/fake/f13.test.ts', test: 't13 b', reason: 'expect(received).toBe(expected)' },
      { file: 'tests/fake/f3.test.ts', test: 't3 b', reason: 'expect(received).toBe(expected)' },
    ])
  })

  test('the kernel tier: a VM file killed at its limit and a failure of the harness are named with their files', () => {
    const out = [
      '  [vm] tests/kernel/vm/stream.test.ts:',
      '  [vm] (pass) streams [1200.00ms]',
      '  [vm] ',
      '  [vm] tests/kernel/vm/stream.test.ts:',
      '  [vm] (fail) (killed, exit 124: it ran past 300 s, or something killed it)',
      '',
      'tests/kernel/run.ts:',
      '(fail) VM: the guest never wrote its result',
    ].join('\n')
    expect(failedTests(out)).toEqual([
      { file: 'tests/kernel/vm/stream.test.ts', test: '(killed, exit 124: it ran past 300 s, or something killed it)', reason: null },
      { file: 'tests/kernel/run.ts', test: 'VM: the guest never wrote its result', reason: null },
    ])
  })

  test("a child's two streams are kept whole line by line: a test's stdout never splits bun test's stderr line", async () => {
    // stderr's line arrives in two pieces with a stdout line between them, in that order for sure. (Echoed
    // too: nothing here looks like bun test's lines, or the runner reading this tier's output would count it.)
    const bytes = (text: string) => new TextEncoder().encode(text)
    const half = Promise.withResolvers<void>()
    const between = Promise.withResolvers<void>()
    const stderr = new ReadableStream<Uint8Array>({
      async start(c) {
        c.enqueue(bytes('stderr line, first half '))
        await Bun.sleep(20) // read by the collector before the stdout line comes
        half.resolve()
        await between.promise
        await Bun.sleep(20)
        c.enqueue(bytes('and second half\n'))
        c.close()
      },
    })
    const stdout = new ReadableStream<Uint8Array>({
      async start(c) {
        await half.promise
        c.enqueue(bytes('stdout line\n'))
        between.resolve()
        c.close()
      },
    })
    const output = await echoAndCollect({ stderr, stdout, exited: Promise.resolve(0) })
    expect(output.split('\n')).toEqual(['stdout line', 'stderr line, first half and second half', ''])
  })

  test("the runner's last lines list each failing file, its failed tests under it, and never '(unnamed)'", () => {
    const lines = formatFailures('integration', failedTests(fixture('failures.txt')))
    expect(lines).toContain('  integration: tests/fake/ebusy.test.ts')
    expect(lines).toContain(`      ${HOOK}: EBUSY: resource busy or locked, rmdir '/tmp/x/card'`)
    expect(lines.filter((l) => l.startsWith('  integration: tests/'))).toHaveLength(9)
    expect(lines.join('\n')).not.toContain('(unnamed)')
  })

  test('a tier stopped at its limit names the file that was running; a tier that failed with no test named says so', () => {
    const cut = 'tests/integration/a.test.ts:\n(pass) one [1.00ms]\n\ntests/integration/segments.test.ts:\n(pass) first [2.00ms]\n'
    expect(tierFailures({ command: ['bun', 'test', 'tests/integration'] }, cut, { code: 137, timedOut: true }, 'FAILED: over its 35-minute limit')).toEqual([
      { file: 'tests/integration/segments.test.ts', test: '(running when the tier was stopped at its limit)', reason: 'FAILED: over its 35-minute limit' },
    ])
    expect(tierFailures({ command: ['bun', 'run', 'tests/arm64/run.ts'] }, 'arm64 tier: FAILED before any test\n', { code: 1, timedOut: false }, 'FAILED (exit 1)')).toEqual([
      { file: '(bun run tests/arm64/run.ts)', test: '(no failed test named)', reason: 'FAILED (exit 1)' },
    ])
    expect(tierFailures({ command: ['x'] }, cut, { code: 0, timedOut: false }, 'ok: 2 passed')).toEqual([])
  })
})

describe('slowness is visible', () => {
  /** failures.sources.txt holds each fake file after a "// path" line. */
  const sources = new Map(fixture('failures.sources.txt').split(/^\/\/ /m).filter(Boolean).map((part) => [part.slice(0, part.indexOf('\n')), part.slice(part.indexOf('\n') + 1)]))

  test("the slowest tests and files from bun test's times (a file's own time when the per-file preload printed it), and the tests past half their timeout", () => {
    const report = readBunOutput(`${fixture('failures.txt')}\n(file) tests/fake/between.test.ts [2500.00ms]\n`)
    const timeoutOf = timeoutsFromSources('/repo', () => 5_000, (path) => sources.get(path.replace('/repo/', ''))!)
    const s = slowness(report, timeoutOf, 3)
    expect(s.tests.map((t) => [t.file, t.name, t.ms])).toEqual([
      ['tests/fake/hook-timeout.test.ts', 'l slow', 1601.82],
      ['tests/fake/timeout.test.ts', 'c slow pass', 120.3],
      ['tests/fake/timeout.test.ts', 'c times out', 100.9],
    ])
    expect(s.files.map((f) => f.file)).toEqual(['tests/fake/between.test.ts', 'tests/fake/hook-timeout.test.ts', 'tests/fake/timeout.test.ts'])
    // 'c slow pass' took 120 ms of its 200; 'l slow' 1.6 s of its 3 s; 'c times out' used all of its 100 ms.
    expect(s.nearLimit.map((t) => [t.name, t.limitMs])).toEqual([['c times out', 100], ['c slow pass', 200], ['l slow', 3000]])
    const lines = formatSlowness('contract', s)
    expect(lines[0]).toBe('contract: slowest files')
    expect(lines).toContain('WARNING contract: tests/fake/hook-timeout.test.ts > l slow took 1.6 s, more than half its 3.0 s timeout')
  })

  test("each test's own timeout, read from its file: a number, { timeout }, a product, the file's default, a template name; unknown when not a literal", () => {
    const src = [
      "import { setDefaultTimeout, test } from 'bun:test'",
      'setDefaultTimeout(20_000)',
      "test('plain', () => {})",
      "test('with a number', async () => { expect(f(')')).toMatch(/\\)\\(/); const s = `a ${`b ${'('}`}` }, 60_000)",
      "it('with options', () => {}, { timeout: 30_000 })",
      "test('a product', () => {}, 20 * 60_000)",
      'for (const n of [1, 2]) test(`camera ${n} streams`, async () => { /* ) */ }, 45_000)',
      "test('from a constant', () => {}, LIMIT)",
      "describe('d', () => { test.serial('nested, with a comma, here', () => {}, 1000) })",
    ].join('\n')
    const t = testTimeouts(src, 5_000)
    const of = (name: string) => t.find((x) => x.matches(name))?.ms
    expect(of('plain')).toBe(20_000)
    expect(of('with a number')).toBe(60_000)
    expect(of('with options')).toBe(30_000)
    expect(of('a product')).toBe(1_200_000)
    expect(of('camera 2 streams')).toBe(45_000)
    expect(of('from a constant')).toBeNull()
    expect(of('d > nested, with a comma, here')).toBe(1000)
    expect(of('no such test')).toBeUndefined()
    expect(testTimeouts("test('x', () => {})", 30_000)[0]!.ms).toBe(30_000) // no setDefaultTimeout: the tier's
  })

  test('the tiers that pass bun test a --timeout say so (the arm64 tier 30 s, the kernel VM 60 s)', () => {
    const tier = (name: string) => TIERS.find((t) => t.name === name)!
    expect(tier('arm64').testTimeoutMs?.('tests/contract/x.test.ts')).toBe(30_000)
    expect(tier('kernel').testTimeoutMs?.('tests/kernel/vm/stream.test.ts')).toBe(60_000)
    expect(tier('kernel').testTimeoutMs?.('tests/kernel/host/layout.test.ts')).toBe(5_000)
  })
})

describe('the per-file leak check (tests/per-file.preload.ts)', () => {
  const PRELOAD = join(import.meta.dir, '..', 'per-file.preload.ts')

  test('a file that leaves a child process and a listening port fails, named, listing both; the process is stopped', async () => {
    const r = runFakeTier(
      "test('leaves a sleep', () => { Bun.spawn(['sleep', '30']) })\ntest('leaves a server', () => { Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response('') }) })",
      [PRELOAD],
      { PERISCOPE_LEAK_WAIT_MS: '1000' },
    )
    expect(r.code).toBe(1)
    const [failure] = failedTests(r.output)
    expect(failure).toMatchObject({ file: 'fake.test.ts', test: HOOK, reason: expect.stringContaining('leak check: fake.test.ts left behind') })
    expect(r.output).toMatch(/^ {2}process \d+ sleep 30$/m)
    expect(r.output).toMatch(/^ {2}port tcp 127\.0\.0\.1:\d+$/m)
    const pid = Number(/process (\d+) sleep 30/.exec(r.output)![1])
    // Killed by the check: gone, or a zombie waiting for PID 1 to reap it (its parent has exited). The
    // signal is sent, not yet acted on, when the fake tier ends: on a loaded machine the process can
    // still be runnable for a moment (seen once: 'R').
    const state = () => (existsSync(`/proc/${pid}/stat`) ? readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.charAt(0) : 'gone')
    expect(['Z', 'gone']).toContain(await until('the left process stopped', async () => state(), (st) => st === 'Z' || st === 'gone', 10_000))
    expect(readBunOutput(r.output).fileMs.get('fake.test.ts')).toBeGreaterThan(1000)
  }, 60_000)

  test('a child still exiting when the file ends is waited for, not failed; the file time is printed', () => {
    const r = runFakeTier("test('a child that ends 0.3 s after its test', () => { Bun.spawn(['sleep', '0.3']) })", [PRELOAD])
    expect(failedTests(r.output)).toEqual([])
    expect(r.code).toBe(0)
    expect(readBunOutput(r.output).fileMs.get('fake.test.ts')).toBeGreaterThan(250)
  }, 60_000)
})

describe('files run several at once (scripts/run-files.ts, the integration tier)', () => {
  const RUN_FILES = join(import.meta.dir, '..', '..', 'scripts', 'run-files.ts')
  /** A directory of fake test files, by name and body. */
  const fakeDir = (files: Record<string, string>) => {
    const dir = tempDir('periscope-run-files-')
    for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), `import { expect, test } from 'bun:test'\n${body}\n`)
    return dir
  }

  test('each file whole under its own header, the totals last, every failure named with its file, exit 1', () => {
    const dir = fakeDir({
      'a.test.ts': "test('a passes', async () => { await Bun.sleep(200) })",
      'b.test.ts': "test('b fails', () => expect(1).toBe(2))\ntest('b passes', async () => { await Bun.sleep(100) })",
      'c.test.ts': "throw new Error('c cannot load')",
    })
    // Not echoed: its fake failures would read as this tier's own.
    const child = Bun.spawnSync([BUN, 'run', RUN_FILES, dir, '--jobs', '2'], { env: { ...process.env, NO_COLOR: '1' } })
    const output = `${child.stdout.toString()}${child.stderr.toString()}`
    expect(child.exitCode).toBe(1)
    expect(testCounts(output)).toEqual({ passed: 2, failed: 2 })
    // In the order the files ended, which varies: compared by file.
    const failures = failedTests(output).map((f) => ({ file: f.file.split('/').at(-1), test: f.test, reason: f.reason })).sort((x, y) => x.file!.localeCompare(y.file!))
    expect(failures).toEqual([
      { file: 'b.test.ts', test: 'b fails', reason: 'expect(received).toBe(expected)' },
      { file: 'c.test.ts', test: OUTSIDE, reason: 'c cannot load' },
    ])
    // Never interleaved: between a file's header and its totals, no other file's header.
    for (const f of ['a.test.ts', 'b.test.ts']) {
      const from = output.search(new RegExp(`^\\S*${f}:$`, 'm'))
      const block = output.slice(from, output.indexOf('Ran ', from))
      expect(block.match(/^\S+\.test\.ts:$/gm)).toHaveLength(1)
    }
  }, 60_000)

  test("SIGTERM (the tier's limit): the files running are stopped and named, with what they printed", async () => {
    const dir = fakeDir({ 'slow.test.ts': "test('waits', async () => { console.log('started waiting'); await Bun.write(import.meta.dir + '/started', ''); await Bun.sleep(30_000) }, 60_000)" })
    const child = Bun.spawn([BUN, 'run', RUN_FILES, dir, '--jobs', '1'], { stdout: 'pipe', stderr: 'pipe', env: { ...process.env, NO_COLOR: '1' } })
    let seen = ''
    const reading = (async () => {
      for await (const chunk of child.stdout as unknown as AsyncIterable<Uint8Array>) seen += new TextDecoder().decode(chunk)
    })()
    // Its test has started and printed (a file's output is held until it ends): then the limit.
    await until('the file running', async () => existsSync(join(dir, 'started')), (ok) => ok, 20_000)
    child.kill('SIGTERM')
    await child.exited
    await reading
    expect(child.exitCode).toBe(143)
    expect(failedTests(seen)).toEqual([expect.objectContaining({ file: expect.stringMatching(/slow\.test\.ts$/), test: "(stopped at the tier's limit while this file ran)" })])
    expect(seen).toContain('started waiting')
  }, 60_000)

  test.each(['scripts/run-files.ts', 'scripts/container/build.sh'])('beside %s (another suite\'s runner, an image being built) the files go one at a time', async (busy) => {
    // Each file notes when it ran (its own clock readings, printed).
    const body = (name: string) => `test('${name}', async () => { const from = Date.now(); await Bun.sleep(500); console.log('ran ${name}', from, Date.now()) })`
    const dir = fakeDir({ 'x.test.ts': body('x'), 'y.test.ts': body('y') })
    // As /proc shows it (its command line names the script).
    const other = Bun.spawn(['bash', '-c', 'sleep 60; exit 0', busy]) // not exec'd into sleep: bash stays
    try {
      await until('the other runner seen', async () => otherRunners(), (pids) => pids.includes(other.pid), 5000)
      const r = Bun.spawnSync([BUN, 'run', RUN_FILES, dir, '--jobs', '2'], { env: { ...process.env, NO_COLOR: '1' } })
      expect(r.exitCode).toBe(0)
      const [first, second] = [...`${r.stdout}${r.stderr}`.matchAll(/ran (\w) (\d+) (\d+)/g)].map((m) => ({ from: Number(m[2]), to: Number(m[3]) })).sort((a, b) => a.from - b.from)
      expect(second!.from).toBeGreaterThanOrEqual(first!.to)
    } finally {
      other.kill()
      await other.exited
    }
  }, 60_000)

  test('--jobs and PERISCOPE_TEST_JOBS: a whole number from 1 to 16, 2 by default', () => {
    expect(jobsFrom([], undefined)).toBe(2)
    expect(jobsFrom([], '3')).toBe(3)
    expect(jobsFrom(['dir', '--jobs', '1'], '3')).toBe(1)
    for (const bad of ['0', '17', '1.5', 'two', '']) expect(() => jobsFrom([], bad)).toThrow('must be a whole number from 1 to 16')
  })
})
