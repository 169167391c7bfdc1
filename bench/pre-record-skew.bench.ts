// How far the telemetry text and the sound are from the video in a recording started with a pre-record
// buffer (--pre-record-seconds), on the whole service: a simulated 640×480 30 fps H.264 camera with its
// microphone streams to a loopback endpoint that counts its frames, the tests' ArduSub autopilot
// (tests/mavlink-autopilot.ts) is on the MAVLink link. At the press the autopilot changes its mode. The
// press lies at video time (frames in the file − frames sent after the press) / fps (±0.1 s: the
// endpoint's count is read as the press is sent); the text's first cue with the new mode should be there.
// The sound should span the video: it starts with the file's first, pre-recorded, frame and ends with
// its last (a sound stamped from the press on would end that much before the video).
// `bun run bench/pre-record-skew.bench.ts [--pre 3] [--seconds 5]`
import { readdirSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { TestAutopilot } from '../tests/mavlink-autopilot'
import { GroundStation } from '../tests/mavlink-gcs'
import { startService } from '../tests/integration/service.helpers'
import { freePort, numberArg } from './lib'

const PRE = numberArg('pre', 3)
const SECONDS = numberArg('seconds', 5)
const FPS = 30
const BUS = 'usb-0000:00:14.0-1' // the default preset's exploreHD: H.264, with a microphone

const probe = (args: string[]) => Bun.spawnSync(['ffprobe', '-v', 'error', ...args]).stdout.toString().trim()
const lastPts = (file: string, stream: string) => Math.max(...probe(['-select_streams', stream, '-show_entries', 'packet=pts_time', '-of', 'csv=p=0', file]).split('\n').map(Number))
const startTime = (file: string, stream: string) => Number(probe(['-select_streams', stream, '-show_entries', 'stream=start_time', '-of', 'csv=p=0', file]))

const port = await freePort()
let frames = 0
const socket = await Bun.udpSocket({ hostname: '127.0.0.1', port, socket: { data: (_s, buf) => void (buf.length > 1 && buf[1]! & 0x80 && frames++), error: () => {} } })
const mavlinkPort = await freePort()
const service = await startService({ args: ['--mavlink', `udpin:127.0.0.1:${mavlinkPort}`, '--pre-record-seconds', String(PRE), '--client-limits', 'off'] })
const link = await GroundStation.udp()
link.sendTo = { address: '127.0.0.1', port: mavlinkPort }
const autopilot = new TestAutopilot(link, { armed: false, mode: 'MANUAL', depth: 1, heading: 0, roll: 0, pitch: 0, lat: 0, lon: 0, battery: 16, batteryPct: 90, pressure: 1100, waterTemp: 12 })
autopilot.start(500)
const wait = async (what: string, ok: () => Promise<boolean> | boolean, ms = 30_000) => {
  for (const end = Date.now() + ms; !(await ok()); await Bun.sleep(50)) if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
}

try {
  const configured = await service.call('POST', '/api/devices/configure_stream', {
    bus_info: BUS,
    stream_type: 'UDP',
    encode_type: 'H264',
    stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: FPS } },
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port }],
  })
  if (configured.status !== 200) throw new Error(`configure_stream: ${configured.status} ${JSON.stringify(configured.body)}`)
  await wait('the autopilot heard', async () => (await service.call('GET', '/api/health')).body.plugins.mavlink.vehicle?.mode === 'MANUAL')
  await wait('frames at the endpoint', () => frames > FPS)
  const filled = frames
  await wait('the buffer filled', () => frames - filled >= (PRE + 2) * FPS)

  autopilot.set({ mode: 'ALT_HOLD' })
  const pressed = frames
  const started = await service.call('POST', '/api/devices/start_recording', { bus_info: BUS })
  if (started.status !== 200) throw new Error(`start_recording: ${started.status} ${JSON.stringify(started.body)}`)
  await wait(`${SECONDS} s recorded`, () => frames - pressed >= SECONDS * FPS)
  const after = frames - pressed
  await service.call('POST', '/api/devices/stop_recording', { bus_info: BUS })

  const dir = join(service.dataDir, 'recordings')
  const file = join(dir, readdirSync(dir).filter((f) => f.endsWith('.mkv')).sort()[0]!)
  const inFile = Number(probe(['-count_frames', '-select_streams', 'v:0', '-show_entries', 'stream=nb_read_frames', '-of', 'csv=p=0', file]))
  const video0 = startTime(file, 'v:0')
  const press = (inFile - after) / FPS
  // The cues as ffmpeg extracts them (SubRip, its times from the file's start: its earliest track).
  const srt = join(dir, 'cues.srt')
  Bun.spawnSync(['ffmpeg', '-v', 'error', '-y', '-i', file, '-map', '0:s', srt])
  const fileStart = Math.min(video0, startTime(file, 's:0'), startTime(file, 'a:0'))
  const cues = (await Bun.file(srt).text()).split(/\r?\n\r?\n/).map((block) => {
    const [h, m, sec, ms] = /(\d+):(\d+):(\d+),(\d+) -->/.exec(block)?.slice(1).map(Number) ?? [NaN]
    return { at: h! * 3600 + m! * 60 + sec! + ms! / 1000 + fileStart - video0, text: block }
  })
  const modeCue = cues.find((c) => c.text.includes('ALT_HOLD'))
  const soundStart = startTime(file, 'a:0') - video0
  const soundEnd = lastPts(file, 'a:0') + 0.02
  const videoEnd = lastPts(file, 'v:0') + 1 / FPS
  console.log(`--pre-record-seconds ${PRE}: ${inFile} frames in the file, ${after} sent after the press: the press at video time ${press.toFixed(2)} s (±0.1)`)
  console.log(`text: the first cue of the mode changed at the press at ${modeCue ? modeCue.at.toFixed(2) : 'none'} s: ${modeCue ? (modeCue.at - press).toFixed(2) : '?'} s from the press (negative: early)`)
  console.log(`sound: from ${soundStart.toFixed(2)} s to ${(soundEnd - video0).toFixed(2)} s; the video from 0 to ${(videoEnd - video0).toFixed(2)} s: the sound ends ${(videoEnd - soundEnd).toFixed(2)} s before the video`)
  console.log(`load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
} finally {
  autopilot.stop()
  link.close()
  await service.kill()
  socket.close()
}
