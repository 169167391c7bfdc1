// Recording durations read from the container's own header, in TypeScript, with a few positioned
// reads per file (no process per file, no whole-file read):
//   MP4/MOV  moov/mvhd, or for fragmented files (what survives a power cut) the fragments' tfdt + trun
//   Matroska Segment/Info/Duration × TimecodeScale, or the last cluster's last block when unfinished
//   AVI      the video stream header (strh), the OpenDML total (dmlh), or the main header (avih)
// Every parser answers seconds, or null when the file holds no usable duration (truncated, unfinished).
import { open, type FileHandle } from 'node:fs/promises'

/** Positioned reads through a window (64 KiB by default): a small file or a run of small headers costs one read. */
export class Reader {
  private window = new Uint8Array(0)
  private windowAt = 0

  constructor(
    private fh: FileHandle,
    readonly size: number,
    private readonly windowBytes = WINDOW,
  ) {}

  async bytes(offset: number, length: number): Promise<Uint8Array> {
    const len = Math.max(0, Math.min(length, this.size - offset))
    if (len === 0) return new Uint8Array(0)
    if (offset < this.windowAt || offset + len > this.windowAt + this.window.length) {
      const buf = new Uint8Array(Math.max(len, this.windowBytes))
      const { bytesRead } = await this.fh.read(buf, 0, Math.min(buf.length, this.size - offset), offset)
      this.window = buf.subarray(0, bytesRead)
      this.windowAt = offset
    }
    const start = offset - this.windowAt
    return this.window.subarray(start, Math.min(start + len, this.window.length))
  }
}

const WINDOW = 64 << 10

export const view = (b: Uint8Array) => new DataView(b.buffer, b.byteOffset, b.byteLength)
const ascii = (b: Uint8Array, at: number, n = 4) => String.fromCharCode(...b.subarray(at, at + n))

export async function readDuration(path: string, format: string): Promise<number | null> {
  const fh = await open(path, 'r').catch(() => null) // renamed or deleted since it was listed
  if (!fh) return null
  try {
    const { size } = await fh.stat()
    const r = new Reader(fh, size)
    switch (format.toLowerCase()) {
      case 'mp4':
      case 'm4v':
      case 'mov':
        return await mp4Duration(r)
      case 'mkv':
      case 'webm':
        return await matroskaDuration(r)
      case 'avi':
        return await aviDuration(r)
      default:
        return null
    }
  } catch {
    return null // an unreadable or malformed header is "no duration", never an error for the listing
  } finally {
    await fh.close()
  }
}

/** "HH:MM:SS" (hours grow past 99 if they must); unknown durations show as 00:00:00. */
export function formatDuration(seconds: number | null): string {
  const s = Math.max(0, Math.round(seconds ?? 0))
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${pad(Math.floor(s / 3600))}:${pad(Math.floor((s % 3600) / 60))}:${pad(s % 60)}`
}

// ---- ISO BMFF (MP4, MOV) ----

interface Box {
  type: string
  start: number
  header: number
  size: number
}

/** Boxes inside `data` (an in-memory container body). */
function* childBoxes(data: Uint8Array, from = 0, to = data.length): Generator<Box> {
  const dv = view(data)
  let at = from
  while (at + 8 <= to) {
    let size = dv.getUint32(at)
    let header = 8
    if (size === 1) {
      if (at + 16 > to) return
      size = Number(dv.getBigUint64(at + 8))
      header = 16
    } else if (size === 0) size = to - at
    if (size < header || at + size > to) return
    yield { type: ascii(data, at + 4), start: at, header, size }
    at += size
  }
}

const findBox = (data: Uint8Array, type: string, from = 0, to = data.length) => {
  for (const b of childBoxes(data, from, to)) if (b.type === type) return b
  return undefined
}

const MAX_BOX_READ = 64 << 20 // a moov of a many-hour recording is a few MB; refuse absurd sizes

async function mp4Duration(r: Reader): Promise<number | null> {
  let movieSeconds: number | null = null
  const timescales = new Map<number, number>() // track id → media timescale
  const defaultDurations = new Map<number, number>() // track id → trex default sample duration
  const trackEnds = new Map<number, number>() // track id → end of the last fragment, in track units
  let sawFragment = false

  for (let at = 0; at + 8 <= r.size;) {
    const head = await r.bytes(at, 16)
    if (head.length < 8) break
    const dv = view(head)
    let size = dv.getUint32(0)
    const type = ascii(head, 4)
    let header = 8
    if (size === 1) {
      if (head.length < 16) break
      size = Number(dv.getBigUint64(8))
      header = 16
    } else if (size === 0) size = r.size - at
    if (size < header || at + size > r.size) break // truncated: what came before still counts
    if (type === 'moov' || type === 'moof') {
      if (size > MAX_BOX_READ) return null
      const box = await r.bytes(at, size)
      if (type === 'moov') movieSeconds = parseMoov(box, header, timescales, defaultDurations)
      else {
        sawFragment = true
        parseMoof(box, header, defaultDurations, trackEnds)
      }
    }
    at += size
  }

  let fragmentSeconds: number | null = null
  if (sawFragment) {
    for (const [track, end] of trackEnds) {
      const scale = timescales.get(track)
      if (scale) fragmentSeconds = Math.max(fragmentSeconds ?? 0, end / scale)
    }
  }
  // A fragmented file's mvhd says 0 (or only the unfragmented part); the fragments are the truth.
  if (fragmentSeconds !== null && fragmentSeconds > (movieSeconds ?? 0)) return fragmentSeconds
  return movieSeconds
}

function parseMoov(moov: Uint8Array, header: number, timescales: Map<number, number>, defaults: Map<number, number>): number | null {
  const dv = view(moov)
  let seconds: number | null = null
  for (const b of childBoxes(moov, header)) {
    const body = b.start + b.header
    if (b.type === 'mvhd') {
      const v1 = moov[body] === 1
      const scale = dv.getUint32(body + (v1 ? 20 : 12))
      const duration = v1 ? Number(dv.getBigUint64(body + 24)) : dv.getUint32(body + 16)
      const unknown = v1 ? duration === Number(0xffffffffffffffffn) : duration === 0xffffffff
      if (scale > 0 && !unknown) seconds = duration / scale
    } else if (b.type === 'trak') {
      const tkhd = findBox(moov, 'tkhd', body, b.start + b.size)
      const mdia = findBox(moov, 'mdia', body, b.start + b.size)
      const mdhd = mdia && findBox(moov, 'mdhd', mdia.start + mdia.header, mdia.start + mdia.size)
      if (!tkhd || !mdhd) continue
      const tk = tkhd.start + tkhd.header
      const trackId = dv.getUint32(tk + (moov[tk] === 1 ? 20 : 12))
      const md = mdhd.start + mdhd.header
      timescales.set(trackId, dv.getUint32(md + (moov[md] === 1 ? 20 : 12)))
    } else if (b.type === 'mvex') {
      for (const trex of childBoxes(moov, body, b.start + b.size)) {
        if (trex.type !== 'trex') continue
        const t = trex.start + trex.header
        defaults.set(dv.getUint32(t + 4), dv.getUint32(t + 12))
      }
    }
  }
  return seconds
}

function parseMoof(moof: Uint8Array, header: number, defaults: Map<number, number>, ends: Map<number, number>): void {
  const dv = view(moof)
  for (const traf of childBoxes(moof, header)) {
    if (traf.type !== 'traf') continue
    let trackId = 0
    let defaultDuration = 0
    let base: number | null = null
    let total = 0
    for (const b of childBoxes(moof, traf.start + traf.header, traf.start + traf.size)) {
      const body = b.start + b.header
      const flags = dv.getUint32(body) & 0xffffff
      if (b.type === 'tfhd') {
        trackId = dv.getUint32(body + 4)
        defaultDuration = defaults.get(trackId) ?? 0
        let at = body + 8
        if (flags & 0x1) at += 8 // base data offset
        if (flags & 0x2) at += 4 // sample description index
        if (flags & 0x8) defaultDuration = dv.getUint32(at)
      } else if (b.type === 'tfdt') {
        base = moof[body] === 1 ? Number(dv.getBigUint64(body + 4)) : dv.getUint32(body + 4)
      } else if (b.type === 'trun') {
        const count = dv.getUint32(body + 4)
        let at = body + 8
        if (flags & 0x1) at += 4 // data offset
        if (flags & 0x4) at += 4 // first sample flags
        if (!(flags & 0x100)) {
          total += count * defaultDuration
          continue
        }
        const stride = 4 * (1 + (flags & 0x200 ? 1 : 0) + (flags & 0x400 ? 1 : 0) + (flags & 0x800 ? 1 : 0))
        for (let i = 0; i < count && at + 4 <= b.start + b.size; i++, at += stride) total += dv.getUint32(at)
      }
    }
    const start = base ?? ends.get(trackId) ?? 0
    ends.set(trackId, Math.max(ends.get(trackId) ?? 0, start + total))
  }
}

// ---- Matroska / WebM ----

export const EBML = {
  Segment: 0x18538067,
  Info: 0x1549a966,
  TimecodeScale: 0x2ad7b1,
  Duration: 0x4489,
  Cluster: 0x1f43b675,
  Timecode: 0xe7,
  SimpleBlock: 0xa3,
  BlockGroup: 0xa0,
  Block: 0xa1,
}

interface Vint {
  value: number
  length: number
  unknown: boolean
}

export function readVint(b: Uint8Array, at: number, keepMarker: boolean): Vint | null {
  const first = b[at]
  if (first === undefined || first === 0) return null
  const length = Math.clz32(first) - 23 // 1..8
  if (at + length > b.length) return null
  let value = keepMarker ? first : first & (0xff >> length)
  let allOnes = value === 0xff >> length
  for (let i = 1; i < length; i++) {
    value = value * 256 + b[at + i]!
    if (b[at + i] !== 0xff) allOnes = false
  }
  return { value, length, unknown: !keepMarker && allOnes }
}

export interface Element {
  id: number
  dataStart: number
  size: number | null
}

export async function readElement(r: Reader, at: number): Promise<Element | null> {
  const head = await r.bytes(at, 12)
  const id = readVint(head, 0, true)
  if (!id) return null
  const size = readVint(head, id.length, false)
  if (!size) return null
  return { id: id.value, dataStart: at + id.length + size.length, size: size.unknown ? null : size.value }
}

export const readUint = (b: Uint8Array) => b.reduce((n, byte) => n * 256 + byte, 0)

async function matroskaDuration(r: Reader): Promise<number | null> {
  const ebml = await readElement(r, 0)
  if (!ebml || ebml.id !== 0x1a45dfa3 || ebml.size === null) return null
  const segment = await readElement(r, ebml.dataStart + ebml.size)
  if (!segment || segment.id !== EBML.Segment) return null
  const segmentEnd = segment.size === null ? r.size : Math.min(r.size, segment.dataStart + segment.size)

  let scale = 1_000_000 // ns per timecode unit
  let duration: number | null = null
  let lastCluster: number | null = null
  for (let at = segment.dataStart; at < segmentEnd;) {
    const el = await readElement(r, at)
    if (!el) break
    if (el.id === EBML.Info && el.size !== null) {
      const info = await r.bytes(el.dataStart, el.size)
      for (let i = 0; i < info.length;) {
        const id = readVint(info, i, true)
        const len = id && readVint(info, i + id.length, false)
        if (!id || !len) break
        const data = info.subarray(i + id.length + len.length, i + id.length + len.length + len.value)
        if (id.value === EBML.TimecodeScale) scale = readUint(data) || scale
        if (id.value === EBML.Duration) duration = data.length === 4 ? view(data).getFloat32(0) : data.length === 8 ? view(data).getFloat64(0) : null
        i += id.length + len.length + len.value
      }
    }
    if (el.id === EBML.Cluster) {
      lastCluster = at
      if (duration) break // the header already answers; clusters are only the fallback
    }
    if (el.size === null) break // an unknown-size cluster (live writing): the rest is blocks
    at = el.dataStart + el.size
  }
  if (duration && duration > 0) return (duration * scale) / 1e9
  if (lastCluster === null) return null
  const lastTimecode = await lastBlockTimecode(r, lastCluster, segmentEnd)
  return lastTimecode === null ? null : (lastTimecode * scale) / 1e9
}

/** The latest block time from `clusterAt` to the end: the duration of an unfinished file. */
async function lastBlockTimecode(r: Reader, clusterAt: number, end: number): Promise<number | null> {
  let clusterTime = 0
  let latest: number | null = null
  for (let at = clusterAt; at < end;) {
    const el = await readElement(r, at)
    if (!el) break
    if (el.id === EBML.Cluster) {
      at = el.dataStart // step into the cluster: its children follow
      continue
    }
    if (el.size === null || el.dataStart + el.size > end) break
    if (el.id === EBML.Timecode) clusterTime = readUint(await r.bytes(el.dataStart, el.size))
    else if (el.id === EBML.SimpleBlock || el.id === EBML.BlockGroup) {
      let blockAt = el.dataStart
      if (el.id === EBML.BlockGroup) {
        const inner = await readElement(r, el.dataStart)
        if (!inner || inner.id !== EBML.Block) {
          at = el.dataStart + el.size
          continue
        }
        blockAt = inner.dataStart
      }
      const head = await r.bytes(blockAt, 11)
      const track = readVint(head, 0, false)
      if (track && head.length >= track.length + 2) {
        const t = clusterTime + view(head).getInt16(track.length)
        latest = Math.max(latest ?? 0, t)
      }
    }
    at = el.dataStart + el.size
  }
  return latest
}

// ---- AVI (RIFF, with OpenDML extensions past 1 GiB) ----

async function aviDuration(r: Reader): Promise<number | null> {
  const riff = await r.bytes(0, 12)
  if (riff.length < 12 || ascii(riff, 0) !== 'RIFF' || ascii(riff, 8) !== 'AVI ') return null
  const list = await r.bytes(12, 12)
  if (ascii(list, 0) !== 'LIST' || ascii(list, 8) !== 'hdrl') return null
  const hdrlSize = view(list).getUint32(4, true)
  if (hdrlSize > MAX_BOX_READ) return null
  const hdrl = await r.bytes(20, hdrlSize)
  let usPerFrame = 0
  let mainFrames = 0
  let odmlFrames = 0
  let video: { scale: number; rate: number; length: number } | null = null

  const walk = (from: number, to: number) => {
    const dv = view(hdrl)
    for (let at = from; at + 8 <= to;) {
      const id = ascii(hdrl, at)
      const size = dv.getUint32(at + 4, true)
      const body = at + 8
      if (body + size > hdrl.length) return
      if (id === 'LIST') walk(body + 4, body + size)
      else if (id === 'avih' && size >= 20) {
        usPerFrame = dv.getUint32(body, true)
        mainFrames = dv.getUint32(body + 16, true)
      } else if (id === 'strh' && size >= 36 && ascii(hdrl, body) === 'vids' && !video) {
        video = { scale: dv.getUint32(body + 20, true), rate: dv.getUint32(body + 24, true), length: dv.getUint32(body + 32, true) }
      } else if (id === 'dmlh' && size >= 4) odmlFrames = dv.getUint32(body, true)
      at = body + size + (size & 1)
    }
  }
  walk(4, hdrl.length)

  const frames = odmlFrames || mainFrames
  const v = video as { scale: number; rate: number; length: number } | null
  if (odmlFrames && usPerFrame) return (odmlFrames * usPerFrame) / 1e6
  if (v && v.rate > 0 && v.length > 0) return (v.length * v.scale) / v.rate
  if (frames && usPerFrame) return (frames * usPerFrame) / 1e6
  return null
}
