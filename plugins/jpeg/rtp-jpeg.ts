// RTP/JPEG (RFC 2435) back to the camera's JPEG frames, in the service: the entropy-coded data is the
// camera's own, byte for byte (never re-encoded); the headers a payloader strips are rebuilt from the
// RTP/JPEG header and its quantization tables, exactly as GStreamer's rtpjpegdepay (1.22) writes them,
// so our frames equal what any GStreamer receiver of the same packets gets (tests/integration/jpeg.test.ts).

/** JPEG Annex K zig-zag order, luma and chroma tables: the tables RFC 2435 derives from Q < 128. */
const ZIGZAG = [0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63]
const LUMA_Q = [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92, 49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99]
const CHROMA_Q = [17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99, 24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99, ...Array<number>(32).fill(99)]

/** The standard Huffman tables (JPEG Annex K.3), which RFC 2435 implies: [class<<4 | id, code lengths, symbols]. */
const AC_LUMA = [0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07, 0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xa1, 0x08, 0x23, 0x42, 0xb1, 0xc1, 0x15, 0x52, 0xd1, 0xf0, 0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0a, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe1, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa]
const AC_CHROMA = [0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71, 0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xa1, 0xb1, 0xc1, 0x09, 0x23, 0x33, 0x52, 0xf0, 0x15, 0x62, 0x72, 0xd1, 0x0a, 0x16, 0x24, 0x34, 0xe1, 0x25, 0xf1, 0x17, 0x18, 0x19, 0x1a, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3a, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49, 0x4a, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5a, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6a, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7a, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89, 0x8a, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9a, 0xa2, 0xa3, 0xa4, 0xa5, 0xa6, 0xa7, 0xa8, 0xa9, 0xaa, 0xb2, 0xb3, 0xb4, 0xb5, 0xb6, 0xb7, 0xb8, 0xb9, 0xba, 0xc2, 0xc3, 0xc4, 0xc5, 0xc6, 0xc7, 0xc8, 0xc9, 0xca, 0xd2, 0xd3, 0xd4, 0xd5, 0xd6, 0xd7, 0xd8, 0xd9, 0xda, 0xe2, 0xe3, 0xe4, 0xe5, 0xe6, 0xe7, 0xe8, 0xe9, 0xea, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa]
const DC_SYMBOLS = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]
const HUFFMAN: [number, number[], number[]][] = [
  [0x00, [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0], DC_SYMBOLS],
  [0x10, [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7d], AC_LUMA],
  [0x01, [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], DC_SYMBOLS],
  [0x11, [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77], AC_CHROMA],
]

/** RFC 2435 §4.2 / Appendix A: the luma and chroma tables (zig-zag order) a Q factor of 1..99 stands for. */
export function tablesForQ(q: number): Uint8Array {
  const factor = Math.min(99, Math.max(1, q))
  const scale = q < 50 ? Math.floor(5000 / factor) : 200 - factor * 2
  const out = new Uint8Array(128)
  for (let i = 0; i < 64; i++) {
    out[i] = Math.min(255, Math.max(1, Math.floor((LUMA_Q[ZIGZAG[i]!]! * scale + 50) / 100)))
    out[i + 64] = Math.min(255, Math.max(1, Math.floor((CHROMA_Q[ZIGZAG[i]!]! * scale + 50) / 100)))
  }
  return out
}

/** SOI, DQT ×2, DRI, SOF0, DHT ×4, SOS: the headers rtpjpegdepay (GStreamer 1.22) puts before the scan. */
export function jpegHeaders(type: number, width: number, height: number, tables: Uint8Array, dri: number): Uint8Array {
  const out: number[] = [0xff, 0xd8]
  // 8-bit tables: the first 64 bytes are table 0 (luma), the next 64 table 1 (chroma); one table serves both.
  const chroma = tables.length >= 128 ? tables.subarray(64, 128) : tables.subarray(0, 64)
  for (const [id, table] of [[0, tables.subarray(0, 64)], [1, chroma]] as const) out.push(0xff, 0xdb, 0, 67, id, ...table)
  if (dri) out.push(0xff, 0xdd, 0, 4, dri >> 8, dri & 0xff)
  const lumaSampling = (type & 0x3f) === 0 ? 0x21 : 0x22 // type 0: 4:2:2, type 1: 4:2:0
  out.push(0xff, 0xc0, 0, 17, 8, height >> 8, height & 0xff, width >> 8, width & 0xff, 3, 0, lumaSampling, 0, 1, 0x11, 1, 2, 0x11, 1)
  for (const [tc, lengths, symbols] of HUFFMAN) out.push(0xff, 0xc4, 0, 3 + lengths.length + symbols.length, tc, ...lengths, ...symbols)
  out.push(0xff, 0xda, 0, 12, 3, 0, 0, 1, 0x11, 2, 0x11, 0, 63, 0)
  return Uint8Array.from(out)
}

/**
 * Reassembles one RTP/JPEG stream into JPEG frames. A frame is whole when its fragments arrive in
 * order with no gap (offsets and sequence numbers agree) up to the packet with the marker bit; a
 * frame that lost a packet is dropped, never handed on damaged.
 */
export class RtpJpegDepayloader {
  private parts: Uint8Array[] = []
  private expectedOffset = 0
  private nextSeq = -1
  private timestamp = -1
  /** Tables sent once for a Q of 128..255 and then omitted (length 0): kept per Q, as RFC 2435 allows. */
  private tables = new Map<number, Uint8Array>()
  /** Frames completed and dropped (a lost or reordered packet). */
  frames = 0
  dropped = 0

  /** @param size the stream's size, for dimensions over 2040 (RTP/JPEG then carries 0). */
  constructor(private readonly size: { width: number; height: number }) {}

  /** Takes one RTP packet; returns a whole JPEG when this packet completes one. */
  push(packet: Uint8Array): Uint8Array | null {
    if (packet.length < 12 || packet[0]! >> 6 !== 2) return null
    const csrcs = packet[0]! & 0x0f
    let at = 12 + 4 * csrcs
    if (packet[0]! & 0x10) {
      if (packet.length < at + 4) return null
      at += 4 + 4 * ((packet[at + 2]! << 8) | packet[at + 3]!)
    }
    let end = packet.length
    if (packet[0]! & 0x20) end -= packet[end - 1]! // padding
    const marker = (packet[1]! & 0x80) !== 0
    const seq = (packet[2]! << 8) | packet[3]!
    const timestamp = ((packet[4]! << 24) | (packet[5]! << 16) | (packet[6]! << 8) | packet[7]!) >>> 0
    const inOrder = seq === this.nextSeq
    this.nextSeq = (seq + 1) & 0xffff
    if (end - at < 8) return this.drop()

    const offset = (packet[at + 1]! << 16) | (packet[at + 2]! << 8) | packet[at + 3]!
    const type = packet[at + 4]!
    const q = packet[at + 5]!
    const width = packet[at + 6]! * 8 || this.size.width
    const height = packet[at + 7]! * 8 || this.size.height
    at += 8
    if (offset === 0) {
      if (this.parts.length) this.drop() // the previous frame never got its marker
      this.timestamp = timestamp
    } else if (!inOrder || timestamp !== this.timestamp || offset !== this.expectedOffset || !this.parts.length) {
      return this.drop()
    }
    let dri = 0
    if (type >= 64) {
      if (end - at < 4) return this.drop()
      dri = (packet[at]! << 8) | packet[at + 1]!
      at += 4
    }
    if (offset === 0) {
      let tables: Uint8Array | undefined
      if (q >= 128) {
        if (end - at < 4) return this.drop()
        const length = (packet[at + 2]! << 8) | packet[at + 3]!
        at += 4
        if (length > end - at) return this.drop()
        if (length > 0) {
          tables = packet.slice(at, at + length)
          this.tables.set(q, tables)
        } else tables = this.tables.get(q)
        at += length
      } else {
        tables = this.tables.get(q) ?? tablesForQ(q)
        this.tables.set(q, tables)
      }
      if (!tables || tables.length < 64) return this.drop()
      this.parts.push(jpegHeaders(type, width, height, tables, dri))
    }
    const data = packet.subarray(at, end)
    this.parts.push(data.slice())
    this.expectedOffset = offset + data.length
    if (!marker) return null
    const frame = concat(this.parts, !endsWithEoi(data))
    this.parts = []
    this.frames++
    return frame
  }

  private drop(): null {
    if (this.parts.length) this.dropped++
    this.parts = []
    return null
  }
}

function endsWithEoi(data: Uint8Array): boolean {
  return data.length >= 2 && data[data.length - 2] === 0xff && data[data.length - 1] === 0xd9
}

function concat(parts: Uint8Array[], addEoi: boolean): Uint8Array {
  const size = parts.reduce((n, p) => n + p.length, 0) + (addEoi ? 2 : 0)
  const out = new Uint8Array(size)
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  if (addEoi) out.set([0xff, 0xd9], at)
  return out
}
