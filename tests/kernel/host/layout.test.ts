// The TypeScript ABI table against the kernel's own headers: a C file built from the table (./layout.ts) takes
// sizeof/offsetof of every field the driver uses, every ioctl number and every constant, compiled for
// x86-64 (Debian linux-libc-dev) and for aarch64 (the cross headers), so one table is proven for both.
// The values are read from the compiler's assembly output: nothing needs to run on the target.
import { afterAll, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ABI_TABLE, LAYOUT_ENTRIES, layoutProgram, namedValues } from './layout'

const dir = mkdtempSync(join(tmpdir(), 'v4l2-layout-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))
writeFileSync(join(dir, 'layout.c'), layoutProgram())

async function kernelView(compiler: string, pkg: string): Promise<Record<string, number>> {
  const out = join(dir, `${compiler}.s`)
  const cc = spawnSync(compiler, ['-S', '-O0', '-o', out, join(dir, 'layout.c')], { encoding: 'utf8' })
  if (cc.error) throw new Error(`${compiler} is missing: scripts/setup/kernel.sh (or arm64.sh) installs ${pkg}`)
  if (cc.status !== 0) throw new Error(`the layout program does not compile with ${compiler}:\n${cc.stderr}`)
  const text = await Bun.file(out).text()
  const data = text.split('periscope_values:')[1] ?? ''
  const values = [...data.matchAll(/^\s*\.(?:quad|xword|8byte)\s+(-?\d+)/gm)].map((m) => Number(BigInt.asUintN(64, BigInt(m[1]!))))
  if (values.length !== LAYOUT_ENTRIES.length) throw new Error(`${compiler}: read ${values.length} of ${LAYOUT_ENTRIES.length} values from its assembly`)
  return namedValues(values)
}

for (const [arch, compiler, pkg] of [
  ['x86-64', 'gcc', 'gcc and linux-libc-dev'],
  ['aarch64', 'aarch64-linux-gnu-gcc', 'gcc-aarch64-linux-gnu and libc6-dev-arm64-cross'],
] as const) {
  test(`${arch}: struct sizes, field offsets, ioctl numbers and constants equal the kernel headers`, async () => {
    const theirs = await kernelView(compiler, pkg)
    expect(ABI_TABLE).toEqual(theirs)
    expect(Object.keys(theirs).length).toBeGreaterThan(90)
  })
}
