// The ABI table (drivers/v4l2/abi.ts) as a C program that evaluates the same numbers against the kernel's
// headers: sizeof/offsetof of every field the driver uses, every ioctl number and every constant, in one
// fixed order. tests/kernel/host/layout.test.ts compiles it for x86-64 and aarch64 and reads the values
// from the assembly; tests/arm64/abi.test.ts builds it as an aarch64 shared object and reads them through
// bun:ffi on arm64.
import { CONSTANTS, IOCTLS, STRUCTS } from '../../../drivers/v4l2/abi'

/** name → C expression, in the order of the program's array. */
export const LAYOUT_ENTRIES: [string, string][] = []
for (const [s, def] of Object.entries(STRUCTS)) {
  LAYOUT_ENTRIES.push([s, `sizeof(struct ${s})`])
  for (const f of Object.keys(def.fields)) LAYOUT_ENTRIES.push([`${s}.${f}`, `offsetof(struct ${s}, ${f})`])
}
for (const k of [...Object.keys(IOCTLS), ...Object.keys(CONSTANTS)]) LAYOUT_ENTRIES.push([k, `(unsigned long)(${k})`])

/** The same names → the numbers abi.ts holds. */
export const ABI_TABLE: Record<string, number> = {}
for (const [s, def] of Object.entries(STRUCTS)) {
  ABI_TABLE[s] = def.size
  for (const [f, off] of Object.entries(def.fields)) ABI_TABLE[`${s}.${f}`] = off as number
}
Object.assign(ABI_TABLE, IOCTLS, CONSTANTS)

/** The C program: the array `periscope_values`; with `accessor`, also `periscope_layout()` returning it
 * (bun:ffi reaches functions, not data symbols). */
export function layoutProgram(options: { accessor?: boolean } = {}): string {
  return `#include <stddef.h>
#include <linux/videodev2.h>
#include <linux/usb/video.h>
#include <linux/uvcvideo.h>
const unsigned long periscope_values[] = {
${LAYOUT_ENTRIES.map(([, expr]) => `  ${expr},`).join('\n')}
};
${options.accessor ? 'const unsigned long *periscope_layout(void) { return periscope_values; }\n' : ''}`
}

/** Names the values in program order. */
export const namedValues = (values: number[]): Record<string, number> => Object.fromEntries(LAYOUT_ENTRIES.map(([name], i) => [name, values[i]!]))
