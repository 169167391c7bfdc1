// Every encode type over RTP/UDP from simulated cameras, received and decoded by a real GStreamer
// receiver: frames of the configured size and rate within 2 s of a start and of a restart.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { EncodeType } from '../../core/types'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { sdp } from '../../drivers/gstreamer/sdp'
import { eachLine, freePort, Receiver, requireGStreamer, simulatedJob, tempDir, testStreamer, udpBound, waitFor } from './gstreamer.helpers'

const cases: { encode: EncodeType; width: number; height: number; fps: number }[] = [
  { encode: 'H264', width: 640, height: 480, fps: 30 },
  { encode: 'MJPG', width: 320, height: 240, fps: 15 },
  { encode: 'SOFTWARE_H264', width: 320, height: 240, fps: 30 },
]

const { streamer, events } = testStreamer()
const receivers: Receiver[] = []

beforeAll(() => requireGStreamer())
afterAll(async () => {
  await streamer.stopAll()
  await Promise.all(receivers.map((r) => r.stop()))
})

describe.each(cases)('UDP $encode $width x $height at $fps fps', ({ encode, width, height, fps }) => {
  test('decodable frames of the configured size and rate within 2 s of a start and of a restart; every endpoint', async () => {
    const ports = [freePort(), freePort()]
    const rx = ports.map((port) => new Receiver(port, encode))
    receivers.push(...rx)
    await Promise.all(rx.map((r) => r.ready()))
    const job = simulatedJob({ encode_type: encode, stream_type: 'UDP', width, height, fps, ports })

    for (const phase of ['start', 'restart']) {
      const t0 = Date.now()
      await streamer.start(job)
      for (const r of rx) {
        const first = await waitFor(`first decoded ${encode} frame after ${phase}`, () => r.firstFrameAfter(t0), 5000)
        expect(first - t0).toBeLessThan(2000)
      }
      await waitFor('state running', () => streamer.status(job.bus_info).state === 'running')
      const first = rx[0]!.firstFrameAfter(t0)!
      // The rate is counted over the 2 s after the first frame: wait until every receiver has a frame past that window.
      await waitFor('frames past the 2 s window', () => rx.every((r) => r.firstFrameAfter(first + 2100)), 10_000)
      for (const r of rx) {
        expect([r.width, r.height]).toEqual([width, height])
        // Over 2 s: the configured rate, give or take a few frames for a loaded CI machine.
        const rate = r.framesBetween(first + 100, first + 2100) / 2
        expect(rate).toBeGreaterThan(fps * 0.75)
        expect(rate).toBeLessThan(fps * 1.25)
      }
    }
    expect(streamer.status(job.bus_info)).toEqual({ state: 'running', error: null, restarts: 0 })
    expect(streamer.frameDrops(job.bus_info)).toBe(0)
    await streamer.stop(job.bus_info)
    expect(streamer.status(job.bus_info).state).toBe('stopped')
    expect(events.some((e) => e.type === 'stream_error' && e.data.bus_info === job.bus_info && e.data.state === 'running')).toBe(true)
    expect(events.some((e) => e.type === 'frame_stats' && e.data.bus_info === job.bus_info && e.data.num_drops === 0)).toBe(true)
  }, 60_000)
})

test.each(['UDP', 'RECORDING'] as const)('NONE over %s streams nothing and spawns nothing', async (stream_type) => {
  const job = simulatedJob({ encode_type: 'NONE', stream_type })
  await streamer.start(job)
  expect(streamer.status(job.bus_info).state).toBe('stopped')
  expect(streamer.pid(job.bus_info)).toBeNull()
  expect(streamer.activeRecordings()).toEqual([])
  await streamer.stop(job.bus_info)
}, 15_000)

test.each(['H264', 'MJPG'] as const)('the SDP description of a %s stream is enough for a receiver (GStreamer sdpdemux, as VLC would use it)', async (encode) => {
  const port = freePort()
  const job = simulatedJob({ encode_type: encode, stream_type: 'UDP', ports: [port], width: 320, height: 240 })
  const file = join(tempDir(), 'stream.sdp')
  writeFileSync(file, sdp(job.stream, job.stream.endpoints[0]!))
  const decode = encode === 'MJPG' ? ['rtpjpegdepay', '!', 'jpegdec'] : ['rtph264depay', '!', 'avdec_h264']
  const rx = Bun.spawn(['gst-launch-1.0', '-v', 'filesrc', `location=${file}`, '!', 'sdpdemux', 'latency=0', '!', ...decode, '!', 'identity', 'name=out', 'silent=false', '!', 'fakesink'], {
    stdout: 'pipe',
    stderr: 'ignore',
  })
  let decoded = 0
  const reading = eachLine(rx.stdout as ReadableStream<Uint8Array>, (line) => {
    if (line.includes('GstIdentity:out: last-message = chain')) decoded++
  })
  try {
    await waitFor('the SDP receiver bound to its port', () => udpBound(rx.pid, port), 15_000)
    await streamer.start(job)
    await waitFor('more than 20 decoded frames', () => decoded > 20, 15_000)
    await streamer.stop(job.bus_info)
  } finally {
    rx.kill('SIGKILL')
    await reading
  }
  expect(decoded).toBeGreaterThan(20)
}, 40_000)
