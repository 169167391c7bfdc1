// Recording file names, in one place for the streamer (which writes them), the recordings plugin
// (which renames them) and stills (which name them): `<label>_<YYYY-MM-DD_HH-MM-SS>`, a still's to the millisecond; no colons (FAT/exFAT sticks), unique.
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

/**
 * A still's file name, `<label>_<YYYY-MM-DD_HH-MM-SS-mmm>.jpg`: to the millisecond, so it never shares a
 * name with a recording of the same second (theirs end in the seconds); `taken` says whether a stem is
 * in use (on disk, being written, or handed out), and a suffix _2, _3 … resolves what is left.
 */
export function stillFileName(label: string, when: Date, taken: (stem: string) => boolean): string {
  const base = `${safeLabel(label)}_${timestamp(when)}-${String(when.getMilliseconds()).padStart(3, '0')}`
  let stem = base
  for (let i = 2; taken(stem); i++) stem = `${base}_${i}`
  return `${stem}.${STILL_EXTENSION}`
}

/** Stills (MAVLink's IMAGE_START_CAPTURE, POST /api/devices/capture_still) are JPEG files among the recordings. */
export const STILL_EXTENSION = 'jpg'

/** What GET /api/recordings calls a file: a still, or a recording (video, or sound alone). */
export const kindOf = (fileName: string): 'still' | 'recording' => (extensionOf(fileName) === STILL_EXTENSION ? 'still' : 'recording')

/**
 * A recording written in segments (the recorder cuts every N seconds and before 4 GiB: drivers/gstreamer/pipeline.ts)
 * is the files `<stem>_seg001.<ext>`, `<stem>_seg002.<ext>` …, one logical recording named `<stem>`.
 */
export function segmentFileName(stem: string, index: number, ext: string): string {
  return `${stem}_seg${String(index).padStart(3, '0')}.${ext}`
}

const SEGMENT = /^(.+)_seg(\d{3,})\.([^.]+)$/

/** The logical recording a segment file belongs to, and its place in it; null for a file that is no segment. */
export function segmentOf(fileName: string): { stem: string; index: number; ext: string } | null {
  const m = SEGMENT.exec(fileName)
  return m ? { stem: m[1]!, index: Number(m[2]), ext: m[3]!.toLowerCase() } : null
}

/** The recording a file belongs to as GET /api/recordings names it: `<stem>.<ext>` for a segment, else the file's own name. */
export function recordingNameOf(fileName: string): string {
  const segment = segmentOf(fileName)
  return segment ? `${segment.stem}.${segment.ext}` : fileName
}

/** A recording stem (`<label>_<timestamp>`) taken by no file in `dir`, neither as a single file nor as segments. */
export function segmentedRecordingStem(dir: string, label: string, ext: string, when = new Date(), exists = (p: string) => existsSync(p)): string {
  const base = `${safeLabel(label)}_${timestamp(when)}`
  const taken = (stem: string) => exists(join(dir, stem)) || exists(join(dir, `${stem}.${ext}`)) || exists(join(dir, segmentFileName(stem, 1, ext)))
  let stem = base
  for (let i = 2; taken(stem); i++) stem = `${base}_${i}`
  return stem
}

/** Extensions listed as recordings: what the streamer writes (mp4, mkv, avi) and their close kin, and stills taken over MAVLink (jpg). */
export const RECORDING_EXTENSIONS = ['mp4', 'mkv', 'avi', 'mov', 'm4v', 'webm', 'jpg']

/** The longest file name accepted, in UTF-8 bytes: the limit of ext4, exFAT and FAT alike. */
export const MAX_NAME_BYTES = 255

/** The extension, lower-case, without the dot ('' when there is none). */
export function extensionOf(fileName: string): string {
  const dot = fileName.lastIndexOf('.')
  return dot > 0 ? fileName.slice(dot + 1).toLowerCase() : ''
}

/** Code points whose NFKC form holds '.', '/' or '\\' ('．', '∕', '‥', …); a contract test recomputes the list. */
export const NFKC_LOOKALIKES = '\u2024-\u2026\u2100\u2101\u2105\u2106\u2488-\u249b\u33c2\u33c7\u33d8\ufe19\ufe30\ufe52\ufe68\uff0e\uff0f\uff3c\u{1f100}'
const NAME_CHAR = `[^./\\\\\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}${NFKC_LOOKALIKES}]`
const PORTABLE_CHAR = `[^./\\\\\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}:*?"<>|${NFKC_LOOKALIKES}]`
const EDGE_CHAR = `[^ ./\\\\\\p{Cc}\\p{Cf}\\p{Zl}\\p{Zp}:*?"<>|${NFKC_LOOKALIKES}]`
/**
 * unsafeNameReason as a pattern, for the API document (JSON Schema, u flag; no look-around, so pydantic's
 * Rust regex reads it alike): no separators, no leading dot, no '..', no control or formatting characters,
 * none of their look-alikes. The 255-byte limit is bytes, which a pattern cannot count: maxLength says 255.
 */
export const RECORDING_NAME_PATTERN = `^${NAME_CHAR}+(\\.${NAME_CHAR}+)*\\.?$`
/** badNewNameReason as a pattern, a little stricter: portable characters, pieces between dots that neither start nor end with a space, an extension. */
export const NEW_RECORDING_NAME_PATTERN = `^${EDGE_CHAR}(${PORTABLE_CHAR}*${EDGE_CHAR})?(\\.${EDGE_CHAR}(${PORTABLE_CHAR}*${EDGE_CHAR})?)+$`

/**
 * Why `name` is not a plain file name that can only mean a file directly inside the recordings
 * directory, or null when it is. Checked on the name and on its NFKC form, so that Unicode
 * look-alikes ('．．／', '∕') cannot become a path in any tool that normalises names later.
 */
export function unsafeNameReason(name: string): string | null {
  if (name.length === 0) return 'the name is empty'
  if (new TextEncoder().encode(name).length > MAX_NAME_BYTES) return `the name is longer than ${MAX_NAME_BYTES} bytes`
  for (const form of new Set([name, name.normalize('NFKC')])) {
    if (form.includes('/') || form.includes('\\')) return "the name contains a path separator ('/' or '\\'); give a plain file name"
    if (form.includes('..')) return "the name contains '..'"
    if (form.startsWith('.')) return 'the name starts with a dot (hidden files are not recordings)'
  }
  if (name.includes('\0')) return 'the name contains a NUL character'
  if (/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u.test(name)) return 'the name contains a control or invisible formatting character'
  if (/[\uD800-\uDFFF]/.test(name.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''))) return 'the name is not valid Unicode'
  return null
}

/** Like unsafeNameReason, plus what a new name must also respect: portable characters, no edge spaces. */
export function badNewNameReason(name: string): string | null {
  const unsafe = unsafeNameReason(name)
  if (unsafe) return unsafe
  if (/[:*?"<>|]/.test(name)) return 'the name contains one of : * ? " < > | (not allowed on FAT/exFAT cards and Windows)'
  if (name !== name.trim()) return 'the name starts or ends with a space'
  return null
}
