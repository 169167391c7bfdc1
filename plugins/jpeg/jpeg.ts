// Reading JPEG structure without decoding: a frame's size from its SOF, and whole frames out of a byte
// stream of concatenated JPEGs (what a gst-launch child writes to its stdout).

const SOI = 0xd8
const EOI = 0xd9
const SOS = 0xda

/** Markers without a length: TEM, RST0..7, SOI, EOI. */
const standalone = (m: number) => m === 0x01 || (m >= 0xd0 && m <= 0xd9)
/** Start-of-frame markers (C0..CF except DHT C4, JPG C8, DAC CC). */
const startOfFrame = (m: number) => m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc

/** The frame size a JPEG declares (its SOF), or null when it has none before the scan. */
export function jpegSize(jpeg: Uint8Array): { width: number; height: number } | null {
  if (jpeg[0] !== 0xff || jpeg[1] !== SOI) return null
  let at = 2
  while (at + 4 <= jpeg.length) {
    if (jpeg[at] !== 0xff) return null
    const marker = jpeg[at + 1]!
    if (marker === 0xff) {
      at++ // fill byte
      continue
    }
    if (standalone(marker)) {
      at += 2
      continue
    }
    const length = (jpeg[at + 2]! << 8) | jpeg[at + 3]!
    if (startOfFrame(marker) && at + 9 <= jpeg.length) {
      return { height: (jpeg[at + 5]! << 8) | jpeg[at + 6]!, width: (jpeg[at + 7]! << 8) | jpeg[at + 8]! }
    }
    if (marker === SOS) return null
    at += 2 + length
  }
  return null
}

/**
 * Cuts a byte stream of concatenated JPEGs into frames by walking their markers: segment lengths up
 * to each scan, then the entropy-coded data up to the next real marker (0xFF00 is a stuffed byte,
 * RST0..7 restart markers are inside the scan), until EOI. Bytes before an SOI are skipped.
 */
export class JpegSplitter {
  private buffer = new Uint8Array(0)
  /** Where scanning resumes in `buffer` (bytes before it belong to the frame being read). */
  private at = 0
  private inScan = false
  private started = false

  /** Feeds bytes; returns the frames they complete. */
  push(chunk: Uint8Array): Uint8Array[] {
    const joined = new Uint8Array(this.buffer.length + chunk.length)
    joined.set(this.buffer)
    joined.set(chunk, this.buffer.length)
    this.buffer = joined
    const frames: Uint8Array[] = []
    for (;;) {
      const frame = this.next()
      if (!frame) break
      frames.push(frame)
    }
    return frames
  }

  private next(): Uint8Array | null {
    const b = this.buffer
    if (!this.started) {
      let soi = -1
      for (let i = 0; i + 1 < b.length; i++) {
        if (b[i] === 0xff && b[i + 1] === SOI) {
          soi = i
          break
        }
      }
      if (soi < 0) {
        this.buffer = b.subarray(Math.max(0, b.length - 1)).slice()
        return null
      }
      this.buffer = b.subarray(soi).slice()
      this.at = 2
      this.started = true
      this.inScan = false
      return this.next()
    }
    for (;;) {
      if (this.inScan) {
        let i = this.at
        while (i + 1 < b.length && !(b[i] === 0xff && b[i + 1] !== 0x00 && b[i + 1] !== 0xff && !(b[i + 1]! >= 0xd0 && b[i + 1]! <= 0xd7))) i++
        if (i + 1 >= b.length) {
          this.at = i
          return null
        }
        this.at = i
        this.inScan = false
      }
      if (this.at + 2 > b.length) return null
      if (b[this.at] !== 0xff) {
        // Not a marker where one must be: resynchronise at the next SOI.
        this.started = false
        this.buffer = b.subarray(this.at).slice()
        return this.next()
      }
      const marker = b[this.at + 1]!
      if (marker === 0xff) {
        this.at++
        continue
      }
      if (marker === EOI) {
        const frame = b.slice(0, this.at + 2)
        this.buffer = b.subarray(this.at + 2).slice()
        this.started = false
        return frame
      }
      if (standalone(marker)) {
        this.at += 2
        continue
      }
      if (this.at + 4 > b.length) return null
      const length = (b[this.at + 2]! << 8) | b[this.at + 3]!
      if (this.at + 2 + length > b.length) return null
      this.at += 2 + length
      if (marker === SOS) this.inScan = true
    }
  }
}
