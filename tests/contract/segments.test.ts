// Parts of segmented recordings and the pre-record buffer: segment names (core/naming.ts), the
// splitmuxsink file end of a RECORDING stream and the recorder's per-segment file end (pipeline.ts), a
// feed moved at a key frame (media/feeder.ts, loopback only), the child's bus line for a new segment (monitor.ts), and the
// pre-record ring's bounds (media/hub.ts): whole groups of pictures, at most N seconds and 3 MiB.
import { expect, test } from 'bun:test'
import { segmentedRecordingStem, segmentFileName, segmentOf } from '../../core/naming'
import { parseChildLine } from '../../drivers/gstreamer/monitor'
import { createSocket } from 'node:dgram'
import { createLogger } from '../../core/log'
import { buildRecorderPipeline, FAT_SEGMENT_BYTES, matroskaFileTokens, matroskaSegmentTokens } from '../../drivers/gstreamer/pipeline'
import { LoopbackFeeder } from '../../media/feeder'
import { MediaHub, PRE_RECORD_MAX_BYTES, PreRecordRing } from '../../media/hub'
import { Relay } from '../../media/relay'
import { RtpContinuity, rtpPacket } from '../../media/rtp'
import { OPUS_SILENCE } from '../../media/sound'

test('segment names: <stem>_seg001.mkv …, read back to their recording; a stem is free only when neither file nor segments exist', () => {
  expect(segmentFileName('cam_2026-11-25_18-30-00', 1, 'mkv')).toBe('cam_2026-11-25_18-30-00_seg001.mkv')
  expect(segmentFileName('cam', 1234, 'mkv')).toBe('cam_seg1234.mkv')
  expect(segmentOf('cam_2026-11-25_18-30-00_seg002.mkv')).toEqual({ stem: 'cam_2026-11-25_18-30-00', index: 2, ext: 'mkv' })
  expect(segmentOf('cam_2026-11-25_18-30-00.mkv')).toBeNull()
  expect(segmentOf('cam_seg2.mkv')).toBeNull()
  const when = new Date(2026, 10, 25, 18, 30, 0)
  const taken = new Set(['/r/cam_2026-11-25_18-30-00_seg001.mkv', '/r/cam_2026-11-25_18-30-00_2.mkv'])
  expect(segmentedRecordingStem('/r', 'cam', 'mkv', when, (p) => taken.has(p))).toBe('cam_2026-11-25_18-30-00_3')
})

test("the file end: splitmuxsink with crash-safe Matroska in each file, cut by time and always below FAT's 4 GiB; a '%' of the directory stays a '%'", () => {
  expect(FAT_SEGMENT_BYTES).toBeLessThan(4 * 1024 ** 3)
  const tokens = matroskaFileTokens('/media/100%/cam', { seconds: 600, bytes: FAT_SEGMENT_BYTES })
  expect(tokens).toContain('location=/media/100%%/cam_seg%03d.mkv')
  expect(tokens).toContain('max-size-time=600000000000')
  expect(tokens).toContain(`max-size-bytes=${FAT_SEGMENT_BYTES}`)
  expect(tokens.find((t) => t.startsWith('muxer-properties='))).toContain('max-cluster-duration=(guint64)250000000')
  expect(tokens.find((t) => t.startsWith('sink-properties='))).toContain('buffer-mode=(int)2')
  // gst-launch -m prints the segment each time one opens; quoted when the path needs it.
  expect(parseChildLine('Got message #89 from element "mux" (element): splitmuxsink-fragment-opened, location=(string)/r/cam_seg002.mkv, running-time=(guint64)15475679;')).toEqual({ kind: 'segment', path: '/r/cam_seg002.mkv' })
  expect(parseChildLine('Got message #9 from element "mux" (element): splitmuxsink-fragment-opened, location=(string)"/r/my\\ cam_seg001.mkv", running-time=(guint64)0;')).toEqual({ kind: 'segment', path: '/r/my cam_seg001.mkv' })
})

/** An H.264 RTP packet of frame `frame` at 30 fps: sequence number, RTP timestamp, a key frame's SPS or a P slice. */
function h264(seq: number, frame: number, options: { key?: boolean; ssrc?: number; size?: number } = {}): Uint8Array {
  const packet = new Uint8Array(Math.max(14, options.size ?? 14))
  const view = new DataView(packet.buffer)
  packet.set([0x80, 0xe0, 0, 0])
  view.setUint16(2, seq & 0xffff)
  view.setUint32(4, (frame * 3000) >>> 0)
  view.setUint32(8, options.ssrc ?? 7)
  packet.set(options.key ? [0x67, 0x42] : [0x41, 0x9a], 12)
  return packet
}

test('the pre-record ring: whole groups of pictures from a key frame, spanning at most N seconds, at most 3 MiB; a gap or a new SSRC empties it', () => {
  const ring = new PreRecordRing(3)
  ring.push(h264(1, 0)) // before any key frame: nothing to start from
  expect(ring.packets).toEqual([])
  // 10 s of 30 fps, a key frame each second, one packet per frame.
  for (let f = 1; f <= 300; f++) ring.push(h264(f + 1, f, { key: f % 30 === 0 }))
  const kept = ring.packets
  expect(kept[0]![12]).toBe(0x67) // starts on a key frame
  const span = (new DataView(kept.at(-1)!.buffer).getUint32(4) - new DataView(kept[0]!.buffer).getUint32(4)) / 90_000
  expect(span).toBeLessThanOrEqual(3)
  expect(span).toBeGreaterThan(2)
  expect(kept.length).toBe(91) // frames 210..300
  // A lost packet: nothing can be decoded across it.
  ring.push(h264(303, 302))
  expect(ring.packets).toEqual([])
  ring.push(h264(304, 303, { key: true }))
  expect(ring.packets).toHaveLength(1)
  ring.push(h264(305, 304, { ssrc: 8 })) // the camera's child restarted
  expect(ring.packets).toEqual([])
  // Bounded in bytes: big groups push the oldest out, whatever the seconds allow.
  const big = new PreRecordRing(30)
  for (let f = 0; f < 300; f++) big.push(h264(1000 + f, f, { key: f % 30 === 0, size: 1400 * 20 }))
  const bytes = big.packets.reduce((n, p) => n + p.length, 0)
  expect(bytes).toBeLessThanOrEqual(PRE_RECORD_MAX_BYTES)
  expect(big.packets[0]![12]).toBe(0x67)
})

test('RTP continuity: a new timeline (a restarted camera child) is rewritten to follow the old one as long after as the camera was away (a frame at least); the first passes untouched', () => {
  let now = 0
  const c = new RtpContinuity(3000, () => now)
  const seqOf = (p: Uint8Array) => new DataView(p.buffer, p.byteOffset).getUint16(2)
  const tsOf = (p: Uint8Array) => new DataView(p.buffer, p.byteOffset).getUint32(4)
  const first = h264(65534, 10)
  expect(c.next(first)).toBe(first) // unchanged, the same object
  c.next(h264(65535, 11))
  // The child restarted: another SSRC, sequence number and timestamp.
  const restarted = h264(500, 7777, { ssrc: 99 })
  const out = c.next(restarted)
  expect([seqOf(out), tsOf(out)]).toEqual([0, 12 * 3000])
  expect([seqOf(restarted), tsOf(restarted)]).toEqual([500, 7777 * 3000]) // the hub's copy is not touched
  const after = c.next(h264(501, 7778, { ssrc: 99 }))
  expect([seqOf(after), tsOf(after)]).toEqual([1, 13 * 3000])
  // Restarted again, after 2 s without a packet (60 frames at 30 fps, 3000 ticks each): 2 s later.
  now += 2000
  const late = c.next(h264(9, 100, { ssrc: 7 }))
  expect([seqOf(late), tsOf(late)]).toEqual([2, (13 + 60) * 3000])
})

test("a recorder segment's file end: a plain matroskamux with the crash-safe settings (250 ms clusters, unbuffered writes, offset to zero), no splitmuxsink; one video pad per member", () => {
  const file = matroskaSegmentTokens('/r/cam_seg002.mkv')
  expect(file.slice(0, 2)).toEqual(['matroskamux', 'name=mux'])
  for (const t of ['min-cluster-duration=250000000', 'max-cluster-duration=250000000', 'offset-to-zero=true', 'buffer-mode=unbuffered', 'location=/r/cam_seg002.mkv']) expect(file).toContain(t)
  const tokens = buildRecorderPipeline('H264', [5000, 5001], '/r/cam_seg002.mkv', { textPort: 5002, soundPort: 5003 })
  expect(tokens.join(' ')).not.toContain('splitmuxsink')
  expect(tokens.filter((t) => t === 'mux.video_%u')).toHaveLength(2)
  expect(tokens).toContain('mux.subtitle_%u')
  expect(tokens).toContain('mux.audio_%u')
})

/**
 * A loopback feed moved to another port (Feed.retarget, how the recorder cuts segments): every packet
 * before the next key frame to the old port, the key frame and all after to the new one, none lost or
 * sent twice; on the relay's thread as on the main thread.
 */
for (const relay of [true, false]) {
  test(`a feed retargeted at the next key frame (${relay ? "the relay's thread" : 'the main thread'}): each packet reaches exactly one port, the cut on the key frame`, async () => {
    const log = createLogger('error')
    const hub = new MediaHub({ encoding: 'H264', width: 320, height: 240, fps: 30, members: ['cam'], log, relay })
    const [hubPort] = await hub.listen()
    const receivers = await Promise.all([0, 1].map(() => receiverSocket()))
    const input = createSocket('udp4')
    input.on('error', () => {})
    const feeder = new LoopbackFeeder(log)
    try {
      const feed = feeder.feed(hub, 0, receivers[0]!.port, { name: 'recorder', from: 'key' })
      // The relay's thread gets the feed by message and the packets by socket: a packet can overtake it.
      if (relay) await Relay.shared(log).settled()
      const got = () => receivers[0]!.seqs.length + receivers[1]!.seqs.length
      // One packet at a time, each waited for: the order is the test's, not the scheduler's.
      const send = async (seq: number, key: boolean) => {
        const before = got()
        input.send(h264(seq, seq, { key }), hubPort!, '127.0.0.1')
        await waitUntil(() => got() > before)
      }
      await send(1, true)
      for (let seq = 2; seq <= 5; seq++) await send(seq, false)
      let switched = 0
      feed.retarget(receivers[1]!.port, () => switched++)
      if (relay) await Relay.shared(log).settled()
      for (let seq = 6; seq <= 9; seq++) await send(seq, false) // not key frames: still the old port
      await send(10, true)
      for (let seq = 11; seq <= 14; seq++) await send(seq, false)
      expect(receivers[0]!.seqs).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9])
      expect(receivers[1]!.seqs).toEqual([10, 11, 12, 13, 14])
      await waitUntil(() => switched > 0)
      expect(switched).toBe(1)
      feed.close()
    } finally {
      input.close()
      feeder.close()
      for (const r of receivers) r.close()
      hub.close()
    }
  })
}

/**
 * A segment's sound moves at its key frame's moment (feeder.ts SoundFeed.cutAt), not when that frame
 * came: the camera's encoder holds 0.6 s of frames and then delivers them at once (a loaded machine),
 * while the sound comes on time. The old file gets the sound made before its next key frame and none
 * after; the new one the sound up to its newest frame, and none made after the video stopped coming.
 */
test("a segment's sound is cut at its key frame's moment, not when the late frame came; none goes past the video", async () => {
  const log = createLogger('error')
  const hub = new MediaHub({ encoding: 'H264', width: 320, height: 240, fps: 30, members: ['cam'], log, relay: false })
  const receivers = await Promise.all([0, 1].map(() => receiverSocket()))
  const feeder = new LoopbackFeeder(log)
  try {
    const feed = feeder.feedSound(hub, receivers[0]!.port, { name: 'recorder', continuous: true, behindVideo: true })
    const frameMs = 1000 / 30
    const KEY = 15
    const LAST = 35 // the last frame delivered: the video stops coming there, the sound goes on
    let sounds = 0
    let frames = 0
    let asked = false
    const deliver = () => hub.receive(0, h264(frames, frames, { key: frames++ % KEY === 0 }))
    const t0 = performance.now()
    while (performance.now() - t0 < 1400) {
      const now = performance.now() - t0
      while (sounds * 20 <= now) hub.sendSound(rtpPacket(111, sounds, sounds++ * 960, 5, OPUS_SILENCE))
      if (!asked && now >= 12 * frameMs) {
        feed.cutAsked() // the recorder asks for the cut; its key frame is late
        asked = true
      }
      if (frames >= 10 && frames <= 27) {
        // Frames 10 to 27 held by the encoder, delivered at once at frame 27's time; the relay's thread
        // reports the switch at the key frame once it sent it.
        if (now >= 27 * frameMs) {
          while (frames <= 27) deliver()
          await Bun.sleep(0)
          feed.cutAt(receivers[1]!.port, KEY * 3000)
        }
      } else if (frames <= LAST && frames * frameMs <= now) deliver()
      await Bun.sleep(2)
    }
    // When each sound packet was made, on the clock the feed used; the key frame's and the last frame's moments.
    const moments = Array.from({ length: sounds }, (_, i) => hub.soundMadeAt(i * 960)!)
    const [cut, end] = [hub.madeAt(0, KEY * 3000)!, hub.madeAt(0, LAST * 3000)!]
    const old = moments.filter((m) => m < cut).length
    const next = moments.filter((m) => m >= cut && m <= end).length
    await waitUntil(() => receivers[0]!.seqs.length >= old - 3 && receivers[1]!.seqs.length >= next - 3)
    await Bun.sleep(50) // what would come past the video, sent as it came, would be here by now
    // Within 3 packets (60 ms) each way: the clocks' anchors (the quickest packet so far) can move as the
    // test runs, by more on a loaded machine. Sent as it came, the old file got 20 more and the new 9 fewer.
    expect(Math.abs(receivers[0]!.seqs.length - old), `old file: ${receivers[0]!.seqs.length} packets, ${old} made before the key frame`).toBeLessThanOrEqual(3)
    expect(Math.abs(receivers[1]!.seqs.length - next), `new file: ${receivers[1]!.seqs.length} packets, ${next} made up to the last frame`).toBeLessThanOrEqual(3)
    expect(sounds - old - next).toBeGreaterThan(5) // made after the last frame: held, never sent
    feed.close()
  } finally {
    feeder.close()
    for (const r of receivers) r.close()
    hub.close()
  }
})

/** A loopback UDP socket noting the RTP sequence numbers it receives. */
async function receiverSocket(): Promise<{ port: number; seqs: number[]; close(): void }> {
  const socket = createSocket('udp4')
  const seqs: number[] = []
  socket.on('error', () => {})
  socket.on('message', (m) => seqs.push(m.readUInt16BE(2)))
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()))
  return { port: socket.address().port, seqs, close: () => socket.close() }
}

async function waitUntil(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await Bun.sleep(2)
  }
}
