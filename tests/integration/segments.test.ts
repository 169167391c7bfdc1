// Recordings in segments (pipeline.ts matroskaFileTokens: splitmuxsink + matroskamux): every frame in
// exactly one file, each file opening on a key frame and playing alone, cut by time and, before 4 GiB, by
// size (a lowered byte limit takes the same path); the recordings API lists the files as one recording,
// and renames, keeps and deletes them together. ffprobe/ffmpeg are the judges.
import { beforeAll, expect, test } from 'bun:test'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { buildPipeline, type SegmentLimits } from '../../drivers/gstreamer/pipeline'
import { RecordingStore } from '../../drivers/storage/recordings'
import { alive, requireGStreamer, segmentFile, simulatedJob, tempDir, testStreamer, waitFor } from './gstreamer.helpers'

beforeAll(() => requireGStreamer())

/** 35 s of 30 fps: the "1 minute segments for 3.5 minutes", ten times shorter. */
const FRAMES = 1050
const FPS = 30

const run = (argv: string[], timeoutMs = 60_000) => {
  const r = Bun.spawnSync(argv, { timeout: timeoutMs, killSignal: 'SIGKILL', stdout: 'pipe', stderr: 'pipe' })
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() }
}

/** Frames ffprobe decodes in the file. */
const decodedFrames = (path: string) => Number(run(['ffprobe', '-v', 'error', '-count_frames', '-select_streams', 'v:0', '-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', path]).out.trim())

/** key_frame of the file's first decoded frame (1 = a key frame). */
const firstKeyFrame = (path: string) =>
  run(['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-show_frames', '-read_intervals', '%+#1', '-show_entries', 'frame=key_frame', '-of', 'csv=p=0', path]).out.trim().split('\n')[0]?.split(',')[0]

/** The file decodes alone from its first byte to its last with no error at all. */
function playsAlone(path: string): string {
  const r = run(['ffmpeg', '-nostdin', '-v', 'error', '-xerror', '-i', path, '-f', 'null', '-'])
  return r.code === 0 ? r.err.trim() : `exit ${r.code}: ${r.err.trim()}`
}

/**
 * A RECORDING job's own pipeline (buildPipeline, as the runner builds it) over a live source of exactly
 * FRAMES frames, key frame every second, run to its end: answers the files written, in order. (Live, as a
 * camera is: fed as fast as it can go, splitmuxsink 1.22 sometimes never finishes at the end of the stream.)
 */
async function recordFinite(limits: SegmentLimits): Promise<string[]> {
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'RECORDING', fps: FPS })
  job.members[0]!.source = {
    kind: 'gst',
    description: `videotestsrc is-live=true num-buffers=${FRAMES} pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=${FPS}/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=${FPS} bitrate=500 ! video/x-h264,stream-format=byte-stream,alignment=au`,
  }
  const tokens = buildPipeline(job, { recordingPath: join(job.recordings_dir, 'finite'), segments: limits })!
  const child = Bun.spawn(['gst-launch-1.0', '-e', ...tokens], { stdout: 'ignore', stderr: 'pipe', stdin: 'ignore' })
  const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
  const code = await child.exited
  clearTimeout(timer)
  expect(`exit ${code}: ${await new Response(child.stderr).text()}`).toBe('exit 0: ')
  return readdirSync(job.recordings_dir).sort().map((f) => join(job.recordings_dir, f))
}

const FAT = 4 * 1024 ** 3 - 64 * 1024 ** 2
const names = (files: string[]) => files.map((f) => f.slice(f.lastIndexOf('/') + 1))

test(`${FRAMES} frames (35 s) in one file, in 10 s segments, and cut by size (4 GiB on a card, 256 KiB here): every frame in exactly one file, each opens on a key frame and plays alone`, async () => {
  // The three at once: the same deterministic stream, in real time.
  const [single, segments, bySize] = await Promise.all([recordFinite({ seconds: 0, bytes: FAT }), recordFinite({ seconds: 10, bytes: FAT }), recordFinite({ seconds: 0, bytes: 256 * 1024 })])
  expect(names(single)).toEqual(['finite_seg001.mkv'])
  expect(decodedFrames(single[0]!)).toBe(FRAMES)

  expect(names(segments)).toEqual(['finite_seg001.mkv', 'finite_seg002.mkv', 'finite_seg003.mkv', 'finite_seg004.mkv'])
  const counts = segments.map(decodedFrames)
  // Cut at the first key frame at or after 10 s: 300 frames each, the rest in the last.
  expect(counts).toEqual([300, 300, 300, 150])
  expect(counts.reduce((a, b) => a + b, 0)).toBe(decodedFrames(single[0]!))

  expect(bySize.length).toBeGreaterThanOrEqual(3)
  for (const f of bySize) expect(statSync(f).size).toBeLessThanOrEqual(256 * 1024)
  expect(bySize.map(decodedFrames).reduce((a, b) => a + b, 0)).toBe(FRAMES)

  for (const f of [...segments, ...bySize]) {
    expect(firstKeyFrame(f)).toBe('1')
    expect(playsAlone(f)).toBe('')
  }
}, 180_000)

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

    const listed = await store.list()
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
