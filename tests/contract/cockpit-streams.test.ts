// What Cockpit's Video page reads for a stream's status (plugins/cockpit/streams.ts): mavlink-camera-
// manager's GET /streams on its port (6020 in Cockpit; a free port here), read by the logic of Cockpit's
// own src/libs/blueos.ts getStreamInformationFromVehicle and src/views/ConfigurationVideoView.vue
// getStreamStatus (bluerobotics/cockpit, written from them, not copied): a stream the signalling lists
// is "Available" when the list has its name running, else "Offline". The same list at
// /api/cockpit/streams; both obey the HTTP port's rules (Host, origin, token); a taken port is said once.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createLogger } from '../../core/log'
import { loadPlugin } from '../../core/loader'
import { MediaHub } from '../../media/hub'
import { SIGNALLING_PATH } from '../../plugins/cockpit'
import { STREAMS_PATH } from '../../plugins/cockpit/streams'
import { freeTcpPort, startTestServer, until, type TestServer } from '../helpers'
import { EHD, standInStreamer } from './setup'

const PLUGINS = ['mock', 'cameras', 'preferences', 'dwe', 'whep', 'cockpit']

/** Cockpit's ProcessedStreamInfo from one raw entry, reading the fields its code reads, as it reads them. */
function processed(stream: any) {
  const config = stream.video_and_stream.stream_information.configuration
  const videoSource = stream.video_and_stream.video_source
  const keys = Object.keys(videoSource)
  const sourceName = keys.length ? videoSource[keys[0]!].name || 'Unknown' : 'Unknown'
  const fps = config.frame_interval ? config.frame_interval.denominator / config.frame_interval.numerator : 0
  const source = keys.length ? videoSource[keys[0]!].source : undefined
  const rtspSourceUrl = source ? (Object.values(source) as string[]).find((u) => u.startsWith('rtsp://') || u.startsWith('rtsps://')) : undefined
  return { name: stream.video_and_stream.name, sourceName, encode: config.encode, width: config.width, height: config.height, fps, running: stream.running || stream.state === 'idle' || stream.state === 'running', rtspSourceUrl }
}

/** The Video page's status of a WebRTC stream: in the signalling's list and running in /streams. */
function status(name: string, signalled: string[], info: ReturnType<typeof processed>[]) {
  const listed = signalled.includes(name)
  const running = info.find((i) => i.name === name)?.running ?? false
  return listed && running ? 'Available' : !listed ? 'Unavailable' : 'Offline'
}

/** The names availableStreams gives over the signalling. */
async function signalled(s: TestServer): Promise<string[]> {
  const ws = new WebSocket(s.url.replace('http:', 'ws:') + SIGNALLING_PATH)
  try {
    const answer = await new Promise<any>((resolve, reject) => {
      ws.onmessage = (e) => resolve(JSON.parse(String(e.data)))
      ws.onerror = () => reject(new Error('the signalling socket failed'))
      ws.onopen = () => ws.send(JSON.stringify({ type: 'question', content: { type: 'availableStreams' } }))
    })
    return answer.content.content.map((x: any) => x.name)
  } finally {
    ws.close()
  }
}

async function start(hub: MediaHub, config: Record<string, unknown> = {}, streamsPort: number | null = null): Promise<TestServer> {
  const plugins = [...(await Promise.all(PLUGINS.map(loadPlugin))), standInStreamer(hub)]
  const s = await startTestServer({ plugins, config: { simulate: 'default', ...config, pluginFlags: { 'cockpit-streams-port': streamsPort } } })
  const auth: Record<string, string> = config.token ? { authorization: `Bearer ${config.token}` } : {}
  expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'Bow' }, auth)).status).toBe(200)
  return s
}

describe('with a running H.264 stream', () => {
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 15, members: [EHD], log: createLogger('error') })
  const port = freeTcpPort()
  let s: TestServer
  let own: string
  beforeAll(async () => {
    s = await start(hub, {}, port)
    own = `http://127.0.0.1:${port}`
  })
  afterAll(async () => {
    await s?.stop()
    hub.close()
  })

  test("Cockpit's Video page, reading its port's /streams from the vehicle's own page, calls the stream Available, with its source, size and rate", async () => {
    const device = (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD)
    // Cockpit served by BlueOS: a page on the vehicle's address (port 80), reading another port of it.
    const res = await fetch(`${own}/streams`, { headers: { origin: 'http://127.0.0.1' } })
    expect(res.status).toBe(200)
    expect(res.headers.get('access-control-allow-origin')).toBe('http://127.0.0.1')
    const raw = (await res.json()) as any[]
    const info = raw.map(processed)
    expect(info).toEqual([{ name: 'Bow', sourceName: device.name, encode: 'H264', width: 640, height: 480, fps: device.stream.interval.denominator / device.stream.interval.numerator, running: true, rtspSourceUrl: undefined }])
    const names = await signalled(s)
    expect(names).toEqual(['Bow'])
    expect(status('Bow', names, info)).toBe('Available')
    // mavlink-camera-manager's types: integers where it has u32s, its id a UUID (the signalling's producer id).
    const c = raw[0].video_and_stream.stream_information.configuration
    for (const n of [c.width, c.height, c.frame_interval.numerator, c.frame_interval.denominator]) expect(Number.isInteger(n)).toBe(true)
    expect(raw[0]).toMatchObject({ state: 'running', error: null, mavlink: null, video_and_stream: { video_source: { Local: { name: device.name, type: { Usb: EHD } } } } })
    // The same on the HTTP port, and a HEAD has the headers only.
    expect((await s.call('GET', STREAMS_PATH)).body).toEqual(raw)
    const head = await fetch(`${own}/streams`, { method: 'HEAD' })
    expect([head.status, await head.text()]).toEqual([200, ''])
  })

  test('the rules of the HTTP port hold on its own port: Host (421), a foreign page (403); anything but /streams is 404 at once', async () => {
    const rebound = await fetch(`${own}/streams`, { headers: { host: 'rebound.example' } })
    expect(rebound.status).toBe(421)
    expect(((await rebound.json()) as any).detail).toContain('rebound.example')
    const foreign = await fetch(`${own}/streams`, { headers: { origin: 'http://evil.example' } })
    expect(foreign.status).toBe(403)
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull()
    expect((await fetch(s.url + STREAMS_PATH, { headers: { origin: 'http://evil.example' } })).status).toBe(403)
    // A scanner (BlueOS's helper GETs / and its documented paths on every port): a whole answer at once.
    const root = await fetch(`${own}/`)
    expect(root.status).toBe(404)
    expect(((await root.json()) as any).detail).toContain('GET /streams')
    // Cockpit polls the list every 5 s on its own: that is no sign of a pilot at the API (the network rollback watches for one).
    const heard = s.ctx.activity.lastRequestAt
    expect((await fetch(`${own}/streams`)).status).toBe(200)
    expect(s.ctx.activity.lastRequestAt).toBe(heard)
    const post = await fetch(`${own}/streams`, { method: 'POST' })
    expect([post.status, post.headers.get('allow')]).toEqual([405, 'GET, HEAD, OPTIONS'])
    expect((await s.call('GET', '/api/health')).body.plugins.cockpit.streams_port).toBe(port)
  })
})

test('with --token-scope all the list needs the token, on both ports; with no stream running it is empty', async () => {
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 15, members: [EHD], log: createLogger('error') })
  hub.close() // its stream has stopped: nothing to list
  const port = freeTcpPort()
  const s = await start(hub, { token: 'sesame', tokenScope: 'all' }, port)
  try {
    const without = await fetch(`http://127.0.0.1:${port}/streams`)
    expect(without.status).toBe(401)
    expect((await fetch(s.url + STREAMS_PATH)).status).toBe(401)
    const withToken = await fetch(`http://127.0.0.1:${port}/streams`, { headers: { authorization: 'Bearer sesame' } })
    expect([withToken.status, await withToken.json()]).toEqual([200, []])
  } finally {
    await s.stop()
  }
})

test("a taken port (mavlink-camera-manager's) is said in one warning; the list stays on the HTTP port", async () => {
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 15, members: [EHD], log: createLogger('error') })
  const port = freeTcpPort()
  const holder = Bun.serve({ hostname: '127.0.0.1', port, fetch: () => new Response('[]') })
  const s = await start(hub, {}, port)
  try {
    const warnings = s.logs.filter((l) => String(l.msg).includes(`port ${port} is taken`))
    expect(warnings).toHaveLength(1)
    expect(String(warnings[0]!.msg)).toContain('Offline')
    expect((await s.call('GET', '/api/health')).body.plugins.cockpit.streams_port).toBeNull()
    const listed = await until('the list', async () => (await s.call('GET', STREAMS_PATH)).body, (b) => Array.isArray(b) && b.length === 1)
    expect(listed[0].video_and_stream.name).toBe('Bow')
  } finally {
    await s.stop()
    holder.stop(true)
    hub.close()
  }
})
