// Leader/follower groups: one pipeline on one clock. Over UDP, one RTP stream per camera (port + i)
// whose timestamps agree; recorded, one Matroska file with a track per camera; out-of-step frames counted.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { buildPipeline } from '../../drivers/gstreamer/pipeline'
import { simulatedSource } from '../../drivers/gstreamer/simulated'
import { discover, freePort, requireGStreamer, RtpCounter, simulatedJob, testStreamer, waitFor } from './gstreamer.helpers'

const { streamer, events } = testStreamer()
const sockets: RtpCounter[] = []

beforeAll(() => requireGStreamer())
afterAll(async () => {
  await streamer.stopAll()
  for (const s of sockets) s.close()
})

test('a leader + follower group over UDP: one RTP stream each, timestamps within one frame interval', async () => {
  const port = freePort()
  const [leader, follower] = await Promise.all([RtpCounter.open(port), RtpCounter.open(port + 1)])
  sockets.push(leader!, follower!)
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', ports: [port], members: 2, width: 320, height: 240, fps: 30 })
  await streamer.start(job)
  await waitFor('running', () => streamer.status(job.bus_info).state === 'running', 15_000)
  await waitFor('more than 50 frames on each port', () => leader!.frames.length > 50 && follower!.frames.length > 50, 20_000)
  // Each follower frame has a leader frame, sent within 200 ms of it, whose RTP timestamp (90 kHz, one
  // timeline for the group) is within one frame interval; with simulated sources they are equal.
  const interval = 90000 / 30
  let worst = 0
  for (const f of follower!.frames.slice(5, -5)) {
    const near = leader!.frames.filter((l) => Math.abs(l.at - f.at) < 200)
    worst = Math.max(worst, Math.min(...near.map((l) => Math.abs((f.ts - l.ts) | 0))))
  }
  expect(worst).toBeLessThanOrEqual(interval)
  expect(streamer.frameDrops(job.bus_info)).toBe(0)
  await streamer.stop(job.bus_info)
}, 45_000)

test('a group recording: one Matroska file, a video track per camera, common timeline', async () => {
  const job = simulatedJob({ encode_type: 'MJPG', stream_type: 'RECORDING', members: 2, width: 320, height: 240, fps: 15 })
  await streamer.start(job)
  await waitFor('running', () => streamer.status(job.bus_info).state === 'running', 15_000)
  const files = streamer.activeRecordings().filter((f) => f.startsWith(job.recordings_dir))
  expect(files).toHaveLength(1)
  await Bun.sleep(3000) // a recording of a length is a wait of time: 3 s once both cameras run
  await streamer.stop(job.bus_info)
  const d = discover(files[0]!)
  expect(d.videoStreams).toBe(2)
  expect(d.codec).toMatch(/JPEG/)
  expect(d.durationS).toBeGreaterThan(2.5)
}, 45_000)

test('frames out of step are counted as drops, reported as frame_stats, and reset by a restart', async () => {
  // A follower that misses about one frame in five: the leader's frames of those instants have no partner.
  const job = simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP', members: 2, width: 320, height: 240, fps: 30 })
  job.members[1]!.source = { kind: 'gst', description: `${simulatedSource('MJPG', 320, 240, { numerator: 1, denominator: 30 }, 'snow')} ! identity drop-probability=0.2` }
  await streamer.start(job)
  await waitFor('drops counted', () => streamer.frameDrops(job.bus_info) > 10, 20_000)
  await waitFor('a frame_stats event', () => events.some((e) => e.type === 'frame_stats' && e.data.bus_info === job.bus_info && e.data.num_drops > 0), 10_000)
  const before = events.length
  await streamer.start(job) // restart
  expect(streamer.frameDrops(job.bus_info)).toBe(0)
  expect(events.slice(before).some((e) => e.type === 'frame_stats' && e.data.bus_info === job.bus_info && e.data.num_drops === 0)).toBe(true)
  await streamer.stop(job.bus_info)
}, 45_000)

test('the group pipeline is one gst-launch child', () => {
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', members: 3 })
  const tokens = buildPipeline(job)!
  expect(tokens.filter((t) => t === 'multiudpsink')).toHaveLength(3)
})

test("a camera's QoS losses (v4l2src's message, posted here by an element named like it) count as frame drops", async () => {
  // No V4L2 device here: a sink named cam0 that is too slow posts QoS messages of the same shape
  // (duration = lost × frame duration) from inside the source description.
  const job = simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP', width: 320, height: 240, fps: 30 })
  const base = simulatedSource('MJPG', 320, 240, { numerator: 1, denominator: 30 })
  const [raw, encode] = base.split(' ! jpegenc ! ')
  job.members[0]!.source = {
    kind: 'gst',
    description: `${raw} ! tee name=t ! queue ! identity sleep-time=60000 ! fakesink name=cam0 sync=true qos=true max-lateness=1000000 t. ! queue ! jpegenc ! ${encode}`,
  }
  await streamer.start(job)
  await waitFor('QoS drops counted', () => streamer.frameDrops(job.bus_info) >= 5, 20_000)
  await waitFor('a frame_stats event', () => events.some((e) => e.type === 'frame_stats' && e.data.bus_info === job.bus_info && e.data.num_drops >= 5), 10_000)
  await streamer.stop(job.bus_info)
}, 45_000)
