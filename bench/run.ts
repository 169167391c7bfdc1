// `npm run bench [name …]`: runs bench/<name>.bench.ts (all of them when no name is given), after
// bench/setup.sh installs the tools. Each prints its figures beside a baseline, with ratios.
import { readdirSync } from 'node:fs'
import { join } from 'node:path'

const DIR = import.meta.dir
const all = readdirSync(DIR).filter((f) => f.endsWith('.bench.ts')).map((f) => f.replace('.bench.ts', '')).sort()
const wanted = process.argv.slice(2)
const unknown = wanted.filter((w) => !all.includes(w))
if (unknown.length) {
  console.error(`unknown benchmark(s) ${unknown.join(', ')}; there are: ${all.join(', ')}`)
  process.exit(2)
}
const setup = Bun.spawnSync(['bash', join(DIR, 'setup.sh')], { stdout: 'inherit', stderr: 'inherit' })
if (setup.exitCode !== 0) process.exit(1)
let failed = 0
for (const name of wanted.length ? wanted : all) {
  console.log(`\n=== bench: ${name} ===`)
  const r = Bun.spawnSync(['bun', 'run', join(DIR, `${name}.bench.ts`)], { stdout: 'inherit', stderr: 'inherit', cwd: join(DIR, '..') })
  if (r.exitCode !== 0) failed++
}
process.exit(failed ? 1 : 0)
