// The WHEP routes' refusals and documentation without GStreamer or a browser (the integration tier
// watches real video in Chromium: tests/integration/whep.test.ts), the flags' defaults, and the parts a
// session is built on: finding a key frame in H.264 RTP, the tap's last group of pictures, and which
// host candidates are offered.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { loadConfig } from '../../core/config'
import { GopCache } from '../../media/hub'
import { startsKeyFrame } from '../../media/rtp'
import { acceptBundleOnly, MAX_MEDIA_SECTIONS, MAX_OFFER_BYTES } from '../../plugins/whep/offer'
import { hostCandidates } from '../../media/webrtc/session'
import { parseMetrics, type TestServer } from '../helpers'
import { EHD, startContractServer } from './setup'

let s: TestServer
beforeAll(async () => {
  // No gstreamer plugin: no streamer, as on a machine without GStreamer.
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'whep', 'metrics'] })
})
afterAll(async () => {
  await s.stop()
})

const SESSION = 'v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n'
const CREDENTIALS = 'a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuv\r\na=fingerprint:sha-256 ' + Array(32).fill('AB').join(':') + '\r\n'
const VIDEO = 'm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;profile-level-id=42e01f\r\n'
const OFFER = SESSION + CREDENTIALS + VIDEO
const post = (bus_info: string, body: string, type: string | null = 'application/sdp') =>
  fetch(`${s.url}/api/streams/${encodeURIComponent(bus_info)}/whep`, { method: 'POST', body, headers: type ? { 'content-type': type } : {} })
const detail = async (res: Response) => ((await res.json()) as { detail: unknown }).detail

test('refusals carry a sentence: 415 wrong type, 400 not an offer, 404 unknown device, 503 without a streamer', async () => {
  const json = await post(EHD, '{}', 'application/json')
  expect(json.status).toBe(415)
  expect(await detail(json)).toContain('application/sdp')
  const none = await post(EHD, OFFER, null)
  expect(none.status).toBe(415)
  const garbage = await post(EHD, 'hello')
  expect(garbage.status).toBe(400)
  expect(await detail(garbage)).toContain('m=video')
  const audioOnly = await post(EHD, OFFER.replace('m=video', 'm=audio'))
  expect(audioOnly.status).toBe(400)
  const unknown = await post('usb-nowhere', OFFER)
  expect(unknown.status).toBe(404)
  expect(await detail(unknown)).toContain('usb-nowhere')
  const noStreamer = await post(EHD, OFFER)
  expect(noStreamer.status).toBe(503)
  expect(await detail(noStreamer)).toMatch(/GStreamer/)
})

/** periscope_refusals_total{what="whep_offer"} by reason, as /metrics says. */
async function refusedOffers(): Promise<Record<string, number>> {
  const text = await (await fetch(`${s.url}/metrics`)).text()
  const counts: Record<string, number> = {}
  for (const m of parseMetrics(text).samples) if (m.name === 'periscope_refusals_total' && m.labels.what === 'whep_offer') counts[m.labels.reason!] = m.value
  return counts
}

test('offer limits: too large is 413, too many media sections, two BUNDLE groups, no fingerprint, no ICE credentials are 400 with a sentence; each counted in /metrics by reason', async () => {
  const before = await refusedOffers()
  const big = await post(EHD, OFFER + 'a=x-padding:' + 'x'.repeat(MAX_OFFER_BYTES) + '\r\n')
  expect(big.status).toBe(413)
  expect(await detail(big)).toContain(String(MAX_OFFER_BYTES))
  const many = await post(EHD, SESSION + CREDENTIALS + VIDEO.repeat(MAX_MEDIA_SECTIONS + 1))
  expect(many.status).toBe(400)
  expect(await detail(many)).toContain(`more than ${MAX_MEDIA_SECTIONS} media sections`)
  const bundles = await post(EHD, SESSION + 'a=group:BUNDLE 0\r\na=group:BUNDLE 1\r\n' + CREDENTIALS + VIDEO)
  expect([bundles.status, await detail(bundles)]).toEqual([400, expect.stringContaining('BUNDLE')])
  const noFingerprint = await post(EHD, OFFER.replace(/a=fingerprint:.*\r\n/, ''))
  expect([noFingerprint.status, await detail(noFingerprint)]).toEqual([400, expect.stringContaining('a=fingerprint')])
  const noPassword = await post(EHD, OFFER.replace(/a=ice-pwd:.*\r\n/, ''))
  expect([noPassword.status, await detail(noPassword)]).toEqual([400, expect.stringContaining('a=ice-pwd')])
  const emptyUfrag = await post(EHD, OFFER.replace(/a=ice-ufrag:.*\r\n/, 'a=ice-ufrag:\r\n'))
  expect(emptyUfrag.status).toBe(400)
  // Credentials in every media section instead of at session level are as good: refused only for want of a streamer.
  const perSection = await post(EHD, SESSION + (CREDENTIALS + VIDEO).replace(/^((?:a=.*\r\n)+)(m=.*\r\n)/, '$2$1').repeat(2))
  expect(perSection.status).toBe(503)
  const after = await refusedOffers()
  const grew = (reason: string) => (after[reason] ?? 0) - (before[reason] ?? 0)
  expect([grew('too_large'), grew('too_many_sections'), grew('bundle'), grew('no_fingerprint'), grew('no_ice_credentials')]).toEqual([1, 1, 1, 1, 2])
})

test('an offer of 2,000 video sections (the one that froze the service for 8 minutes) is refused within 1 s, while /api/health answers within 100 ms', async () => {
  const sections = Array.from({ length: 2000 }, (_, i) => VIDEO.replace('a=mid:0', `a=mid:${i}`)).join('')
  const huge = SESSION + CREDENTIALS + sections
  const small = SESSION + CREDENTIALS + Array.from({ length: 400 }, () => 'm=video 9 UDP/TLS/RTP/SAVPF 96\r\n').join('') // under the byte limit
  expect(small.length).toBeLessThan(MAX_OFFER_BYTES)
  for (const offer of [huge, small]) {
    const started = performance.now()
    const answer = post(EHD, offer).then(async (r) => ({ status: r.status, detail: await detail(r), ms: performance.now() - started }))
    const healthMs: number[] = []
    for (let i = 0; i < 5; i++) {
      const t = performance.now()
      expect((await fetch(`${s.url}/api/health`)).status).toBe(200)
      healthMs.push(performance.now() - t)
    }
    const refused = await answer
    expect([413, 400]).toContain(refused.status)
    expect(typeof refused.detail).toBe('string')
    expect(refused.ms).toBeLessThan(1000)
    expect(Math.max(...healthMs)).toBeLessThan(100)
  }
})

test('DELETE of an unknown session is 404; PATCH (trickle ICE) is 405 with Allow', async () => {
  const path = `${s.url}/api/streams/${encodeURIComponent(EHD)}/whep/00000000-0000-0000-0000-000000000000`
  const del = await fetch(path, { method: 'DELETE' })
  expect(del.status).toBe(404)
  expect(await detail(del)).toMatch(/session/)
  const patch = await fetch(path, { method: 'PATCH', headers: { 'content-type': 'application/trickle-ice-sdpfrag' }, body: 'a=end-of-candidates' })
  expect(patch.status).toBe(405)
  expect(patch.headers.get('allow')).toContain('DELETE')
})

test('OPTIONS on the WHEP endpoint: 204 with Accept-Post: application/sdp, 404 for an unknown device; a CORS preflight there is still the CORS answer', async () => {
  const path = `${s.url}/api/streams/${encodeURIComponent(EHD)}/whep`
  const plain = await fetch(path, { method: 'OPTIONS' })
  expect(plain.status).toBe(204)
  expect(plain.headers.get('accept-post')).toBe('application/sdp')
  expect(plain.headers.get('allow')).toBe('POST, OPTIONS')
  expect(await plain.text()).toBe('')
  // From a page on another origin of the vehicle (its own name, another port): the same answer, with the CORS headers.
  const fromPage = await fetch(path, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173' } })
  expect([fromPage.status, fromPage.headers.get('accept-post'), fromPage.headers.get('access-control-allow-origin')]).toEqual([204, 'application/sdp', 'http://localhost:5173'])
  // A browser's preflight of the POST: answered by the CORS layer, allowing the method and Content-Type.
  const preflight = await fetch(path, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type' } })
  expect(preflight.status).toBe(204)
  expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:5173')
  expect(preflight.headers.get('access-control-allow-methods')).toContain('POST')
  expect(preflight.headers.get('access-control-allow-headers')).toContain('content-type')
  const unknown = await fetch(`${s.url}/api/streams/usb-nowhere/whep`, { method: 'OPTIONS' })
  expect(unknown.status).toBe(404)
  expect(await detail(unknown)).toContain('usb-nowhere')
  // A path without an OPTIONS operation: 405 with what it takes, as FastAPI answers (a preflight there is still 204).
  const other = await fetch(`${s.url}/api/devices`, { method: 'OPTIONS' })
  expect([other.status, other.headers.get('allow')]).toEqual([405, 'GET, HEAD'])
  // GET on the endpoint: 405, and its Allow names OPTIONS beside POST.
  const get = await fetch(path)
  expect([get.status, get.headers.get('allow')]).toEqual([405, 'POST, OPTIONS'])
})

test('the OpenAPI document has both operations: an application/sdp body, 201 with Location, every refusal', async () => {
  const doc = (await s.call('GET', '/openapi.json')).body as any
  const whep = doc.paths['/api/streams/{bus_info}/whep'].post
  expect(Object.keys(whep.requestBody.content)).toEqual(['application/sdp'])
  expect(whep.responses['201'].content['application/sdp']).toBeDefined()
  expect(whep.responses['201'].headers.Location).toBeDefined()
  expect(whep.responses['200']).toBeUndefined()
  for (const status of ['400', '404', '409', '413', '415', '422', '503']) expect(whep.responses[status]).toBeDefined()
  const end = doc.paths['/api/streams/{bus_info}/whep/{session_id}'].delete
  expect(Object.keys(end.responses)).toEqual(expect.arrayContaining(['200', '404']))
  expect(end.parameters.map((p: any) => p.name)).toEqual(['bus_info', 'session_id'])
  expect(end.description).toContain('PATCH')
  const options = doc.paths['/api/streams/{bus_info}/whep'].options
  expect(options.responses['204'].headers['Accept-Post']).toBeDefined()
  expect(options.responses['204'].content).toBeUndefined()
  expect(Object.keys(options.responses)).toEqual(expect.arrayContaining(['204', '404']))
})

test('defaults: 8 viewers per camera, a vanished viewer reaped after 30 s; both are flags', () => {
  const config = loadConfig([])
  expect(config.maxViewers).toBe(8)
  expect(config.whepIdleTimeoutSeconds).toBe(30)
  expect(config.plugins).toContain('whep')
  const set = loadConfig(['--max-viewers', '2', '--whep-idle-timeout=5'])
  expect([set.maxViewers, set.whepIdleTimeoutSeconds]).toEqual([2, 5])
  expect(() => loadConfig(['--max-viewers', '0'])).toThrow(/max-viewers/)
})

/** An RTP packet (version 2, pt 96) with `payload`, optionally with a CSRC and a header extension. */
function rtp(payload: number[], options: { csrc?: boolean; extension?: boolean } = {}): Uint8Array {
  const header = [0x80 | (options.csrc ? 1 : 0) | (options.extension ? 0x10 : 0), 96, 0, 1, 0, 0, 0, 1, 0, 0, 0, 2]
  const csrc = options.csrc ? [0, 0, 0, 3] : []
  const extension = options.extension ? [0xbe, 0xde, 0, 1, 0x10, 0xff, 0, 0] : []
  return new Uint8Array([...header, ...csrc, ...extension, ...payload])
}

test('a key frame starts at an SPS: alone, anywhere in a STAP-A (after an AUD), or opening a fragmented one', () => {
  const SPS = 0x67 // nal_ref_idc 3, type 7
  expect(startsKeyFrame(rtp([SPS, 0x42, 0xe0]))).toBe(true)
  // STAP-A: AUD (2 bytes), SPS (3 bytes), PPS (2 bytes): as h264parse + rtph264pay aggregate-mode=zero-latency send them
  const stap = [0x78, 0, 2, 0x09, 0xf0, 0, 3, SPS, 0x42, 0xe0, 0, 2, 0x68, 0xce]
  expect(startsKeyFrame(rtp(stap))).toBe(true)
  expect(startsKeyFrame(rtp(stap, { csrc: true, extension: true }))).toBe(true)
  expect(startsKeyFrame(rtp([0x78, 0, 2, 0x09, 0xf0, 0, 2, 0x68, 0xce]))).toBe(false) // AUD + PPS only
  expect(startsKeyFrame(rtp([0x7c, 0x80 | 7, 0x42]))).toBe(true) // FU-A start of an SPS
  expect(startsKeyFrame(rtp([0x7c, 0x80 | 5, 0x88]))).toBe(false) // an IDR slice without its SPS before it
  expect(startsKeyFrame(rtp([0x41, 0x9a]))).toBe(false) // a P slice
  expect(startsKeyFrame(rtp([0x78, 0, 200, 0x09]))).toBe(false) // a STAP-A that lies about its length
  expect(startsKeyFrame(new Uint8Array(8))).toBe(false) // shorter than an RTP header
})

test('host candidates: the listen address only; on 0.0.0.0 every non-loopback IPv4 address', () => {
  expect(hostCandidates('127.0.0.1')).toEqual({ addresses: ['127.0.0.1'], bind: '127.0.0.1' })
  const all = hostCandidates('0.0.0.0')
  expect(all.bind).toBeUndefined()
  expect(all.addresses.length).toBeGreaterThan(0)
  for (const address of all.addresses) expect(address).toMatch(/^\d+\.\d+\.\d+\.\d+$/)
})

/** An H.264 RTP packet: sequence number, SSRC, and a key frame's SPS or a P slice. */
function h264(seq: number, options: { key?: boolean; ssrc?: number; size?: number } = {}): Uint8Array {
  const packet = new Uint8Array(Math.max(14, options.size ?? 14))
  packet.set([0x80, 96, (seq >> 8) & 0xff, seq & 0xff, 0, 0, 0, seq & 0xff])
  new DataView(packet.buffer).setUint32(8, options.ssrc ?? 7)
  packet.set(options.key ? [0x67, 0x42] : [0x41, 0x9a], 12)
  return packet
}

test("the tap's last group of pictures: from the latest key frame, without a gap; a loss, a new SSRC or the bound empties it until the next key frame", () => {
  const cache = new GopCache()
  cache.push(h264(1)) // before any key frame: nothing to start from
  expect(cache.gop).toEqual([])
  const first = [h264(2, { key: true }), h264(3), h264(4)]
  for (const p of first) cache.push(p)
  expect(cache.gop).toEqual(first)
  const second = [h264(5, { key: true }), h264(6)]
  for (const p of second) cache.push(p)
  expect(cache.gop).toEqual(second) // a new key frame starts a new group
  cache.push(h264(8)) // 7 was lost: the group cannot be decoded past it
  expect(cache.gop).toEqual([])
  cache.push(h264(9))
  expect(cache.gop).toEqual([])
  cache.push(h264(10, { key: true }))
  cache.push(h264(11, { ssrc: 8 })) // the camera's child restarted
  expect(cache.gop).toEqual([])
  // Sequence numbers wrap.
  const wrapping = [h264(65535, { key: true }), h264(0), h264(1)]
  for (const p of wrapping) cache.push(p)
  expect(cache.gop).toEqual(wrapping)
  // A group past its bound in bytes (3 MiB) is not kept.
  cache.push(h264(100, { key: true }))
  for (let seq = 101; seq < 101 + 3000 && cache.gop.length; seq++) cache.push(h264(seq, { size: 1400 }))
  expect(cache.gop).toEqual([])
  // The list handed out is a copy: the cache goes on without changing it.
  cache.push(h264(200, { key: true }))
  const taken = cache.gop
  cache.push(h264(201))
  expect(taken.length).toBe(1)
})

test("an RFC 8843 bundle-only section (webrtcbin's audio with max-bundle: port 0) is read as bundled (port 9), not rejected; others untouched", () => {
  const offer = [
    'v=0', 'o=- 1 0 IN IP4 0.0.0.0', 's=-', 't=0 0', 'a=group:BUNDLE video0 audio1 audio2',
    'm=video 9 UDP/TLS/RTP/SAVPF 96', 'a=mid:video0', 'a=rtpmap:96 H264/90000',
    'm=audio 0 UDP/TLS/RTP/SAVPF 97', 'a=bundle-only', 'a=mid:audio1', 'a=rtpmap:97 OPUS/48000/2',
    'm=audio 0 UDP/TLS/RTP/SAVPF 98', 'a=mid:audio2', 'a=rtpmap:98 opus/48000/2', // rejected: no bundle-only
    '',
  ]
  for (const eol of ['\r\n', '\n']) {
    const read = acceptBundleOnly(offer.join(eol)).split(eol)
    expect(read.filter((l) => l.startsWith('m='))).toEqual(['m=video 9 UDP/TLS/RTP/SAVPF 96', 'm=audio 9 UDP/TLS/RTP/SAVPF 97', 'm=audio 0 UDP/TLS/RTP/SAVPF 98'])
    expect(read).not.toContain('a=bundle-only')
    expect(read.length).toBe(offer.length - 1)
  }
  const plain = offer.filter((l) => l !== 'a=bundle-only').join('\r\n')
  expect(acceptBundleOnly(plain)).toBe(plain)
})
