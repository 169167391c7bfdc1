// docs/configuration.md lists every flag `npm start -- --help` prints (the service's and its default
// plugins'), so the page users read cannot fall behind the code.
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { BUN } from '../helpers'

const ROOT = join(import.meta.dir, '../..')

// Its own timeout: a child Bun that loads every default plugin to print --help, ~1 s alone, 3 s (of Bun's
// 5 s default) with two suites side by side on the 2 cores, 15 s there under the arm64 tier's emulation.
test('docs/configuration.md has a row for every flag of --help', () => {
  const help = Bun.spawnSync([BUN, join(ROOT, 'core/main.ts'), '--help'], { stdout: 'pipe', stderr: 'pipe', cwd: ROOT })
  expect(help.exitCode).toBe(0)
  const flags = [...help.stdout.toString().matchAll(/^ {2}(--[a-z0-9-]+)/gm)].map((m) => m[1]!).filter((f) => f !== '--help')
  expect(flags.length).toBeGreaterThan(20)
  const doc = readFileSync(join(ROOT, 'docs/configuration.md'), 'utf8')
  const rows = doc.split('\n').filter((l) => l.startsWith('| `--'))
  expect(flags.filter((f) => !rows.some((r) => r.includes('`' + f + '`') || r.includes('`' + f + ' ')))).toEqual([])
}, 90_000)
