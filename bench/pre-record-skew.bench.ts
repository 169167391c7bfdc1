// How far the telemetry text (and, stamped the same way, the sound) is from the video in a recording
// started with a pre-record buffer (--pre-record-seconds): the video's kept seconds reach the recorder
// in one burst and are stamped from their RTP timestamps, the text is stamped as it arrives. The press
// lies at video time (frames in the file − frames sent after the press) / fps; the text's first cue,
// sent at the press, is at its start_time (ffprobe). Their difference is the skew.
// `bun run bench/pre-record-skew.bench.ts [--pre 3] [--seconds 5]`
import { mkdtempSync, readdirSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createLogger } from '../core/log'
import { TelemetrySource } from '../core/telemetry'
import { simulatedSource } from '../drivers/gstreamer/simulated'
import { GstStreamer } from '../drivers/gstreamer/streamer'
import { numberArg } from './lib'

const PRE = numberArg('pre', 3)
const SECONDS = numberArg('seconds', 5)
const FPS = 30

const port = 26000 + Math.floor(Math.random() * 10000) * 2
let frames = 0
const socket = await Bun.udpSocket({ hostname: '127.0.0.1', port, socket: { data: (_s, buf) => void (buf.length > 1 && buf[1]! & 0x80 && frames++), error: () => {} } })
const dir = mkdtempSync(join(tmpdir(), 'periscope-bench-prerecord-'))
const telemetry = new TelemetrySource()
const heartbeat = setInterval(() => telemetry.heartbeat(false, 'MANUAL'), 500)
telemetry.heartbeat(false, 'MANUAL')
const streamer = new GstStreamer({ log: createLogger('error'), emit: () => {}, preRecordSeconds: PRE, telemetry })
const interval = { numerator: 1, denominator: FPS }
const bus_info = 'bench-prerecord'
const probe = (args: string[]) => Bun.spawnSync(['ffprobe', '-v', 'error', ...args]).stdout.toString().trim()

try {
  await streamer.start({
    bus_info,
    recordings_dir: dir,
    stream: { device_path: '/dev/null', encode_type: 'H264', stream_type: 'UDP', endpoints: [{ host: '127.0.0.1', port }], width: 640, height: 480, interval, enabled: true },
    members: [{ bus_info, label: 'bench', source: { kind: 'gst', description: simulatedSource('H264', 640, 480, interval) } }],
  })
  for (let i = 0; streamer.status(bus_info).state !== 'running'; i++) {
    if (i > 300) throw new Error('the stream did not start')
    await Bun.sleep(100)
  }
  await Bun.sleep((PRE + 2) * 1000) // the buffer filled
  const pressed = frames
  await streamer.startRecording(bus_info)
  await Bun.sleep(SECONDS * 1000)
  await streamer.stopRecording(bus_info)
  const after = frames - pressed
  const file = join(dir, readdirSync(dir).filter((f) => f.endsWith('.mkv')).sort()[0]!)
  const inFile = Number(probe(['-count_frames', '-select_streams', 'v:0', '-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', file]))
  const textStart = Number(probe(['-select_streams', 's:0', '-show_entries', 'packet=pts_time', '-read_intervals', '%+#1', '-of', 'csv=p=0', file]).split('\n')[0])
  const press = (inFile - after) / FPS
  console.log(`--pre-record-seconds ${PRE}: ${inFile} frames in the file, ${after} sent after the press: the press at video time ${press.toFixed(2)} s (±0.1)`)
  console.log(`the text's first cue (sent at the press) at ${textStart.toFixed(2)} s: the text runs ${(press - textStart).toFixed(2)} s ahead of the video`)
} finally {
  clearInterval(heartbeat)
  await streamer.stopAll()
  socket.close()
}
