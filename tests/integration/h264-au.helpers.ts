// An access-unit checker for RTP H.264 (RFC 6184), written from the standards and independent of the
// service's own parsing: single NAL unit packets, STAP-A and FU-A are read into NAL units; NAL units with
// the same RTP timestamp are one access unit. It checks what a decoder such as ffmpeg relies on
// (H.264 7.4.1.2.3): SPS/PPS only before the first slice of a picture (an SPS or PPS after a slice starts
// a new access unit), every access unit's first slice has first_mb_in_slice 0, and one access unit per
// RTP timestamp (no timestamp comes back after another one began).

export const NAL = { SLICE: 1, IDR: 5, SEI: 6, SPS: 7, PPS: 8, AUD: 9, STAP_A: 24, FU_A: 28 } as const

/** An Exp-Golomb reader over an RBSP (emulation-prevention bytes removed). */
function readUe(rbsp: Uint8Array, bitOffset: number): number {
  let zeros = 0
  const bit = (i: number) => (rbsp[i >> 3]! >> (7 - (i & 7))) & 1
  let i = bitOffset
  while (i < rbsp.length * 8 && bit(i) === 0) {
    zeros++
    i++
  }
  i++ // the 1
  let value = 0
  for (let k = 0; k < zeros; k++) value = value * 2 + bit(i++)
  return 2 ** zeros - 1 + value
}

/** first_mb_in_slice of a slice NAL unit (type 1 or 5): the first ue(v) of its header. */
export function firstMbInSlice(nal: Uint8Array): number {
  // Enough of the header, with emulation-prevention bytes (00 00 03) removed.
  const rbsp: number[] = []
  for (let i = 1; i < Math.min(nal.length, 16); i++) {
    if (i >= 3 && nal[i] === 3 && nal[i - 1] === 0 && nal[i - 2] === 0) continue
    rbsp.push(nal[i]!)
  }
  return readUe(Uint8Array.from(rbsp), 0)
}

export interface AccessUnit {
  ts: number
  /** NAL unit types in decoding order. */
  types: number[]
  /** first_mb_in_slice of each slice, in order. */
  firstMbs: number[]
  idr: boolean
}

/** Reassembles the NAL units of an RTP H.264 stream, packet by packet. */
export class RtpH264Reader {
  /** Completed access units (the last, still open one is `open`). */
  units: AccessUnit[] = []
  open: AccessUnit | null = null
  /** Packets that were not parseable H.264 RTP, and FU-A fragments lost (a start or end missing). */
  malformed = 0
  fuBroken = 0
  private fu: { header: number; parts: Uint8Array[] } | null = null
  private lastSeq = -1

  packet(buf: Uint8Array): void {
    if (buf.length < 13 || buf[0]! >> 6 !== 2) {
      this.malformed++
      return
    }
    const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
    const seq = view.getUint16(2)
    const ts = view.getUint32(4)
    const csrc = buf[0]! & 0x0f
    let offset = 12 + csrc * 4
    if (buf[0]! & 0x10) offset += 4 + view.getUint16(offset + 2) * 4 // header extension
    let end = buf.length
    if (buf[0]! & 0x20) end -= buf[end - 1]! // padding
    const lost = this.lastSeq >= 0 && seq !== ((this.lastSeq + 1) & 0xffff)
    this.lastSeq = seq
    if (lost && this.fu) {
      this.fuBroken++
      this.fu = null
    }
    const payload = buf.subarray(offset, end)
    if (!payload.length) return
    const type = payload[0]! & 0x1f
    if (type >= 1 && type <= 23) this.nal(ts, payload)
    else if (type === NAL.STAP_A) {
      for (let i = 1; i + 2 <= payload.length; ) {
        const size = (payload[i]! << 8) | payload[i + 1]!
        i += 2
        if (i + size > payload.length || size === 0) {
          this.malformed++
          break
        }
        this.nal(ts, payload.subarray(i, i + size))
        i += size
      }
    } else if (type === NAL.FU_A) {
      if (payload.length < 3) return void this.malformed++
      const fuHeader = payload[1]!
      const start = fuHeader & 0x80
      const stop = fuHeader & 0x40
      if (start) {
        if (this.fu) this.fuBroken++
        this.fu = { header: (payload[0]! & 0xe0) | (fuHeader & 0x1f), parts: [] }
      }
      if (!this.fu) return void this.fuBroken++
      this.fu.parts.push(payload.subarray(2))
      if (stop) {
        const size = this.fu.parts.reduce((n, p) => n + p.length, 1)
        const nal = new Uint8Array(size)
        nal[0] = this.fu.header
        let at = 1
        for (const p of this.fu.parts) {
          nal.set(p, at)
          at += p.length
        }
        this.fu = null
        this.nal(ts, nal)
      }
    } else this.malformed++
  }

  private nal(ts: number, nal: Uint8Array): void {
    const type = nal[0]! & 0x1f
    if (!this.open || this.open.ts !== ts) {
      if (this.open) this.units.push(this.open)
      this.open = { ts, types: [], firstMbs: [], idr: false }
    }
    this.open.types.push(type)
    if (type === NAL.SLICE || type === NAL.IDR) this.open.firstMbs.push(firstMbInSlice(nal))
    if (type === NAL.IDR) this.open.idr = true
  }
}

/**
 * What is wrong with these access units, one sentence each (empty: none). Rules: a parameter set (SPS,
 * PPS), SEI or AUD only before the access unit's first slice; the first slice starts at macroblock 0 and
 * no later slice does (that would be a second picture); each RTP timestamp is one access unit, seen once.
 */
export function accessUnitProblems(units: AccessUnit[]): string[] {
  const problems: string[] = []
  const seen = new Set<number>()
  for (const [n, au] of units.entries()) {
    const where = `access unit ${n} (RTP ts ${au.ts}, NAL types ${au.types.join(',')})`
    if (seen.has(au.ts)) problems.push(`${where}: its RTP timestamp came back after another access unit`)
    seen.add(au.ts)
    const firstSlice = au.types.findIndex((t) => t === NAL.SLICE || t === NAL.IDR)
    if (firstSlice < 0) {
      problems.push(`${where}: no slice`)
      continue
    }
    const afterSlice = au.types.slice(firstSlice).filter((t) => t === NAL.SPS || t === NAL.PPS || t === NAL.AUD || t === NAL.SEI)
    if (afterSlice.length) problems.push(`${where}: ${afterSlice.map((t) => ({ 6: 'SEI', 7: 'SPS', 8: 'PPS', 9: 'AUD' })[t]).join(',')} after a slice starts a new access unit`)
    if (au.firstMbs[0] !== 0) problems.push(`${where}: its first slice starts at macroblock ${au.firstMbs[0]}, not 0`)
    if (au.firstMbs.slice(1).some((mb) => mb === 0)) problems.push(`${where}: a second slice starting at macroblock 0 (two pictures)`)
    const slices = au.types.filter((t) => t === NAL.SLICE || t === NAL.IDR)
    if (slices.some((t) => t === NAL.IDR) && slices.some((t) => t === NAL.SLICE)) problems.push(`${where}: IDR and non-IDR slices mixed`)
  }
  return problems
}

// ffprobe (Debian ffmpeg) as the independent decoder: its H.264 parser cuts the byte stream into access
// units by the same rules, so a parameter set between two slices of one picture shows as two packets
// with one timestamp (the second without any), two pictures, and a half picture concealed.

export interface FfPacket { pts: number | null; dts: number | null; key: boolean }
export interface FfFrame { pktDts: number | null; pictType: string; key: boolean }
export interface Decoded { packets: FfPacket[]; frames: FfFrame[]; stderr: string; exitCode: number | null }

const num = (v: string | undefined) => (v === undefined || v === 'N/A' ? null : Number(v))

/** Parses ffprobe's `-of compact` output of `-show_entries packet=pts,dts,flags:frame=pkt_dts,pict_type,key_frame`. */
export function parseProbe(stdout: string): Pick<Decoded, 'packets' | 'frames'> {
  const packets: FfPacket[] = []
  const frames: FfFrame[] = []
  for (const line of stdout.split('\n')) {
    const [kind, ...fields] = line.split('|')
    const f = Object.fromEntries(fields.map((x) => [x.slice(0, x.indexOf('=')), x.slice(x.indexOf('=') + 1)]))
    if (kind === 'packet') packets.push({ pts: num(f.pts), dts: num(f.dts), key: (f.flags ?? '').startsWith('K') })
    else if (kind === 'frame') frames.push({ pktDts: num(f.pkt_dts), pictType: f.pict_type ?? '?', key: f.key_frame === '1' })
  }
  return { packets, frames }
}

/**
 * Decodes `count` packets of the first video stream with ffprobe (`input`: its input options and `-i URL`),
 * listing every packet and every decoded picture. Killed after `timeoutMs`.
 */
export async function ffprobeDecode(input: string[], count: number, timeoutMs: number): Promise<Decoded> {
  const proc = Bun.spawn(
    ['ffprobe', '-hide_banner', '-v', 'info', ...input, '-select_streams', 'v:0', '-read_intervals', `%+#${count}`, '-show_entries', 'packet=pts,dts,flags:frame=pkt_dts,pict_type,key_frame', '-of', 'compact'],
    { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' },
  )
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  const [stdout, stderr] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  return { ...parseProbe(stdout), stderr, exitCode: proc.exitCode }
}

/** Whether the receiver lost packets (a loaded machine), which makes a decoding check say nothing. */
export const lostPackets = (d: Decoded) => /RTP: missed \d+ packets|max delay reached/.test(d.stderr)

/**
 * What is wrong with a decode, one sentence each (empty: none), counted from the first key frame on
 * (a receiver joining mid-stream cannot decode what comes before it): at least `minPictures` pictures;
 * every packet has a decoding timestamp, strictly increasing; one picture per packet, carrying that
 * packet's timestamp; as many I pictures as key packets; no concealed I picture, no DTS complaint.
 */
export function decodeProblems(d: Decoded, minPictures: number): string[] {
  const problems: string[] = []
  const firstKey = d.packets.findIndex((p) => p.key)
  if (firstKey < 0) return [`no key frame in ${d.packets.length} packets (ffprobe exited ${d.exitCode}: ${d.stderr.trim().split('\n').slice(-3).join(' / ')})`]
  const packets = d.packets.slice(firstKey)
  // Nothing before the first key frame is shown (ffmpeg's decoder waits for it), so that is the first picture.
  const frames = d.frames.slice(Math.max(0, d.frames.findIndex((f) => f.pictType === 'I')))
  // ffmpeg's RTP demuxer gives the very first packet it reads no timestamp; any other must have one.
  const dated = firstKey === 0 ? packets.slice(1) : packets
  const undated = dated.filter((p) => p.dts === null).length
  if (undated) problems.push(`${undated} packets without a timestamp (a second access unit inside a frame)`)
  const dts = dated.map((p) => p.dts).filter((t): t is number => t !== null)
  const backwards = dts.filter((t, i) => i > 0 && t <= dts[i - 1]!).length
  if (backwards) problems.push(`${backwards} packets whose DTS does not increase`)
  if (frames.length < minPictures) problems.push(`${frames.length} pictures decoded from the first key frame on, fewer than ${minPictures}`)
  if (frames.length !== packets.length) problems.push(`${frames.length} pictures from ${packets.length} packets (one access unit must be one picture)`)
  else if (frames.some((f, i) => f.pktDts !== packets[i]!.dts)) problems.push('the pictures do not carry their packets\' timestamps, one each, in order')
  const keys = packets.filter((p) => p.key).length
  const intra = frames.filter((f) => f.pictType === 'I').length
  if (intra !== keys) problems.push(`${intra} I pictures for ${keys} key packets`)
  const bad = d.stderr.split('\n').filter((l) => /concealing .* in I frame|non monotonically|Invalid|corrupt/i.test(l))
  if (bad.length) problems.push(`ffprobe said: ${[...new Set(bad.map((l) => l.replace(/0x[0-9a-f]+/, '…')))].slice(0, 4).join(' / ')}`)
  return problems
}
