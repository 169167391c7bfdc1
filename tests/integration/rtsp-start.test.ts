// How an RTSP client's stream starts and runs, with a camera that has sound and a key frame only every
// 10 s (so every client joins mid-GOP): each client starts on a whole key frame (the hub's kept group of
// pictures, at once) for ffmpeg and GStreamer; every track's timestamps only increase and keep the camera's
// spacing, over TCP and UDP; and whatever tracks a client sets up, in whatever order, the path still serves
// both tracks to the next client.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { loadPlugin } from '../../core/loader'
import type { GstStreamer } from '../../drivers/gstreamer/streamer'
import { startTestServer, type TestServer } from '../helpers'
import { freePort, freeTcpPort, requireRtspClients, waitFor } from './gstreamer.helpers'
import { RawRtsp } from './rtsp-client.helpers'

const EHD = 'usb-0000:00:14.0-1'
const FPS = 15
const GOP_SECONDS = 10
let s: TestServer
let url = ''
let savedGop: string | undefined

beforeAll(async () => {
  requireRtspClients()
  savedGop = process.env.PERISCOPE_SIMULATED_GOP_SECONDS
  process.env.PERISCOPE_SIMULATED_GOP_SECONDS = String(GOP_SECONDS) // read when the camera's pipeline is built
  const rtspPort = freeTcpPort()
  const plugins = await Promise.all(['mock', 'cameras', 'preferences', 'dwe', 'gstreamer', 'audio', 'rtsp'].map(loadPlugin))
  s = await startTestServer({ plugins, config: { simulate: 'single', rtspPort } })
  const r = await s.call('POST', '/api/devices/configure_stream', {
    bus_info: EHD,
    stream_type: 'UDP',
    encode_type: 'H264',
    stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: FPS } },
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  expect(r.status).toBe(200)
  const deadline = Date.now() + 30_000
  for (; Date.now() < deadline; await Bun.sleep(200)) {
    const sound = ((await s.call('GET', '/api/audio/streams')).body as any[]).find((a) => a.bus_info === EHD)
    const mounts = (await s.call('GET', '/api/rtsp')).body.mounts as any[]
    if (sound?.state === 'running' && mounts.some((m) => m.path === `/${EHD}`)) break
  }
  url = `rtsp://127.0.0.1:${rtspPort}/${EHD}`
}, 60_000)

afterAll(async () => {
  await s?.stop()
  if (savedGop === undefined) delete process.env.PERISCOPE_SIMULATED_GOP_SECONDS
  else process.env.PERISCOPE_SIMULATED_GOP_SECONDS = savedGop
})

/** Waits until the camera's current group of pictures is at least `seconds` old: a client joining now joins mid-GOP. */
async function midGop(seconds = 1.5): Promise<void> {
  const live = (s.ctx.registry.get('streamer') as GstStreamer).live(EHD)
  expect(live).toBeTruthy()
  await waitFor(`a group of pictures ${seconds} s old`, () => new Set(live!.hub.lastGop(live!.member).map((p) => new DataView(p.buffer, p.byteOffset).getUint32(4))).size > seconds * FPS, GOP_SECONDS * 1000 + 5000)
}

/** Runs a tool to its end (the service runs in this process: never spawnSync). */
async function run(args: string[], timeoutMs = 30_000): Promise<{ out: string; err: string; code: number }> {
  const proc = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore' })
  const timer = setTimeout(() => proc.kill('SIGKILL'), timeoutMs)
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  clearTimeout(timer)
  return { out, err, code }
}

type Packet = { stream: number; dts: number | null; key: boolean }

/** ffprobe's packets of the first `seconds` of the path, both tracks: stream 0 the video, 1 the sound. */
async function packets(transport: 'tcp' | 'udp', seconds: number): Promise<Packet[]> {
  const { out } = await run(['ffprobe', '-v', 'error', '-rtsp_transport', transport, '-read_intervals', `%+${seconds}`, '-show_entries', 'packet=stream_index,dts,flags', '-of', 'csv', url])
  return out
    .split('\n')
    .filter((line) => line.startsWith('packet,'))
    .map((line) => {
      const [, stream, dts, flags] = line.split(',')
      return { stream: Number(stream), dts: dts === 'N/A' ? null : Number(dts), key: flags!.startsWith('K') }
    })
}

/**
 * GStreamer's rtspsrc on the path: whether the first H.264 buffer after depayloading is a key frame, how
 * many pictures avdec_h264 decoded and how many sound buffers opusdec gave, and every warning or error.
 */
const GST_CLIENT = `
import json, sys, threading, gi
gi.require_version("Gst", "1.0")
from gi.repository import Gst, GLib
Gst.init(None)
url, protocol, want_sound = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
pipeline = Gst.Pipeline()
src = Gst.parse_launch(f"rtspsrc location={url} protocols={protocol} latency=0")
pipeline.add(src)
result = {"first_key": None, "decoded": 0, "sound": 0, "problems": []}
loop = GLib.MainLoop()
lock = threading.Lock()

def check_done():
    if result["decoded"] >= 10 and (result["sound"] >= 10 or not want_sound):
        GLib.idle_add(loop.quit)

def first(_sink, buf, _pad):
    with lock:
        if result["first_key"] is None:
            result["first_key"] = not buf.has_flags(Gst.BufferFlags.DELTA_UNIT)

def decoded(_sink, _buf, _pad):
    with lock:
        result["decoded"] += 1
        check_done()

def sound(_sink, _buf, _pad):
    with lock:
        result["sound"] += 1
        check_done()

def pad_added(_src, pad):
    media = pad.get_current_caps().get_structure(0).get_string("media")
    if media == "video":
        desc = "rtph264depay ! tee name=t t. ! queue ! fakesink name=first signal-handoffs=true sync=false t. ! queue ! avdec_h264 ! fakesink name=decoded signal-handoffs=true sync=false"
    else:
        desc = "rtpopusdepay ! opusdec ! fakesink name=sound signal-handoffs=true sync=false"
    bin_ = Gst.parse_bin_from_description(desc, True)
    for name, handler in (("first", first), ("decoded", decoded), ("sound", sound)):
        sink = bin_.get_by_name(name)
        if sink:
            sink.connect("handoff", handler)
    pipeline.add(bin_)
    bin_.sync_state_with_parent()
    pad.link(bin_.get_static_pad("sink"))

def on_message(_bus, message):
    if message.type in (Gst.MessageType.WARNING, Gst.MessageType.ERROR):
        error, _debug = message.parse_warning() if message.type == Gst.MessageType.WARNING else message.parse_error()
        result["problems"].append(f"{message.src.get_name()}: {error.message}")
        if message.type == Gst.MessageType.ERROR:
            loop.quit()

src.connect("pad-added", pad_added)
bus = pipeline.get_bus()
bus.add_signal_watch()
bus.connect("message", on_message)
pipeline.set_state(Gst.State.PLAYING)
GLib.timeout_add_seconds(25, loop.quit)
loop.run()
pipeline.set_state(Gst.State.NULL)
print(json.dumps(result))
`

async function gstClient(transport: 'tcp' | 'udp', wantSound = true): Promise<{ first_key: boolean | null; decoded: number; sound: number; problems: string[] }> {
  const { out, err } = await run(['/usr/bin/python3', '-c', GST_CLIENT, url, transport, wantSound ? '1' : '0'], 40_000)
  try {
    return JSON.parse(out.trim().split('\n').at(-1)!)
  } catch {
    throw new Error(`the GStreamer client said nothing useful: ${out} ${err}`)
  }
}

test('a client joining mid-GOP starts on a whole key frame, at once: ffmpeg (TCP, UDP) and GStreamer (TCP, UDP)', async () => {
  for (const transport of ['tcp', 'udp'] as const) {
    await midGop()
    const got = await packets(transport, 2)
    const video = got.filter((p) => p.stream === 0)
    expect(video.length).toBeGreaterThan(0)
    expect(video[0]!.key).toBe(true) // the first picture is a key frame, not a P frame with nothing to refer to
    // The first picture decoded is whole: with showall the decoder would hand over a broken one too.
    const frames = await run(['ffprobe', '-v', 'error', '-flags2', '+showall', '-rtsp_transport', transport, '-select_streams', 'v', '-read_intervals', '%+#3', '-show_entries', 'frame=key_frame,pict_type', '-of', 'csv', url])
    expect(frames.out.split('\n').find((line) => line.startsWith('frame,'))).toStartWith('frame,1,I')
    expect(frames.err).not.toMatch(/error|concealing|non-existing/i)
  }
  for (const transport of ['tcp', 'udp'] as const) {
    await midGop()
    const started = Date.now()
    const got = await gstClient(transport)
    expect(got).toMatchObject({ first_key: true, problems: [] })
    expect(got.decoded).toBeGreaterThanOrEqual(10)
    // At once: not after the rest of a 10 s group of pictures.
    expect(Date.now() - started).toBeLessThan(GOP_SECONDS * 1000)
  }
}, 120_000)

test("every track's timestamps only increase, at the camera's spacing, for ffmpeg over TCP and UDP", async () => {
  // The four clients (ffprobe and ffmpeg, over each transport) run at once: each judges its own timestamps,
  // which the camera stamps, so sharing the 8 s changes nothing they see (in turn they took 32 s).
  await midGop()
  await Promise.all((['tcp', 'udp'] as const).map(async (transport) => {
    const [got, copied] = await Promise.all([
      packets(transport, 8),
      // ffmpeg copying both tracks into a file complains of nothing.
      run(['ffmpeg', '-nostdin', '-hide_banner', '-rtsp_transport', transport, '-i', url, '-t', '8', '-c', 'copy', '-f', 'matroska', '-y', '/dev/null']),
    ])
    for (const [stream, step] of [[0, 90_000 / FPS], [1, 960]] as const) {
      const stamps = got.filter((p) => p.stream === stream).map((p) => p.dts)
      // ffmpeg stamps a track's first packets only once both tracks' first RTCP report came.
      const timed = stamps.slice(stamps.findIndex((dts) => dts !== null)) as number[]
      expect(timed.length).toBeGreaterThan(stream === 0 ? 8 * FPS * 0.8 : 8 * 50 * 0.8)
      expect(timed.every((dts) => dts !== null)).toBe(true)
      const steps = timed.slice(1).map((dts, i) => dts - timed[i]!)
      expect(steps.filter((d) => d <= 0)).toEqual([])
      // The live part keeps the camera's spacing (a frame's 6000 ticks; 20 ms of Opus at 48 kHz), not the
      // jitter of the packets' way through the machine. (The kept group of pictures comes one tick a frame.)
      // A few steps are off: shorter where the server's timeline moves to the track's quickest way here
      // (at most once each half second, plugins/rtsp/server.py RtpClock), and ffmpeg, which maps the
      // timestamps by the RTCP sender reports, then makes up the difference at the next report (a step
      // of 4474 then one of 8070 where the camera's is 6000); by ticks elsewhere. None is a whole frame
      // longer: no frame is held a frame late.
      const live = steps.filter((d) => d > 2)
      const off = live.filter((d) => Math.abs(d - step) > 2)
      const what = `${transport}, track ${stream}: steps off the spacing of ${step}: ${off.join(', ') || 'none'}`
      expect(off.filter((d) => d >= 2 * step), what).toEqual([])
      expect(off.length, what).toBeLessThanOrEqual(4)
    }
    expect(copied.err).not.toContain('non monotonically')
    expect(copied.err).not.toContain('non-monotonic')
  }))
}, 120_000)

/** A raw client that sets up `tracks` of the path (in that order) over TCP, plays until media comes, and tears down. */
async function watchTracks(tracks: ('video' | 'audio')[], keep = false): Promise<RawRtsp> {
  const client = await RawRtsp.open(Number(new URL(url.replace('rtsp:', 'http:')).port))
  const described = await client.request('DESCRIBE', url, { Accept: 'application/sdp' })
  expect(described.status).toBe('RTSP/1.0 200 OK')
  const base = described.headers['content-base'] ?? `${url}/`
  for (const [i, kind] of tracks.entries()) {
    const control = new RegExp(`m=${kind}[^]*?a=control:(\\S+)`).exec(described.body)?.[1]
    expect(control).toBeTruthy()
    const setup = await client.request('SETUP', control!.startsWith('rtsp:') ? control! : base + control, { Transport: `RTP/AVP/TCP;unicast;interleaved=${2 * i}-${2 * i + 1}` })
    expect(setup.status).toBe('RTSP/1.0 200 OK')
    client.session = setup.headers.session!.split(';')[0]!
  }
  let media = 0
  client.socket.on('data', (chunk: Buffer) => void (media += chunk.length))
  expect((await client.request('PLAY', url, { Range: 'npt=0-' })).status).toBe('RTSP/1.0 200 OK')
  await waitFor('media over the connection', () => media > 2000, 15_000)
  if (keep) client.socket.removeAllListeners('data') // the caller counts; the client's buffer would only grow
  else {
    expect((await client.request('TEARDOWN', url)).status).toBe('RTSP/1.0 200 OK')
    client.socket.destroy()
  }
  return client
}

/** The next clients get both tracks: ffprobe sees H.264 and Opus, rtspsrc decodes both. */
async function bothTracksServed(): Promise<void> {
  const probed = await run(['ffprobe', '-v', 'error', '-rtsp_transport', 'tcp', '-show_entries', 'stream=codec_name', '-of', 'csv', url])
  expect(probed.out.split('\n').filter(Boolean).sort()).toEqual(['stream,h264', 'stream,opus'])
  const got = await gstClient('tcp')
  expect(got.decoded).toBeGreaterThanOrEqual(10)
  expect(got.sound).toBeGreaterThanOrEqual(10)
}

/** Restarts the camera's stream: the path's next client is its first (a new mount, no media yet). */
async function freshMount(): Promise<void> {
  const streamer = s.ctx.registry.get('streamer') as GstStreamer
  const before = streamer.live(EHD)?.hub
  expect((await s.call('POST', '/api/devices/restart_stream', { bus_info: EHD })).status).toBe(200)
  await waitFor('the restarted stream, with its sound', () => {
    const hub = streamer.live(EHD)?.hub
    return hub && hub !== before && hub.hasSound && hub.lastGop(0).length > 0
  }, 30_000)
  const deadline = Date.now() + 15_000
  while (!((await s.call('GET', '/api/rtsp')).body.mounts as any[]).some((m) => m.path === `/${EHD}`) && Date.now() < deadline) await Bun.sleep(100)
}

test('any subset of the tracks, in any order of clients, never breaks the path for the next client', async () => {
  for (const first of [['video'], ['audio'], ['audio', 'video']] as const) {
    await freshMount()
    await watchTracks([...first])
    await bothTracksServed()
  }
  // Video only while another client plays both: both keep playing, and the next still gets both.
  await freshMount()
  const both = await watchTracks(['video', 'audio'], true)
  try {
    let media = 0
    both.socket.on('data', (chunk: Buffer) => void (media += chunk.length))
    await watchTracks(['video'])
    const before = media
    await waitFor('the client of both tracks still fed', () => media > before + 2000, 10_000)
    await bothTracksServed()
  } finally {
    both.socket.destroy()
  }
}, 240_000)

test('a client that leaves without TEARDOWN (its connection ends, or is half-closed) frees its place at once', async () => {
  const viewers = async () => ((await s.call('GET', '/api/rtsp')).body.mounts as any[]).find((m) => m.path === `/${EHD}`)?.viewers
  for (const leave of ['end', 'destroy'] as const) {
    const client = await watchTracks(['video', 'audio'], true)
    expect(await viewers()).toBe(1)
    client.socket[leave]()
    const deadline = Date.now() + 5000
    while ((await viewers()) !== 0 && Date.now() < deadline) await Bun.sleep(100)
    expect(await viewers()).toBe(0)
  }
}, 60_000)
