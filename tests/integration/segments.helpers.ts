// The judges of a recording cut in segments (ffprobe, ffmpeg) and the RECORDING stream's finite run,
// shared by tests/integration/segments.test.ts (every run, seconds of frames) and
// tests/soak/segments.test.ts (the same property at full scale, `npm run soak`).
import { expect } from 'bun:test'
import { readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { buildPipeline, FAT_SEGMENT_BYTES, type SegmentLimits } from '../../drivers/gstreamer/pipeline'
import { simulatedJob } from './gstreamer.helpers'

export const FPS = 30
export const FAT = FAT_SEGMENT_BYTES

const run = (argv: string[], timeoutMs = 60_000) => {
  const r = Bun.spawnSync(argv, { timeout: timeoutMs, killSignal: 'SIGKILL', stdout: 'pipe', stderr: 'pipe' })
  return { code: r.exitCode, out: r.stdout.toString(), err: r.stderr.toString() }
}

/** Frames ffprobe decodes in the file's video track `track` (0: the leader's). */
export const decodedFrames = (path: string, track = 0) =>
  Number(run(['ffprobe', '-v', 'error', '-count_frames', '-select_streams', `v:${track}`, '-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', path]).out.trim())

/** key_frame of the first decoded frame of the file's video track `track` (1 = a key frame). */
export const firstKeyFrame = (path: string, track = 0) =>
  run(['ffprobe', '-v', 'error', '-select_streams', `v:${track}`, '-show_frames', '-read_intervals', '%+#1', '-show_entries', 'frame=key_frame', '-of', 'csv=p=0', path]).out.trim().split('\n')[0]?.split(',')[0]

/** The file decodes alone from its first byte to its last with no error at all. */
export function playsAlone(path: string): string {
  const r = run(['ffmpeg', '-nostdin', '-v', 'error', '-xerror', '-i', path, '-f', 'null', '-'])
  return r.code === 0 ? r.err.trim() : `exit ${r.code}: ${r.err.trim()}`
}

export const names = (files: string[]) => files.map((f) => f.slice(f.lastIndexOf('/') + 1))

/**
 * A RECORDING job's own pipeline (buildPipeline, as the runner builds it) over a live source of exactly
 * `frames` frames, key frame every second, run to its end: answers the files written, in order. (Live, as a
 * camera is: fed as fast as it can go, splitmuxsink 1.22 sometimes never finishes at the end of the stream.)
 */
export async function recordFinite(frames: number, limits: SegmentLimits): Promise<string[]> {
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'RECORDING', fps: FPS })
  job.members[0]!.source = {
    kind: 'gst',
    description: `videotestsrc is-live=true num-buffers=${frames} pattern=ball ! video/x-raw,format=I420,width=320,height=240,framerate=${FPS}/1 ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=${FPS} bitrate=500 ! video/x-h264,stream-format=byte-stream,alignment=au`,
  }
  const tokens = buildPipeline(job, { recordingPath: join(job.recordings_dir, 'finite'), segments: limits })!
  const child = Bun.spawn(['gst-launch-1.0', '-e', ...tokens], { stdout: 'ignore', stderr: 'pipe', stdin: 'ignore' })
  // Real time plus two minutes: a child that never finishes fails the test with its output, not by the test's timeout.
  const timer = setTimeout(() => child.kill('SIGKILL'), (frames / FPS) * 1000 + 120_000)
  const code = await child.exited
  clearTimeout(timer)
  expect(`exit ${code}: ${await new Response(child.stderr).text()}`).toBe('exit 0: ')
  return readdirSync(job.recordings_dir).sort().map((f) => join(job.recordings_dir, f))
}

/**
 * `frames` frames of the same deterministic stream recorded three times at once, in real time: in one
 * file, in `segmentSeconds` segments, and cut by size at `bytes`. Every frame in exactly one file (each
 * time segment cut at the first key frame at or after its length: whole segments, the rest in the last),
 * each segment opening on a key frame and playing alone, each size-cut file at most `bytes` in at least
 * three files.
 */
export async function expectFiniteSegments(frames: number, segmentSeconds: number, bytes: number): Promise<void> {
  const [single, segments, bySize] = await Promise.all([
    recordFinite(frames, { seconds: 0, bytes: FAT }),
    recordFinite(frames, { seconds: segmentSeconds, bytes: FAT }),
    recordFinite(frames, { seconds: 0, bytes }),
  ])
  expect(names(single)).toEqual(['finite_seg001.mkv'])
  expect(decodedFrames(single[0]!)).toBe(frames)

  const perSegment = segmentSeconds * FPS
  const expected = Array.from({ length: Math.ceil(frames / perSegment) }, (_, i) => Math.min(perSegment, frames - i * perSegment))
  expect(names(segments)).toEqual(expected.map((_, i) => `finite_seg${String(i + 1).padStart(3, '0')}.mkv`))
  const counts = segments.map((f) => decodedFrames(f))
  expect(counts).toEqual(expected)
  expect(counts.reduce((a, b) => a + b, 0)).toBe(decodedFrames(single[0]!))

  expect(bySize.length).toBeGreaterThanOrEqual(3)
  for (const f of bySize) expect(statSync(f).size).toBeLessThanOrEqual(bytes)
  expect(bySize.map((f) => decodedFrames(f)).reduce((a, b) => a + b, 0)).toBe(frames)

  for (const f of [...segments, ...bySize]) {
    expect(firstKeyFrame(f)).toBe('1')
    expect(playsAlone(f)).toBe('')
  }
}
