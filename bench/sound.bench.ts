// What a stream's sound costs and how well it keeps step with the video:
//  1. CPU of the service and its children streaming 720p30 H.264 from a simulated camera, without sound and
//     then with its simulated microphone (a tone, Opus 64 kbit/s), SECONDS each (default 20): the ratio,
//     and the sound child's own share.
//  2. Audio-to-video skew at an RTSP receiver (ffprobe over TCP, the server's order): for each video frame,
//     its time minus the time of the sound packet that arrived just before it; p50 and p99 over SKEW_SECONDS.
//  3. Audio-to-video skew at a WHEP receiver (tests/integration/fixtures/whep-skew.py: GStreamer's webrtcbin, both tracks lip-synced
//     by the RTCP sender reports as a player does): each decoded video frame's pts minus the pts of the last
//     sound buffer decoded before it; p50 and p99 over SKEW_SECONDS, and the median of each second (drift).
//  3b. Chromium (one session, both tracks in one media stream, as the console plays them): every 100 ms, the
//     video's estimatedPlayoutTimestamp minus the audio's. Only for comparison: the browser's estimate from
//     the same sender reports, not a measured skew (docs/benchmarks.md, "## sound").
// `bun run bench/sound.bench.ts [--seconds 20] [--skew-seconds 10]`
import { mkdtempSync, readFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { openOffer, withPage } from '../tests/integration/browser'
import { TICK, cpuTicks, freePort, numberArg, waitHttp } from './lib'

const SECONDS = numberArg('seconds', 20)
const SKEW_SECONDS = numberArg('skew-seconds', 10)
const ROOT = join(import.meta.dir, '..')
const EHD = 'usb-0000:00:14.0-1'

const dataDir = mkdtempSync(join(tmpdir(), 'periscope-bench-sound-'))
const httpPort = await freePort()
const rtspPort = await freePort()
const url = `http://127.0.0.1:${httpPort}`
const service = Bun.spawn(
  [process.execPath, join(ROOT, 'core/main.ts'), '--host', '127.0.0.1', '--port', String(httpPort), '--rtsp-port', String(rtspPort), '--data-dir', dataDir, '--simulate', 'single', '--log-level', 'error'],
  { stdout: 'ignore', stderr: 'inherit', cwd: ROOT },
)
process.on('exit', () => service.kill('SIGTERM'))

const call = async (path: string, body?: unknown) => {
  const res = await fetch(url + path, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {})
  if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`)
  return res.json() as Promise<any>
}
const sound = async () => ((await call('/api/audio/streams')) as any[]).find((s) => s.bus_info === EHD)
async function until(what: string, ok: () => Promise<boolean>, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await Bun.sleep(200)
  }
}

/** The service and its gst-launch children. */
function pids(): number[] {
  const out = Bun.spawnSync(['ps', '-o', 'pid=,comm=', '--ppid', String(service.pid)]).stdout.toString()
  return [service.pid, ...out.split('\n').map((l) => l.trim().split(/\s+/)).filter(([, comm]) => comm?.startsWith('gst-launch')).map(([p]) => Number(p))]
}
const isSound = (pid: number) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('rtpopuspay')
  } catch {
    return false
  }
}
async function cpuOver(seconds: number): Promise<{ total: number; sound: number }> {
  const list = pids()
  const start = new Map(list.map((p) => [p, cpuTicks(p)]))
  await Bun.sleep(seconds * 1000)
  let total = 0
  let soundCpu = 0
  for (const [p, t0] of start) {
    const used = (cpuTicks(p) - t0) / TICK
    total += used
    if (isSound(p)) soundCpu += used
  }
  return { total, sound: soundCpu }
}

try {
  await waitHttp(`${url}/api/devices`)
  const port = 30000 + Math.floor(Math.random() * 8000) * 4 // ≤ 61996
  await call('/api/audio/attach', { bus_info: EHD, source: null })
  await call('/api/devices/configure_stream', {
    bus_info: EHD,
    stream_type: 'UDP',
    stream_format: { width: 1280, height: 720, interval: { numerator: 1, denominator: 30 } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port }],
  })
  await until('the stream running', async () => ((await call('/api/devices')) as any[]).find((d) => d.bus_info === EHD)?.stream_status?.state === 'running')
  console.log(`load average at the start: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  console.log(`1. CPU, 720p30 H.264 (simulated, x264), ${SECONDS} s without sound, then ${SECONDS} s with it`)
  const without = await cpuOver(SECONDS)
  await call('/api/audio/attach', { bus_info: EHD, source: 'auto' })
  await until('the sound running', async () => (await sound())?.state === 'running')
  const withSound = await cpuOver(SECONDS)
  console.log(`   without: ${without.total.toFixed(2)} s CPU; with: ${withSound.total.toFixed(2)} s (the sound's child ${withSound.sound.toFixed(2)} s = ${((100 * withSound.sound) / SECONDS).toFixed(1)} % of a core)`)
  console.log(`   ratio with/without: ${(withSound.total / without.total).toFixed(3)}`)

  console.log(`2. audio-to-video skew at an RTSP receiver (ffprobe, TCP), ${SKEW_SECONDS} s`)
  const link = ((await call('/api/devices')) as any[]).find((d) => d.bus_info === EHD).watch.rtsp
  const probe = Bun.spawn(['ffprobe', '-v', 'error', '-rtsp_transport', 'tcp', '-read_intervals', `%+${SKEW_SECONDS}`, '-show_entries', 'packet=stream_index,pts_time:stream=index,codec_type', '-of', 'json', link], { stdout: 'pipe', stderr: 'inherit' })
  const out = JSON.parse(await new Response(probe.stdout).text())
  const audioIndex = (out.streams as any[]).find((s) => s.codec_type === 'audio')?.index
  if (audioIndex === undefined) throw new Error('RTSP offered no audio track')
  let last: number | null = null
  const skews: number[] = []
  for (const p of out.packets as any[]) {
    const t = Number(p.pts_time)
    if (Number.isNaN(t)) continue
    if (p.stream_index === audioIndex) last = t
    else if (last !== null) skews.push((t - last) * 1000)
  }
  skews.sort((a, b) => a - b)
  const q = (f: number) => skews[Math.min(skews.length - 1, Math.floor(skews.length * f))]!
  console.log(`   ${skews.length} video frames; video time − sound time: p50 ${q(0.5).toFixed(1)} ms, p99 ${q(0.99).toFixed(1)} ms, min ${skews[0]!.toFixed(1)} ms, max ${skews.at(-1)!.toFixed(1)} ms`)

  console.log(`3. audio-to-video skew at a WHEP receiver (GStreamer webrtcbin, lip-synced by RTCP sender reports), ${SKEW_SECONDS} s`)
  {
    const player = Bun.spawn(['/usr/bin/python3', join(import.meta.dir, '..', 'tests', 'integration', 'fixtures', 'whep-skew.py'), `${url}/api/streams/${encodeURIComponent(EHD)}/whep`, String(SKEW_SECONDS)], { stdout: 'pipe', stderr: 'inherit' })
    const r = JSON.parse((await new Response(player.stdout).text()).trim().split('\n').at(-1) || '{}')
    if (r.status !== 201 || !r.samples) throw new Error(`webrtcbin WHEP player: ${JSON.stringify(r)}`)
    console.log(`   ${r.samples} video frames (${r.audio_buffers} sound buffers); video pts − sound pts: p50 ${r.p50} ms, p99 ${r.p99} ms, min ${r.min} ms, max ${r.max} ms`)
    console.log(`   p50 of each second: ${r.per_second_p50.join(' ')}`)
    // A whole NTP clock spreads its fractions over 0–1000 ms; werift's are cut to the second (docs/benchmarks.md).
    console.log(`   ${r.sender_reports ?? 0} sender reports; their NTP times' largest fraction of a second: ${r.sender_report_ntp_fraction_max_ms ?? '-'} ms`)
  }

  console.log(`3b. Chromium's estimatedPlayoutTimestamp, video − audio, ${SKEW_SECONDS} s (not a skew: see docs/benchmarks.md, "## sound")`)
  {
    await withPage(url, async (page) => {
      const opened = await openOffer(page, `/api/streams/${encodeURIComponent(EHD)}/whep`, 'av', ['audio', 'video'], 'max-bundle')
      if (opened.status !== 201) throw new Error(`WHEP: ${opened.status} ${opened.detail}`)
      // Played as the console plays it: both tracks of one media stream in one element.
      await page.evaluate(() => {
        const w = globalThis as any
        const media = new w.MediaStream(w.pcs.av.getReceivers().map((r: any) => r.track))
        const video = w.document.createElement('video')
        video.muted = true
        video.autoplay = true
        video.srcObject = media
        w.document.body.appendChild(video)
      })
      const sample = () =>
        page.evaluate(async () => {
          const at: Record<string, number> = {}
          ;(await (globalThis as any).pcs.av.getStats()).forEach((r: any) => {
            if (r.type === 'inbound-rtp' && r.estimatedPlayoutTimestamp) at[r.kind] = r.estimatedPlayoutTimestamp
          })
          return at
        })
      // Until both tracks play out (and the browser has the sender reports that map them to one clock).
      for (const deadline = Date.now() + 30_000; ; await Bun.sleep(200)) {
        const at = await sample()
        if (at.audio && at.video) break
        if (Date.now() > deadline) throw new Error(`Chromium reports no estimatedPlayoutTimestamp for ${at.audio ? 'video' : 'audio'}`)
      }
      const skews: number[] = []
      for (const end = Date.now() + SKEW_SECONDS * 1000; Date.now() < end; await Bun.sleep(100)) {
        const at = await sample()
        if (at.audio && at.video) skews.push(at.video - at.audio)
      }
      skews.sort((a, b) => a - b)
      const q = (f: number) => skews[Math.min(skews.length - 1, Math.floor(skews.length * f))]!
      console.log(`   ${skews.length} samples; video − audio: p50 ${q(0.5).toFixed(1)} ms, p99 ${q(0.99).toFixed(1)} ms, min ${skews[0]!.toFixed(1)} ms, max ${skews.at(-1)!.toFixed(1)} ms`)
    })
  }
  console.log(`load average at the end: ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
} finally {
  service.kill('SIGTERM')
  await service.exited
}
