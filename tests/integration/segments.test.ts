// Recordings in segments: every frame in exactly one file, each file opening on a key frame and playing
// alone, cut by time and, before 4 GiB, by size (a lowered byte limit takes the same path). Both cutters:
// a RECORDING stream's own child (pipeline.ts matroskaFileTokens: splitmuxsink + matroskamux) and the
// recorder of a running stream (recorder.ts: one plain matroskamux child per segment, the hub's feeds
// moved at a key frame), the latter on both feeder paths (the relay's thread and the main thread) and
// for a group (the follower moves at its own key frame). The recordings API lists the files as one
// recording, and renames, keeps and deletes them together. ffprobe/ffmpeg are the judges.
import { beforeAll, expect, test } from 'bun:test'
import { readdirSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'
import { createLogger } from '../../core/log'
import { type SegmentLimits } from '../../drivers/gstreamer/pipeline'
import { Recorder } from '../../drivers/gstreamer/recorder'
import { segmentCuts } from '../../media/segment-cuts'
import { MediaHub } from '../../media/hub'
import { RecordingStore } from '../../drivers/storage/recordings'
import { until } from '../helpers'
import { alive, freePort, gstChildrenOf, packetTimes, requireGStreamer, segmentFile, simulatedJob, tempDir, testStreamer, waitFor } from './gstreamer.helpers'
import { decodedFrames, expectFiniteSegments, FAT, firstKeyFrame, FPS, names, playsAlone } from './segments.helpers'
import { startService } from './service.helpers'

beforeAll(() => requireGStreamer())

// The scale: what the cutter does at a minute it does at 2 s (the same key-frame rule on the same clock,
// the same size check per GOP), so 5 s of frames in 2 s segments, one cut short, prove it in 5 s of real
// time; 3.5 minutes in 1 minute segments and a 1 MiB size cut run in the soak (tests/soak/segments.test.ts).
const FRAMES = 150
const SEGMENT_SECONDS = 2
const SIZE_BYTES = 48 * 1024

test(`${FRAMES} frames (${FRAMES / FPS} s) in one file, in ${SEGMENT_SECONDS} s segments, and cut by size (4 GiB on a card, ${SIZE_BYTES / 1024} KiB here): every frame in exactly one file, each opens on a key frame and plays alone`, async () => {
  await expectFiniteSegments(FRAMES, SEGMENT_SECONDS, SIZE_BYTES)
}, 60_000)

test('recording while streaming in 2 s segments: one recording in the API, only the newest file in progress; rename, keep-safe delete act on all files', async () => {
  const { streamer } = testStreamer({ segments: { seconds: 2, bytes: 4 * 1024 ** 3 - 64 * 1024 ** 2 } })
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', fps: FPS })
  const store = new RecordingStore(job.recordings_dir, () => streamer.activeRecordings())
  await store.init()
  try {
    await streamer.start(job)
    await waitFor('the stream running', () => streamer.status(job.bus_info).state === 'running', 20_000)
    const started = (await streamer.startRecording(job.bus_info))!
    expect(started.file).toMatch(/^Sim-Cam_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d(_\d+)?\.mkv$/)
    const stem = started.file!.replace(/\.mkv$/, '')
    await waitFor('a third segment', () => streamer.activeRecordings()[0]?.endsWith('_seg003.mkv'), 30_000)
    // From the cut on, the recording is in progress whatever its files are doing: the old segment's muxer
    // still closes it, the new one is under a hidden name until its first bytes.
    expect((await store.list())[0]?.in_progress).toBe(true)
    // Once the second is closed and the third named: only the third in progress.
    const listed = await until('the third segment alone in progress', () => store.list(), (list) => list[0]?.segments?.map((s) => s.in_progress ?? false).join() === 'false,false,true', 20_000)
    expect(listed).toHaveLength(1)
    const [rec] = listed
    expect(rec).toMatchObject({ name: stem, format: 'mkv', path: join(store.directory, started.file!), in_progress: true })
    expect(rec!.segments!.map((s) => s.file)).toEqual([1, 2, 3].map((n) => segmentFile('', started.file!, n)))
    expect(rec!.segments!.map((s) => s.in_progress ?? false)).toEqual([false, false, true])
    // The recording is being written: neither it nor its writing segment can go.
    await expect(store.remove(started.file!)).rejects.toThrow(/still being recorded/)
    await expect(store.remove(rec!.segments![2]!.file)).rejects.toThrow(/still being recorded/)

    const pid = streamer.recorderPid(job.bus_info)!
    const stopped = (await streamer.stopRecording(job.bus_info))!
    await waitFor('the recorder child gone', () => !alive(pid), 10_000)
    const files = readdirSync(job.recordings_dir).sort()
    expect(files.length).toBeGreaterThanOrEqual(3)
    expect(stopped.bytes).toBe(files.reduce((sum, f) => sum + statSync(join(job.recordings_dir, f)).size, 0))
    for (const f of files) {
      const path = join(job.recordings_dir, f)
      expect(firstKeyFrame(path)).toBe('1')
      expect(playsAlone(path)).toBe('')
    }

    // One logical recording: duration is the sum, the name alone is no single file, rename moves them all.
    const [done] = await store.list()
    expect(done!.in_progress).toBeUndefined()
    expect(done!.segments).toHaveLength(files.length)
    await expect(store.find(started.file!)).rejects.toThrow(/segments/)
    expect((await store.find(files[1]!)).fileName).toBe(files[1]!)
    const moved = await store.rename(started.file!, 'dive-7.mkv')
    expect(moved.map(([, to]) => to)).toEqual(files.map((_, i) => segmentFile('', 'dive-7.mkv', i + 1)))
    expect((await store.list()).map((r) => [r.name, r.segments?.length])).toEqual([['dive-7', files.length]])
    const gone = await store.remove('dive-7')
    expect(gone).toHaveLength(files.length)
    expect(readdirSync(job.recordings_dir)).toEqual([])
  } finally {
    await streamer.stopAll()
  }
}, 120_000)

/**
 * The recorder of a running stream, fed by a hub that receives exactly `frames` frames per member of a
 * live source (the test's own gst child, RTP to the hub's ports; the leader's key frame every second,
 * a follower's every `followerKeyInt` frames), cut every 2 s (or at `limits`). Answers the files written, in order.
 */
async function recordFromHub(frames: number, opts: { relay: boolean; members: number; followerKeyInt?: number; limits?: SegmentLimits }): Promise<string[]> {
  const dir = tempDir()
  const names = Array.from({ length: opts.members }, (_, i) => `member${i}`)
  const log = createLogger('error')
  const hub = new MediaHub({ encoding: 'H264', width: 320, height: 240, fps: FPS, members: names, log, relay: opts.relay })
  const ports = await hub.listen()
  let ended = false
  const recorder = await Recorder.start(
    { hub, base: join(dir, 'hub'), onEnd: () => void (ended = true), onProgress: () => {} },
    { gstLaunch: 'gst-launch-1.0', prefix: [], stopTimeoutMs: 20_000, segments: opts.limits ?? { seconds: 2, bytes: FAT }, log },
  )
  try {
    const branch = (i: number) =>
      `videotestsrc is-live=true num-buffers=${frames} pattern=${i ? 'smpte' : 'ball'} ! video/x-raw,format=I420,width=320,height=240,framerate=${FPS}/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=${i ? (opts.followerKeyInt ?? FPS) : FPS} bitrate=500 ! h264parse config-interval=-1 ! video/x-h264,alignment=au ! rtph264pay aggregate-mode=zero-latency pt=96 ! udpsink host=127.0.0.1 port=${ports[i]} sync=false async=false`
    const source = Bun.spawn(['gst-launch-1.0', '-e', ...names.map((_, i) => branch(i)).join(' ').split(' ')], { stdout: 'ignore', stderr: 'pipe', stdin: 'ignore' })
    const timer = setTimeout(() => source.kill('SIGKILL'), 120_000)
    expect(`exit ${await source.exited}: ${await new Response(source.stderr).text()}`).toBe('exit 0: ')
    clearTimeout(timer)
    for (let i = 0; i < opts.members; i++) await waitFor(`member ${i}'s frames at the hub`, () => hub.sent(i).frames === frames, 10_000)
    // The last frames reach the file: its size stops changing (the muxer writes each 250 ms cluster).
    let last = -1
    await waitFor('the recording settled', () => {
      const size = readdirSync(dir).reduce((sum, f) => sum + statSync(join(dir, f)).size, 0)
      const settled = size === last
      last = size
      return settled
    }, 20_000, 1000)
  } finally {
    await recorder.stop()
    hub.close()
  }
  expect(ended).toBe(true)
  return readdirSync(dir).sort().map((f) => join(dir, f))
}

test('recording while streaming, cut every 2 s by the recorder itself: every frame in exactly one file (the relay thread\'s feeds, the main thread\'s, a group whose follower has its own key frames, and cut by size), each segment opens on a key frame and plays alone', async () => {
  const FED = 330 // 11 s: five or six segments
  const cutsBefore = segmentCuts.total
  const BYTES = 48 * 1024
  const [relayed, mainThread, group, bySize] = await Promise.all([
    recordFromHub(FED, { relay: true, members: 1 }),
    recordFromHub(FED, { relay: false, members: 1 }),
    recordFromHub(FED, { relay: true, members: 2, followerKeyInt: 45 }),
    recordFromHub(FED, { relay: true, members: 1, limits: { seconds: 0, bytes: BYTES } }),
  ])
  // Cut by size (4 GiB on a card, 48 KiB here): below the limit, whole groups of pictures, every frame once.
  expect(bySize.length).toBeGreaterThanOrEqual(3)
  expect(names(bySize)).toEqual(bySize.map((_, i) => `hub_seg${String(i + 1).padStart(3, '0')}.mkv`))
  for (const f of bySize) {
    expect(statSync(f).size).toBeLessThanOrEqual(BYTES)
    expect(firstKeyFrame(f)).toBe('1')
    expect(playsAlone(f)).toBe('')
  }
  expect(bySize.map((f) => decodedFrames(f)).reduce((a, b) => a + b, 0)).toBe(FED)
  for (const files of [relayed, mainThread, group]) {
    expect(files.length).toBeGreaterThanOrEqual(4)
    expect(names(files)).toEqual(files.map((_, i) => `hub_seg${String(i + 1).padStart(3, '0')}.mkv`)) // no hidden next segment left
    const counts = files.map((f) => decodedFrames(f))
    expect(counts.reduce((a, b) => a + b, 0)).toBe(FED)
    // Cut at the leader's first key frame 2 s or more into the segment: whole seconds of 30 frames.
    for (const n of counts.slice(0, -1)) expect(n % FPS).toBe(0)
    for (const f of files) {
      expect(firstKeyFrame(f)).toBe('1')
      expect(playsAlone(f)).toBe('')
    }
  }
  const follower = group.map((f) => decodedFrames(f, 1))
  expect(follower.reduce((a, b) => a + b, 0)).toBe(FED)
  for (const f of group) expect(firstKeyFrame(f, 1)).toBe('1')
  expect(segmentCuts.total - cutsBefore).toBe(relayed.length + mainThread.length + group.length + bySize.length - 4)
}, 240_000)

test("a recording made while streaming with sound, in 2 s segments: each segment's Opus track runs with its video, from its first frame to its last", async () => {
  const service = await startService({ args: ['--record-segment-seconds', '2'] })
  try {
    const { call } = service
    const device = await streamWithSound(service)
    expect((await call('POST', '/api/devices/start_recording', { bus_info: device.bus_info })).status).toBe(200)
    const dir = join(service.dataDir, 'recordings')
    await waitFor('a fourth segment', () => readdirSync(dir).some((f) => f.endsWith('_seg004.mkv')), 60_000, 200)
    expect((await call('POST', '/api/devices/stop_recording', { bus_info: device.bus_info })).status).toBe(200)
    const files = readdirSync(dir).filter((f) => f.endsWith('.mkv')).sort().map((f) => join(dir, f))
    expect(files.length).toBeGreaterThanOrEqual(4)
    for (const f of files.slice(0, -1)) {
      const [video, sound] = [packetTimes(f, 'v:0'), packetTimes(f, 'a:0')]
      expect(sound.length).toBeGreaterThan(0)
      // Both start together (a next segment's child listens seconds before its cut: stamped on arrival, its sound came that much late).
      expect(Math.abs(sound[0]! - video[0]!)).toBeLessThan(0.1)
      expect(Math.abs(Math.max(...sound) - Math.max(...video))).toBeLessThan(0.1)
      expect(playsAlone(f)).toBe('')
    }
  } finally {
    await service.kill()
  }
}, 180_000)

test("the camera's encoder late at the cuts (its child stopped 0.7 s of every 1.3, as a loaded machine starves it): each segment's sound still ends with its video and starts with it", async () => {
  const service = await startService({ args: ['--record-segment-seconds', '2'] })
  let stalls: ReturnType<typeof setInterval> | undefined
  let camera = 0
  try {
    const { call } = service
    const device = await streamWithSound(service)
    camera = await until('the camera child', async () => gstChildrenOf(service.proc.pid)[0] ?? 0, (pid) => pid > 0, 10_000)
    expect((await call('POST', '/api/devices/start_recording', { bus_info: device.bus_info })).status).toBe(200)
    // The camera's frames held 0.7 s, then delivered at once with their own timestamps: its live source
    // catches up, as an encoder starved by a loaded machine does. Out of step with the 1 s groups of
    // pictures, so a segment's last key frame comes later or sooner than its first (sent as it came, the
    // sound ran past or short of the video by the difference).
    stalls = setInterval(() => {
      try {
        process.kill(camera, 'SIGSTOP')
        setTimeout(() => {
          try {
            process.kill(camera, 'SIGCONT')
          } catch {}
        }, 700)
      } catch {}
    }, 1300)
    const dir = join(service.dataDir, 'recordings')
    await waitFor('a fifth segment', () => readdirSync(dir).some((f) => f.endsWith('_seg005.mkv')), 60_000, 200)
    clearInterval(stalls)
    expect((await call('POST', '/api/devices/stop_recording', { bus_info: device.bus_info })).status).toBe(200)
    const files = readdirSync(dir).filter((f) => f.endsWith('.mkv')).sort().map((f) => join(dir, f))
    expect(files.length).toBeGreaterThanOrEqual(5)
    const ends: string[] = []
    for (const f of files.slice(0, -1)) {
      const [video, sound] = [packetTimes(f, 'v:0'), packetTimes(f, 'a:0')]
      ends.push(`${basename(f)}: start ${(sound[0]! - video[0]!).toFixed(3)} s, end ${(Math.max(...sound) - Math.max(...video)).toFixed(3)} s`)
    }
    console.log(`sound against video with the encoder late at the cuts:\n  ${ends.join('\n  ')}`)
    for (const f of files.slice(0, -1)) {
      const [video, sound] = [packetTimes(f, 'v:0'), packetTimes(f, 'a:0')]
      expect(Math.abs(sound[0]! - video[0]!), `${basename(f)}: the sound's start`).toBeLessThan(0.1)
      expect(Math.abs(Math.max(...sound) - Math.max(...video)), `${basename(f)}: the sound's end`).toBeLessThan(0.1)
    }
  } finally {
    clearInterval(stalls)
    try {
      if (camera) process.kill(camera, 'SIGCONT')
    } catch {}
    await service.kill()
  }
}, 180_000)

/** The simulated exploreHD streaming H.264 at its largest size with its microphone running (docs/sound.md): a recording of it gets an Opus track. */
async function streamWithSound(service: Awaited<ReturnType<typeof startService>>): Promise<{ bus_info: string }> {
  const { call } = service
  const devices = (await call('GET', '/api/devices')).body as any[]
  const device = devices.find((d) => d.cameras?.some((c: any) => c.formats?.H264))
  const size = device.cameras.find((c: any) => c.formats?.H264).formats.H264.at(-1)
  const configured = await call('POST', '/api/devices/configure_stream', { bus_info: device.bus_info, stream_type: 'UDP', stream_format: { width: size.width, height: size.height, interval: size.intervals[0] }, encode_type: 'H264', enabled: true, endpoints: [{ host: '127.0.0.1', port: freePort() }] })
  expect(configured.status).toBe(200)
  await until('the sound running', () => call('GET', '/api/audio/streams'), (r) => r.body?.find((a: any) => a.bus_info === device.bus_info)?.state === 'running', 30_000)
  return device
}
