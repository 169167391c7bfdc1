// Which VM test files the kernel tier runs, and when a part of the tier counts as failed. Pure, so the
// runner's own rules are tested (tests/contract/runner.test.ts) without booting a VM.

/** One bun process per file, in this order: hotplug, set-read and service unbind vivid, so they run after
 * the others (stream and rtsp need vivid bound, as booted). */
export const VM_TEST_FILES = ['enumerate', 'controls', 'stream', 'rtsp', 'held', 'sound', 'mixer', 'hotplug', 'set-read', 'service'] as const

/**
 * The VM test files to run: all of them when `filter` (PERISCOPE_VM_TESTS) is unset, else the ones it
 * names. A filter that is set but names none (`PERISCOPE_VM_TESTS=` or `=,`) is refused, not read as
 * "run nothing": a tier that ran nothing must not report ok.
 */
export function selectVmTests(filter: string | undefined): string[] {
  if (filter === undefined) return [...VM_TEST_FILES]
  const only = filter.split(',').map((name) => name.trim()).filter(Boolean)
  if (only.length === 0) throw new Error(`PERISCOPE_VM_TESTS is set but names no VM test file (there are ${VM_TEST_FILES.join(', ')}); unset it to run them all`)
  const unknown = only.filter((name) => !(VM_TEST_FILES as readonly string[]).includes(name))
  if (unknown.length) throw new Error(`PERISCOPE_VM_TESTS: no VM test file ${unknown.join(', ')} (there are ${VM_TEST_FILES.join(', ')})`)
  return VM_TEST_FILES.filter((name) => only.includes(name))
}

/** Adds up bun test's "N pass" / "N fail" lines (one pair per bun process in the output). */
export function sumCounts(output: string): { pass: number; fail: number } {
  const totals = { pass: 0, fail: 0 }
  for (const m of output.matchAll(/^\s*(\d+) (pass|fail)$/gm)) totals[m[2] as 'pass' | 'fail'] += Number(m[1])
  return totals
}

/** Why a part of the tier (the host tests, the VM tests) failed, or null: it exited non-zero, or it passed no test. */
export function partFailure(part: string, exit: number | null, counts: { pass: number; fail: number }): string | null {
  if (exit !== 0) return `${part} failed (exit ${exit ?? 'none'}, ${counts.fail} failed)`
  if (counts.pass === 0) return `${part} ran no test`
  return null
}
