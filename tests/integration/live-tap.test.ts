// The stream's hub (media/hub.ts): a running stream's RTP reaches the service beside its endpoints,
// for UDP and RECORDING jobs alike, one socket per member; readers coming and leaving never cost the
// configured endpoint a packet; an H.264 hub keeps the last group of pictures.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, statSync } from 'node:fs'
import type { StreamHub } from '../../core/types'
import { startsKeyFrame } from '../../media/rtp'
import { freePort, requireGStreamer, RtpCounter, simulatedJob, testStreamer, waitFor } from './gstreamer.helpers'

const { streamer } = testStreamer()
beforeAll(() => requireGStreamer())
afterAll(() => streamer.stopAll())

/** RTP sequence numbers of one subscriber, in arrival order. */
function watch(hub: StreamHub, member: number) {
  const seqs: number[] = []
  const payloadTypes = new Set<number>()
  const reading = hub.read(member, {
    name: 'test',
    packet: (p) => {
      seqs.push((p[2]! << 8) | p[3]!)
      payloadTypes.add(p[1]! & 0x7f)
    },
  })
  return { seqs, payloadTypes, stop: () => reading.close() }
}

test('a UDP stream: the hub carries the RTP the endpoint gets, with no gap while fifty viewers come and go (the child is never touched)', async () => {
  const port = freePort()
  const endpoint = await RtpCounter.open(port)
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', ports: [port] })
  try {
    expect(streamer.live(job.bus_info)).toBeNull()
    await streamer.start(job)
    const { hub, member } = streamer.live(job.bus_info)!
    expect(member).toBe(0)
    expect(hub).toMatchObject({ encoding: 'H264', width: 320, height: 240, fps: 30, members: 1 })
    const first = watch(hub, 0)
    await waitFor('packets at the hub', () => first.seqs.length > 30, 15_000)
    expect([...first.payloadTypes]).toEqual([96])
    // Fifty viewers join and leave while the stream runs.
    for (let i = 0; i < 50; i++) watch(hub, 0).stop()
    const before = endpoint.packets
    await waitFor('more packets at the endpoint', () => endpoint.packets > before + 60, 15_000)
    first.stop()
    // The hub is a copy of what the endpoint receives: consecutive sequence numbers, none missing.
    const gaps = first.seqs.slice(1).filter((seq, i) => seq !== ((first.seqs[i]! + 1) & 0xffff))
    expect(gaps).toEqual([])
    expect(endpoint.packets).toBeGreaterThanOrEqual(first.seqs.length)
  } finally {
    await streamer.stop(job.bus_info)
    endpoint.close()
  }
  expect(streamer.live(job.bus_info)).toBeNull()
}, 40_000)

test('an H.264 hub keeps the last group of pictures: it opens on the latest key frame, has no gap, and ends with the newest packet', async () => {
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', fps: 30 })
  try {
    await streamer.start(job)
    const { hub } = streamer.live(job.bus_info)!
    let newest: Uint8Array | null = null
    const keyFrames = new Set<number>()
    const reading = hub.read(0, {
      name: 'test',
      packet: (packet) => {
        newest = packet
        if (startsKeyFrame(packet, 'H264')) keyFrames.add(timestamp(packet))
      },
    })
    // Past a second key frame, the kept group is that one's (and holds a few frames). The reader drains
    // in its own turn, so the check waits for a moment it has caught up with the hub (between frames).
    await waitFor(
      'a second key frame, frames after it, and the reader caught up',
      () => keyFrames.size >= 2 && new Set(hub.lastGop(0).map(timestamp)).size >= 3 && hub.lastGop(0).at(-1) === newest,
      20_000,
    )
    expect(timestamp(hub.lastGop(0)[0]!)).toBe([...keyFrames].at(-1)!)
    const gop = hub.lastGop(0)
    reading.close()
    expect(startsKeyFrame(gop[0]!, 'H264')).toBe(true)
    expect(gop.slice(1).filter((p) => startsKeyFrame(p, 'H264'))).toEqual([]) // only the latest key frame
    const seqs = gop.map((p) => (p[2]! << 8) | p[3]!)
    expect(seqs.slice(1).filter((seq, i) => seq !== ((seqs[i]! + 1) & 0xffff))).toEqual([])
    expect(gop.at(-1)).toBe(newest!) // the very packet the subscriber got last
    // At most one key-frame interval of frames (x264 key-int-max = fps here).
    expect(new Set(gop.map(timestamp)).size).toBeLessThanOrEqual(30)
  } finally {
    await streamer.stop(job.bus_info)
  }
}, 40_000)

const timestamp = (p: Uint8Array) => new DataView(p.buffer, p.byteOffset).getUint32(4)

test('a group recording: one socket per member (JPEG for MJPG), and the file is still written', async () => {
  const job = simulatedJob({ encode_type: 'MJPG', stream_type: 'RECORDING', members: 2 })
  try {
    await streamer.start(job)
    const { hub } = streamer.live(job.bus_info)!
    expect(hub).toMatchObject({ encoding: 'JPEG', members: 2 })
    // A follower's bus_info finds its group's hub, at its place.
    expect(streamer.live(job.members[1]!.bus_info)).toEqual({ hub, member: 1 })
    const members = [watch(hub, 0), watch(hub, 1)]
    await waitFor('packets from both members', () => members.every((m) => m.seqs.length > 10), 15_000)
    expect(members.map((m) => [...m.payloadTypes])).toEqual([[26], [26]])
    expect([hub.lastGop(0), hub.lastGop(1)]).toEqual([[], []]) // JPEG: every frame stands alone, nothing kept
    const file = await waitFor('the recording file', () => streamer.activeRecordings()[0], 15_000)
    await waitFor('the recording grows', () => existsSync(file) && statSync(file).size > 10_000, 15_000)
  } finally {
    await streamer.stop(job.bus_info)
  }
}, 40_000)
