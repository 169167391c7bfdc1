// The telemetry sidecars of a recording (GET /api/recordings/{name}/telemetry.ass and .csv), read from
// the recording's own subtitle track: the Matroska file is the one home of its telemetry, so rename,
// delete, retention and zip need to know nothing of it. The blocks are found by walking the clusters'
// element headers with small positioned reads (duration.ts's EBML reader); video frames are skipped
// by their sizes, never read.
import { open } from 'node:fs/promises'
import { parseTelemetryText, TELEMETRY_COLUMNS, type TelemetryValues } from '../../core/telemetry'
import { EBML, Reader, readElement, readUint, readVint, view } from './duration'

/** One cue of the text track: from `start` to `end`, in seconds of the recording. */
export interface TextCue {
  start: number
  end: number
  text: string
}

const TRACKS = 0x1654ae6b
const TRACK_ENTRY = 0xae
const TRACK_NUMBER = 0xd7
const TRACK_TYPE = 0x83
const CODEC_ID = 0x86
const SUBTITLE_TYPE = 0x11
/** How a recording's text track is stored (UTF-8 text/x-raw into matroskamux: pipeline.ts). */
const TEXT_CODEC = 'S_TEXT/UTF8'
/** A Tracks element past this is not a recording's (it holds a few tracks). */
const MAX_TRACKS_BYTES = 1 << 20
/** Header reads while walking clusters: a block header is a few bytes, a video frame is skipped. */
const WALK_WINDOW = 4096
/** Cues end where the next begins (files made before cues carried a duration have none); the last lasts this long at most. */
const LAST_CUE_S = 1

/**
 * The text track's cues, consecutive repeats merged (the recorder resends the text to keep the muxer
 * moving), each lasting until the next; null when the file has no such track (recorded without an
 * autopilot, or not a Matroska file).
 */
export async function readTextTrack(path: string): Promise<TextCue[] | null> {
  const fh = await open(path, 'r')
  try {
    const { size } = await fh.stat()
    const r = new Reader(fh, size, WALK_WINDOW)
    const ebml = await readElement(r, 0)
    if (!ebml || ebml.id !== 0x1a45dfa3 || ebml.size === null) return null
    const segment = await readElement(r, ebml.dataStart + ebml.size)
    if (!segment || segment.id !== EBML.Segment) return null
    const end = segment.size === null ? size : Math.min(size, segment.dataStart + segment.size)

    let scale = 1_000_000
    let track: number | null = null
    let clusterTime = 0
    let latest = 0
    const blocks: { at: number; text: string }[] = []
    for (let at = segment.dataStart; at < end;) {
      const el = await readElement(r, at)
      if (!el) break
      if (el.id === EBML.Cluster) {
        at = el.dataStart // its children follow, whether its size is known (finished) or not (cut short)
        continue
      }
      if (el.size === null || el.dataStart + el.size > end) break // a block cut short by a crash ends the walk
      if (el.id === EBML.Info) scale = timecodeScale(await r.bytes(el.dataStart, el.size)) ?? scale
      else if (el.id === TRACKS) {
        if (el.size > MAX_TRACKS_BYTES) return null
        track = textTrack(await r.bytes(el.dataStart, el.size))
        if (track === null) return null
      } else if (el.id === EBML.Timecode) clusterTime = readUint(await r.bytes(el.dataStart, el.size))
      else if (el.id === EBML.SimpleBlock || el.id === EBML.BlockGroup) {
        const block = el.id === EBML.SimpleBlock ? { dataStart: el.dataStart, size: el.size } : await innerBlock(r, el.dataStart, el.dataStart + el.size)
        if (block && block.size !== null) {
          const head = await r.bytes(block.dataStart, 4)
          const number = readVint(head, 0, false)
          if (number && head.length >= number.length + 3) {
            const time = clusterTime + view(head).getInt16(number.length)
            latest = Math.max(latest, time)
            if (number.value === track) {
              const headLength = number.length + 3
              const data = await r.bytes(block.dataStart + headLength, block.size - headLength)
              blocks.push({ at: time, text: new TextDecoder().decode(data) })
            }
          }
        }
      }
      at = el.dataStart + el.size
    }
    if (track === null) return null
    const seconds = (t: number) => (t * scale) / 1e9
    const cues: TextCue[] = []
    for (const block of blocks) {
      const last = cues[cues.length - 1]
      if (last && last.text === block.text) continue
      if (last) last.end = seconds(block.at)
      cues.push({ start: seconds(block.at), end: seconds(block.at), text: block.text })
    }
    const last = cues[cues.length - 1]
    if (last) last.end = Math.min(Math.max(seconds(latest), last.start), last.start + LAST_CUE_S)
    return cues
  } finally {
    await fh.close()
  }
}

/** Whether the file has the telemetry text track: its header alone is read (the listing asks this of every file). */
export async function hasTelemetryTrack(path: string): Promise<boolean> {
  const fh = await open(path, 'r').catch(() => null) // renamed or deleted since it was listed
  if (!fh) return false
  try {
    const { size } = await fh.stat()
    const r = new Reader(fh, size)
    const ebml = await readElement(r, 0)
    if (!ebml || ebml.id !== 0x1a45dfa3 || ebml.size === null) return false
    const segment = await readElement(r, ebml.dataStart + ebml.size)
    if (!segment || segment.id !== EBML.Segment) return false
    const end = segment.size === null ? size : Math.min(size, segment.dataStart + segment.size)
    for (let at = segment.dataStart; at < end;) {
      const el = await readElement(r, at)
      if (!el || el.size === null || el.id === EBML.Cluster) return false // the tracks come before the first cluster
      if (el.id === TRACKS) return el.size <= MAX_TRACKS_BYTES && textTrack(await r.bytes(el.dataStart, el.size)) !== null
      at = el.dataStart + el.size
    }
    return false
  } catch {
    return false // a malformed header is no telemetry, never an error for the listing
  } finally {
    await fh.close()
  }
}

async function innerBlock(r: Reader, from: number, to: number) {
  for (let at = from; at < to;) {
    const el = await readElement(r, at)
    if (!el || el.size === null) return null
    if (el.id === EBML.Block) return el
    at = el.dataStart + el.size
  }
  return null
}

/** Children of a master element's data: [id, data]. */
function* children(data: Uint8Array): Generator<[number, Uint8Array]> {
  for (let i = 0; i < data.length;) {
    const id = readVint(data, i, true)
    const len = id && readVint(data, i + id.length, false)
    if (!id || !len || len.unknown) return
    const start = i + id.length + len.length
    yield [id.value, data.subarray(start, start + len.value)]
    i = start + len.value
  }
}

function timecodeScale(info: Uint8Array): number | null {
  for (const [id, data] of children(info)) if (id === EBML.TimecodeScale) return readUint(data) || null
  return null
}

/** The number of the first subtitle track in UTF-8 text, or null. */
function textTrack(tracks: Uint8Array): number | null {
  for (const [id, entry] of children(tracks)) {
    if (id !== TRACK_ENTRY) continue
    let number: number | null = null
    let type: number | null = null
    let codec = ''
    for (const [field, data] of children(entry)) {
      if (field === TRACK_NUMBER) number = readUint(data)
      else if (field === TRACK_TYPE) type = readUint(data)
      else if (field === CODEC_ID) codec = new TextDecoder().decode(data).replace(/\0+$/, '')
    }
    if (number !== null && type === SUBTITLE_TYPE && codec === TEXT_CODEC) return number
  }
  return null
}

// ---- the sidecars ----

/** ASS time: H:MM:SS.cc (centiseconds). */
function assTime(seconds: number): string {
  const cs = Math.round(seconds * 100)
  const h = Math.floor(cs / 360000)
  const m = Math.floor((cs % 360000) / 6000)
  const s = Math.floor((cs % 6000) / 100)
  return `${h}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}.${String(cs % 100).padStart(2, '0')}`
}

/** An Advanced SubStation Alpha script (what players load beside a video): the cues, top left, small. */
export function toAss(cues: TextCue[], title: string): string {
  const text = (t: string) => t.replace(/[{}]/g, (c) => (c === '{' ? '(' : ')')).replace(/\\/g, '/').replace(/\r?\n/g, '\\N')
  return [
    '[Script Info]',
    `Title: ${title.replace(/[\r\n]/g, ' ')}`,
    'ScriptType: v4.00+',
    'PlayResX: 1280',
    'PlayResY: 720',
    'WrapStyle: 2',
    'ScaledBorderAndShadow: yes',
    '',
    '[V4+ Styles]',
    'Format: Name, Fontname, Fontsize, PrimaryColour, SecondaryColour, OutlineColour, BackColour, Bold, Italic, Underline, StrikeOut, ScaleX, ScaleY, Spacing, Angle, BorderStyle, Outline, Shadow, Alignment, MarginL, MarginR, MarginV, Encoding',
    'Style: Telemetry,DejaVu Sans Mono,24,&H00FFFFFF,&H000000FF,&H00000000,&H80000000,0,0,0,0,100,100,0,0,1,2,0,7,20,20,20,1',
    '',
    '[Events]',
    'Format: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text',
    ...cues.map((c) => `Dialogue: 0,${assTime(c.start)},${assTime(c.end)},Telemetry,,0,0,0,,${text(c.text)}`),
    '',
  ].join('\r\n')
}

const csvCell = (v: string | number | boolean | null) => {
  if (v === null) return ''
  const s = String(v)
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s
}

/** One row per cue: its start and end in seconds of the recording, then the values it shows. */
export function toCsv(cues: TextCue[]): string {
  const header = ['time_s', 'end_s', ...TELEMETRY_COLUMNS]
  const rows = cues.map((c) => {
    const values: TelemetryValues = parseTelemetryText(c.text)
    return [c.start.toFixed(3), c.end.toFixed(3), ...TELEMETRY_COLUMNS.map((k) => csvCell(values[k]))].join(',')
  })
  return [header.join(','), ...rows, ''].join('\r\n')
}
