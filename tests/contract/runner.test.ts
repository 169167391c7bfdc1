// The test runner's own rules (scripts/test.ts, tests/kernel/run.ts): a tier or a part of one that ran no
// test fails, a PERISCOPE_VM_TESTS filter that names nothing is refused, and the tiers' limits fit CI's
// time through the run's budget.
import { describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { failedTests, testCounts } from '../../scripts/child-output'
import { BUDGET_MINUTES, SETUP_MINUTES, stepLimit, tierVerdict, TIERS } from '../../scripts/test'
import { partFailure, selectVmTests, sumCounts, VM_TEST_FILES } from '../kernel/select'
import { BUN, tempDir } from '../helpers'

const uncut = { minutes: 10, cut: false, own: 10, budget: BUDGET_MINUTES }

/** Runs `bun test` on a fake tier: a directory holding one test file with `body`. */
function runFakeTier(body: string): { code: number; output: string } {
  const dir = tempDir('periscope-runner-')
  writeFileSync(join(dir, 'fake.test.ts'), `import { test } from 'bun:test'\n${body}\n`)
  const r = Bun.spawnSync([BUN, 'test', './fake.test.ts'], { cwd: dir, env: { ...process.env, NO_COLOR: '1' } })
  return { code: r.exitCode ?? 1, output: `${r.stdout.toString()}${r.stderr.toString()}` }
}

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
    expect(failedTests(r.output)).toEqual(['fails, the answer is not 41'])
    expect(failedTests('  [vm] (fail) sound > the tone [12.50ms]\n(pass) fine [1ms]\n  [vm] (fail) sound > the tone [12.50ms]\n')).toEqual(['sound > the tone'])
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
    const own = TIERS.reduce((sum, t) => sum + t.minutes + t.setup.length * SETUP_MINUTES, 0)
    expect(own).toBeGreaterThan(90)
    expect(BUDGET_MINUTES).toBeLessThanOrEqual(80)
  })

  test('even if every step uses all the time it is given, the run ends within the budget', () => {
    let elapsed = 0
    const ran: string[] = []
    for (const tier of TIERS) {
      for (const _ of tier.setup) elapsed += stepLimit(SETUP_MINUTES, elapsed, BUDGET_MINUTES).minutes
      const limit = stepLimit(tier.minutes, elapsed, BUDGET_MINUTES)
      if (limit.minutes > 0) ran.push(tier.name)
      elapsed += limit.minutes
    }
    expect(elapsed).toBeLessThanOrEqual(BUDGET_MINUTES)
    expect(ran.length).toBeGreaterThan(0)
  })
})
