// The WHEP routes' refusals and documentation without GStreamer or a browser (the integration tier
// watches real video in Chromium: tests/integration/whep.test.ts), the flags' defaults, and the parts a
// session is built on: finding a key frame in H.264 RTP, and which host candidates are offered.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { loadConfig } from '../../core/config'
import { startsKeyFrame } from '../../plugins/whep/h264'
import { hostCandidates } from '../../plugins/whep/session'
import type { TestServer } from '../helpers'
import { EHD, startContractServer } from './setup'

let s: TestServer
beforeAll(async () => {
  // No gstreamer plugin: no streamer, as on a machine without GStreamer.
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'whep'] })
})
afterAll(async () => {
  await s.stop()
})

const OFFER = 'v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;profile-level-id=42e01f\r\n'
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

test('DELETE of an unknown session is 404; PATCH (trickle ICE) is 405 with Allow', async () => {
  const path = `${s.url}/api/streams/${encodeURIComponent(EHD)}/whep/00000000-0000-0000-0000-000000000000`
  const del = await fetch(path, { method: 'DELETE' })
  expect(del.status).toBe(404)
  expect(await detail(del)).toMatch(/session/)
  const patch = await fetch(path, { method: 'PATCH', headers: { 'content-type': 'application/trickle-ice-sdpfrag' }, body: 'a=end-of-candidates' })
  expect(patch.status).toBe(405)
  expect(patch.headers.get('allow')).toContain('DELETE')
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
