// The arm64 tier (npm run test:arm64): Bun's aarch64 build under qemu-user (tests/arm64/bun), no binfmt,
// no arm64 machine. First that it really is arm64 and the locked Bun version; then the ABI checks
// (tests/arm64, and the kernel tier's layout test run by the aarch64 Bun), then a slice of the contract
// tier: the files that reach native code or byte layouts (tests/arm64/slice.ts says which and why; the
// whole tier took ~5 minutes under emulation). Child Bun processes of the tests run on arm64 too
// (PERISCOPE_TEST_BUN, tests/helpers.ts); python and GStreamer helpers stay x86-64 binaries of this
// machine. Prints the files each part runs and how long each part took.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { echoAndCollect, testCounts } from '../../scripts/child-output'
import { ARM64_SLICE } from './slice'

const ROOT = join(import.meta.dir, '..', '..')
const WRAPPER = join(import.meta.dir, 'bun')
const env = { ...process.env, PERISCOPE_TEST_BUN: WRAPPER }
// Emulation is ~10× slower than this machine: a test without its own timeout gets 30 s, not Bun's 5 s.
const TEST_TIMEOUT_MS = 30_000
// Paths with ./: bun test reads a bare argument as a filter on paths, which matches more than its file.
const PARTS: { name: string; paths: { path: string; why?: string }[] }[] = [
  { name: 'ABI', paths: [{ path: './tests/arm64' }, { path: './tests/kernel/host/layout.test.ts' }] },
  { name: 'contract slice', paths: ARM64_SLICE.map((s) => ({ path: `./${s.file}`, why: s.why })) },
]

const totals = { pass: 0, fail: 0 }
const failures: string[] = []
const seconds = (since: number) => ((performance.now() - since) / 1000).toFixed(1)
const started = performance.now()

// A slice file renamed away would be a smaller slice, not an error, to bun test: refuse it here.
const missing = ARM64_SLICE.filter((s) => !existsSync(join(ROOT, s.file))).map((s) => s.file)
if (missing.length) {
  console.error(`arm64 tier: FAILED before any test: tests/arm64/slice.ts names files that do not exist: ${missing.join(', ')}`)
  console.log('\n 0 pass\n 1 fail')
  process.exit(1)
}

// A run that is not arm64, or not the locked Bun, proves nothing: stop before any test.
const probe = Bun.spawnSync([WRAPPER, '-e', 'console.log(process.arch, Bun.version)'], { cwd: ROOT, env })
const seen = probe.stdout.toString().trim()
if (probe.exitCode !== 0 || seen !== `arm64 ${Bun.version}`) {
  console.error(`arm64 tier: FAILED before any test: tests/arm64/bun answered ${JSON.stringify(seen)} (exit ${probe.exitCode}), expected "arm64 ${Bun.version}"\n${probe.stderr.toString()}`)
  console.log('\n 0 pass\n 1 fail')
  process.exit(1)
}
console.log(`arm64 tier: ${seen.replace(' ', ', Bun ')} under ${Bun.spawnSync(['qemu-aarch64-static', '--version']).stdout.toString().split('\n')[0]}`)

const timings: string[] = []
for (const part of PARTS) {
  const t = performance.now()
  console.log(`\narm64 tier: ${part.name}, ${part.paths.length} files:\n${part.paths.map((p) => `  ${p.path}${p.why ? ` (${p.why})` : ''}`).join('\n')}`)
  const child = Bun.spawn([WRAPPER, 'test', '--timeout', String(TEST_TIMEOUT_MS), '--preload', './tests/arm64/preload.ts', ...part.paths.map((p) => p.path)], { cwd: ROOT, env, stdout: 'pipe', stderr: 'pipe' })
  const output = await echoAndCollect(child)
  const { passed: pass, failed: fail } = testCounts(output) ?? { passed: 0, failed: 0 }
  totals.pass += pass
  totals.fail += fail
  const files = Number(output.match(/^Ran \d+ tests? across (\d+) files?\./m)?.[1] ?? 0)
  if (child.exitCode !== 0) failures.push(`${part.name}: bun test exited ${child.exitCode} (${fail} failed)`)
  else if (pass === 0) failures.push(`${part.name}: ran no test`)
  else if (part.name === 'contract slice' && files !== part.paths.length) failures.push(`${part.name}: bun test ran ${files} files, not the slice's ${part.paths.length}`)
  timings.push(`${part.name} ${seconds(t)} s (${pass} passed, ${fail} failed)`)
}

console.log(`\narm64 tier took ${seconds(started)} s under emulation: ${timings.join('; ')}`)
console.log(`\n ${totals.pass} pass\n ${Math.max(totals.fail, failures.length ? 1 : 0)} fail`)
if (failures.length) {
  console.error(`\nARM64 TIER FAILED:\n- ${failures.join('\n- ')}`)
  process.exit(1)
}
console.log('\narm64 tier: all passed')
