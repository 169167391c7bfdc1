// Inside the VM: the real ALSA path. snd-aloop (the kernel's loopback sound card) is loaded; a 1000 Hz tone
// played into its playback side comes out of its capture side, which the service lists as a sound source
// (drivers/alsa), carries as the sound of a vivid camera's stream (alsasrc → Opus), and serves in RTSP and
// records in the Matroska file: ffmpeg decodes both, and an FFT here finds the tone at 1000 Hz ± 2 %. A
// second process holding the capture side first is named in the sound's error, and the sound starts once
// it let go. The CPU is emulated (TCG): small video, generous waits.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { freePort, freeTcpPort, RtpCounter } from '../../integration/gstreamer.helpers'
import { VmService } from './service.helpers'

const BUS = 'platform:vivid-000'
const TONE_HZ = 1000
const SOURCE = 'alsa:Loopback,1' // what is played into device 0 is captured from device 1
const RTSP_PORT = freeTcpPort()
const service = new VmService(18084, 'cameras,recordings,v4l2,gstreamer,audio,rtsp', ['--rtsp-port', String(RTSP_PORT)])
const until = <T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs: number) => service.until(what, f, timeoutMs, 250)
const get = async (path: string) => (await fetch(`${service.base}${path}`)).json() as Promise<any>
const sound = async () => ((await get('/api/audio/streams')) as any[]).find((s) => s.bus_info === BUS)
let player: ChildProcess | null = null
let holder: ChildProcess | null = null
let endpoint: RtpCounter | null = null

/** The strongest frequency of mono float samples at `rate` (radix-2 FFT over a Hann window, parabolic peak). */
function dominantHz(samples: Float32Array, rate: number): number {
  let n = 1
  while (n * 2 <= samples.length) n *= 2
  const re = new Float64Array(n)
  const im = new Float64Array(n)
  for (let i = 0; i < n; i++) re[i] = samples[i]! * (0.5 - 0.5 * Math.cos((2 * Math.PI * i) / (n - 1)))
  for (let i = 1, j = 0; i < n; i++) {
    let bit = n >> 1
    for (; j & bit; bit >>= 1) j ^= bit
    j ^= bit
    if (i < j) {
      ;[re[i], re[j]] = [re[j]!, re[i]!]
      ;[im[i], im[j]] = [im[j]!, im[i]!]
    }
  }
  for (let len = 2; len <= n; len <<= 1) {
    const angle = (-2 * Math.PI) / len
    for (let i = 0; i < n; i += len) {
      for (let k = 0; k < len / 2; k++) {
        const wr = Math.cos(angle * k)
        const wi = Math.sin(angle * k)
        const a = i + k
        const b = a + len / 2
        const tr = re[b]! * wr - im[b]! * wi
        const ti = re[b]! * wi + im[b]! * wr
        re[b] = re[a]! - tr
        im[b] = im[a]! - ti
        re[a] = re[a]! + tr
        im[a] = im[a]! + ti
      }
    }
  }
  const mag = (k: number) => Math.hypot(re[k]!, im[k]!)
  let peak = 1
  for (let k = 2; k < n / 2; k++) if (mag(k) > mag(peak)) peak = k
  const [l, c, r] = [mag(peak - 1), mag(peak), mag(peak + 1)]
  const shift = (r - l) / (2 * (2 * c - l - r) || 1)
  return ((peak + shift) * rate) / n
}

/** 16384-sample pieces (0.34 s) with sound in them (RMS above -26 dBFS), loudest first. */
function loudPieces(samples: Float32Array): Float32Array[] {
  const pieces: { piece: Float32Array; rms: number }[] = []
  for (let at = 0; at + 16384 <= samples.length; at += 16384) {
    const piece = samples.subarray(at, at + 16384)
    const rms = Math.sqrt(piece.reduce((sum, v) => sum + v * v, 0) / piece.length)
    if (rms > 0.05) pieces.push({ piece, rms })
  }
  return pieces.sort((a, b) => b.rms - a.rms).map((p) => p.piece)
}

/** The tone's frequency in `samples`: at least a second of sound (an emulated CPU may starve the sound at times; silence fills in), measured on its loudest piece. */
function toneHz(samples: Float32Array, what: string): number {
  const loud = loudPieces(samples)
  const hz = loud[0] ? dominantHz(loud[0], 48000) : NaN
  console.log(`${what}: ${(samples.length / 48000).toFixed(1)} s decoded, ${((loud.length * 16384) / 48000).toFixed(1)} s with sound, tone at ${hz.toFixed(1)} Hz`)
  expect(loud.length).toBeGreaterThanOrEqual(3)
  return hz
}

/** Mono 48 kHz float samples of the first audio stream of `input` (a file or an RTSP URL), via ffmpeg. */
async function decodeAudio(input: string, extra: string[] = []): Promise<Float32Array> {
  const proc = spawn('ffmpeg', ['-v', 'error', ...extra, '-i', input, '-vn', '-map', '0:a:0', '-ac', '1', '-ar', '48000', '-f', 'f32le', '-'], { stdio: ['ignore', 'pipe', 'pipe'] })
  const chunks: Buffer[] = []
  let err = ''
  proc.stdout!.on('data', (d: Buffer) => chunks.push(d))
  proc.stderr!.on('data', (d) => (err += d))
  const code = await new Promise<number | null>((resolve) => proc.on('exit', resolve))
  const bytes = Buffer.concat(chunks)
  if (bytes.length < 48000 * 4) throw new Error(`ffmpeg decoded ${bytes.length} bytes of sound from ${input} (exit ${code}): ${err}`)
  return new Float32Array(bytes.buffer, bytes.byteOffset, Math.floor(bytes.length / 4))
}

beforeAll(async () => {
  if (!existsSync('/sys/bus/platform/drivers/vivid/vivid.0')) throw new Error('vivid is not loaded: this test runs inside the kernel-tier VM')
  const modprobe = spawnSync('modprobe', ['snd-aloop', 'pcm_substreams=1'], { encoding: 'utf8' })
  if (modprobe.status !== 0) throw new Error(`the VM's kernel cannot load snd-aloop: ${modprobe.stderr}`)
  for (const tool of ['gst-launch-1.0', 'ffmpeg', 'ffprobe']) if (!Bun.which(tool)) throw new Error(`${tool} is missing: run scripts/setup/kernel.sh`)
  // The tone, played into the loopback's device 0 for the whole test.
  // A second of ALSA buffer and a higher priority: on an emulated CPU shared with x264, a starved player
  // would leave the loopback silent, which is no fault of the service's.
  player = spawn('nice', ['-n', '-10', 'gst-launch-1.0', 'audiotestsrc', 'is-live=true', 'wave=sine', `freq=${TONE_HZ}`, 'volume=0.5', '!', 'audio/x-raw,format=S16LE,rate=48000,channels=2', '!', 'alsasink', 'device=hw:Loopback,0,0', 'buffer-time=1000000', 'latency-time=100000'], { stdio: 'ignore' })
  await service.start()
}, 240_000)

afterAll(async () => {
  holder?.kill('SIGKILL')
  player?.kill('SIGKILL')
  endpoint?.close()
  await service.stop(15_000)
})

test("the loopback card is listed: a capture device with its ALSA name, no USB port", async () => {
  const source = await until('the loopback capture listed', async () => ((await get('/api/audio/sources')) as any[]).find((s) => s.id === SOURCE), 30_000)
  expect(source).toMatchObject({ kind: 'alsa', name: 'Loopback', usb_port: null, camera: null })
}, 60_000)

test('a capture side another process holds: the sound says which; it starts once that process let go', async () => {
  holder = spawn('gst-launch-1.0', ['alsasrc', 'device=hw:Loopback,1,0', '!', 'audio/x-raw,rate=48000,channels=2', '!', 'fakesink'], { stdio: 'ignore' })
  // A failure here lets the capture side go too, or every later test would wait on this holder.
  try {
    const attach = await service.post('/api/audio/attach', { bus_info: BUS, source: SOURCE, rate: 48000 })
    expect({ status: attach.status, body: await attach.text() }).toMatchObject({ status: 200 })
    const rtpPort = freePort()
    endpoint = await RtpCounter.open(rtpPort)
    const r = await service.post('/api/devices/configure_stream', {
      bus_info: BUS,
      stream_type: 'UDP',
      encode_type: 'SOFTWARE_H264',
      stream_format: { width: 320, height: 180, interval: { numerator: 1, denominator: 5 } },
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port: rtpPort }],
    })
    expect({ status: r.status, body: await r.text() }).toMatchObject({ status: 200 })
    const busy = await until('the sound naming the holder', async () => {
      const s = await sound()
      return s?.error?.includes(`gst-launch-1.0 (pid ${holder!.pid})`) && s
    }, 120_000)
    expect(busy).toMatchObject({ state: 'backoff' })
  } finally {
    holder.kill('SIGKILL')
  }
  await until('the sound running once the holder let go', async () => (await sound())?.state === 'running', 120_000)
}, 300_000)

test(`the tone comes out of RTSP at ${TONE_HZ} Hz ± 2 %`, async () => {
  await until('the sound running', async () => (await sound())?.state === 'running', 120_000)
  const link = `rtsp://127.0.0.1:${RTSP_PORT}/${BUS}`
  // Four seconds with the tone in them: on an emulated CPU the sound child may stall and be restarted
  // (silence fills in meanwhile), so a window of silence is read again rather than taken as the answer.
  // Each read that falls short says why (the until's failure shows the last): no sound decoded, or too little of the tone.
  const samples = await until('four seconds of sound from RTSP, the tone in them', async () => {
    const got = await decodeAudio(link, ['-rtsp_transport', 'tcp', '-t', '4'])
    const loud = loudPieces(got).length
    if (loud < 3) throw new Error(`${(got.length / 48000).toFixed(1)} s decoded, ${((loud * 16384) / 48000).toFixed(1)} s of it with sound; the sound: ${JSON.stringify(await sound())}`)
    return got
  }, 240_000)
  console.log('the sound after RTSP:', JSON.stringify(await sound()))
  const hz = toneHz(samples, 'RTSP')
  expect(Math.abs(hz - TONE_HZ) / TONE_HZ).toBeLessThan(0.02)
}, 300_000)

test(`the tone is in the recording at ${TONE_HZ} Hz ± 2 %`, async () => {
  // As for RTSP: on an emulated CPU the sound's child may stall and be restarted (seen once: "no sound
  // for 5 s", silence filled the recording meanwhile), so a recording with too little sound in it is
  // made again rather than taken as the answer.
  const samples = await until('a recording with the tone in it', async () => {
    await until('the sound running', async () => (await sound())?.state === 'running', 120_000)
    const started = await service.post('/api/devices/start_recording', { bus_info: BUS })
    expect(started.status).toBe(200)
    const file = ((await started.json()) as { file: string }).file
    // Seconds of frames in the file, not of wall time: the recorder's child starts slowly on an emulated CPU.
    await until('some seconds recorded', async () => {
      const d = ((await get('/api/devices')) as any[]).find((x) => x.bus_info === BUS)
      return d?.recording?.active && d.recording.bytes > 150_000 && Date.now() - Date.parse(d.recording.started) > 4000
    }, 180_000)
    expect((await service.post('/api/devices/stop_recording', { bus_info: BUS })).status).toBe(200)
    // The recording's first segment (docs/recordings.md): a short recording is one file.
    const listed = ((await get('/api/recordings')) as any[]).find((x) => x.path.endsWith(file))
    const path = listed ? join(dirname(listed.path), listed.segments?.[0]?.file ?? basename(listed.path)) : join('/nonexistent', file)
    console.log('the sound after the recording:', JSON.stringify(await sound()))
    const got = await decodeAudio(path)
    const loud = loudPieces(got).length
    if (loud < 3) throw new Error(`${(got.length / 48000).toFixed(1)} s decoded from ${path}, ${((loud * 16384) / 48000).toFixed(1)} s of it with sound`)
    return got
  }, 280_000)
  const hz = toneHz(samples, 'recording')
  expect(Math.abs(hz - TONE_HZ) / TONE_HZ).toBeLessThan(0.02)
}, 300_000)
