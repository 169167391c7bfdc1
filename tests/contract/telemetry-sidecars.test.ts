// The telemetry sidecars' reader (drivers/storage/telemetry.ts) on Matroska files written here byte by
// byte from the Matroska specification (EBML elements, SimpleBlock and BlockGroup, a cluster of unknown
// size cut short as a power cut leaves it), no GStreamer needed: the cues come back with their times,
// repeats merged, a torn last block ignored; a file without the text track has none. The routes answer
// 404 in the contract's shape, and at most MAX_SIDECAR_READS files are read at once (503, /metrics).
import { expect, test } from 'bun:test'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { hasTelemetryTrack, readTextTrack, toAss, toCsv } from '../../drivers/storage/telemetry'
import { MAX_SIDECAR_READS } from '../../plugins/recordings'
import { parseMetrics, tempDir } from '../helpers'
import { startContractServer } from './setup'

const cat = (...parts: Uint8Array[]) => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) out.set(p, (at += p.length) - p.length)
  return out
}
const idBytes = (id: number) => {
  const bytes: number[] = []
  for (let v = id; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256)
  return Uint8Array.from(bytes)
}
/** An 8-byte EBML size (0x01 marker), or the reserved "unknown size". */
const size8 = (n: number | null) => {
  const b = new Uint8Array(8)
  b[0] = 0x01
  if (n === null) b.fill(0xff, 1)
  else for (let i = 7, v = n; i >= 1; i--, v = Math.floor(v / 256)) b[i] = v % 256
  return b
}
const el = (id: number, ...data: Uint8Array[]) => cat(idBytes(id), size8(data.reduce((n, d) => n + d.length, 0)), ...data)
const unknownSize = (id: number, ...data: Uint8Array[]) => cat(idBytes(id), size8(null), ...data)
const uint = (id: number, v: number) => el(id, Uint8Array.from([v >> 24, (v >> 16) & 255, (v >> 8) & 255, v & 255]))
const str = (id: number, s: string) => el(id, new TextEncoder().encode(s))
const block = (track: number, rel: number, data: Uint8Array) => cat(Uint8Array.from([0x80 | track, (rel >> 8) & 255, rel & 255, 0x80]), data)

const TRACK_VIDEO = el(0xae, uint(0xd7, 1), uint(0x83, 1), str(0x86, 'V_MPEG4/ISO/AVC'))
const TRACK_TEXT = el(0xae, uint(0xd7, 2), uint(0x83, 0x11), str(0x86, 'S_TEXT/UTF8'))

/** A Matroska file: video frames every 40 ms from `fromMs`, and the given cues (ms, text) as BlockGroups, in clusters of 1 s. */
function matroska(options: { cues: [number, string][]; frames: number; text?: boolean; tornTail?: boolean }): Uint8Array {
  const header = el(0x1a45dfa3, str(0x4282, 'matroska'))
  const info = el(0x1549a966, uint(0x2ad7b1, 1_000_000))
  const tracks = el(0x1654ae6b, TRACK_VIDEO, ...(options.text === false ? [] : [TRACK_TEXT]))
  const clusters: Uint8Array[] = []
  const lastSecond = Math.floor(Math.max(options.frames * 40, ...options.cues.map(([ms]) => ms)) / 1000)
  for (let second = 0; second <= lastSecond; second++) {
    const start = second * 1000
    const blocks: Uint8Array[] = [uint(0xe7, start)]
    for (let f = 0; f < options.frames; f++) if (f * 40 >= start && f * 40 < start + 1000) blocks.push(el(0xa3, block(1, f * 40 - start, new Uint8Array(200).fill(f & 255))))
    for (const [ms, text] of options.cues) if (ms >= start && ms < start + 1000) blocks.push(el(0xa0, el(0xa1, block(2, ms - start, new TextEncoder().encode(text)))))
    // The last cluster is still being written (unknown size), its last frame torn by the power cut.
    const last = second === lastSecond
    if (last && options.tornTail) blocks.push(el(0xa3, block(1, 999, new Uint8Array(500))).subarray(0, 100))
    clusters.push(last ? unknownSize(0x1f43b675, ...blocks) : el(0x1f43b675, ...blocks))
  }
  return cat(header, unknownSize(0x18538067, info, tracks, ...clusters))
}

test('cues come back with their times, repeats merged, each lasting until the next; a torn tail is ignored', async () => {
  const dir = tempDir()
  try {
    const path = join(dir, 'a.mkv')
    writeFileSync(path, matroska({ frames: 100, tornTail: true, cues: [[0, 'one'], [250, 'one'], [500, 'one'], [750, 'two\nlines'], [1000, 'two\nlines'], [2250, 'three']] }))
    expect(await hasTelemetryTrack(path)).toBe(true)
    const cues = await readTextTrack(path)
    expect(cues).toEqual([
      { start: 0, end: 0.75, text: 'one' },
      { start: 0.75, end: 2.25, text: 'two\nlines' },
      { start: 2.25, end: 3.25, text: 'three' }, // the last: one second at most
    ])
    const ass = toAss(cues!, 'a.mkv')
    expect(ass).toContain('Dialogue: 0,0:00:00.75,0:00:02.25,Telemetry,,0,0,0,,two\\Nlines')
    expect(toCsv(cues!).split('\r\n')[0]).toBe('time_s,end_s,utc,armed,mode,depth_m,heading_deg,roll_deg,pitch_deg,water_temp_c,lat,lon,battery_v,battery_pct,stream')

    const plain = join(dir, 'b.mkv')
    writeFileSync(plain, matroska({ frames: 50, text: false, cues: [] }))
    expect(await hasTelemetryTrack(plain)).toBe(false)
    expect(await readTextTrack(plain)).toBeNull()
    const junk = join(dir, 'c.mkv')
    writeFileSync(junk, new Uint8Array(1000).fill(7))
    expect(await hasTelemetryTrack(junk)).toBe(false)
    expect(await readTextTrack(junk)).toBeNull()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the sidecar routes: 404 without telemetry; at most MAX_SIDECAR_READS at once, then 503 with Retry-After, counted in /metrics', async () => {
  const dir = tempDir()
  const recordingsDir = join(dir, 'recordings')
  mkdirSync(recordingsDir)
  // Many frames: each read walks some 20,000 block headers, long enough for the requests to overlap.
  writeFileSync(join(recordingsDir, 'long.mkv'), matroska({ frames: 20_000, cues: Array.from({ length: 800 }, (_, i) => [i * 1000, `cue ${i}`] as [number, string]) }))
  writeFileSync(join(recordingsDir, 'plain.mkv'), matroska({ frames: 50, text: false, cues: [] }))
  const s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'recordings', 'metrics'], config: { dataDir: dir, recordingsDir, clientLimits: false } as never })
  try {
    const listed = (await s.call('GET', '/api/recordings')).body as any[]
    expect(listed.find((r) => r.name === 'long')?.telemetry).toBe(true)
    expect(listed.find((r) => r.name === 'plain')?.telemetry).toBeUndefined()
    const none = await s.call('GET', '/api/recordings/plain.mkv/telemetry.ass')
    expect(none.status).toBe(404)
    expect(none.body.detail).toBe('plain.mkv has no telemetry: it was recorded without an autopilot on the MAVLink link (--mavlink)')

    const answers = await Promise.all(Array.from({ length: 8 }, () => fetch(`${s.url}/api/recordings/long/telemetry.csv`)))
    const refused = answers.filter((r) => r.status === 503)
    expect(answers.filter((r) => r.status === 200).length).toBeGreaterThanOrEqual(MAX_SIDECAR_READS)
    expect(refused.length).toBeGreaterThan(0)
    expect(refused[0]!.headers.get('retry-after')).toBe('1')
    expect(((await refused[0]!.json()) as { detail: string }).detail).toContain(`${MAX_SIDECAR_READS} telemetry sidecars are being read now`)
    const ok = answers.find((r) => r.status === 200)!
    expect((await ok.text()).split('\r\n').filter(Boolean).length).toBe(801)
    const metrics = parseMetrics(await (await fetch(`${s.url}/metrics`)).text())
    expect(metrics.value('periscope_limit_hits_total', { limit: 'telemetry_sidecar_reads' })).toBe(refused.length)
  } finally {
    await s.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})
