// A sound-only stream (a hydrophone with no camera), end to end with the simulated hydrophone: GStreamer
// receives its Opus RTP from the served SDP, ffprobe sees Opus on its RTSP mount and in its recording (listed
// by GET /api/recordings like the cameras'), it survives its card unplugged and replugged, and its settings
// survive a restart of the service.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadPlugin } from '../../core/loader'
import type { PeriscopePlugin } from '../../core/plugin'
import { launchBrowser, openOffer, withPage } from './browser'
import { startTestServer, tempDir, type TestServer } from '../helpers'
import { eachLine, freePort, freeTcpPort, requireGStreamer, requireRtspClients, RtpCounter, segmentFile, waitFor } from './gstreamer.helpers'

const SOURCE = 'sim:hydrophone'
let s: TestServer
let plugins: PeriscopePlugin[]
const dataDir = tempDir('periscope-sound-only-')
const rtspPort = freeTcpPort()
beforeAll(async () => {
  requireGStreamer()
  requireRtspClients()
  plugins = await Promise.all(['mock', 'cameras', 'preferences', 'gstreamer', 'audio', 'metrics', 'rtsp', 'recordings', 'whep', 'console'].map(loadPlugin))
  s = await startTestServer({ plugins, dataDir, config: { simulate: 'single', rtspPort } })
})
afterAll(async () => {
  await s?.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

/** waitFor with an asynchronous probe (gstreamer.helpers' waitFor takes a synchronous one). */
async function until<T>(what: string, probe: () => Promise<T | undefined | null | false>, timeoutMs: number, stepMs = 200): Promise<T> {
  for (const deadline = Date.now() + timeoutMs; ; await Bun.sleep(stepMs)) {
    const value = await probe()
    if (value) return value
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
  }
}

const configure = (port: number, enabled = true) => s.call('POST', '/api/audio/sound_only/configure', { source: SOURCE, endpoints: [{ host: '127.0.0.1', port }], enabled })
const status = async () => ((await s.call('GET', '/api/audio/sound_only')).body as any[]).find((x) => x.source === SOURCE)
const waitRunning = () => until('the sound-only stream running', async () => (await status())?.state === 'running', 30_000)

test('GStreamer receives the sound-only stream from its SDP description', async () => {
  const port = freePort()
  const answer = await configure(port)
  expect(answer.status).toBe(200)
  try {
    expect(answer.body).toMatchObject({ source: SOURCE, enabled: true, endpoints: [{ host: '127.0.0.1', port }], channels: 2 })
    await waitRunning()
    const text = await (await fetch(`${s.url}/api/audio/sound_only/sdp?source=${encodeURIComponent(SOURCE)}`)).text()
    expect(text).toContain(`m=audio ${port} RTP/AVP 111`)
    expect(text).not.toContain('m=video')
    const file = join(tempDir(), 'sound.sdp')
    writeFileSync(file, text)
    const rx = Bun.spawn(
      ['gst-launch-1.0', '-m', 'filesrc', `location=${file}`, '!', 'sdpdemux', 'latency=50', '!', 'rtpopusdepay', '!', 'opusdec', '!', 'level', 'name=heard', 'interval=200000000', '!', 'fakesink', 'sync=false'],
      { stdout: 'pipe', stderr: 'ignore' },
    )
    const heard: number[] = []
    const reading = eachLine(rx.stdout as ReadableStream<Uint8Array>, (line) => {
      const rms = /from element "heard" \(element\): level.*rms=\([^)]*\)[<{]\s*([-\d.]+)/.exec(line)
      if (rms) heard.push(Number(rms[1]))
    })
    try {
      // Pink noise at volume 0.5: well above silence (-200), below full scale.
      await waitFor('the receiver decoding the hydrophone', () => heard.filter((db) => db > -40 && db < -3).length >= 5, 30_000)
    } finally {
      rx.kill('SIGKILL')
      await reading
    }
  } finally {
    await configure(port, false)
  }
}, 90_000)

test('RTSP serves a sound-only mount with the one Opus track', async () => {
  const port = freePort()
  expect((await configure(port)).status).toBe(200)
  try {
    await waitRunning()
    const path = (await status()).rtsp_path
    expect(path).toBe('/sound/sim:hydrophone')
    const probe = async () => {
      const proc = Bun.spawn(['ffprobe', '-v', 'error', '-rtsp_transport', 'tcp', '-show_entries', 'stream=codec_name,codec_type', '-of', 'json', `rtsp://127.0.0.1:${rtspPort}${path}`], { stdout: 'pipe', stderr: 'ignore', timeout: 20_000 })
      const [out] = await Promise.all([new Response(proc.stdout).text(), proc.exited])
      try {
        return (JSON.parse(out).streams ?? []) as any[]
      } catch {
        return []
      }
    }
    const streams = await until('ffprobe reading the RTSP mount', async () => {
      const found = await probe()
      return found.length ? found : null
    }, 60_000, 500)
    expect(streams).toEqual([{ codec_name: 'opus', codec_type: 'audio' }])
    const mounts = ((await s.call('GET', '/api/rtsp')).body as any).mounts as any[]
    expect(mounts.find((m) => m.path === path)).toMatchObject({ tracks: 0 })
  } finally {
    await configure(port, false)
  }
}, 120_000)

test('a sound-only recording is a Matroska file with the Opus track, listed by /api/recordings, through an unplug and replug', async () => {
  const port = freePort()
  const rtp = await RtpCounter.open(port)
  expect((await configure(port)).status).toBe(200)
  try {
    await waitRunning()
    const started = await s.call('POST', '/api/audio/sound_only/start_recording', { source: SOURCE })
    expect(started.status).toBe(200)
    const name = (started.body as any).file as string
    expect(name).toMatch(/^sim-hydrophone_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d(_\d+)?\.mkv$/)
    const bytes = async () => (await status())?.recording?.bytes ?? 0
    await until('some recorded sound', async () => (await bytes()) > 10_000, 30_000)

    // The card goes out: the stream says gone, the recording grows on (silence), the UDP endpoint hears nothing.
    expect((await s.call('POST', '/api/mock/audio/unplug', { id: SOURCE })).status).toBe(200)
    await until('the state gone', async () => (await status())?.state === 'gone', 15_000, 100)
    const atUnplug = await bytes()
    const packetsAtUnplug = rtp.packets
    await until('the recording growing while the card is out', async () => (await bytes()) > atUnplug + 2_000, 30_000)
    expect(rtp.packets).toBeLessThanOrEqual(packetsAtUnplug + 5)
    expect((await s.call('POST', '/api/mock/audio/plug', { id: SOURCE })).status).toBe(200)
    await waitRunning()
    await waitFor('RTP again after the replug', () => rtp.packets > packetsAtUnplug + 50, 30_000)
    const atReplug = await bytes()
    await until('the recording growing after the replug', async () => (await bytes()) > atReplug + 5_000, 30_000)

    const stopped = await s.call('POST', '/api/audio/sound_only/stop_recording', { source: SOURCE })
    expect(stopped.status).toBe(200)
    expect(stopped.body).toMatchObject({ active: false, file: name, error: null })
    const listed = ((await s.call('GET', '/api/recordings')).body as any[]).map((r) => `${r.name}.${r.format}`)
    expect(listed).toContain(name)
    const file = segmentFile(join(s.dataDir, 'recordings'), name)
    const probe = Bun.spawnSync(['ffprobe', '-v', 'error', '-show_entries', 'stream=codec_name,codec_type:format=format_name,duration', '-of', 'json', file])
    const probed = JSON.parse(probe.stdout.toString())
    expect(probed.streams).toEqual([{ codec_name: 'opus', codec_type: 'audio' }])
    expect(probed.format.format_name).toContain('matroska')
    expect(Number(probed.format.duration)).toBeGreaterThan(2)
  } finally {
    rtp.close()
    await configure(port, false)
  }
}, 150_000)

test("Chromium hears a sound-only stream over WHEP (an audio-only offer), and the console's card plays it on Listen", async () => {
  const port = freePort()
  expect((await configure(port)).status).toBe(200)
  try {
    await waitRunning()
    const path = (await status()).whep_path
    expect(path).toBe(`/api/streams/${encodeURIComponent('sound:sim:hydrophone')}/whep`)
    await withPage(s.url, async (page) => {
      // An offer with video only is refused with a sentence: there is no video.
      const videoOnly = await openOffer(page, path, 'v', ['video'], 'max-bundle')
      expect(videoOnly.status).toBe(400)
      expect(videoOnly.detail).toContain('audio')
      const opened = await openOffer(page, path, 'a', ['audio'], 'max-bundle')
      expect(opened.status).toBe(201)
      expect(opened.error).toBeUndefined()
      await page.evaluate(() => {
        const w = globalThis as any
        const receiver = w.pcs.a.getReceivers().find((r: any) => r.track.kind === 'audio')
        const audio = w.document.createElement('audio')
        audio.autoplay = true
        audio.srcObject = new w.MediaStream([receiver.track])
        w.document.body.appendChild(audio)
      })
      const energy = () =>
        page.evaluate(async () => {
          let found = 0
          ;(await (globalThis as any).pcs.a.getStats()).forEach((r: any) => {
            if (r.type === 'inbound-rtp' && r.kind === 'audio') found = r.totalAudioEnergy ?? 0
          })
          return found
        })
      await until('the browser hearing the hydrophone (totalAudioEnergy > 0)', async () => (await energy()) > 0, 30_000)
    })

    const browser = await launchBrowser()
    try {
      const page = await browser.newPage()
      await page.goto(`${s.url}/`, { waitUntil: 'domcontentloaded' })
      const card = `article[data-sound-only="${SOURCE}"]`
      await page.waitForFunction((sel: string) => {
        const meter = (globalThis as any).document.querySelector(`${sel} .sound[data-sound="running"] [role="meter"]`)
        return meter && Number(meter.getAttribute('aria-valuenow')) > -40
      }, { timeout: 30_000 }, card)
      const viewers = () => s.ctx.registry.webrtcViewers(`sound:${SOURCE}`)
      // The session above may linger until its idle timeout (its page closed without a DELETE).
      const before = viewers()
      await page.click(`${card} [data-action="listen"]`)
      await page.waitForFunction((sel: string) => {
        const audio = (globalThis as any).document.querySelector(`${sel} audio`)
        return audio?.srcObject?.getAudioTracks().length === 1
      }, { timeout: 30_000 }, card)
      await waitFor('a WHEP session of the console', () => viewers() === before + 1, 30_000)
      await page.click(`${card} [data-action="listen"]`)
      await waitFor('the session ended when Listen is released', () => viewers() <= before, 30_000)
    } finally {
      await browser.close()
    }
  } finally {
    await configure(port, false)
  }
}, 150_000)

test("a source a camera's stream carries is refused; the settings survive a restart and the stream runs again", async () => {
  // The camera's own microphone is carried by its stream (attach): not a sound-only stream too.
  expect((await s.call('POST', '/api/audio/attach', { bus_info: 'usb-0000:00:14.0-1', source: 'sim:mic1' })).status).toBe(200)
  const refused = await s.call('POST', '/api/audio/sound_only/configure', { source: 'sim:mic1', endpoints: [{ host: '127.0.0.1', port: freePort() }] })
  expect(refused.status).toBe(409)
  expect((refused.body as any).detail).toContain('usb-0000:00:14.0-1')
  expect((await s.call('POST', '/api/audio/attach', { bus_info: 'usb-0000:00:14.0-1', source: 'auto' })).status).toBe(200)
  // And the other way: a camera may not attach a source streamed on its own.
  const port = freePort()
  expect((await configure(port)).status).toBe(200)
  const taken = await s.call('POST', '/api/audio/attach', { bus_info: 'usb-0000:00:14.0-1', source: SOURCE })
  expect(taken.status).toBe(409)
  expect((taken.body as any).detail).toContain('on its own')
  await waitRunning()

  await s.stop()
  s = await startTestServer({ plugins, dataDir, config: { simulate: 'single', rtspPort } })
  expect(await status()).toMatchObject({ enabled: true, endpoints: [{ host: '127.0.0.1', port }] })
  await waitRunning()
  expect((await s.call('POST', '/api/audio/sound_only/remove', { source: SOURCE })).status).toBe(200)
  expect(await status()).toBeUndefined()
  expect((await s.call('POST', '/api/audio/sound_only/remove', { source: SOURCE })).status).toBe(404)
}, 120_000)
