// The stream's sound as its hub's readers get it (media/sound.ts): one SSRC and unbroken sequence numbers
// across restarts of the sound's child, timestamps that follow the clock, and Opus silence while no sound
// comes — but not for a moment's delay of the event loop. A file's sound held behind its video (SoundBehindVideo).
import { expect, test } from 'bun:test'
import { FRAME_MS, HOLD_BEHIND_VIDEO_MS, LATE_TICK_MS, OPUS_SILENCE, SILENCE_AFTER_MS, SoundBehindVideo, SoundTimeline } from '../../media/sound'

function rtp(seq: number, ts: number, ssrc: number): Uint8Array {
  const out = new Uint8Array(12 + 10).fill(7)
  const view = new DataView(out.buffer)
  out[0] = 0x80
  out[1] = 111
  view.setUint16(2, seq)
  view.setUint32(4, ts)
  view.setUint32(8, ssrc)
  return out
}
const header = (p: Uint8Array) => {
  const view = new DataView(p.buffer, p.byteOffset)
  return { seq: view.getUint16(2), ts: view.getUint32(4), ssrc: view.getUint32(8), silence: p.length === 12 + OPUS_SILENCE.length && p[12] === 0xf8 }
}

test('restamped, silence only after a real absence, continuous across a new child', () => {
  let now = 1000
  const sent: Uint8Array[] = []
  const timeline = new SoundTimeline((p) => sent.push(p), () => now)
  // A child sends 20 ms packets for 200 ms, with a busy event loop delaying some by 150 ms: no silence.
  for (let i = 0; i < 10; i++) {
    now += i === 5 ? 150 : FRAME_MS
    timeline.fill()
    timeline.packet(rtp(100 + i, 5000 + i * 960, 0xaaaa))
  }
  expect(sent.every((p) => !header(p).silence)).toBe(true)
  // The child dies: nothing for SILENCE_AFTER_MS (the timer ticking on), then a 20 ms frame of silence every 20 ms, no burst.
  const before = sent.length
  for (let waited = FRAME_MS; waited < SILENCE_AFTER_MS; waited += FRAME_MS) {
    now += FRAME_MS
    timeline.fill()
  }
  expect(sent.length, 'silence after SILENCE_AFTER_MS, not before').toBe(before)
  now += FRAME_MS
  timeline.fill()
  const first = sent.length
  for (let i = 0; i < 5; i++) {
    now += FRAME_MS
    timeline.fill()
  }
  const silence = sent.slice(first - 1)
  expect(silence.length).toBeGreaterThanOrEqual(5)
  expect(silence.length).toBeLessThanOrEqual(7)
  expect(silence.every((p) => header(p).silence)).toBe(true)
  // A new child (another SSRC, other numbering) carries on the same timeline.
  now += FRAME_MS
  timeline.packet(rtp(40000, 123, 0xbbbb))
  const all = sent.map(header)
  expect(new Set(all.map((h) => h.ssrc)).size).toBe(1)
  for (let i = 1; i < all.length; i++) {
    expect(all[i]!.seq).toBe((all[i - 1]!.seq + 1) & 0xffff)
    const step = (all[i]!.ts - all[i - 1]!.ts) >>> 0
    expect(step).toBeGreaterThan(0)
    expect(step).toBeLessThanOrEqual(48 * (SILENCE_AFTER_MS + 200)) // follows the clock: never a jump back, never far ahead
  }
  // Silence and the new child's first packet, 20 ms later each, are 960 ticks (48 kHz) apart: on the clock.
  for (const h of all.slice(first)) expect((h.ts - all[all.indexOf(h) - 1]!.ts) >>> 0).toBe(960)
})

test('replay: earlier sound (a pre-record buffer\'s) placed at its own times from `since`, silence before it, and the live sound follows on', () => {
  let now = 10_000
  const sent: Uint8Array[] = []
  const timeline = new SoundTimeline((p) => sent.push(p), () => now)
  timeline.start()
  // Kept since 400 ms ago: the child's packets from 100 ms after that, 20 ms apart, with a gap of 180 ms
  // (its card out), the last one 20 ms ago.
  const since = now - 400
  const kept = [0, 1, 2, 3, 13, 14].map((i) => ({ at: since + 100 + i * FRAME_MS, packet: rtp(500 + i, 7000 + i * 960, 0xbbbb) }))
  timeline.replay(since, kept)
  // 100 ms of silence first (5 frames), then the kept packets, each at its own time.
  expect(sent.slice(0, 5).every((p) => header(p).silence)).toBe(true)
  const first = header(sent[0]!).ts
  const out = sent.slice(5).map(header)
  expect(out.map((h) => (h.ts - first) >>> 0)).toEqual([5, 6, 7, 8, 18, 19].map((i) => i * 960))
  expect(new Set(sent.map((p) => header(p).ssrc)).size).toBe(1)
  for (let i = 1; i < sent.length; i++) expect(header(sent[i]!).seq).toBe((header(sent[i - 1]!).seq + 1) & 0xffff)
  // The live packet of the same child that comes next follows on its own clock; no silence in between.
  timeline.fill()
  timeline.packet(rtp(515, 7000 + 15 * 960, 0xbbbb))
  expect((header(sent.at(-1)!).ts - first) >>> 0).toBe(20 * 960)
  expect(header(sent.at(-2)!).silence).toBe(false)
})

test('an event loop stalled past SILENCE_AFTER_MS: the late tick fills nothing, and the sound that waited keeps its own times (the track never runs late of the video)', () => {
  let now = 1000
  const sent: Uint8Array[] = []
  const timeline = new SoundTimeline((p) => sent.push(p), () => now)
  let ts = 5000
  let seq = 100
  const fromChild = () => timeline.packet(rtp(seq++, (ts += 960), 0xaaaa))
  for (let i = 0; i < 10; i++) {
    now += FRAME_MS
    timeline.fill()
    fromChild()
  }
  // 3 s without a tick or a read: the timer's tick runs first, then the 150 packets that waited in the socket.
  now += 3000
  timeline.fill()
  for (let i = 0; i < 150; i++) fromChild()
  for (let i = 0; i < 5; i++) {
    now += FRAME_MS
    timeline.fill()
    fromChild()
  }
  const all = sent.map(header)
  expect(all.filter((h) => h.silence).length, 'frames of silence').toBe(0)
  for (let i = 1; i < all.length; i++) expect((all[i]!.ts - all[i - 1]!.ts) >>> 0, `packet ${i}: on the child's clock`).toBe(960)
  // A tick late by less than LATE_TICK_MS still fills a real absence.
  now += LATE_TICK_MS - 1
  timeline.fill()
  for (let waited = 0; waited <= SILENCE_AFTER_MS; waited += FRAME_MS) {
    now += FRAME_MS
    timeline.fill()
  }
  expect(sent.map(header).filter((h) => h.silence).length, 'silence once the child is really gone').toBeGreaterThan(0)
})

test("behind the video: a packet goes once a frame made at or after it came; a cut splits at the key frame's moment; a camera away lets the sound go on after HOLD_BEHIND_VIDEO_MS", () => {
  let now = 0
  const out: string[] = []
  let port = 'a'
  const hold = new SoundBehindVideo((p) => out.push(`${port}${p[0]}`), () => now)
  const packet = (n: number) => new Uint8Array([n])
  for (let n = 0; n < 5; n++) hold.packet(packet(n), n * 20)
  expect(out).toEqual([]) // no frame yet
  hold.video(40)
  expect(out).toEqual(['a0', 'a1', 'a2'])
  hold.cutAsked()
  hold.video(80) // the burst, seen before the cut is reported: nothing past where the video was when asked
  expect(out).toEqual(['a0', 'a1', 'a2'])
  hold.cutAt(70, () => (port = 'b'))
  expect(out).toEqual(['a0', 'a1', 'a2', 'a3', 'b4'])
  // A cut asked for and dropped: the sound goes on with the video.
  hold.cutAsked()
  hold.packet(packet(5), 100)
  hold.video(120)
  expect(out.at(-1)).toBe('b4')
  hold.cutDropped()
  expect(out.at(-1)).toBe('b5')
  // The camera away: held up to HOLD_BEHIND_VIDEO_MS, then sent anyway.
  hold.packet(packet(6), 140)
  now = 140 + HOLD_BEHIND_VIDEO_MS - 1
  hold.packet(packet(7), now)
  expect(out.at(-1)).toBe('b5')
  now += 2
  hold.packet(packet(8), now)
  expect(out.at(-1)).toBe('b6')
})

test('a new child whose first packet was made a little before the silence sent last follows that silence by one frame, never over it', () => {
  let now = 1000
  const sent: Uint8Array[] = []
  const timeline = new SoundTimeline((p) => sent.push(p), () => now)
  timeline.packet(rtp(1, 5000, 0xaaaa), now)
  now += SILENCE_AFTER_MS + 3 * FRAME_MS
  timeline.fill() // silence up to now
  const last = header(sent.at(-1)!)
  expect(last.silence).toBe(true)
  // The new child's first packet, made 30 ms before now (its moment, not its arrival).
  timeline.packet(rtp(7, 123, 0xbbbb), now - 30)
  expect(header(sent.at(-1)!).ts).toBe((last.ts + 960) >>> 0)
})
