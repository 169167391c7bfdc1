// The TypeScript ABI table against the kernel's own headers (Debian linux-libc-dev): a C program prints
// sizeof/offsetof of every field the driver uses, every ioctl number and every constant.
import { afterAll, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CONSTANTS, IOCTLS, STRUCTS } from '../../../drivers/v4l2/abi'

const dir = mkdtempSync(join(tmpdir(), 'v4l2-layout-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function kernelView(): Record<string, number> {
  for (const h of ['/usr/include/linux/videodev2.h', '/usr/include/linux/uvcvideo.h'])
    if (!existsSync(h)) throw new Error(`${h} is missing: install linux-libc-dev (scripts/setup/kernel.sh)`)
  const lines: string[] = []
  for (const [s, def] of Object.entries(STRUCTS)) {
    lines.push(`P("${s}", sizeof(struct ${s}));`)
    for (const f of Object.keys(def.fields)) lines.push(`P("${s}.${f}", offsetof(struct ${s}, ${f}));`)
  }
  for (const k of [...Object.keys(IOCTLS), ...Object.keys(CONSTANTS)]) lines.push(`P("${k}", (unsigned long)(${k}));`)
  const src = `#include <stdio.h>
#include <stddef.h>
#include <linux/videodev2.h>
#include <linux/usb/video.h>
#include <linux/uvcvideo.h>
#define P(name, v) printf("%s %lu\\n", name, (unsigned long)(v))
int main(void) {
${lines.join('\n')}
return 0; }
`
  writeFileSync(join(dir, 'layout.c'), src)
  const cc = spawnSync('gcc', ['-Wall', '-o', join(dir, 'layout'), join(dir, 'layout.c')], { encoding: 'utf8' })
  if (cc.error) throw new Error(`gcc is missing (scripts/setup/kernel.sh installs it): ${cc.error.message}`)
  if (cc.status !== 0) throw new Error(`the layout program does not compile:\n${cc.stderr}`)
  const run = spawnSync(join(dir, 'layout'), { encoding: 'utf8' })
  return Object.fromEntries(run.stdout.trim().split('\n').map((l) => [l.split(' ')[0]!, Number(l.split(' ')[1])]))
}

const kernel = kernelView()

test('struct sizes and field offsets equal the kernel headers', () => {
  const ours: Record<string, number> = {}
  for (const [s, def] of Object.entries(STRUCTS)) {
    ours[s] = def.size
    for (const [f, off] of Object.entries(def.fields)) ours[`${s}.${f}`] = off as number
  }
  const theirs = Object.fromEntries(Object.keys(ours).map((k) => [k, kernel[k]]))
  expect(ours as Record<string, number | undefined>).toEqual(theirs)
})

test('ioctl numbers computed with _IOC equal the headers', () => {
  const theirs = Object.fromEntries(Object.keys(IOCTLS).map((k) => [k, kernel[k]]))
  expect({ ...IOCTLS } as Record<string, number | undefined>).toEqual(theirs)
})

test('constants equal the headers', () => {
  const theirs = Object.fromEntries(Object.keys(CONSTANTS).map((k) => [k, kernel[k]]))
  expect({ ...CONSTANTS } as Record<string, number | undefined>).toEqual(theirs)
})
