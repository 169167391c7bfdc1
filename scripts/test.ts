// The whole test suite, tier by tier: `npm test` (all), or `bun run scripts/test.ts contract` (one).
// Each tier first runs its setup scripts (system packages); a tier that cannot set up or run FAILS and
// says why: nothing is skipped. Prints one closing line: "N passed, N failed".
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { echoAndCollect, testCounts } from './child-output'

const ROOT = join(import.meta.dir, '..')
const SETUP = join(ROOT, 'scripts', 'setup')
const setupScripts = (filter: (name: string) => boolean) =>
  readdirSync(SETUP)
    .filter((f) => f.endsWith('.sh') && filter(f))
    .sort()
    .map((f) => join(SETUP, f))

interface Tier {
  name: string
  setup: string[]
  command: string[]
  /** Hard limit: CI has 90 minutes for everything. */
  minutes: number
}

const TIERS: Tier[] = [
  // fastapi.sh: the reference FastAPI app that the contract tier's 422s are compared against.
  { name: 'contract', setup: [join(ROOT, 'scripts', 'typecheck.sh'), join(SETUP, 'fastapi.sh')], command: ['bun', 'test', 'tests/contract'], minutes: 10 },
  { name: 'integration', setup: setupScripts((f) => !['kernel.sh', 'fastapi.sh', 'arm64.sh', 'container.sh'].includes(f)), command: ['bun', 'test', 'tests/integration'], minutes: 35 },
  { name: 'kernel', setup: setupScripts((f) => f === 'kernel.sh'), command: ['bun', 'run', 'tests/kernel/run.ts'], minutes: 25 },
  // The ABI checks and the contract tier again, by Bun's aarch64 build under qemu-user (~2 min here).
  { name: 'arm64', setup: [join(SETUP, 'fastapi.sh'), join(SETUP, 'arm64.sh')], command: ['bun', 'run', 'tests/arm64/run.ts'], minutes: 20 },
  // Builds the image (scripts/container/build.sh: an mmdebstrap base, then podman) and runs it; the
  // receiver of its stream is the host's GStreamer, its NetworkManager the lab's.
  { name: 'container', setup: [join(SETUP, 'container.sh'), join(SETUP, 'gstreamer.sh')], command: ['bun', 'test', 'tests/container'], minutes: 25 },
]

async function run(command: string[], minutes: number): Promise<{ code: number; output: string; timedOut: boolean }> {
  const child = Bun.spawn(command, { cwd: ROOT, stdout: 'pipe', stderr: 'pipe', env: { ...process.env, PATH: `${join(ROOT, 'node_modules', '.bin')}:${process.env.PATH}` } })
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    child.kill(9)
  }, minutes * 60_000)
  const output = await echoAndCollect(child)
  clearTimeout(timer)
  return { code: child.exitCode ?? 1, output, timedOut }
}

const wanted = process.argv.slice(2)
const unknown = wanted.filter((w) => !TIERS.some((t) => t.name === w))
if (unknown.length) {
  console.error(`unknown tier(s): ${unknown.join(', ')}; tiers are ${TIERS.map((t) => t.name).join(', ')}`)
  process.exit(2)
}
const tiers = wanted.length ? TIERS.filter((t) => wanted.includes(t.name)) : TIERS

let passed = 0
let failed = 0
const summary: string[] = []
for (const tier of tiers) {
  console.log(`\n=== ${tier.name} tier ===`)
  const started = Date.now()
  let verdict = ''
  for (const script of tier.setup) {
    const r = await run(['bash', script], 20)
    if (r.code !== 0) {
      verdict = `FAILED: setup ${script.replace(ROOT + '/', '')} exited ${r.code}${r.timedOut ? ' (timed out)' : ''}`
      break
    }
  }
  if (!verdict) {
    const r = await run(tier.command, tier.minutes)
    const c = testCounts(r.output)
    if (c) {
      passed += c.passed
      failed += c.failed
    }
    if (r.timedOut) verdict = `FAILED: over its ${tier.minutes}-minute limit`
    else if (r.code !== 0) verdict = `FAILED (exit ${r.code})${c ? `: ${c.failed} failed, ${c.passed} passed` : ''}`
    else if (!c || c.passed === 0) verdict = 'FAILED: it ran no test'
    else verdict = `ok: ${c.passed} passed`
    if (verdict.startsWith('FAILED') && (!c || c.failed === 0)) failed += 1 // count the tier itself
  } else failed += 1
  summary.push(`${tier.name.padEnd(12)} ${verdict} (${Math.round((Date.now() - started) / 1000)} s)`)
}

console.log('\n=== summary ===')
for (const line of summary) console.log(line)
console.log(`${passed} passed, ${failed} failed`)
process.exit(failed ? 1 : 0)
