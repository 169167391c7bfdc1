// A streaming ZIP writer for recordings: stored entries (video is already compressed), ZIP64
// wherever a size or an offset reaches 4 GiB (fflate writes no ZIP64 at all, so it cannot be used
// here), and the whole layout known before the first byte, so the archive length is exact.
//
// Why CRCs in the local headers (computed by a first pass) rather than data descriptors (bit 3):
// a stored entry with a data descriptor cannot be read by streaming readers (Java's ZipInputStream
// refuses it, others must guess where the data ends), and the headers would promise nothing the
// download could be checked against. With the CRC known up front, every reader works, and the
// download re-computes each CRC as it streams: a recording changed since the first pass aborts the
// transfer instead of producing an archive whose contents contradict its headers.
//
// Layout: [local header, data] per entry, central directory, [ZIP64 end record, ZIP64 locator],
// end record. Times: DOS time (local) plus the UT extra field (UTC seconds).

export interface ZipSource {
  /** The entry name inside the archive (UTF-8; bit 11 is set). */
  name: string
  size: number
  crc32: number
  mtimeMs: number
}

export interface ZipPlanEntry {
  source: ZipSource
  /** Offset of the local header in the archive. */
  offset: number
  localHeader: Uint8Array
}

export interface ZipPlan {
  entries: ZipPlanEntry[]
  /** Central directory, then the (ZIP64) end records: everything after the last entry's data. */
  trailer: Uint8Array
  /** Exact archive length in bytes. */
  size: number
}

const U32 = 0xffffffff
const U16 = 0xffff
const VERSION_STORED = 10
const VERSION_ZIP64 = 45
const MADE_BY_UNIX = 3 << 8
const FLAG_UTF8 = 0x0800
const FILE_MODE = 0o100644

class Bytes {
  private parts: number[] = []
  u16(v: number) {
    this.parts.push(v & 0xff, (v >>> 8) & 0xff)
    return this
  }
  u32(v: number) {
    this.u16(v & 0xffff).u16(Math.floor(v / 0x10000) & 0xffff)
    return this
  }
  u64(v: number) {
    this.u32(v % 0x100000000).u32(Math.floor(v / 0x100000000))
    return this
  }
  raw(b: Uint8Array) {
    for (const x of b) this.parts.push(x)
    return this
  }
  get length() {
    return this.parts.length
  }
  done() {
    return Uint8Array.from(this.parts)
  }
}

function dosDateTime(ms: number): { time: number; date: number } {
  const d = new Date(ms)
  if (d.getFullYear() < 1980) return { time: 0, date: (0 << 9) | (1 << 5) | 1 }
  const year = Math.min(d.getFullYear(), 2107)
  return {
    time: (d.getHours() << 11) | (d.getMinutes() << 5) | (d.getSeconds() >> 1),
    date: ((year - 1980) << 9) | ((d.getMonth() + 1) << 5) | d.getDate(),
  }
}

/** The "UT" extended timestamp extra field: modification time in UTC seconds. */
const utExtra = (ms: number) =>
  new Bytes()
    .u16(0x5455)
    .u16(5)
    .raw(Uint8Array.of(1))
    .u32(Math.max(0, Math.min(U32, Math.floor(ms / 1000))))
    .done()

/** Lays the archive out: every header, every offset and the exact length, before any data is read. */
export function planZip(sources: ZipSource[]): ZipPlan {
  const encoder = new TextEncoder()
  const entries: ZipPlanEntry[] = []
  const central = new Bytes()
  let offset = 0

  for (const source of sources) {
    const name = encoder.encode(source.name)
    const big = source.size >= U32
    const { time, date } = dosDateTime(source.mtimeMs)
    const ut = utExtra(source.mtimeMs)

    const localExtra = new Bytes()
    if (big) localExtra.u16(0x0001).u16(16).u64(source.size).u64(source.size) // ZIP64: sizes
    localExtra.raw(ut)
    const local = new Bytes()
      .u32(0x04034b50)
      .u16(big ? VERSION_ZIP64 : VERSION_STORED)
      .u16(FLAG_UTF8)
      .u16(0) // stored
      .u16(time)
      .u16(date)
      .u32(source.crc32 >>> 0)
      .u32(big ? U32 : source.size)
      .u32(big ? U32 : source.size)
      .u16(name.length)
      .u16(localExtra.length)
      .raw(name)
      .raw(localExtra.done())
      .done()
    entries.push({ source, offset, localHeader: local })

    const farOffset = offset >= U32
    const zip64 = new Bytes()
    if (big) zip64.u64(source.size).u64(source.size)
    if (farOffset) zip64.u64(offset)
    const centralExtra = new Bytes()
    if (zip64.length) centralExtra.u16(0x0001).u16(zip64.length).raw(zip64.done())
    centralExtra.raw(ut)
    central
      .u32(0x02014b50)
      .u16(MADE_BY_UNIX | VERSION_ZIP64)
      .u16(big || farOffset ? VERSION_ZIP64 : VERSION_STORED)
      .u16(FLAG_UTF8)
      .u16(0)
      .u16(time)
      .u16(date)
      .u32(source.crc32 >>> 0)
      .u32(big ? U32 : source.size)
      .u32(big ? U32 : source.size)
      .u16(name.length)
      .u16(centralExtra.length)
      .u16(0) // comment
      .u16(0) // disk
      .u16(0) // internal attributes
      .u32((FILE_MODE * 0x10000) >>> 0)
      .u32(farOffset ? U32 : offset)
      .raw(name)
      .raw(centralExtra.done())

    offset += local.length + source.size
  }

  const cdOffset = offset
  const cdSize = central.length
  const count = sources.length
  const trailer = central
  if (count >= U16 || cdOffset >= U32 || cdSize >= U32) {
    const zip64EndOffset = cdOffset + cdSize
    trailer
      .u32(0x06064b50)
      .u64(44) // size of the rest of this record
      .u16(MADE_BY_UNIX | VERSION_ZIP64)
      .u16(VERSION_ZIP64)
      .u32(0)
      .u32(0)
      .u64(count)
      .u64(count)
      .u64(cdSize)
      .u64(cdOffset)
      .u32(0x07064b50) // locator
      .u32(0)
      .u64(zip64EndOffset)
      .u32(1)
  }
  trailer.u32(0x06054b50).u16(0).u16(0).u16(Math.min(count, U16)).u16(Math.min(count, U16)).u32(Math.min(cdSize, U32)).u32(Math.min(cdOffset, U32)).u16(0)
  const bytes = trailer.done()
  return { entries, trailer: bytes, size: cdOffset + bytes.length }
}
