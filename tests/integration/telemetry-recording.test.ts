// The vehicle's telemetry inside the recording (issue 22, item 1): a whole service with simulated cameras
// and real GStreamer, an ArduSub autopilot on its MAVLink link (tests/mavlink-autopilot.ts: written from
// common.xml and ardupilotmega.xml, sharing no code with the service), and only independent readers of
// the result: ffprobe sees the subtitle track, ffmpeg extracts it as SubRip, mpv shows it, the sidecars
// parse with a strict ASS parser and a CSV reader written here. Without an autopilot a recording has no text track.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { copyFileSync, existsSync, readdirSync } from 'node:fs'
import { basename, join } from 'node:path'
import { listenEvents, until } from '../helpers'
import { TestAutopilot, type AutopilotState } from '../mavlink-autopilot'
import { GroundStation } from '../mavlink-gcs'
import { freePort, packetTimes, playableSecondsNow, requireGStreamer, segmentFile, tempDir } from './gstreamer.helpers'
import { h264Device, startService, type Service } from './service.helpers'

const services: Service[] = []
const stations: GroundStation[] = []
const autopilots: TestAutopilot[] = []
beforeAll(() => {
  requireGStreamer()
  for (const tool of ['ffmpeg', 'ffprobe', 'mpv']) if (!Bun.which(tool)) throw new Error(`${tool} is missing: run scripts/setup/recordings.sh`)
})
afterAll(async () => {
  for (const a of autopilots) a.stop()
  for (const g of stations) g.close()
  for (const s of services) await s.kill()
})

const KNOWN: AutopilotState = {
  armed: false,
  mode: 'MANUAL',
  depth: 12.34,
  heading: 271,
  roll: -1.5,
  pitch: 3.4,
  lat: 47.3769123,
  lon: 8.5417456,
  battery: 15.8,
  batteryPct: 62,
  pressure: 2250.5,
  waterTemp: 11.5,
}

/** A service whose MAVLink link listens (udpin), with an autopilot talking to it from the start. */
async function withAutopilot(extraArgs: string[] = []): Promise<{ s: Service; autopilot: TestAutopilot }> {
  const port = freePort()
  const s = await startService({ args: ['--mavlink', `udpin:127.0.0.1:${port}`, ...extraArgs] })
  services.push(s)
  const link = await GroundStation.udp()
  stations.push(link)
  link.sendTo = { address: '127.0.0.1', port }
  const autopilot = new TestAutopilot(link, { ...KNOWN })
  autopilots.push(autopilot)
  autopilot.start(500)
  await until('the autopilot heard', () => s.call('GET', '/api/health'), (r) => r.body?.plugins?.mavlink?.vehicle?.battery_v === KNOWN.battery, 20_000)
  return { s, autopilot }
}

async function runningStream(s: Service): Promise<{ bus_info: string; fps: number }> {
  const dev = await h264Device(s)
  const r = await s.call('POST', '/api/devices/configure_stream', {
    bus_info: dev.bus_info,
    stream_type: 'UDP',
    stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  expect(r.status, JSON.stringify(r.body)).toBe(200)
  await until('the stream running', () => s.call('GET', '/api/devices'), (r) => r.body.find((d: any) => d.bus_info === dev.bus_info)?.stream_status?.state === 'running', 30_000)
  return { bus_info: dev.bus_info, fps: 15 }
}

function run(cmd: string[]): { out: string; err: string; code: number } {
  const p = Bun.spawnSync(cmd, { stdout: 'pipe', stderr: 'pipe', timeout: 60_000 })
  return { out: p.stdout.toString(), err: p.stderr.toString(), code: p.exitCode ?? -1 }
}

/** ffprobe's streams of a file. */
function streamsOf(path: string): { codec_type: string; codec_name: string }[] {
  const r = run(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_type,codec_name', '-of', 'json', path])
  expect(r.code, r.err).toBe(0)
  return JSON.parse(r.out).streams
}

/** SubRip as ffmpeg writes it: index, `start --> end`, text lines, blank line. */
function parseSrt(text: string): { start: number; end: number; text: string }[] {
  const time = (t: string) => {
    const m = /^(\d+):(\d\d):(\d\d),(\d\d\d)$/.exec(t)!
    return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) + Number(m[4]) / 1000
  }
  return text.replace(/\r/g, '').trim().split(/\n\n+/).map((block) => {
    const lines = block.split('\n')
    const m = /^(\S+) --> (\S+)$/.exec(lines[1]!)
    if (!/^\d+$/.test(lines[0]!) || !m) throw new Error(`not a SubRip cue: ${JSON.stringify(block)}`)
    return { start: time(m[1]!), end: time(m[2]!), text: lines.slice(2).join('\n') }
  })
}

/**
 * One decoded frame of `path` (the first at or after `at` s) as 8-bit grey; with `burn`, the file's own
 * subtitle track burnt in by ffmpeg's `subtitles` filter (libass), as docs/recordings.md tells a pilot.
 */
function greyFrame(path: string, at: number, burn: boolean): Buffer {
  // The filter takes a file name in the filter graph: from the file's own directory, a plain name.
  const dir = join(path, '..')
  const filters = [...(burn ? [`subtitles=${basename(path)}`] : []), `select=gte(t\\,${at.toFixed(3)})`, 'format=gray']
  const p = Bun.spawnSync(['ffmpeg', '-v', 'error', '-i', basename(path), '-vf', filters.join(','), '-frames:v', '1', '-f', 'rawvideo', '-'], { cwd: dir, stdout: 'pipe', stderr: 'pipe', timeout: 60_000 })
  expect(p.exitCode, p.stderr.toString()).toBe(0)
  return Buffer.from(p.stdout)
}

/**
 * A strict parser of the ASS the sidecar should be (v4.00+): [Script Info] with ScriptType, [V4+ Styles]
 * whose Style rows fit their Format, [Events] whose Dialogue rows have exactly the Format's fields
 * (the last, Text, may hold commas), H:MM:SS.cc times with start ≤ end, and a style that exists.
 */
function parseAss(text: string): { start: number; end: number; style: string; text: string }[] {
  const sections = new Map<string, string[]>()
  let current: string[] | null = null
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trimEnd()
    if (line === '' || line.startsWith(';')) continue
    const header = /^\[(.+)\]$/.exec(line)
    if (header) {
      if (sections.has(header[1]!)) throw new Error(`section ${header[1]} twice`)
      sections.set(header[1]!, (current = []))
      continue
    }
    if (!current) throw new Error(`a line before any section: ${line}`)
    if (!/^[A-Za-z][\w ]*: ?/.test(line)) throw new Error(`not a "Key: value" line: ${line}`)
    current.push(line)
  }
  const info = sections.get('Script Info')
  if (!info?.some((l) => /^ScriptType: v4\.00\+$/.test(l))) throw new Error('no [Script Info] with ScriptType: v4.00+')
  const rows = (section: string, kind: string) => {
    const lines = sections.get(section)
    if (!lines) throw new Error(`no [${section}]`)
    const format = lines.find((l) => l.startsWith('Format:'))
    if (!format || lines.indexOf(format) !== 0) throw new Error(`[${section}] does not start with Format`)
    const names = format.slice(7).split(',').map((s) => s.trim())
    return lines.filter((l) => l.startsWith(`${kind}:`)).map((l) => {
      const values = l.slice(kind.length + 1).trimStart().split(',')
      if (values.length < names.length) throw new Error(`${kind} with ${values.length} fields, Format has ${names.length}: ${l}`)
      const fields = [...values.slice(0, names.length - 1), values.slice(names.length - 1).join(',')]
      return Object.fromEntries(names.map((n, i) => [n, fields[i]!]))
    })
  }
  const styles = new Set(rows('V4+ Styles', 'Style').map((s) => s.Name))
  const time = (t: string) => {
    const m = /^(\d):(\d\d):(\d\d)\.(\d\d)$/.exec(t)
    if (!m) throw new Error(`not an ASS time: ${t}`)
    return Number(m[1]) * 3600 + Number(m[2]) * 60 + Number(m[3]) + Number(m[4]) / 100
  }
  return rows('Events', 'Dialogue').map((d) => {
    if (!styles.has(d.Style!)) throw new Error(`Dialogue with an unknown style ${d.Style}`)
    const start = time(d.Start!)
    const end = time(d.End!)
    if (end < start) throw new Error(`Dialogue ends before it starts: ${d.Start} ${d.End}`)
    return { start, end, style: d.Style!, text: d.Text!.replace(/\\N/g, '\n') }
  })
}

/** RFC 4180 CSV (quoted cells, doubled quotes), rows as objects keyed by the header. */
function parseCsv(text: string): Record<string, string>[] {
  const rows: string[][] = []
  let row: string[] = []
  let cell = ''
  let quoted = false
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') (cell += '"'), i++
      else if (c === '"') quoted = false
      else cell += c
    } else if (c === '"') quoted = true
    else if (c === ',') row.push(cell), (cell = '')
    else if (c === '\n') row.push(cell.replace(/\r$/, '')), rows.push(row), (row = []), (cell = '')
    else cell += c
  }
  if (cell !== '' || row.length) row.push(cell), rows.push(row)
  const [header, ...body] = rows
  for (const r of body) if (r.length !== header!.length) throw new Error(`a row of ${r.length} cells under a header of ${header!.length}`)
  return body.map((r) => Object.fromEntries(header!.map((h, i) => [h, r[i]!])))
}

test('a recording made with an autopilot on the link carries its telemetry as a subtitle track; ffmpeg extracts it; the sidecars say the same', async () => {
  const { s, autopilot } = await withAutopilot()
  const { bus_info, fps } = await runningStream(s)
  const started = await s.call('POST', '/api/devices/start_recording', { bus_info })
  expect(started.status, JSON.stringify(started.body)).toBe(200)
  expect(started.body).toMatchObject({ active: true, telemetry: true })
  const file: string = started.body.file
  const path = segmentFile(join(s.dataDir, 'recordings'), file) // one segment: the recording is short

  // Two changes the track must show at once, 1.5 s apart by the autopilot's clock.
  await until('2 s recorded', () => s.call('GET', '/api/devices'), (r) => r.body.find((d: any) => d.bus_info === bus_info)?.recording?.bytes > 0, 20_000)
  const modeAt = autopilot.set({ mode: 'ALT_HOLD' })
  await until('the mode change reached the service', () => s.call('GET', '/api/health'), (r) => r.body.plugins.mavlink.vehicle?.mode === 'ALT_HOLD', 10_000)
  await until('1.5 s after the mode change', async () => Date.now(), (now) => now - modeAt >= 1500, 5000)
  const armedAt = autopilot.set({ armed: true, depth: 20.5 })
  await until('armed reached the service', () => s.call('GET', '/api/health'), (r) => r.body.plugins.mavlink.vehicle?.armed === true, 10_000)
  await until('2 s more', async () => Date.now(), (now) => now - armedAt >= 2000, 5000)
  // The text pad does not hold video back: what is on disk now plays to within a second of the live
  // edge (matroskamux waits for a buffer on every pad; the cues come every 250 ms). The file's clock is
  // tied to the wall clock by the cues themselves: the first cue of a new UTC second was sent at most
  // one cue interval after that second began, so the lag below is overstated by at most 0.25 s.
  const probedAt = Date.now()
  const snapshot = join(tempDir('periscope-lag-'), 'now.mkv')
  copyFileSync(path, snapshot)
  const onDisk = await playableSecondsNow(snapshot, 20_000)
  const live = parseCsv(await (await fetch(`${s.url}/api/recordings/${file}/telemetry.csv`)).text())
  const tick = live.filter((r, i) => i > 0 && r.utc !== live[i - 1]!.utc && Number(r.time_s) <= onDisk).pop()!
  expect(tick).toBeDefined()
  let tickWall = Date.parse(`${new Date(probedAt).toISOString().slice(0, 10)}T${tick.utc}Z`)
  if (tickWall > probedAt) tickWall -= 86_400_000 // the recording crossed midnight UTC
  const lag = (probedAt - (tickWall + (onDisk - Number(tick.time_s)) * 1000)) / 1000
  console.log(`telemetry recording: ${onDisk.toFixed(2)} s on disk, ${lag.toFixed(2)} s behind the live edge (at most 0.25 s overstated)`)
  // The segmenter holds the group of pictures it collects (a key frame every second here): up to 1 s,
  // plus the 0.25 s clusters, the 0.25 s this measure may overstate and a loaded machine's delay (1.73 s
  // seen in CI). A text pad that held video back would leave it further behind with every second.
  expect(lag).toBeLessThan(2.5)
  const stopped = await s.call('POST', '/api/devices/stop_recording', { bus_info })
  expect(stopped.status).toBe(200)

  // ffprobe: one H.264 video track and one SubRip (S_TEXT/UTF8) text track.
  const streams = streamsOf(path)
  // The simulated camera's microphone adds its sound as an Opus track (docs/sound.md): three tracks in all.
  expect(streams.map((x) => `${x.codec_type}:${x.codec_name}`).sort()).toEqual(['audio:opus', 'subtitle:subrip', 'video:h264'])

  // ffmpeg extracts it as SubRip, with no tool of ours.
  const srtPath = join(tempDir('periscope-srt-'), 'out.srt')
  const extracted = run(['ffmpeg', '-v', 'error', '-y', '-i', path, '-map', '0:s', srtPath])
  expect(extracted.code, extracted.err).toBe(0)
  const cues = parseSrt(await Bun.file(srtPath).text())
  // At least once a second over the recording (it resends every 250 ms).
  expect(cues.length).toBeGreaterThanOrEqual(5)
  for (let i = 1; i < cues.length; i++) expect(cues[i]!.start - cues[i - 1]!.start).toBeLessThanOrEqual(1.0)
  // Each cue lasts until the next begins (within a frame), never ending before it; only a change
  // (arming, the mode) may begin before the cue ahead of it ends.
  const state = (text: string) => /(DISARMED|ARMED) · (\S+)/.exec(text)?.slice(1).join(' ')
  for (let i = 0; i < cues.length; i++) expect(cues[i]!.end - cues[i]!.start).toBeGreaterThan(0)
  for (let i = 1; i < cues.length; i++) {
    const [before, cue] = [cues[i - 1]!, cues[i]!]
    expect(before.end).toBeGreaterThanOrEqual(cue.start - 1 / fps)
    if (state(before.text) === state(cue.text)) expect(Math.abs(before.end - cue.start), `${before.end} then ${cue.start}`).toBeLessThanOrEqual(1 / fps)
  }
  // ffmpeg's subtitles filter burns the track into the picture: a frame inside a cue differs from the
  // same frame without it (the simulated camera's picture moves, so the frame is the same one decoded twice).
  const burnCue = cues[Math.floor(cues.length / 2)]!
  const plain = greyFrame(path, burnCue.start + 0.05, false)
  const burnt = greyFrame(path, burnCue.start + 0.05, true)
  expect(burnt.length).toBe(plain.length)
  let changed = 0
  for (let i = 0; i < plain.length; i++) if (Math.abs(plain[i]! - burnt[i]!) > 40) changed++
  expect(changed, 'pixels the burnt-in text changed').toBeGreaterThan(500)

  // The values the autopilot sent, in the units a pilot reads.
  const first = cues[0]!.text
  expect(first).toContain('depth 12.34 m')
  expect(first).toContain('heading 271°')
  expect(first).toContain('roll -1.5°')
  expect(first).toContain('pitch 3.4°')
  expect(first).toContain('water 11.5 °C')
  expect(first).toContain('position 47.3769123 8.5417456')
  expect(first).toContain('battery 15.80 V 62%')
  expect(first).toContain('DISARMED')
  expect(first).toContain('MANUAL')
  expect(first).toContain('video running')

  // The changes, on the video's clock: their distance in the file is their distance when sent, within one frame.
  const modeCue = cues.find((c) => c.text.includes('ALT_HOLD'))!
  const armedCue = cues.find((c) => /(^|\W)ARMED/.test(c.text) && !c.text.includes('DISARMED'))!
  expect(modeCue).toBeDefined()
  expect(armedCue).toBeDefined()
  // The HEARTBEAT comes first, so the armed cue shows the depth known then; the next ones the new depth.
  expect(cues.filter((c) => c.start > armedCue.start).some((c) => c.text.includes('depth 20.50 m'))).toBe(true)
  expect(Math.abs(armedCue.start - modeCue.start - (armedAt - modeAt) / 1000)).toBeLessThanOrEqual(1 / fps)
  // mpv, a player, shows the track: a cue at every frame from the first one on (a cue without an end
  // lasts until the next), and the armed one from its own frame on.
  const mpv = run(['mpv', '--no-config', '--vo=null', '--ao=null', '--no-audio', '--sid=1', '--untimed', '--term-status-msg=SUB[${=time-pos}]${sub-text}#END', path])
  expect(mpv.code, mpv.err.slice(-500)).toBe(0)
  const shown = [...(mpv.out + mpv.err).matchAll(/SUB\[([\d.]+)\]([\s\S]*?)#END/g)].map((m) => ({ at: Number(m[1]), text: m[2]! }))
  const afterFirstCue = shown.filter((x) => x.at >= cues[0]!.start + 1 / fps)
  expect(afterFirstCue.length).toBeGreaterThan(3 * fps)
  expect(afterFirstCue.filter((x) => !x.text.includes('depth '))).toEqual([])
  const armedShown = afterFirstCue.find((x) => /(^|\n)ARMED · ALT_HOLD/.test(x.text))!
  expect(Math.abs(armedShown.at - armedCue.start)).toBeLessThanOrEqual(1 / fps + 0.001)

  // The video runs under the whole track.
  const videoSeconds = Number(run(['ffprobe', '-v', 'error', '-select_streams', 'v', '-show_entries', 'format=duration', '-of', 'csv=p=0', path]).out.trim())
  expect(armedCue.start).toBeLessThan(videoSeconds)

  // The sidecars: ASS that a strict parser takes, CSV with a header; the same cues.
  const ass = await fetch(`${s.url}/api/recordings/${file}/telemetry.ass`)
  expect(ass.status).toBe(200)
  expect(ass.headers.get('content-type')).toContain('text/x-ssa')
  const dialogues = parseAss(await ass.text())
  expect(dialogues.length).toBeGreaterThanOrEqual(4)
  const assArmed = dialogues.find((d) => d.text.includes('ARMED') && !d.text.includes('DISARMED'))!
  expect(Math.abs(assArmed.start - armedCue.start)).toBeLessThanOrEqual(0.01) // centiseconds
  for (let i = 1; i < dialogues.length; i++) expect(dialogues[i]!.start).toBeCloseTo(dialogues[i - 1]!.end, 2)

  const csv = await fetch(`${s.url}/api/recordings/${file}/telemetry.csv`)
  expect(csv.status).toBe(200)
  expect(csv.headers.get('content-type')).toContain('text/csv')
  const rows = parseCsv(await csv.text())
  expect(rows.length).toBe(dialogues.length)
  expect(rows[0]).toMatchObject({ armed: 'false', mode: 'MANUAL', depth_m: '12.34', heading_deg: '271', roll_deg: '-1.5', lat: '47.3769123', lon: '8.5417456', battery_v: '15.8', battery_pct: '62', water_temp_c: '11.5', stream: 'running' })
  const csvArmed = rows.find((r) => r.armed === 'true')!
  expect(csvArmed).toMatchObject({ mode: 'ALT_HOLD' })
  expect(rows.some((r) => r.armed === 'true' && r.depth_m === '20.5')).toBe(true)
  expect(Math.abs(Number(csvArmed.time_s) - armedCue.start)).toBeLessThanOrEqual(0.001)
}, 180_000)

/** ffprobe's first timestamp (s) of a file's video and of its text track. */
function startTimes(path: string): { video: number; text: number } {
  const r = run(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_type,start_time', '-of', 'json', path])
  expect(r.code, r.err).toBe(0)
  const streams: { codec_type: string; start_time: string }[] = JSON.parse(r.out).streams
  return { video: Number(streams.find((x) => x.codec_type === 'video')!.start_time), text: Number(streams.find((x) => x.codec_type === 'subtitle')!.start_time) }
}

/** The video frames of a file (ffprobe counts its packets). */
function videoFrames(path: string): number {
  const r = run(['ffprobe', '-v', 'error', '-select_streams', 'v', '-count_packets', '-show_entries', 'stream=nb_read_packets', '-of', 'csv=p=0', path])
  expect(r.code, r.err).toBe(0)
  return Number(r.out.trim())
}

test('the text and the sound are on the video\'s clock in every segment and in the pre-recorded seconds: a change made before the press and one in a later segment are as far apart as when sent', async () => {
  const { s, autopilot } = await withAutopilot(['--record-segment-seconds', '2', '--pre-record-seconds', '2'])
  const { bus_info, fps } = await runningStream(s)
  // The pre-record buffer fills (2 s of whole groups of pictures), then the mode changes, then the press.
  const runningAt = Date.now()
  await until('3 s of stream', async () => Date.now(), (now) => now - runningAt >= 3000, 5000)
  const modeAt = autopilot.set({ mode: 'ALT_HOLD' })
  await until('the mode change heard', () => s.call('GET', '/api/health'), (r) => r.body.plugins.mavlink.vehicle?.mode === 'ALT_HOLD', 10_000)
  await until('0.3 s after it', async () => Date.now(), (now) => now - modeAt >= 300, 5000)
  const started = await s.call('POST', '/api/devices/start_recording', { bus_info })
  expect(started.status, JSON.stringify(started.body)).toBe(200)
  const dir = join(s.dataDir, 'recordings')
  const stem = String(started.body.file).replace(/\.mkv$/, '')
  // Armed in the second segment or later.
  await until('a third segment', async () => existsSync(join(dir, `${stem}_seg003.mkv`)), (yes) => yes, 20_000)
  const armedAt = autopilot.set({ armed: true })
  await until('armed heard', () => s.call('GET', '/api/health'), (r) => r.body.plugins.mavlink.vehicle?.armed === true, 10_000)
  await until('a fourth segment', async () => existsSync(join(dir, `${stem}_seg004.mkv`)), (yes) => yes, 20_000)
  expect((await s.call('POST', '/api/devices/stop_recording', { bus_info })).status).toBe(200)

  const files = readdirSync(dir).filter((f) => f.startsWith(`${stem}_seg`) && f.endsWith('.mkv')).sort().map((f) => join(dir, f))
  expect(files.length).toBeGreaterThanOrEqual(4)
  // Each file: its text starts with its video, within a frame (the text was 0.4 s late in later segments
  // when stamped on arrival, and 2 s early in a pre-recorded start).
  for (const file of files) {
    const { video, text } = startTimes(file)
    expect(Math.abs(text - video), `${basename(file)}: video from ${video} s, text from ${text} s`).toBeLessThanOrEqual(1 / fps)
  }
  // The simulated camera's microphone: in the first file too, its sound spans the video, from the oldest
  // pre-recorded frame to the cut (stamped from the press on, it began with the live part and ended
  // seconds before the video).
  for (const file of files.slice(0, -1)) {
    const [video, sound] = [packetTimes(file, 'v:0'), packetTimes(file, 'a:0')]
    expect(Math.abs(sound[0]! - video[0]!), `${basename(file)}: the sound's start`).toBeLessThan(0.1)
    expect(Math.abs(Math.max(...sound) - Math.max(...video)), `${basename(file)}: the sound's end`).toBeLessThan(0.1)
  }
  // The cues on one timeline: every frame is in exactly one file, so a file's time plus the frames before it.
  const timeline: { at: number; text: string }[] = []
  let before = 0
  for (const file of files) {
    const srt = join(tempDir('periscope-srt-'), 'out.srt')
    const extracted = run(['ffmpeg', '-v', 'error', '-y', '-i', file, '-map', '0:s', srt])
    expect(extracted.code, extracted.err).toBe(0)
    // ffmpeg writes SubRip times from the file's start (its earliest track): counted here from its first frame.
    const { video, text } = startTimes(file)
    for (const cue of parseSrt(await Bun.file(srt).text())) timeline.push({ at: before + cue.start + Math.min(video, text) - video, text: cue.text })
    before += videoFrames(file) / fps
  }
  // The first cue shows the telemetry of the file's first, pre-recorded, frame: before the mode change.
  expect(timeline[0]!.text).toContain('MANUAL')
  const modeCue = timeline.find((c) => c.text.includes('ALT_HOLD'))!
  const armedCue = timeline.find((c) => /(^|\W)ARMED/.test(c.text) && !c.text.includes('DISARMED'))!
  expect(modeCue.at).toBeGreaterThan(0) // within the pre-recorded seconds, not at the file's start
  console.log(`pre-recorded and segmented text: mode cue at ${modeCue.at.toFixed(3)} s, armed at ${armedCue.at.toFixed(3)} s; sent ${((armedAt - modeAt) / 1000).toFixed(3)} s apart`)
  expect(Math.abs(armedCue.at - modeCue.at - (armedAt - modeAt) / 1000)).toBeLessThanOrEqual(1 / fps)
}, 120_000)

test('without an autopilot on the link a recording has no text track, and its sidecars answer 404', async () => {
  const s = await startService({ args: ['--mavlink', `udpin:127.0.0.1:${freePort()}`] })
  services.push(s)
  const { bus_info } = await runningStream(s)
  const started = await s.call('POST', '/api/devices/start_recording', { bus_info })
  expect(started.status).toBe(200)
  expect(started.body.telemetry).toBe(false)
  const file: string = started.body.file
  await until('bytes on disk', () => s.call('GET', '/api/devices'), (r) => r.body.find((d: any) => d.bus_info === bus_info)?.recording?.bytes > 0, 20_000)
  expect((await s.call('POST', '/api/devices/stop_recording', { bus_info })).status).toBe(200)
  expect(streamsOf(segmentFile(join(s.dataDir, 'recordings'), file)).map((x) => x.codec_type).sort()).toEqual(['audio', 'video']) // no subtitle; the microphone's sound
  for (const kind of ['ass', 'csv']) {
    const r = await s.call('GET', `/api/recordings/${file}/telemetry.${kind}`)
    expect(r.status).toBe(404)
    expect(r.body.detail).toContain('no telemetry')
  }
  expect((await s.call('GET', '/api/recordings/no-such-recording.mkv/telemetry.csv')).status).toBe(404)
}, 120_000)

test('record while armed: the autopilot arming starts a recording of the camera, with the pre-record seconds before it; disarming stops it; the events say so', async () => {
  const { s, autopilot } = await withAutopilot(['--pre-record-seconds', '2'])
  const { bus_info } = await runningStream(s)
  const runningAt = Date.now()
  await until('the pre-record buffer filled (3 s of stream)', async () => Date.now(), (now) => now - runningAt >= 3000, 5000)
  const events = listenEvents(`${s.url}/api/events`)
  try {
    await events.ready
    const device = async () => (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === bus_info)
    const set = await s.call('POST', '/api/devices/set_record_while_armed', { bus_info, enabled: true })
    expect(set.status).toBe(200)
    expect((await device()).record_while_armed).toBe(true)
    expect((await device()).recording.active).toBe(false) // disarmed: nothing yet

    autopilot.set({ armed: true })
    const recording = await until('a recording started by arming', device, (d) => d.recording.active === true, 20_000)
    expect(recording.recording.telemetry).toBe(true)
    const started = await until('the started event', async () => events.events.find((e) => e.type === 'record_while_armed'), (e) => e !== undefined, 10_000)
    expect(started!.data).toMatchObject({ bus_info, armed: true, action: 'started', file: recording.recording.file })
    await until('bytes on disk', device, (d) => d.recording.bytes > 0, 20_000)

    autopilot.set({ armed: false })
    const ended = await until('the recording stopped by disarming', device, (d) => d.recording.active === false, 20_000)
    expect(ended.recording.file).toBe(recording.recording.file)
    const stopped = await until('the stopped event', async () => events.events.filter((e) => e.type === 'record_while_armed'), (list) => list.length >= 2, 10_000)
    expect(stopped[1]!.data).toMatchObject({ bus_info, armed: false, action: 'stopped', file: recording.recording.file })

    // The file begins with the seconds before arming (whole groups of pictures, a key frame every
    // second: 1 to 2 s), its track says DISARMED there and ARMED from the arming on.
    const csv = await fetch(`${s.url}/api/recordings/${recording.recording.file}/telemetry.csv`)
    expect(csv.status).toBe(200)
    const rows = parseCsv(await csv.text())
    expect(rows[0]!.armed).toBe('false')
    const armedAt = Number(rows.find((r) => r.armed === 'true')!.time_s)
    console.log(`record while armed: armed ${armedAt.toFixed(2)} s into the file`)
    expect(armedAt).toBeGreaterThan(0.9)
    expect(armedAt).toBeLessThan(2.2)
    expect(streamsOf(segmentFile(join(s.dataDir, 'recordings'), recording.recording.file)).map((x) => x.codec_type).sort()).toEqual(['audio', 'subtitle', 'video'])

    // Switched off, arming records nothing.
    expect((await s.call('POST', '/api/devices/set_record_while_armed', { bus_info, enabled: false })).status).toBe(200)
    autopilot.set({ armed: true })
    await until('armed seen by the service', () => s.call('GET', '/api/health'), (r) => r.body.plugins.mavlink.vehicle?.armed === true, 10_000)
    expect((await device()).recording.active).toBe(false)
    expect(events.events.filter((e) => e.type === 'record_while_armed').length).toBe(2)
  } finally {
    events.close()
  }
}, 180_000)

test("a RECORDING stream's own file carries the telemetry track too", async () => {
  const { s } = await withAutopilot()
  const dev = await h264Device(s)
  const configure = (enabled: boolean) =>
    s.call('POST', '/api/devices/configure_stream', {
      bus_info: dev.bus_info,
      stream_type: 'RECORDING',
      stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
      encode_type: 'H264',
      enabled,
      endpoints: [],
    })
  expect((await configure(true)).status).toBe(200)
  const listed = await until('the file written', () => s.call('GET', '/api/recordings'), (r) => r.body.some((x: any) => x.in_progress && x.telemetry), 30_000)
  const rec = listed.body.find((x: any) => x.in_progress)
  const file = `${rec.name}.${rec.format}`
  await until('2 s recorded', async () => playableSecondsNow(segmentFile(join(s.dataDir, 'recordings'), file)), (sec) => sec >= 2, 30_000)
  expect((await configure(false)).status).toBe(200)
  await until('the file closed', () => s.call('GET', '/api/recordings'), (r) => r.body.some((x: any) => `${x.name}.${x.format}` === file && !x.in_progress), 20_000)
  const path = segmentFile(join(s.dataDir, 'recordings'), file)
  // The simulated camera's microphone is in it too (plugins/audio attaches a camera's own by default).
  expect(streamsOf(path).map((x) => `${x.codec_type}:${x.codec_name}`).sort()).toEqual(['audio:opus', 'subtitle:subrip', 'video:h264'])
  const csv = await fetch(`${s.url}/api/recordings/${file}/telemetry.csv`)
  expect(csv.status).toBe(200)
  const rows = parseCsv(await csv.text())
  expect(rows.length).toBeGreaterThanOrEqual(2)
  expect(rows[rows.length - 1]).toMatchObject({ mode: 'MANUAL', depth_m: '12.34', battery_v: '15.8' })
  // Its cues last too (stamped as they arrive, so on the beat within the machine's delays).
  const srtPath = join(tempDir('periscope-srt-'), 'out.srt')
  const extracted = run(['ffmpeg', '-v', 'error', '-y', '-i', path, '-map', '0:s:0', srtPath])
  expect(extracted.code, extracted.err).toBe(0)
  const cues = parseSrt(await Bun.file(srtPath).text())
  expect(cues.length).toBeGreaterThanOrEqual(4)
  for (const cue of cues) expect(cue.end - cue.start).toBeCloseTo(0.25, 3)
}, 180_000)
