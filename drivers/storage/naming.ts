// Recording file names, in one place for the streamer (which writes them) and the recordings plugin
// (which renames them): `<label>_<YYYY-MM-DD_HH-MM-SS>.<ext>`, no colons (FAT/exFAT sticks), unique.
import { existsSync } from 'node:fs'
import { join } from 'node:path'

/** A label safe in a file name on any file system: letters, digits, '-', '_' and '.', no leading dot. */
export function safeLabel(label: string): string {
  const cleaned = label
    .normalize('NFKD')
    .replace(/[^\w.-]+/g, '-')
    .replace(/^[.-]+/, '')
    .replace(/-+$/, '')
    .slice(0, 80)
  return cleaned || 'camera'
}

const pad = (n: number) => String(n).padStart(2, '0')

export function timestamp(when: Date): string {
  return `${when.getFullYear()}-${pad(when.getMonth() + 1)}-${pad(when.getDate())}_${pad(when.getHours())}-${pad(when.getMinutes())}-${pad(when.getSeconds())}`
}

/** A file name that does not exist yet in `dir`: a suffix _2, _3 … resolves collisions. */
export function recordingFileName(dir: string, label: string, ext: string, when = new Date(), exists = (p: string) => existsSync(p)): string {
  const stem = `${safeLabel(label)}_${timestamp(when)}`
  let name = `${stem}.${ext}`
  for (let i = 2; exists(join(dir, name)); i++) name = `${stem}_${i}.${ext}`
  return name
}
