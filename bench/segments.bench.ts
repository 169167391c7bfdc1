// What cutting a recording into segments costs, recording while streaming a 1080p30 H.264 simulated camera:
//  1. the switch: frames in each full segment (SEGMENT s × 30 when no frame is lost or repeated at a cut),
//     the longest pause in the file writes around each cut against the longest elsewhere (ms, polled
//     every 5 ms), i.e. how long the switch holds the writes back, and what each cut took (recorder.ts
//     segmentCuts: the next child's start, ahead of the cut, and the old file's close after it);
//  2. the disk: bytes written per second over SECONDS of recording, extrapolated to an 8-hour mission.
// `bun run bench/segments.bench.ts [--seconds 120] [--segment 10] [--pattern snow]`
// The simulated camera encodes with x264 at 2000 kbit/s (simulated.ts). A still or simple picture
// ('ball', 'smpte') compresses to almost nothing, so the default is 'snow' (noise), which fills the
// bitrate: the 8-hour figure is then that bitrate's; scale it by your camera's bitrate.
import { mkdtempSync, readdirSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger } from '../core/log'
import { FAT_SEGMENT_BYTES } from '../drivers/gstreamer/pipeline'
import { simulatedSource } from '../drivers/gstreamer/simulated'
import { segmentCuts } from '../media/segment-cuts'
import { GstStreamer } from '../drivers/gstreamer/streamer'
import { numberArg } from './lib'

const SECONDS = numberArg('seconds', 120)
const SEGMENT = numberArg('segment', 10)
const PATTERN = process.argv.includes('--pattern') ? process.argv[process.argv.indexOf('--pattern') + 1]! : 'snow'
const FPS = 30

if (!Bun.which('gst-launch-1.0') || !Bun.which('ffprobe')) {
  console.error('gst-launch-1.0 and ffprobe are needed: run scripts/setup/gstreamer.sh')
  process.exit(1)
}

const port = 26000 + Math.floor(Math.random() * 10000) * 2
let frames = 0
const socket = await Bun.udpSocket({ hostname: '127.0.0.1', port, socket: { data: (_s, buf) => void (buf.length > 1 && buf[1]! & 0x80 && frames++), error: () => {} } })
const dir = mkdtempSync(join(tmpdir(), 'periscope-bench-segments-'))
const streamer = new GstStreamer({ log: createLogger('error'), emit: () => {}, segments: { seconds: SEGMENT, bytes: FAT_SEGMENT_BYTES } })
const interval = { numerator: 1, denominator: FPS }
const bus_info = 'bench-segments'
const load = () => (Bun.file('/proc/loadavg').text() as Promise<string>).then((t) => t.split(' ').slice(0, 3).join(' '))

try {
  await streamer.start({
    bus_info,
    recordings_dir: dir,
    stream: { device_path: '/dev/null', encode_type: 'H264', stream_type: 'UDP', endpoints: [{ host: '127.0.0.1', port }], width: 1920, height: 1080, interval, enabled: true },
    members: [{ bus_info, label: 'bench', source: { kind: 'gst', description: simulatedSource('H264', 1920, 1080, interval, PATTERN) } }],
  })
  for (let i = 0; streamer.status(bus_info).state !== 'running'; i++) {
    if (i > 300) throw new Error('the stream did not start')
    await Bun.sleep(100)
  }
  await Bun.sleep(2000) // past start-up
  console.log(`1080p30 H.264 (simulated camera, pattern ${PATTERN}, 2000 kbit/s), ${SECONDS} s recorded while streaming in ${SEGMENT} s segments; load average ${await load()}`)

  // Poll the files: when each grew last, and when each segment first had bytes.
  const sizes = new Map<string, number>()
  const opened: { file: string; at: number }[] = []
  const writes: number[] = []
  const costs: { start: number; close: number }[] = []
  let cutsSeen = segmentCuts.total
  let closesSeen = segmentCuts.lastCloseMs
  const poll = setInterval(() => {
    const now = performance.now()
    // A cut's close is known once the old file is closed; its start before the cut.
    if (segmentCuts.total !== cutsSeen && segmentCuts.lastCloseMs !== closesSeen) {
      cutsSeen = segmentCuts.total
      closesSeen = segmentCuts.lastCloseMs
      costs.push({ start: segmentCuts.lastStartMs, close: segmentCuts.lastCloseMs })
    }
    // The next segment is written under a hidden name until its cut (recorder.ts): only the named files count.
    for (const f of readdirSync(dir).filter((f) => f.endsWith('.mkv'))) {
      const size = statSync(join(dir, f)).size
      if (size === (sizes.get(f) ?? 0)) continue
      if (!sizes.has(f)) opened.push({ file: f, at: now })
      sizes.set(f, size)
      writes.push(now)
    }
  }, 5)
  const framesBefore = frames
  const t0 = performance.now()
  await streamer.startRecording(bus_info)
  await Bun.sleep(SECONDS * 1000)
  const elapsed = (performance.now() - t0) / 1000
  await streamer.stopRecording(bus_info)
  const framesSent = frames - framesBefore
  clearInterval(poll)

  const files = readdirSync(dir).filter((f) => f.endsWith('.mkv')).sort()
  const bytes = files.reduce((sum, f) => sum + statSync(join(dir, f)).size, 0)
  const counts = files.map((f) => {
    const r = Bun.spawnSync(['ffprobe', '-v', 'error', '-count_frames', '-select_streams', 'v:0', '-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', join(dir, f)])
    return Number(r.stdout.toString().trim())
  })
  const total = counts.reduce((a, b) => a + b, 0)
  // The longest pause between two writes within 1 s of a cut, and elsewhere.
  const cuts = opened.slice(1).map((o) => o.at)
  let nearCut = 0
  let elsewhere = 0
  for (let i = 1; i < writes.length; i++) {
    const gap = writes[i]! - writes[i - 1]!
    if (cuts.some((c) => Math.abs(writes[i]! - c) < 1000)) nearCut = Math.max(nearCut, gap)
    else elsewhere = Math.max(elsewhere, gap)
  }
  console.log(`1. segments: ${files.length}; frames per segment ${counts.join(' ')} (a full one: ${SEGMENT * FPS})`)
  console.log(`   frames in the files ${total}, sent while recording ${framesSent} (${(framesSent / elapsed).toFixed(1)} fps; the difference: the wait for the first key frame and the stop, under one GOP)`)
  console.log(`   longest pause in the writes within 1 s of a cut ${nearCut.toFixed(0)} ms, elsewhere ${elsewhere.toFixed(0)} ms`)
  const range = (xs: number[]) => (xs.length ? `median ${xs.sort((a, b) => a - b)[xs.length >> 1]} ms, max ${Math.max(...xs)} ms` : 'none')
  console.log(`   per cut (${costs.length}): the next child started and listening ${range(costs.map((c) => c.start))} (ahead of the cut); the old file closed and synced ${range(costs.map((c) => c.close))} after it`)
  const rate = bytes / elapsed
  console.log(`2. written ${(bytes / 1048576).toFixed(1)} MB in ${elapsed.toFixed(1)} s = ${(rate / 1048576).toFixed(2)} MB/s (${((rate * 8) / 1e6).toFixed(2)} Mbit/s)`)
  console.log(`   8 hours: ${((rate * 8 * 3600) / 1024 ** 3).toFixed(1)} GiB, ${Math.ceil((8 * 3600) / SEGMENT)} segments of ${SEGMENT} s (${Math.ceil((8 * 3600) / 600)} of 10 min)`)
} finally {
  await streamer.stopAll()
  socket.close()
}
