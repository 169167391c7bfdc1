// Dependencies as a registry that moves cannot break: every one pinned to an exact version, the
// committed lockfile saying the same, and every runtime dependency imported by the code. Plain Node
// (no packages), so it runs before `npm ci` on a fresh machine. Exits 1 naming each problem.
import { readFileSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'

const root = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..')
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8'))
const problems = []

const EXACT = /^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/
for (const field of ['dependencies', 'devDependencies']) {
  for (const [name, wanted] of Object.entries(pkg[field] ?? {})) {
    if (!EXACT.test(wanted)) problems.push(`${field}.${name} is "${wanted}": pin an exact version`)
    if (lock.packages?.['']?.[field]?.[name] !== wanted) problems.push(`package-lock.json does not declare ${name}@${wanted} in ${field}: run npm install and commit the lock`)
    const locked = lock.packages?.[`node_modules/${name}`]?.version
    if (locked !== wanted) problems.push(`package-lock.json holds ${name}@${locked ?? 'nothing'}, package.json pins ${wanted}`)
  }
}

// A runtime dependency is one the code imports (tests and benches count: they ship in the repo).
const SOURCE_DIRS = ['core', 'drivers', 'plugins', 'scripts', 'tests', 'bench', 'examples']
const sources = []
const walk = (dir) => {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry)
    if (entry === 'node_modules' || entry.startsWith('.')) continue
    if (statSync(path).isDirectory()) walk(path)
    else if (/\.(ts|tsx|mjs|js)$/.test(entry)) sources.push(readFileSync(path, 'utf8'))
  }
}
for (const dir of SOURCE_DIRS) {
  try {
    walk(join(root, dir))
  } catch {}
}
const code = sources.join('\n')
for (const name of Object.keys(pkg.dependencies ?? {})) {
  const quoted = new RegExp(`['"\`]${name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(/[^'"\`]*)?['"\`]`)
  if (!quoted.test(code)) problems.push(`dependency ${name} is declared but no code imports it: remove it`)
}

if (problems.length) {
  console.error('check-deps: FAILED\n  ' + problems.join('\n  '))
  process.exit(1)
}
console.log(`check-deps: ok (${Object.keys(pkg.dependencies ?? {}).length} dependencies, ${Object.keys(pkg.devDependencies ?? {}).length} dev, all exact and locked)`)
