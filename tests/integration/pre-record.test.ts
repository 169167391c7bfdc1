// The pre-record buffer (media/hub.ts PreRecordRing, --pre-record-seconds): a recording started while
// streaming begins with the whole groups of pictures of the seconds before the press, from a key frame,
// its timestamps going up without a jump back, and nothing lost or repeated where the live part joins.
import { beforeAll, expect, test } from 'bun:test'
import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { freePort, packetTimes, requireGStreamer, RtpCounter, simulatedJob, testStreamer, waitFor } from './gstreamer.helpers'

beforeAll(() => requireGStreamer())

const FPS = 30
const PRE = 3

const probe = (args: string[]) => Bun.spawnSync(['ffprobe', '-v', 'error', ...args], { timeout: 60_000, killSignal: 'SIGKILL' }).stdout.toString().trim()

test(`with --pre-record-seconds ${PRE}, the file starts 2–${PRE} s before the press, on a key frame, timestamps strictly increasing`, async () => {
  const { streamer } = testStreamer({ preRecordSeconds: PRE })
  const port = freePort()
  const endpoint = await RtpCounter.open(port)
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', ports: [port], fps: FPS })
  try {
    await streamer.start(job)
    await waitFor('the stream running', () => streamer.status(job.bus_info).state === 'running', 20_000)
    await waitFor(`${PRE + 1} s of frames`, () => endpoint.frames.length >= (PRE + 1) * FPS, 30_000)

    const pressed = endpoint.frames.length
    const started = (await streamer.startRecording(job.bus_info))!
    expect(started.active).toBe(true)
    await waitFor('2 s after the press', () => endpoint.frames.length - pressed >= 2 * FPS, 20_000)
    // Counted as the stop is asked (the recorder leaves the hub at once): frames that reach the endpoint
    // while the file is being closed are in no file (one frame short was seen on a loaded machine).
    const afterPress = endpoint.frames.length - pressed
    await streamer.stopRecording(job.bus_info)

    const files = readdirSync(job.recordings_dir).sort()
    expect(files).toHaveLength(1)
    const path = join(job.recordings_dir, files[0]!)
    const key = probe(['-select_streams', 'v:0', '-show_frames', '-read_intervals', '%+#1', '-show_entries', 'frame=key_frame', '-of', 'csv=p=0', path]).split('\n')[0]?.split(',')[0]
    expect(key).toBe('1')
    const pts = packetTimes(path)
    for (let i = 1; i < pts.length; i++) expect(pts[i]! - pts[i - 1]!).toBeGreaterThan(0)
    const decoded = Number(probe(['-count_frames', '-select_streams', 'v:0', '-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', path]))
    // Whole groups of pictures (a key frame each second) spanning at most PRE s: 2 to PRE s before the press.
    const before = decoded - afterPress
    expect(before).toBeGreaterThanOrEqual((PRE - 1) * FPS)
    expect(before).toBeLessThanOrEqual(PRE * FPS + 2)
    // Strictly one frame interval apart: no gap and no repeat where the buffer meets the live stream.
    expect(Math.abs(pts.at(-1)! - pts[0]! - (pts.length - 1) / FPS)).toBeLessThan(1.5 / FPS)
    expect(pts.length).toBe(decoded)
  } finally {
    await streamer.stopAll()
    endpoint.close()
  }
}, 120_000)

test("a camera child restart during a pre-recorded recording: the file goes on past it, the camera's absence a gap in its timeline (as long as it was away), one frame interval apart elsewhere", async () => {
  const { streamer } = testStreamer({ preRecordSeconds: 2 })
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', fps: FPS })
  try {
    await streamer.start(job)
    await waitFor('the stream running', () => streamer.status(job.bus_info).state === 'running', 20_000)
    await waitFor('the pre-record buffer filled', () => streamer.live(job.bus_info)!.hub.sent(0).frames > 3 * FPS, 30_000)
    await streamer.startRecording(job.bus_info)
    const camera = streamer.pid(job.bus_info)!
    await waitFor('a first segment', () => readdirSync(job.recordings_dir).length > 0, 20_000)
    const killedAt = performance.now()
    process.kill(camera, 'SIGKILL')
    await waitFor('the camera child restarted and running', () => streamer.pid(job.bus_info) !== camera && streamer.status(job.bus_info).state === 'running', 30_000)
    const away = (performance.now() - killedAt) / 1000 // at most: it ran before it was seen running
    const hub = streamer.live(job.bus_info)!.hub
    const restarted = hub.sent(0).frames
    await waitFor('2 s after the restart', () => hub.sent(0).frames - restarted >= 2 * FPS, 20_000)
    await streamer.stopRecording(job.bus_info)

    const files = readdirSync(job.recordings_dir)
    expect(files).toHaveLength(1)
    const pts = packetTimes(join(job.recordings_dir, files[0]!))
    // 1–2 s before the press (whole groups of pictures), up to the kill, and 2 s after the restart.
    expect(pts.at(-1)! - pts[0]!).toBeGreaterThan(3 - 1 / FPS)
    const steps = pts.slice(1).map((t, i) => t - pts[i]!)
    const gaps = steps.filter((d) => Math.abs(d - 1 / FPS) >= 0.5 / FPS)
    // One gap: the camera's absence (the file's sound and text went on meanwhile), a frame interval elsewhere.
    expect(gaps).toHaveLength(1)
    expect(gaps[0]!).toBeGreaterThan(0)
    expect(gaps[0]!).toBeLessThan(away + 0.5)
    console.log(`camera restart: a gap of ${gaps[0]!.toFixed(3)} s in the file's video timeline (seen running again ${away.toFixed(3)} s after the kill)`)
  } finally {
    await streamer.stopAll()
  }
}, 120_000)
