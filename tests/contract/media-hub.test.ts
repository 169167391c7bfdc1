// The hub of a running stream and its readers' queues (media/hub.ts, media/queue.ts), without a
// camera: packets are handed to the hub as its socket would. A reader that falls behind loses only its
// own packets and starts again at a key frame; a reader that throws ends alone, logged once; the
// stream's restart and stop reach readers as events.
import { expect, test } from 'bun:test'
import { createLogger, type LogRecord } from '../../core/log'
import type { HubReader, ReaderEnd, StreamHub } from '../../core/types'
import { createSocket } from 'node:dgram'
import { LoopbackFeeder } from '../../media/feeder'
import { MediaHub } from '../../media/hub'
import { READER_QUEUE_BYTES, READER_QUEUE_PACKETS, ReaderQueue } from '../../media/queue'
import { startsKeyFrame } from '../../media/rtp'
import { until } from '../helpers'

/** An H.264 RTP packet: a key frame's SPS or a P slice, `size` bytes. */
function h264(seq: number, options: { key?: boolean; size?: number; marker?: boolean } = {}): Uint8Array {
  const packet = new Uint8Array(Math.max(14, options.size ?? 100))
  packet.set([0x80, (options.marker ? 0x80 : 0) | 96, (seq >> 8) & 0xff, seq & 0xff, 0, 0, 0, 0, 0, 0, 0, 7])
  packet.set(options.key ? [0x67, 0x42] : [0x41, 0x9a], 12)
  return packet
}
/** A JPEG RTP packet: the first fragment of a frame (offset 0) or a later one. */
function jpeg(seq: number, offset: number): Uint8Array {
  const packet = new Uint8Array(100)
  packet.set([0x80, 26, (seq >> 8) & 0xff, seq & 0xff, 0, 0, 0, 0, 0, 0, 0, 7])
  packet.set([0, (offset >> 16) & 0xff, (offset >> 8) & 0xff, offset & 0xff], 12)
  return packet
}
const seqOf = (p: Uint8Array) => (p[2]! << 8) | p[3]!

function hubWithLog(members = ['cam'], encoding: 'H264' | 'JPEG' = 'H264', queue?: { packets?: number; bytes?: number }) {
  const records: LogRecord[] = []
  const log = createLogger('debug', {}, () => {})
  log.subscribe((r) => records.push(r))
  return { hub: new MediaHub({ encoding, width: 640, height: 480, fps: 30, members, log, queue }), records }
}

/** A reader that keeps what it got. */
function collector(name = 'test', extra: Partial<HubReader> = {}) {
  const got: Uint8Array[] = []
  const ends: ReaderEnd[] = []
  const reader: HubReader = { name, packet: (p) => void got.push(p), ended: (e) => void ends.push(e), ...extra }
  return { got, ends, reader }
}

test('the queue: bounded in packets and bytes; past the bound it drops what waits and starts again at the next key frame (H.264) or frame (JPEG)', () => {
  expect(READER_QUEUE_PACKETS * 1500).toBeLessThanOrEqual(READER_QUEUE_BYTES) // the stated bound: packets × MTU-sized packets
  const q = new ReaderQueue('H264', { limits: { packets: 4, bytes: 1 << 20 } })
  for (let s = 0; s < 4; s++) expect(q.push(h264(s))).toBe(true)
  expect(q.push(h264(4))).toBe(false) // full: the four waiting are stale, and this one is no key frame
  expect(q.length).toBe(0)
  expect(q.push(h264(5))).toBe(false) // still waiting for a key frame
  expect(q.dropped).toBe(6)
  expect(q.push(h264(6, { key: true }))).toBe(true)
  expect(q.push(h264(7))).toBe(true)
  expect([q.shift(), q.shift()].map((p) => seqOf(p!))).toEqual([6, 7])
  expect(q.shift()).toBeUndefined()
  expect(q.overflows).toBe(1)
  // Bytes bound: three 400-byte packets fit in 1000 bytes, the fourth does not.
  const b = new ReaderQueue('H264', { limits: { packets: 100, bytes: 1000 } })
  for (let s = 0; s < 2; s++) b.push(h264(s, { size: 400 }))
  expect(b.bytes).toBe(800)
  expect(b.push(h264(2, { key: true, size: 400 }))).toBe(true) // overflow, but a key frame: kept as the new start
  expect(b.length).toBe(1)
  // JPEG: the next frame is the next first fragment.
  const j = new ReaderQueue('JPEG', { limits: { packets: 2, bytes: 1 << 20 } })
  j.push(jpeg(0, 0))
  j.push(jpeg(1, 88))
  expect(j.push(jpeg(2, 176))).toBe(false)
  expect(j.push(jpeg(3, 0))).toBe(true)
  // A reader that asks to start at a key frame skips what comes before it, and that is no loss.
  const k = new ReaderQueue('H264', { fromKeyFrame: true })
  expect(k.push(h264(0))).toBe(false)
  expect(k.push(h264(1, { key: true }))).toBe(true)
  expect(k.dropped).toBe(0)
  expect(startsKeyFrame(jpeg(0, 0), 'JPEG')).toBe(true)
})

test('a long queue keeps its order through many pushes and shifts (no growth once drained)', () => {
  const q = new ReaderQueue('H264', { limits: { packets: 5000, bytes: 1 << 30 } })
  let next = 0
  for (let round = 0; round < 20; round++) {
    for (let i = 0; i < 300; i++) q.push(h264((round * 300 + i) & 0xffff))
    for (let i = 0; i < 300; i++) expect(seqOf(q.shift()!)).toBe(next++ & 0xffff)
  }
  expect(q.length).toBe(0)
  expect(q.bytes).toBe(0)
})

test('a reader that throws is ended alone, logged once with its reason; the others get every packet', async () => {
  const { hub, records } = hubWithLog()
  const before = collector('before')
  const after = collector('after')
  let calls = 0
  const bad = collector('bad', {
    packet: () => {
      calls++
      throw new Error('the viewer broke')
    },
  })
  hub.read(0, before.reader)
  const badReading = hub.read(0, bad.reader)
  hub.read(0, after.reader)
  for (let s = 0; s < 50; s++) hub.receive(0, h264(s, { key: s % 10 === 0 }))
  await until('every packet at the healthy readers', async () => [before.got.length, after.got.length], (n) => n[0] === 50 && n[1] === 50)
  expect(before.got.map(seqOf)).toEqual([...Array(50).keys()])
  expect(after.got.map(seqOf)).toEqual([...Array(50).keys()])
  expect(calls).toBe(1)
  expect(bad.ends).toEqual([{ reason: 'failed', detail: 'the viewer broke' }])
  const warnings = records.filter((r) => r.level === 'warn' && r.line.includes('the viewer broke'))
  expect(warnings.length).toBe(1)
  expect(warnings[0]!.line).toContain('"reader":"bad"')
  expect(hub.readerStats()).toMatchObject({ readers: 2, failed: 1 })
  badReading.close() // closing an ended reader is harmless
  // A promise that rejects ends its reader the same way.
  const rejecting = collector('rejecting', { packet: () => Promise.reject(new Error('send failed')) })
  hub.read(0, rejecting.reader)
  hub.receive(0, h264(50))
  await until('the rejecting reader ended', async () => rejecting.ends.length, (n) => n === 1)
  expect(rejecting.ends[0]).toMatchObject({ reason: 'failed', detail: 'send failed' })
  await until('the others got it', async () => after.got.length, (n) => n === 51)
})

test('a reader that stops reading (its promise never settles) loses its own packets to its bound and starts again at a key frame; the others lose none', async () => {
  const LIMIT = 64
  const { hub } = hubWithLog(['cam'], 'H264', { packets: LIMIT })
  const healthy = collector('healthy')
  let release: (() => void) | null = null
  const stuck: Uint8Array[] = []
  const slow = hub.read(0, {
    name: 'slow',
    packet: (p) => {
      stuck.push(p)
      return new Promise<void>((resolve) => (release = resolve))
    },
  })
  hub.read(0, healthy.reader)
  // 20 GOPs of 30 packets, a GOP per turn of the event loop as a socket would deliver them: far more
  // than the slow reader's bound.
  let seq = 0
  for (let gop = 0; gop < 20; gop++) {
    for (let i = 0; i < 30; i++) hub.receive(0, h264(seq++, { key: i === 0, marker: true }))
    await new Promise((resolve) => setImmediate(resolve))
  }
  await until('the healthy reader has every packet', async () => healthy.got.length, (n) => n === 600)
  expect(healthy.got.map(seqOf)).toEqual([...Array(600).keys()])
  expect(stuck.length).toBe(1) // it took one, and has not finished with it
  expect(slow.dropped).toBeGreaterThan(600 - LIMIT - 30)
  expect(hub.readerStats().dropped.slow).toBe(slow.dropped)
  expect(hub.readerStats().dropped.healthy).toBeUndefined()
  // It reads again: what waited starts at a key frame, then runs without a gap.
  release!()
  await until('the slow reader catches up', async () => stuck.length, (n) => n > 1)
  for (let i = 0; i < 200 && stuck.length < 600; i++) {
    release!()
    await Promise.resolve()
    await new Promise((r) => setImmediate(r))
  }
  const resumed = stuck.slice(1)
  expect(startsKeyFrame(resumed[0]!)).toBe(true)
  const seqs = resumed.map(seqOf)
  expect(seqs.slice(1).filter((s, i) => s !== seqs[i]! + 1)).toEqual([])
  expect(seqs.at(-1)).toBe(599)
})

test("'replaced' and 'closed': readers are ended with the reason (and the next hub), listeners hear it once; a reader of a closed hub ends at once", async () => {
  const { hub } = hubWithLog(['leader', 'follower'])
  const { hub: next } = hubWithLog(['leader', 'follower'])
  const a = collector()
  hub.read(1, a.reader)
  const heard: StreamHub[] = []
  hub.on('replaced', (n) => void heard.push(n))
  let closed = 0
  hub.on('closed', () => void closed++)
  expect(hub.memberOf('follower')).toBe(1)
  expect(hub.memberOf('other')).toBe(-1)
  expect(() => hub.read(2, a.reader)).toThrow(RangeError)
  hub.replace(next)
  hub.replace(next)
  hub.close()
  expect(heard).toEqual([next])
  expect(closed).toBe(0) // a replaced hub does not also say closed
  expect(a.ends).toEqual([{ reason: 'replaced', detail: 'the stream restarted', next }])
  hub.receive(1, h264(1)) // nothing reaches anyone after the end
  const b = collector()
  hub.read(0, b.reader)
  await until('a late reader ended', async () => b.ends.length, (n) => n === 1)
  expect(b.ends[0]!.reason).toBe('closed')
  // A stop: 'closed' with its reason.
  const c = collector()
  next.read(0, c.reader)
  const reasons: string[] = []
  next.on('closed', (r) => void reasons.push(r))
  next.close('the camera was unplugged')
  expect(reasons).toEqual(['the camera was unplugged'])
  expect(c.ends).toEqual([{ reason: 'closed', detail: 'the camera was unplugged' }])
  expect(next.readerStats().readers).toBe(0)
})

test('the hub counts what arrives and keeps the last group of pictures whatever its readers do', () => {
  const { hub } = hubWithLog()
  hub.read(0, { name: 'thrower', packet: () => { throw new Error('x') } })
  hub.receive(0, h264(1, { key: true }))
  hub.receive(0, h264(2, { marker: true }))
  expect(hub.sent(0)).toEqual({ bytes: 200, frames: 1 })
  expect(hub.lastGop(0).map(seqOf)).toEqual([1, 2])
})

test('a hub told at its creation that the stream carries sound says so before the first packet; the sound ending clears it', () => {
  const log = createLogger('error', {}, () => {})
  const told = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 30, members: ['a'], log, sound: true })
  expect(told.hasSound).toBe(true)
  expect(told.soundStats().packets).toBe(0)
  told.sendSound(null) // plugins/audio: the stream's sound ended
  expect(told.hasSound).toBe(false)
  const untold = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 30, members: ['a'], log })
  expect(untold.hasSound).toBe(false)
  untold.sendSound(new Uint8Array(15))
  expect(untold.hasSound).toBe(true)
  told.close()
  expect(told.hasSound).toBe(false)
  untold.close()
})

for (const relay of [false, true]) {
  test(`a feeder from the kept group (RTSP's clients${relay ? ', sent by the relay thread' : ', on the main thread'}): the group at once, one tick a frame ending at the newest's own timestamp, then live; none kept: from the next key frame`, async () => {
    const log = createLogger('error', {}, () => {})
    const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 30, members: ['cam'], log, relay })
    const sender = createSocket('udp4')
    const [hubPort] = relay ? await hub.listen() : [0]
    let sent = 0
    /** A packet into the hub, as the camera's child sends it (through the relay's socket when it has one). */
    const receive = async (seq: number, ts: number, key = false) => {
      const packet = h264(seq, { key, marker: true })
      new DataView(packet.buffer).setUint32(4, ts)
      if (!relay) return hub.receive(0, packet)
      sender.send(packet, hubPort!, '127.0.0.1')
      sent++
      await until('the packet through the relay', async () => hub.sent(0).frames, (n) => n === sent)
    }
    const socket = createSocket('udp4')
    const got: Uint8Array[] = []
    socket.on('message', (packet) => void got.push(new Uint8Array(packet)))
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
    const feeder = new LoopbackFeeder(log)
    try {
      const port = socket.address().port
      const fresh = feeder.feed(hub, 0, port, { name: 'rtsp', keptGroup: true }) // nothing kept yet
      await receive(1, 1000) // a P frame: no use to a decoder that has nothing
      await receive(2, 4000, true)
      await until('the key frame', async () => got.length, (n) => n >= 1)
      expect(got.map(seqOf)).toEqual([2])
      fresh.close()
      await receive(3, 7000)
      await receive(4, 10000)
      got.length = 0
      const kept = hub.lastGop(0).map((p) => p.slice())
      const reading = feeder.feed(hub, 0, port, { name: 'rtsp', keptGroup: true })
      await until('the group', async () => got.length, (n) => n >= 3) // (through the relay, a packet sent sooner may overtake the feed)
      await receive(5, 13000)
      await until('the group and the live frame', async () => got.length, (n) => n >= 4)
      expect(got.map(seqOf)).toEqual([2, 3, 4, 5])
      expect(got.map((p) => new DataView(p.buffer).getUint32(4))).toEqual([9998, 9999, 10000, 13000])
      expect(hub.lastGop(0).slice(0, 3)).toEqual(kept) // the hub's own packets (shared by its readers) are untouched
      reading.close()
    } finally {
      feeder.close()
      socket.close()
      sender.close()
      hub.close()
    }
  })
}
