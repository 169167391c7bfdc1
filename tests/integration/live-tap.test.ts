// The live tap (drivers/gstreamer/tap.ts): a running stream's RTP reaches the service beside its
// endpoints, for UDP and RECORDING jobs alike, one tap per member; viewers subscribing and leaving
// never cost the configured endpoint a packet; an H.264 tap keeps the last group of pictures.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, statSync } from 'node:fs'
import type { LiveTap } from '../../core/types'
import { startsKeyFrame } from '../../drivers/gstreamer/recorder'
import { freePort, requireGStreamer, RtpCounter, simulatedJob, testStreamer, waitFor } from './gstreamer.helpers'

const { streamer } = testStreamer()
beforeAll(() => requireGStreamer())
afterAll(() => streamer.stopAll())

/** RTP sequence numbers of one subscriber, in arrival order. */
function watch(tap: LiveTap, member: number) {
  const seqs: number[] = []
  const payloadTypes = new Set<number>()
  const stop = tap.subscribe(member, (p) => {
    seqs.push((p[2]! << 8) | p[3]!)
    payloadTypes.add(p[1]! & 0x7f)
  })
  return { seqs, payloadTypes, stop }
}

test('a UDP stream: the tap carries the RTP the endpoint gets, with no gap while fifty viewers come and go (the child is never touched)', async () => {
  const port = freePort()
  const endpoint = await RtpCounter.open(port)
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', ports: [port] })
  try {
    expect(streamer.live(job.bus_info)).toBeNull()
    await streamer.start(job)
    const { tap, member } = streamer.live(job.bus_info)!
    expect(member).toBe(0)
    expect(tap).toMatchObject({ encoding: 'H264', width: 320, height: 240, fps: 30, members: 1 })
    const first = watch(tap, 0)
    await waitFor('packets at the tap', () => first.seqs.length > 30, 15_000)
    expect([...first.payloadTypes]).toEqual([96])
    // Fifty viewers join and leave while the stream runs.
    for (let i = 0; i < 50; i++) watch(tap, 0).stop()
    const before = endpoint.packets
    await waitFor('more packets at the endpoint', () => endpoint.packets > before + 60, 15_000)
    first.stop()
    // The tap is a copy of what the endpoint receives: consecutive sequence numbers, none missing.
    const gaps = first.seqs.slice(1).filter((seq, i) => seq !== ((first.seqs[i]! + 1) & 0xffff))
    expect(gaps).toEqual([])
    expect(endpoint.packets).toBeGreaterThanOrEqual(first.seqs.length)
  } finally {
    await streamer.stop(job.bus_info)
    endpoint.close()
  }
  expect(streamer.live(job.bus_info)).toBeNull()
}, 40_000)

test('an H.264 tap keeps the last group of pictures: it opens on the latest key frame, has no gap, and ends with the newest packet', async () => {
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', fps: 30 })
  try {
    await streamer.start(job)
    const { tap } = streamer.live(job.bus_info)!
    let newest: Uint8Array | null = null
    const keyFrames = new Set<number>()
    const stop = tap.subscribe(0, (packet) => {
      newest = packet
      if (startsKeyFrame(packet, 'H264')) keyFrames.add(timestamp(packet))
    })
    // Past a second key frame, the kept group is that one's (and holds a few frames).
    await waitFor('a second key frame and frames after it', () => keyFrames.size >= 2 && new Set(tap.lastGop(0).map(timestamp)).size >= 3, 20_000)
    expect(timestamp(tap.lastGop(0)[0]!)).toBe([...keyFrames].at(-1)!)
    const gop = tap.lastGop(0)
    stop()
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

test('a group recording: one tap per member (JPEG for MJPG), and the file is still written', async () => {
  const job = simulatedJob({ encode_type: 'MJPG', stream_type: 'RECORDING', members: 2 })
  try {
    await streamer.start(job)
    const { tap } = streamer.live(job.bus_info)!
    expect(tap).toMatchObject({ encoding: 'JPEG', members: 2 })
    // A follower's bus_info finds its group's tap, at its place.
    expect(streamer.live(job.members[1]!.bus_info)).toEqual({ tap, member: 1 })
    const members = [watch(tap, 0), watch(tap, 1)]
    await waitFor('packets from both members', () => members.every((m) => m.seqs.length > 10), 15_000)
    expect(members.map((m) => [...m.payloadTypes])).toEqual([[26], [26]])
    expect([tap.lastGop(0), tap.lastGop(1)]).toEqual([[], []]) // JPEG: every frame stands alone, nothing kept
    const file = await waitFor('the recording file', () => streamer.activeRecordings()[0], 15_000)
    await waitFor('the recording grows', () => existsSync(file) && statSync(file).size > 10_000, 15_000)
  } finally {
    await streamer.stop(job.bus_info)
  }
}, 40_000)
