// Reads the time code simulated cameras paint (drivers/gstreamer/elements/python/periscope_timecode.py):
// 48 cells across the top 1/16 of the picture, most significant bit at the left, white for 1 and black
// for 0: the frame's capture time in ms since the Unix epoch. Written from the definition, not from the
// painter, so the two are checked against each other.

export const TIMECODE_BITS = 48

export interface ReadCode {
  /** The capture time (ms since the epoch). */
  ms: number
  /** Luma at each cell's centre, in the middle row of the band. */
  centres: number[]
}

/** The code in one 8-bit luma plane (`stride` bytes per row), or null when a centre is neither white nor black. */
export function readTimecode(luma: Uint8Array, width: number, height: number, stride = width): ReadCode | null {
  const row = Math.floor(height / 16 / 2)
  let ms = 0
  const centres: number[] = []
  for (let i = 0; i < TIMECODE_BITS; i++) {
    const x = Math.floor(((i + 0.5) * width) / TIMECODE_BITS)
    const y = luma[row * stride + x]!
    centres.push(y)
    if (y >= 200) ms = ms * 2 + 1
    else if (y <= 50) ms = ms * 2
    else return null
  }
  return { ms, centres }
}

/**
 * Pixels of the band (the top 1/16) that are neither white (≥ 200) nor black (≤ 50), leaving out what a
 * lossy encoder smears: `margin` pixels either side of each cell edge and of the band's lower edge.
 */
export function unclean(luma: Uint8Array, width: number, height: number, margin: number, stride = width): number {
  const rows = Math.floor(height / 16)
  const edges = Array.from({ length: TIMECODE_BITS + 1 }, (_, i) => Math.floor((i * width) / TIMECODE_BITS))
  let bad = 0
  for (let y = 0; y < rows - margin; y++) {
    for (let i = 0; i < TIMECODE_BITS; i++) {
      for (let x = edges[i]! + margin; x < edges[i + 1]! - margin; x++) {
        const v = luma[y * stride + x]!
        if (v > 50 && v < 200) bad++
      }
    }
  }
  return bad
}
