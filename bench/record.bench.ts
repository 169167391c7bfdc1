// What recording while streaming costs, on a 1080p30 H.264 stream from a simulated camera:
//  1. CPU and RSS of the recorder child, and of the service's process (it forwards the tap), over
//     SECONDS (default 20) of streaming alone and then SECONDS of streaming + recording, against the
//     camera's own child as the baseline (ratios). No encoder in the recorder: it should be a few % of a core.
//  2. CYCLES (default 10) start/stop_recording cycles while streaming: packets lost at the UDP endpoint
//     (target 0) and the time from start_recording to the recorder running (median, max).
// `bun run bench/record.bench.ts [--seconds 20] [--cycles 10]`
// The simulated camera encodes with x264, so its child is far heavier than a real camera's (hardware
// H.264: parse + payload + send); compare the recorder with the service's process, not with x264.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger } from '../core/log'
import { simulatedSource } from '../drivers/gstreamer/simulated'
import { GstStreamer } from '../drivers/gstreamer/streamer'
import { TICK, cpuTicks, numberArg, rssKb } from './lib'

const SECONDS = numberArg('seconds', 20)
const CYCLES = numberArg('cycles', 10)

if (!Bun.which('gst-launch-1.0')) {
  console.error('gst-launch-1.0 is missing: run scripts/setup/gstreamer.sh')
  process.exit(1)
}


/** % of one core per pid over `seconds`, and each pid's RSS at the end (MB). */
async function measure(pids: number[], seconds: number): Promise<{ cpu: number[]; rss: number[] }> {
  const t0 = pids.map(cpuTicks)
  await Bun.sleep(seconds * 1000)
  return { cpu: pids.map((p, i) => ((cpuTicks(p) - t0[i]!) / TICK / seconds) * 100), rss: pids.map((p) => rssKb(p) / 1024) }
}

const fmt = (n: number, d = 1) => n.toFixed(d)
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

// The UDP endpoint: RTP sequence numbers, to count lost packets.
const port = 26000 + Math.floor(Math.random() * 10000) * 2
const seqs: number[] = []
const socket = await Bun.udpSocket({ hostname: '127.0.0.1', port, socket: { data: (_s, buf) => void seqs.push(buf.readUInt16BE(2)) } })
const lost = (from: number) => {
  let n = 0
  for (let i = Math.max(from, 1); i < seqs.length; i++) n += (seqs[i]! - seqs[i - 1]! - 1 + 0x10000) & 0xffff
  return n
}

const dir = mkdtempSync(join(tmpdir(), 'periscope-bench-record-'))
const streamer = new GstStreamer({ log: createLogger('error'), emit: () => {} })
const interval = { numerator: 1, denominator: 30 }
const bus_info = 'bench-record'
process.on('exit', () => socket.close())
try {
  await streamer.start({
    bus_info,
    recordings_dir: dir,
    stream: { device_path: '/dev/null', encode_type: 'H264', stream_type: 'UDP', endpoints: [{ host: '127.0.0.1', port }], width: 1920, height: 1080, interval, enabled: true },
    members: [{ bus_info, label: 'bench', source: { kind: 'gst', description: simulatedSource('H264', 1920, 1080, interval) } }],
  })
  for (let i = 0; streamer.status(bus_info).state !== 'running'; i++) {
    if (i > 300) throw new Error('the stream did not start')
    await Bun.sleep(100)
  }
  await Bun.sleep(2000) // past start-up
  const camera = streamer.pid(bus_info)!

  console.log(`1. 1080p30 H.264 (simulated camera), ${SECONDS} s streaming alone, then ${SECONDS} s streaming + recording`)
  const alone = await measure([camera, process.pid], SECONDS)
  await streamer.startRecording(bus_info)
  await Bun.sleep(1000)
  const recorder = streamer.recorderPid(bus_info)!
  const both = await measure([camera, process.pid, recorder], SECONDS)
  const bytes = streamer.recording(bus_info).bytes
  await streamer.stopRecording(bus_info)
  console.log(`   camera child: ${fmt(alone.cpu[0]!)} % → ${fmt(both.cpu[0]!)} % of a core (x264 in the simulation)`)
  console.log(`   service process (forwards the tap): ${fmt(alone.cpu[1]!)} % → ${fmt(both.cpu[1]!)} % of a core, RSS ${fmt(alone.rss[1]!)} → ${fmt(both.rss[1]!)} MB`)
  console.log(`   recorder child: ${fmt(both.cpu[2]!)} % of a core, RSS ${fmt(both.rss[2]!)} MB; wrote ${fmt(bytes / 1048576)} MB`)
  console.log(`   ratio recorder CPU / camera child CPU ${fmt(both.cpu[2]! / both.cpu[0]!, 3)}; service CPU with/without recording ${fmt(both.cpu[1]! / Math.max(alone.cpu[1]!, 0.1), 2)}`)

  console.log(`2. ${CYCLES} start/stop_recording cycles (2 s each) while streaming`)
  const from = seqs.length
  const starts: number[] = []
  for (let i = 0; i < CYCLES; i++) {
    const t0 = performance.now()
    await streamer.startRecording(bus_info)
    starts.push(performance.now() - t0)
    await Bun.sleep(2000)
    await streamer.stopRecording(bus_info)
  }
  await Bun.sleep(500)
  console.log(`   packets at the endpoint ${seqs.length - from}, lost ${lost(from)} (target 0)`)
  console.log(`   start_recording → recorder listening: median ${fmt(median(starts), 0)} ms, max ${fmt(Math.max(...starts), 0)} ms (the file then opens at the next key frame, ≤ 1 s)`)
} finally {
  await streamer.stopAll()
}
process.exit(0)
