// One door, one set of rules for WebRTC (core/http/doors.ts): Cockpit's signalling socket obeys what
// WHEP's POST obeys, by the same functions. Over real sockets: the origin rule (a page elsewhere is
// refused, the vehicle's own origins and --cors-origins are not; an opaque origin is Cockpit's desktop
// app only without --token, and needs the token with it), the Host rule on both ports, the token
// (header, cookie, ?token=), each client's share of a camera's WebRTC places across WHEP and Cockpit,
// one session rate for both doors, each client's share and rate of sockets, a socket that holds no
// session closed, a session never answered holding its place until it is reaped, and remote candidates
// kept only at the signalling peer's own address (media/webrtc/candidates.ts). Sessions run on a real
// hub with real werift; the service listens on 127.0.0.1, so nothing is ever sent off the machine.
import { afterAll, expect, test } from 'bun:test'
import { createSocket } from 'node:dgram'
import { createLogger } from '../../core/log'
import { loadPlugin } from '../../core/loader'
import type { Config } from '../../core/config'
import { CLIENT_LIMITS, placesPerClient, SOCKETS_PER_CLIENT } from '../../core/http/client-limits'
import { MediaHub } from '../../media/hub'
import { RTCPeerConnection } from 'werift'
import { H264_CODEC } from '../../media/webrtc/session'
import { candidateAddress, peerCandidate, peerCandidatesOnly } from '../../media/webrtc/candidates'
import { SIGNALLING_PATH } from '../../plugins/cockpit'
import { Connection, producerId, type SignallingContext } from '../../plugins/cockpit/signalling'
import { freeTcpPort, parseMetrics, startTestServer, until, type TestServer } from '../helpers'
import { connect, EHD, question, standInStreamer, startContractServer } from './setup'

const PLUGINS = ['mock', 'cameras', 'preferences', 'dwe', 'whep', 'cockpit', 'metrics']
const ELECTRON_UA = 'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Cockpit/1.17.0 Chrome/122.0.6261.156 Electron/29.4.6 Safari/537.36'
const UPGRADE = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' }

const SESSION = 'v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n'
const CREDENTIALS = 'a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuv\r\na=fingerprint:sha-256 ' + Array(32).fill('AB').join(':') + '\r\n'
const VIDEO = 'm=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\na=setup:actpass\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;profile-level-id=42e01f\r\n'
const OFFER = SESSION + CREDENTIALS + VIDEO

const servers: TestServer[] = []
const hubs: MediaHub[] = []
afterAll(async () => {
  for (const s of servers) await s.stop()
  for (const h of hubs) h.close()
})

type Client = Awaited<ReturnType<typeof connect>>


/** The upgrade's answer without a socket: a refusal's status and sentence (101 when it would open). */
async function upgrade(url: string, headers: Record<string, string> = {}): Promise<{ status: number; detail: string }> {
  const res = await fetch(url.replace(/^ws/, 'http'), { headers: { ...UPGRADE, ...headers } })
  const text = await res.text()
  return { status: res.status, detail: text ? JSON.parse(text).detail : '' }
}

async function metric(s: TestServer, name: string, labels: Record<string, string> = {}): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text()
  return parseMetrics(text).samples.find((m) => m.name === name && Object.entries(labels).every(([k, v]) => m.labels[k] === v))?.value ?? 0
}

/** The service with a stand-in streamer whose camera EHD runs H.264 on a real hub (no GStreamer): sessions are real werift. */
async function withStream(config: Partial<Config> = {}): Promise<TestServer> {
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 15, members: [EHD], log: createLogger('error') })
  hubs.push(hub)
  const standIn = standInStreamer(hub)
  const plugins = [...(await Promise.all(PLUGINS.map(loadPlugin))), standIn]
  const s = await startTestServer({ plugins, config: { simulate: 'default', ...config } })
  servers.push(s)
  return s
}

async function contract(config: Partial<Config> = {}): Promise<TestServer> {
  const s = await startContractServer({ plugins: PLUGINS, config })
  servers.push(s)
  return s
}

const wsOf = (s: TestServer) => s.url.replace('http:', 'ws:') + SIGNALLING_PATH
const whep = (s: TestServer, body = OFFER, headers: Record<string, string> = {}) =>
  fetch(`${s.url}/api/streams/${encodeURIComponent(EHD)}/whep`, { method: 'POST', body, headers: { 'content-type': 'application/sdp', ...headers } })

/** startSession on EHD: the session's ids, or the error's sentence. */
async function startSession(c: Client): Promise<{ bind?: { consumer_id: string; producer_id: string; session_id: string }; error?: string }> {
  const at = c.messages.length
  c.send(question('startSession', { consumer_id: 'me', producer_id: producerId(EHD) }))
  // Its answer, or the refusal of it: not the offer of a session ended while it was being made.
  const isReply = (m: any) => (m.type === 'answer' && m.content.type === 'startSession') || (m.type === 'error' && !m.content.detail.startsWith('No offer could be made'))
  const reply = await until('the answer to startSession', async () => c.messages.slice(at).find(isReply), (m) => m !== undefined, 15_000)
  if (reply.type === 'error') return { error: reply.content.detail }
  return { bind: reply.content.content }
}

test('the origin rule, as for WHEP: a page elsewhere is refused (403, counted); the vehicle\'s own origins, --cors-origins and no Origin are let in', async () => {
  const s = await contract({ corsOrigins: ['http://gcs.example:3000'] })
  const url = wsOf(s)
  const before = await metric(s, 'periscope_http_refused_origins_total')
  const evil = await upgrade(url, { origin: 'http://evil.example' })
  expect(evil.status).toBe(403)
  expect(evil.detail).toContain("A page on http://evil.example may not open Cockpit's WebRTC signalling")
  // WHEP refuses the same page the same way.
  const post = await whep(s, OFFER, { origin: 'http://evil.example' })
  expect(post.status).toBe(403)
  expect(await metric(s, 'periscope_http_refused_origins_total')).toBe(before + 2)
  for (const origin of [`http://127.0.0.1:${freeTcpPort()}`, 'http://localhost', 'http://gcs.example:3000', null]) {
    const c = await connect(url, origin ? { origin } : {})
    c.send(question('peerId'))
    expect((await c.nth(1)).content.type).toBe('peerId')
    c.ws.close()
  }
})

test("an opaque origin (null: a local file, a sandboxed frame, Cockpit's desktop app) without --token: Electron's User-Agent only; with --token: the token, by ?token=", async () => {
  const open = await contract()
  const page = await upgrade(wsOf(open), { origin: 'null', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0.0.0 Safari/537.36' })
  expect(page.status).toBe(403)
  expect(page.detail).toContain('Origin: null')
  expect(page.detail).toContain('--token')
  expect((await upgrade(wsOf(open), { origin: 'file://' })).status).toBe(403)
  const desktop = await connect(wsOf(open), { origin: 'null', 'user-agent': ELECTRON_UA })
  desktop.send(question('peerId'))
  expect((await desktop.nth(1)).content.type).toBe('peerId')
  desktop.ws.close()

  const guarded = await contract({ token: 'sesame' })
  const refused = await upgrade(wsOf(guarded), { origin: 'null', 'user-agent': ELECTRON_UA })
  expect(refused.status).toBe(401)
  expect(refused.detail).toContain('?token=')
  const wrong = await upgrade(`${wsOf(guarded)}?token=open-sesame`, { origin: 'null', 'user-agent': ELECTRON_UA })
  expect(wrong.status).toBe(401)
  expect(await metric(guarded, 'periscope_http_wrong_tokens_total')).toBe(1)
  const withToken = await connect(`${wsOf(guarded)}?token=sesame`, { origin: 'null', 'user-agent': ELECTRON_UA })
  withToken.send(question('peerId'))
  expect((await withToken.nth(1)).content.type).toBe('peerId')
  withToken.ws.close()
  // The vehicle's own pages need no token to watch (--token-scope changes).
  const own = await connect(wsOf(guarded), { origin: `http://127.0.0.1:${freeTcpPort()}` })
  own.ws.close()
})

test('--token-scope all: the signalling needs the token, as WHEP does (401 without; the header, the cookie or ?token= let in)', async () => {
  const s = await contract({ token: 'sesame', tokenScope: 'all' })
  const none = await upgrade(wsOf(s))
  expect(none.status).toBe(401)
  expect((await whep(s)).status).toBe(401)
  for (const [url, headers] of [
    [`${wsOf(s)}?token=sesame`, {}],
    [wsOf(s), { authorization: 'Bearer sesame' }],
    [wsOf(s), { cookie: 'periscope_token=sesame' }],
  ] as const) {
    const c = await connect(url, headers)
    c.ws.close()
  }
})

test('the Host rule on both ports: a name not served is 421, as on every route', async () => {
  const port = freeTcpPort()
  const s = await contract({ pluginFlags: { 'cockpit-port': port } } as never)
  for (const url of [wsOf(s), `http://127.0.0.1:${port}/`]) {
    const rebound = await upgrade(url.replace('ws:', 'http:'), { host: 'rebound.example' })
    expect(rebound.status).toBe(421)
    expect(rebound.detail).toContain("'rebound.example'")
  }
  const c = await connect(`ws://127.0.0.1:${port}`)
  c.ws.close()
})

test(`one client holds at most half of a camera's WebRTC places (${placesPerClient(4)} of --max-viewers 4), WHEP and Cockpit together; a session never answered holds its place until it is reaped`, async () => {
  const s = await withStream({ maxViewers: 4, whepIdleTimeoutSeconds: 2 })
  const first = await whep(s)
  expect(first.status).toBe(201)
  const c = await connect(wsOf(s))
  expect((await startSession(c)).bind).toBeDefined()
  // The third from this client, by either door: refused, with the same sentence.
  const third = await startSession(c)
  expect(third.error).toContain('WHEP and Cockpit together')
  expect(third.error).toContain('--max-viewers 4')
  const byWhep = await whep(s)
  expect(byWhep.status).toBe(429)
  expect(((await byWhep.json()) as any).detail).toContain('WHEP and Cockpit together')
  expect(await metric(s, 'periscope_http_limited_total', { kind: 'webrtc_places' })).toBe(2)
  // Nobody answers: both sessions are reaped at the idle timeout, and the places come back.
  await until('both sessions reaped', async () => (await s.call('GET', '/api/health')).body.plugins, (p) => p.whep.sessions === 0 && p.cockpit.sessions === 0, 15_000)
  expect((await startSession(c)).bind).toBeDefined()
  expect((await whep(s)).status).toBe(201)
  c.ws.close()
}, 30_000)

test(`sessions churned from one client share one rate across both doors: past ${CLIENT_LIMITS.webrtc_session.burst} at once they are refused with a sentence, by Cockpit and by WHEP`, async () => {
  const s = await withStream()
  const c = await connect(wsOf(s))
  let refusal: string | undefined
  let opened = 0
  // As fast as the socket answers (the issue saw 68 a second): start one, end it, again.
  for (let i = 0; i < 40 && !refusal; i++) {
    const started = await startSession(c)
    if (started.error) refusal = started.error
    else {
      opened++
      c.send(question('endSession', { ...started.bind, reason: 'churn' }))
    }
  }
  expect(refusal).toContain('Too many WebRTC sessions opened (WHEP and Cockpit together) from this client')
  expect(opened).toBeGreaterThanOrEqual(CLIENT_LIMITS.webrtc_session.burst)
  expect(opened).toBeLessThan(30)
  const byWhep = await whep(s)
  expect(byWhep.status).toBe(429)
  expect(byWhep.headers.get('retry-after')).toMatch(/^\d+$/)
  expect(((await byWhep.json()) as any).detail).toContain('Too many WebRTC sessions opened')
  c.ws.close()
}, 30_000)

test(`one client holds at most ${SOCKETS_PER_CLIENT} signalling sockets, opened at most ${CLIENT_LIMITS.signalling_socket.burst} at once: 429 with a sentence`, async () => {
  const s = await contract()
  const open: Client[] = []
  for (let i = 0; i < SOCKETS_PER_CLIENT; i++) open.push(await connect(wsOf(s)))
  const more = await upgrade(wsOf(s))
  expect(more.status).toBe(429)
  expect(more.detail).toContain(`already holds ${SOCKETS_PER_CLIENT} signalling sockets`)
  for (const c of open) c.ws.close()
  await until('the sockets closed', async () => (await s.call('GET', '/api/health')).body.plugins.cockpit.sockets, (n) => n === 0)
  // Opened and closed over and over: the rate.
  let refused: { status: number; detail: string } | undefined
  for (let i = 0; i < 40 && !refused; i++) {
    const c = await connect(wsOf(s)).catch(() => null)
    if (c) c.ws.close()
    else refused = await upgrade(wsOf(s))
  }
  expect(refused?.detail).toContain('Too many signalling sockets opened from this client')
  expect(await metric(s, 'periscope_http_limited_total', { kind: 'signalling_socket' })).toBeGreaterThanOrEqual(1)
  expect(await metric(s, 'periscope_http_limited_total', { kind: 'signalling_sockets' })).toBe(1)
})

test('a socket that holds no session for --cockpit-idle-timeout is closed with a sentence; one that holds a session is not', async () => {
  const s = await withStream({ pluginFlags: { 'cockpit-idle-timeout': 1 } } as never)
  const watching = await connect(wsOf(s))
  expect((await startSession(watching)).bind).toBeDefined()
  const idle = await connect(wsOf(s))
  idle.send(question('availableStreams'))
  const closed = await until('the idle socket closed', async () => idle.closed(), (x) => x !== null, 10_000)
  expect(closed).toEqual({ code: 1000, reason: expect.stringContaining('No WebRTC session for 1 s') })
  expect(watching.closed()).toBeNull()
  expect(await metric(s, 'periscope_limit_hits_total', { limit: 'cockpit_idle_sockets' })).toBe(1)
  watching.ws.close()
}, 20_000)

test("remote candidates are kept only at the signalling peer's own address: Cockpit's trickled ones and WHEP's in the offer; the others dropped and counted", async () => {
  const s = await withStream()
  const c = await connect(wsOf(s))
  const { bind } = await startSession(c)
  const ice = (address: string, port: number) => ({ type: 'negotiation', content: { type: 'iceNegotiation', content: { ...bind, ice: { candidate: `candidate:1 1 udp 2122260223 ${address} ${port} typ host generation 0`, sdpMid: '0', sdpMLineIndex: 0 } } } })
  c.send(ice('127.0.0.1', 40001))
  c.send(ice('192.0.2.7', 53))
  // Another interface of the viewer's machine (never an mDNS name here: without the rule werift would look it up by multicast).
  c.send(ice('198.51.100.20', 40002))
  const foreign = async () => (await s.call('GET', '/api/health')).body.plugins.cockpit.refused_messages.foreign_candidate
  await until('two candidates dropped', foreign, (n) => n === 2)
  // Dropped quietly: Chromium's mDNS names come in every session.
  expect(c.messages.filter((m) => m.type === 'error')).toEqual([])
  const offer = OFFER + 'a=candidate:1 1 udp 2122260223 127.0.0.1 40003 typ host\r\na=candidate:2 1 udp 2122260223 198.51.100.4 9 typ host\r\n'
  expect((await whep(s, offer)).status).toBe(201)
  expect((await s.call('GET', '/api/health')).body.plugins.whep.foreign_candidates).toBe(1)
  expect(await metric(s, 'periscope_limit_hits_total', { limit: 'webrtc_foreign_candidate' })).toBe(3)
  c.ws.close()
}, 20_000)

test('the candidate rule itself: the peer\'s own address (IPv4-mapped or not), any loopback for a loopback peer; never an unknown peer', () => {
  const at = (address: string) => `candidate:842163049 1 udp 1677729535 ${address} 50000 typ host generation 0`
  expect(candidateAddress(at('10.0.0.5'))).toBe('10.0.0.5')
  expect(candidateAddress('a=' + at('10.0.0.5'))).toBe('10.0.0.5')
  expect(candidateAddress('candidate:1 1 udp')).toBeNull()
  expect(peerCandidate(at('192.168.2.10'), '192.168.2.10')).toBe(true)
  expect(peerCandidate(at('192.168.2.10'), '::ffff:192.168.2.10')).toBe(true)
  expect(peerCandidate(at('192.168.2.11'), '192.168.2.10')).toBe(false)
  expect(peerCandidate(at('fe80::1'), 'FE80::1')).toBe(true)
  expect(peerCandidate(at('127.0.0.1'), '::1')).toBe(true)
  expect(peerCandidate(at('127.0.0.1'), '192.168.2.10')).toBe(false)
  expect(peerCandidate(at('abc.local'), '192.168.2.10')).toBe(false)
  expect(peerCandidate(at('192.168.2.10'), undefined)).toBe(false)
  const dropped: string[] = []
  const sdp = `v=0\r\nm=video 9 UDP 96\r\na=${at('192.168.2.10')}\r\na=${at('8.8.8.8')}\r\na=end-of-candidates\r\n`
  // Its end-of-candidates goes with a dropped one: ICE then waits for the viewer's own checks.
  expect(peerCandidatesOnly(sdp, '192.168.2.10', (a) => dropped.push(a))).toBe(`v=0\r\nm=video 9 UDP 96\r\na=${at('192.168.2.10')}\r\n`)
  expect(dropped).toEqual(['8.8.8.8'])
  expect(peerCandidatesOnly(sdp, '8.8.8.8', () => {})).toBe(`v=0\r\nm=video 9 UDP 96\r\na=${at('8.8.8.8')}\r\n`)
  const whole = `v=0\r\nm=video 9 UDP 96\r\na=${at('192.168.2.10')}\r\na=end-of-candidates\r\n`
  expect(peerCandidatesOnly(whole, '192.168.2.10', () => {})).toBe(whole)
})

test("no packet goes to a dropped candidate: a socket whose peer is elsewhere trickles one at a local UDP port and it hears nothing, while the peer's own one hears the service's connectivity checks", async () => {
  const BUS = 'usb-udp-proof'
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 15, members: [BUS], log: createLogger('error') })
  hubs.push(hub)
  /** A UDP socket on loopback that keeps what it hears. */
  const listener = async () => {
    const socket = createSocket('udp4')
    socket.on('error', () => {})
    const heard: Buffer[] = []
    socket.on('message', (m) => heard.push(m))
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()))
    return { socket, heard, port: socket.address().port }
  }
  /** A Cockpit session over a socket that came from `peer`, answered by hand (no candidate in the answer), then one trickled candidate at `port`. */
  const session = async (peer: string, port: number) => {
    const sent: any[] = []
    const refused: string[] = []
    const context: SignallingContext = {
      streams: () => [],
      producer: (id) => (id === producerId(BUS) ? { bus_info: BUS, hub, member: 0 } : null),
      admit: () => () => {},
      listenHost: '127.0.0.1',
      label: () => 'cockpit-udp',
      opened: () => {},
      ended: () => {},
      refused: (reason) => refused.push(reason),
      limitHit: () => {},
    }
    const c = new Connection({ peer, send: (t) => sent.push(JSON.parse(t)), close: () => {} }, context)
    c.receive(JSON.stringify(question('startSession', { consumer_id: 'me', producer_id: producerId(BUS) })))
    const offer = await until('our offer', async () => sent.find((m) => m.content?.type === 'mediaNegotiation'), (m) => m !== undefined, 15_000)
    const bind = sent[0].content.content
    const pt = /a=rtpmap:(\d+) H264/.exec(offer.content.content.sdp.sdp)![1]
    const answer = SESSION + 'a=group:BUNDLE 0\r\n' + CREDENTIALS + `m=video 9 UDP/TLS/RTP/SAVPF ${pt}\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=recvonly\r\na=rtcp-mux\r\na=setup:active\r\na=rtpmap:${pt} H264/90000\r\na=fmtp:${pt} packetization-mode=1;profile-level-id=42e01f\r\n`
    c.receive(JSON.stringify({ type: 'negotiation', content: { type: 'mediaNegotiation', content: { ...bind, sdp: { type: 'answer', sdp: answer } } } }))
    c.receive(JSON.stringify({ type: 'negotiation', content: { type: 'iceNegotiation', content: { ...bind, ice: { candidate: `candidate:1 1 udp 2122260223 127.0.0.1 ${port} typ host`, sdpMid: '0', sdpMLineIndex: 0 } } } }))
    return { c, refused, sent }
  }
  const aimed = await listener()
  const own = await listener()
  try {
    // First the one from elsewhere (its peer is not loopback, so 127.0.0.1 is not its own), then the control.
    const elsewhere = await session('192.0.2.50', aimed.port)
    const honest = await session('127.0.0.1', own.port)
    await until("the service's checks at the peer's own candidate", async () => own.heard.length, (n) => n > 0, 15_000)
    // A STUN binding request: type 0x0001 and the magic cookie.
    expect(own.heard[0]!.readUInt16BE(0)).toBe(0x0001)
    expect(own.heard[0]!.readUInt32BE(4)).toBe(0x2112a442)
    expect(aimed.heard).toEqual([])
    expect(elsewhere.refused).toEqual(['foreign_candidate'])
    expect(honest.refused).toEqual([])
    elsewhere.c.socketClosed()
    honest.c.socketClosed()
  } finally {
    aimed.socket.close()
    own.socket.close()
  }
}, 30_000)

test('a viewer whose every candidate is dropped (mDNS names, other interfaces, behind a proxy) still connects: the service learns its address from its checks (peer-reflexive)', async () => {
  const BUS = 'usb-prflx'
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 15, members: [BUS], log: createLogger('error') })
  hubs.push(hub)
  const sent: any[] = []
  const refused: string[] = []
  const context: SignallingContext = {
    streams: () => [],
    producer: (id) => (id === producerId(BUS) ? { bus_info: BUS, hub, member: 0 } : null),
    admit: () => () => {},
    listenHost: '127.0.0.1',
    label: () => 'cockpit-prflx',
    opened: () => {},
    ended: () => {},
    refused: (reason) => refused.push(reason),
    limitHit: () => {},
  }
  // The socket's peer is an address the browser's candidates are not at (as behind a proxy).
  const c = new Connection({ peer: '192.0.2.50', send: (t) => sent.push(JSON.parse(t)), close: () => {} }, context)
  const browser = new RTCPeerConnection({ codecs: { video: [H264_CODEC()], audio: [] }, iceUseIpv4: false, iceUseIpv6: false, iceAdditionalHostAddresses: ['127.0.0.1'] })
  try {
    c.receive(JSON.stringify(question('startSession', { consumer_id: 'me', producer_id: producerId(BUS) })))
    const offer = await until('our offer', async () => sent.find((m) => m.content?.type === 'mediaNegotiation'), (m) => m !== undefined, 15_000)
    const bind = sent[0].content.content
    await browser.setRemoteDescription(offer.content.content.sdp)
    for (const m of await until('our candidate', async () => sent.filter((x) => x.content?.type === 'iceNegotiation'), (l) => l.length > 0)) await browser.addIceCandidate(m.content.content.ice)
    await browser.setLocalDescription(await browser.createAnswer())
    await until('the browser gathered', async () => browser.iceGatheringState, (s) => s === 'complete')
    const answer = browser.localDescription!.sdp
    expect(answer).toMatch(/a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 /)
    c.receive(JSON.stringify({ type: 'negotiation', content: { type: 'mediaNegotiation', content: { ...bind, sdp: { type: 'answer', sdp: answer } } } }))
    const session = [...c.all()][0]!
    await until('connected', async () => session.viewer.connectedAt, (at) => at !== null, 20_000)
    // Every candidate of the answer was dropped, and it connected all the same.
    expect(refused.length).toBeGreaterThan(0)
    expect(refused.every((r) => r === 'foreign_candidate')).toBe(true)
  } finally {
    c.socketClosed()
    await browser.close()
  }
}, 30_000)

// Its candidates are rewritten to a documentation address, never an mDNS name: were the rule ever
// broken, werift would look a .local name up by multicast, off the machine (192.0.2.9 stays unsent: the
// service on 127.0.0.1 pairs with loopback only).
test("a WHEP viewer whose offer has only candidates elsewhere (another interface; Chromium's mDNS names likewise) still connects: they are dropped and its own checks find the service", async () => {
  const s = await withStream()
  const browser = new RTCPeerConnection({ codecs: { video: [H264_CODEC()], audio: [] }, iceUseIpv4: false, iceUseIpv6: false, iceAdditionalHostAddresses: ['127.0.0.1'] })
  try {
    browser.addTransceiver('video', { direction: 'recvonly' })
    await browser.setLocalDescription(await browser.createOffer())
    await until('the viewer gathered', async () => browser.iceGatheringState, (state) => state === 'complete')
    const offer = browser.localDescription!.sdp.replace(/(a=candidate:\S+ \d \S+ \d+ )127\.0\.0\.1 /g, '$1192.0.2.9 ')
    expect(offer).toContain(' 192.0.2.9 ')
    expect(offer).not.toContain(' 127.0.0.1 ')
    const res = await whep(s, offer)
    expect(res.status).toBe(201)
    await browser.setRemoteDescription({ type: 'answer', sdp: await res.text() })
    await until('connected', async () => browser.connectionState, (state) => state === 'connected', 20_000)
    expect((await s.call('GET', '/api/health')).body.plugins.whep.foreign_candidates).toBeGreaterThan(0)
  } finally {
    await browser.close()
  }
}, 30_000)
