// Cockpit's WebRTC signalling (plugins/cockpit) without GStreamer or a browser (Chromium plays through
// it in tests/integration/cockpit.test.ts): over real WebSockets, every malformed message is answered
// with a sentence and the socket lives on; a message too large, a flood, too many sockets are bounded
// and counted in /metrics; the Host check and --token-scope all hold; the own port serves any path, and
// a taken port leaves the HTTP path only, said in one line. Then the protocol's sessions on a real hub
// and real werift (plugins/cockpit/signalling.ts): our offer, the browser's answer and candidates,
// endSession, a closed socket, and the per-session bounds.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { createLogger } from '../../core/log'
import { MediaHub } from '../../media/hub'
import { MAX_SOCKETS, SIGNALLING_PATH } from '../../plugins/cockpit'
import { Connection, MAX_CANDIDATES_PER_SESSION, MAX_MESSAGE_BYTES, MAX_SESSIONS_PER_SOCKET, MESSAGE_BURST, producerId, type SignallingContext } from '../../plugins/cockpit/signalling'
import { freeTcpPort, parseMetrics, until, type TestServer } from '../helpers'
import { loadPlugin } from '../../core/loader'
import { startTestServer } from '../helpers'
import { connect, EHD, question, standInStreamer, startContractServer } from './setup'

const PLUGINS = ['mock', 'cameras', 'preferences', 'dwe', 'whep', 'cockpit', 'metrics']



describe('over the wire', () => {
  let s: TestServer
  let wsUrl: string
  beforeAll(async () => {
    // The service-wide bounds alone: each client's share (16 sockets) is tests/contract/webrtc-doors.test.ts's.
    s = await startContractServer({ plugins: PLUGINS, config: { clientLimits: false } })
    wsUrl = s.url.replace('http:', 'ws:') + SIGNALLING_PATH
  })
  afterAll(async () => {
    await s.stop()
  })

  test('peerId is a fresh UUID, availableStreams lists nothing while no stream runs, and a plain GET is 426 with a sentence', async () => {
    const c = await connect(wsUrl)
    c.send(question('peerId'))
    c.send(question('peerId'))
    c.send(question('availableStreams'))
    const [a, b, streams] = [await c.nth(1), await c.nth(2), await c.nth(3)]
    expect(a).toEqual({ type: 'answer', content: { type: 'peerId', content: { id: expect.stringMatching(/^[0-9a-f-]{36}$/) } } })
    expect(b.content.content.id).not.toBe(a.content.content.id)
    expect(streams).toEqual({ type: 'answer', content: { type: 'availableStreams', content: [] } })
    c.ws.close()
    const plain = await s.call('GET', SIGNALLING_PATH)
    expect(plain.status).toBe(426)
    expect(plain.body.detail).toContain('WebSocket')
  })

  test('every malformed message is answered with a sentence, counted by reason, and the socket lives on', async () => {
    const c = await connect(wsUrl)
    const bad: [unknown, RegExp][] = [
      ['not json', /not JSON/],
      [[1, 2], /JSON object/],
      [{ type: 'question' }, /"peerId" \| "availableStreams"/],
      [{ type: 'question', content: { type: 'selfDestruct' } }, /Unknown question 'selfDestruct'/],
      [{ type: 'answer', content: { type: 'peerId', content: { id: 'x' } } }, /ask a question/],
      [{ type: 'shout', content: {} }, /Unknown message type 'shout'/],
      [question('startSession'), /consumer_id.*producer_id/],
      [question('startSession', { consumer_id: 'me' }), /'producer_id' must be a non-empty string/],
      [question('startSession', { consumer_id: 'me', producer_id: 'x'.repeat(500) }), /at most 128 characters/],
      [question('startSession', { consumer_id: 'me', producer_id: producerId('usb-nowhere') }), /No running H.264 stream has the id/],
      [question('endSession', { consumer_id: 'me', producer_id: 'p', session_id: 's', reason: 'bye' }), /No session 's' on this socket/],
      [{ type: 'negotiation', content: { type: 'mediaNegotiation' } }, /A negotiation is/],
      [{ type: 'negotiation', content: { type: 'iceNegotiation', content: { session_id: 'nope', consumer_id: 'a', producer_id: 'b', ice: {} } } }, /No session 'nope'/],
      [{ type: 'negotiation', content: { type: 'telepathy', content: {} } }, /Unknown negotiation 'telepathy'/],
    ]
    for (const [message] of bad) c.send(message)
    c.ws.send(new Uint8Array([0xff, 0xfe, 0x00]))
    const got = await until('an answer to each', async () => c.messages, (m) => m.length >= bad.length + 1)
    bad.forEach(([, detail], i) => {
      expect(got[i].type).toBe('error')
      expect(got[i].content.detail).toMatch(detail)
    })
    expect(got[bad.length].content.detail).toMatch(/not JSON/)
    // Still answered.
    c.send(question('availableStreams'))
    expect((await c.nth(bad.length + 2)).content.type).toBe('availableStreams')
    expect(c.closed()).toBeNull()
    const counts = await refusals()
    expect(counts.not_json).toBeGreaterThanOrEqual(2)
    expect(counts.unknown_type).toBeGreaterThanOrEqual(4)
    expect(counts.no_stream).toBeGreaterThanOrEqual(1)
    expect(counts.no_session).toBeGreaterThanOrEqual(2)
    c.ws.close()
  })

  /** periscope_refusals_total{what="cockpit_message"} by reason. */
  async function refusals(): Promise<Record<string, number>> {
    const text = await (await fetch(`${s.url}/metrics`)).text()
    const out: Record<string, number> = {}
    for (const m of parseMetrics(text).samples) if (m.name === 'periscope_refusals_total' && m.labels.what === 'cockpit_message') out[m.labels.reason!] = m.value
    return out
  }
  async function limitHits(name: string): Promise<number> {
    const text = await (await fetch(`${s.url}/metrics`)).text()
    return parseMetrics(text).samples.find((m) => m.name === 'periscope_limit_hits_total' && m.labels.limit === name)?.value ?? 0
  }

  test(`a message over ${MAX_MESSAGE_BYTES} bytes is refused with a sentence; one over the socket's 64 KiB closes it (1009)`, async () => {
    const c = await connect(wsUrl)
    c.send(JSON.stringify({ type: 'question', content: { type: 'peerId', pad: 'x'.repeat(MAX_MESSAGE_BYTES) } }))
    expect((await c.nth(1)).content.detail).toContain(`more than the ${MAX_MESSAGE_BYTES} a signalling message may be`)
    expect((await refusals()).too_large).toBeGreaterThanOrEqual(1)
    c.send('x'.repeat(70 * 1024))
    const closed = await until('the socket closed', async () => c.closed(), (x) => x !== null)
    expect(closed!.code).toBe(1009)
  })

  test('a flood is told once, dropped, and closed (1008) when it goes on; counted in /metrics', async () => {
    const hitsBefore = await limitHits('cockpit_message_rate')
    const c = await connect(wsUrl)
    for (let i = 0; i < MESSAGE_BURST * 3; i++) c.send(question('peerId'))
    const closed = await until('the socket closed', async () => c.closed(), (x) => x !== null)
    expect(closed).toEqual({ code: 1008, reason: expect.stringContaining('messages a second') })
    const errors = c.messages.filter((m) => m.type === 'error')
    expect(errors).toHaveLength(1)
    expect(errors[0].content.detail).toContain('messages are dropped')
    // Every message within the burst was answered.
    expect(c.messages.filter((m) => m.type === 'answer').length).toBeGreaterThanOrEqual(MESSAGE_BURST)
    expect(await limitHits('cockpit_message_rate')).toBeGreaterThan(hitsBefore)
    expect((await refusals()).rate).toBeGreaterThanOrEqual(1)
  })

  test(`at most ${MAX_SOCKETS} sockets at once: the next is refused with 503 and a sentence, counted`, async () => {
    await until('no socket left open by the tests before', async () => (await s.call('GET', '/api/health')).body.plugins.cockpit.sockets, (n) => n === 0)
    const open: Awaited<ReturnType<typeof connect>>[] = []
    for (let i = 0; i < MAX_SOCKETS; i++) open.push(await connect(wsUrl))
    try {
      const res = await fetch(s.url + SIGNALLING_PATH, { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' } })
      expect(res.status).toBe(503)
      expect(((await res.json()) as any).detail).toContain(`${MAX_SOCKETS} signalling sockets are open`)
      expect(await limitHits('cockpit_sockets')).toBeGreaterThanOrEqual(1)
      expect((await s.call('GET', '/api/health')).body.plugins.cockpit.sockets).toBe(MAX_SOCKETS)
    } finally {
      for (const c of open) c.ws.close()
    }
    await until('the sockets closed', async () => (await s.call('GET', '/api/health')).body.plugins.cockpit.sockets, (n) => n === 0)
  })

  test("a Host that is not served is 421, as on every route; a page elsewhere is refused (403) as WHEP refuses it, the vehicle's own pages are not", async () => {
    const upgrade = { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' }
    const evil = await fetch(s.url + SIGNALLING_PATH, { headers: { ...upgrade, host: 'rebound.example' } })
    expect(evil.status).toBe(421)
    expect(((await evil.json()) as any).detail).toContain('rebound.example')
    const elsewhere = await fetch(s.url + SIGNALLING_PATH, { headers: { ...upgrade, origin: 'http://cockpit.elsewhere.example' } })
    expect(elsewhere.status).toBe(403)
    expect(((await elsewhere.json()) as any).detail).toContain('--cors-origins')
    const c = await connect(wsUrl, { origin: 'http://localhost:5173' })
    c.send(question('peerId'))
    expect((await c.nth(1)).content.type).toBe('peerId')
    c.ws.close()
  })
})

test('with --token-scope all the signalling needs the token (header or the console cookie): 401 with a sentence naming Cockpit', async () => {
  const s = await startContractServer({ plugins: PLUGINS, config: { token: 'sesame', tokenScope: 'all' } })
  try {
    const url = s.url.replace('http:', 'ws:') + SIGNALLING_PATH
    const res = await fetch(s.url + SIGNALLING_PATH, { headers: { connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-version': '13', 'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==' } })
    expect(res.status).toBe(401)
    expect(((await res.json()) as any).detail).toContain('Cockpit')
    const withCookie = await connect(url, { cookie: 'periscope_token=sesame' })
    withCookie.send(question('peerId'))
    expect((await withCookie.nth(1)).content.type).toBe('peerId')
    withCookie.ws.close()
  } finally {
    await s.stop()
  }
})

test('its own port serves any path; a taken port leaves the HTTP path only, said in one warning', async () => {
  const port = freeTcpPort()
  const s = await startContractServer({ plugins: PLUGINS, config: { pluginFlags: { 'cockpit-port': port } } })
  try {
    const c = await connect(`ws://127.0.0.1:${port}`)
    c.send(question('availableStreams'))
    expect((await c.nth(1)).content.type).toBe('availableStreams')
    c.ws.close()
    const plain = await fetch(`http://127.0.0.1:${port}/`)
    expect(plain.status).toBe(426)
    expect(((await plain.json()) as any).detail).toContain(`ws://<this vehicle>:${port}`)
    expect((await s.call('GET', '/api/health')).body.plugins.cockpit.port).toBe(port)
    // A second service on the same port: it says so once, and serves the path.
    const second = await startContractServer({ plugins: PLUGINS, config: { pluginFlags: { 'cockpit-port': port } } })
    try {
      const warnings = second.logs.filter((l) => String(l.msg).includes(`port ${port} is taken`))
      expect(warnings).toHaveLength(1)
      expect((await second.call('GET', '/api/health')).body.plugins.cockpit.port).toBeNull()
      const d = await connect(second.url.replace('http:', 'ws:') + SIGNALLING_PATH)
      d.send(question('peerId'))
      expect((await d.nth(1)).content.type).toBe('peerId')
      d.ws.close()
    } finally {
      await second.stop()
    }
  } finally {
    await s.stop()
  }
})

describe('sessions on a real hub and real werift', () => {
  const BUS = 'usb-cam-1'
  let hub: MediaHub
  let ended: string[]
  const context = (): SignallingContext => ({
    streams: () => [],
    producer: (id) => (id === producerId(BUS) ? { bus_info: BUS, hub, member: 0 } : null),
    admit: () => () => {},
    listenHost: '127.0.0.1',
    label: () => 'cockpit-test',
    opened: () => {},
    ended: (_s, reason) => ended.push(reason),
    refused: () => {},
    limitHit: () => {},
  })
  beforeAll(() => {
    hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 30, members: [BUS], log: createLogger('error') })
  })
  afterAll(() => hub.close())

  /** A Connection whose socket is an array. */
  function connection() {
    const sent: any[] = []
    const closed: [number, string][] = []
    ended = []
    const c = new Connection({ peer: '127.0.0.1', send: (t) => sent.push(JSON.parse(t)), close: (code, reason) => closed.push([code, reason]) }, context())
    const nth = (n: number) => until(`message ${n}`, async () => sent.length, (l) => l >= n, 15_000).then(() => sent[n - 1])
    const start = async () => {
      const at = sent.length
      c.receive(JSON.stringify(question('startSession', { consumer_id: 'me', producer_id: producerId(BUS) })))
      const answer = await nth(at + 1)
      const offer = await nth(at + 2)
      // Our one loopback candidate follows the offer.
      expect((await nth(at + 3)).content.type).toBe('iceNegotiation')
      return { answer, offer, bind: answer.content.content }
    }
    return { c, sent, closed, nth, start }
  }

  test('startSession: the session id, then our offer (H.264, sendonly, no candidate inside), then our loopback candidate as iceNegotiation', async () => {
    const { c, start, nth } = connection()
    const { answer, offer, bind } = await start()
    const ice = await nth(3)
    expect(ice).toEqual({ type: 'negotiation', content: { type: 'iceNegotiation', content: { ...bind, ice: { candidate: expect.stringMatching(/^candidate:.* 127\.0\.0\.1 \d+ typ host/), sdpMid: '0', sdpMLineIndex: 0 } } } })
    expect(answer).toEqual({ type: 'answer', content: { type: 'startSession', content: { consumer_id: 'me', producer_id: producerId(BUS), session_id: expect.stringMatching(/^[0-9a-f-]{36}$/) } } })
    expect(offer.type).toBe('negotiation')
    expect(offer.content.type).toBe('mediaNegotiation')
    expect(offer.content.content).toMatchObject({ ...bind, sdp: { type: 'offer' } })
    const sdp: string = offer.content.content.sdp.sdp
    expect(sdp).toContain('m=video')
    expect(sdp).toMatch(/a=rtpmap:\d+ H264\/90000/)
    expect(sdp).toContain('a=sendonly')
    expect(sdp).not.toContain('a=candidate:')
    c.socketClosed()
    await until('the session ended', async () => ended, (e) => e.includes('disconnected'))
  })

  test("an offer in the answer's place, an answer that is not SDP: a sentence each; an answer werift cannot read ends the session and says endSession", async () => {
    const { c, sent, nth, start } = connection()
    const { bind } = await start()
    const at = sent.length
    const media = (sdp: unknown) => JSON.stringify({ type: 'negotiation', content: { type: 'mediaNegotiation', content: { ...bind, sdp } } })
    c.receive(media({ type: 'offer', sdp: 'v=0\r\n' }))
    expect((await nth(at + 1)).content.detail).toContain('"type": "answer"')
    c.receive(media({ type: 'answer', sdp: 'hello' }))
    expect((await nth(at + 2)).content.detail).toContain('"type": "answer"')
    c.receive(media({ type: 'answer', sdp: 'v=0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\n' }))
    const failed = await nth(at + 3)
    expect(failed.type).toBe('error')
    const endSession = await nth(at + 4)
    expect(endSession).toMatchObject({ type: 'question', content: { type: 'endSession', content: { ...bind, reason: expect.stringContaining('failed') } } })
    expect(ended).toEqual(['failed'])
    expect(sent).toHaveLength(at + 4)
  })

  test(`endSession needs the session's own ids, ends it without an echo; ${MAX_SESSIONS_PER_SOCKET} sessions per socket, ${MAX_CANDIDATES_PER_SESSION} candidates per session`, async () => {
    const { c, sent, nth, start } = connection()
    const sessions = []
    for (let i = 0; i < MAX_SESSIONS_PER_SOCKET; i++) sessions.push((await start()).bind)
    const before = sent.length
    c.receive(JSON.stringify(question('startSession', { consumer_id: 'me', producer_id: producerId(BUS) })))
    expect((await nth(before + 1)).content.detail).toContain(`already has ${MAX_SESSIONS_PER_SOCKET} sessions`)
    const first = sessions[0]!
    const ice = (n: number) => JSON.stringify({ type: 'negotiation', content: { type: 'iceNegotiation', content: { ...first, ice: { candidate: `candidate:${n} 1 udp 2122260223 127.0.0.1 ${40000 + n} typ host`, sdpMid: '0', sdpMLineIndex: 0 } } } })
    const at = sent.length
    for (let n = 0; n <= MAX_CANDIDATES_PER_SESSION; n++) c.receive(ice(n))
    expect((await nth(at + 1)).content.detail).toContain(`More than ${MAX_CANDIDATES_PER_SESSION} ICE candidates`)
    c.receive(JSON.stringify(question('endSession', { ...first, consumer_id: 'someone else', reason: 'x' })))
    expect((await nth(at + 2)).content.detail).toContain("the session's own")
    c.receive(JSON.stringify(question('endSession', { ...first, reason: 'closed the widget' })))
    await until('the session ended', async () => ended, (e) => e.includes('deleted'))
    c.socketClosed()
    await until('the others ended with the socket', async () => ended, (e) => e.filter((r) => r === 'disconnected').length === MAX_SESSIONS_PER_SOCKET - 1)
    // No endSession was sent for any of them: the browser asked, or its socket is gone.
    expect(sent.filter((m) => m.type === 'question')).toEqual([])
  })
})

test('with a running H.264 stream (a stand-in streamer with a real hub): availableStreams lists it by nickname and size; a session never answered ends at the idle timeout and the service asks endSession', async () => {
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 15, members: [EHD], log: createLogger('error') })
  const standIn = standInStreamer(hub)
  const plugins = [...(await Promise.all(PLUGINS.map(loadPlugin))), standIn]
  const s = await startTestServer({ plugins, config: { simulate: 'default', whepIdleTimeoutSeconds: 1 } })
  try {
    expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'Bow' })).status).toBe(200)
    const c = await connect(s.url.replace('http:', 'ws:') + SIGNALLING_PATH)
    c.send(question('availableStreams'))
    const streams = (await c.nth(1)).content.content
    expect(streams).toEqual([{ id: producerId(EHD), name: 'Bow', encode: 'H264', width: 640, height: 480, interval: expect.stringMatching(/^0\.\d+$/), source: expect.any(String), created: null }])
    c.send(question('startSession', { consumer_id: 'me', producer_id: streams[0].id }))
    const bind = (await c.nth(2)).content.content
    expect((await c.nth(3)).content.type).toBe('mediaNegotiation')
    expect((await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD).watch.cockpit).toBe(`${s.url.replace('http:', 'ws:')}${SIGNALLING_PATH}`)
    // No answer, no RTCP: unheard for the idle timeout (1 s here).
    const end = await until('endSession from the service', async () => c.messages.find((m) => m.type === 'question'), (m) => m !== undefined, 10_000)
    expect(end).toEqual({ type: 'question', content: { type: 'endSession', content: { ...bind, reason: expect.stringContaining('not heard from') } } })
    const health = (await s.call('GET', '/api/health')).body.plugins.cockpit
    expect([health.sessions, health.ended.idle]).toEqual([0, 1])
    c.ws.close()
  } finally {
    await s.stop()
    hub.close()
  }
})
