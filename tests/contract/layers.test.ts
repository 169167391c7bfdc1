// The layers of the house (DESIGN.md "Shape"), read from the import statements themselves: viewer
// plugins read the media plane through core/ and media/, never a driver; media/ knows no HTTP and no
// driver. A new import across a layer fails here.
import { expect, test } from 'bun:test'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'

const ROOT = join(import.meta.dir, '..', '..')

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) return sources(path)
    return /\.tsx?$/.test(name) ? [path] : []
  })
}

/** Every module a file imports or re-exports (static and dynamic), as written. */
function importsOf(path: string): string[] {
  const text = readFileSync(path, 'utf8')
  const found: string[] = []
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]/g)) found.push(m[1]!)
  for (const m of text.matchAll(/(?:^|\n)\s*import\s*['"]([^'"]+)['"]/g)) found.push(m[1]!)
  for (const m of text.matchAll(/import\(\s*['"]([^'"]+)['"]\s*\)/g)) found.push(m[1]!)
  return found
}

/** [file, module] for every import in `dir` that `bad` refuses. */
function offenders(dir: string, bad: (module: string) => boolean): string[] {
  return sources(join(ROOT, dir)).flatMap((file) => importsOf(file).filter(bad).map((module) => `${relative(ROOT, file)} imports ${module}`))
}

const VIEWERS = ['whep', 'cockpit', 'rtsp', 'jpeg', 'mavlink', 'metrics']

test('the import reader sees every form of import', () => {
  const sample = join(ROOT, 'tests', 'contract', 'layers.test.ts')
  expect(importsOf(sample)).toEqual(['bun:test', 'node:fs', 'node:path'])
  // and the guard below is not vacuous: the viewer plugins do import core/ and media/
  const all = VIEWERS.flatMap((name) => sources(join(ROOT, 'plugins', name)).flatMap(importsOf))
  expect(all.some((m) => m.includes('/media/'))).toBe(true)
  expect(all.some((m) => m.includes('/core/'))).toBe(true)
})

test.each(VIEWERS)('plugins/%s imports no driver (it reads streams through core/ and media/)', (name) => {
  expect(offenders(join('plugins', name), (module) => /(^|\/)drivers\//.test(module))).toEqual([])
})

test('plugins/recordings imports only the storage driver it serves (the recordings store), no media driver', () => {
  expect(offenders(join('plugins', 'recordings'), (module) => /(^|\/)drivers\//.test(module) && !/(^|\/)drivers\/storage\//.test(module))).toEqual([])
})

test('media/ imports only core/, itself, the runtime and the WebRTC stack (no HTTP, no driver, no plugin)', () => {
  // Its WebRTC viewer (media/webrtc/) is one folder down: '../rtp' is media's own, '../../core/' the core.
  const allowed = (module: string) => module.startsWith('node:') || module === 'bun' || module === 'werift' || module.startsWith('./') || module.startsWith('../core/') || module.startsWith('../../core/') || /^\.\.\/[a-z-]+$/.test(module)
  expect(offenders('media', (module) => !allowed(module))).toEqual([])
})
