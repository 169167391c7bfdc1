// WHEP with a real browser: the whole service (core/main.ts, simulated cameras, GStreamer) and headless
// Chromium (tests/integration/browser.ts) opening RTCPeerConnections. Proves: frames decoded at the
// camera's size within 2 s of the POST, DELETE ends the session (the browser sees it too), a closed tab
// is reaped after the idle timeout, the ninth viewer of a camera is refused, a restart of the camera's
// child does not break a session, an unplugged camera's sessions wait and play again when it is plugged
// back, a stopped stream ends its sessions and a restarted one can be watched again, an MJPG
// stream is refused pointing to MJPEG, and no socket is left behind.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync, readlinkSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import type { Browser } from 'puppeteer-core'
import { freeTcpPort, listenEvents, stopProcess, until } from '../helpers'
import { launchBrowser, openOffer, openPage, openSession, videoStats, watch, withPage, type Opened } from './browser'
import { requireGStreamer, tempDir } from './gstreamer.helpers'

const IDLE_TIMEOUT_S = 3

interface Service {
  proc: Subprocess
  url: string
  call(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>
}

async function startService(): Promise<Service> {
  const dataDir = tempDir('periscope-whep-')
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = probe.port
  probe.stop(true)
  // --client-limits off: one browser here takes a camera's every place (--max-viewers); each client's share is tests/contract/webrtc-doors.test.ts's.
  const args = ['--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--simulate', 'default', '--log-level', process.env.WHEP_LOG ?? 'info', '--whep-idle-timeout', String(IDLE_TIMEOUT_S), '--client-limits', 'off',
    // Not the default RTSP and Cockpit ports (8554, 6021, 6020): another suite beside this one wants them too.
    '--rtsp-port', String(freeTcpPort()), '--cockpit-port', 'off', '--cockpit-streams-port', 'off']
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, '../../core/main.ts'), ...args], { stdout: 'ignore', stderr: 'inherit', cwd: join(import.meta.dir, '../..') })
  const url = `http://127.0.0.1:${port}`
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined })
    const text = await res.text()
    return { status: res.status, body: text ? JSON.parse(text) : null }
  }
  await until('the service to answer', () => call('GET', '/api/devices').catch(() => ({ status: 0, body: null })), (r) => r.status === 200 || proc.exitCode !== null, 30_000)
  if (proc.exitCode !== null) throw new Error(`the service exited with ${proc.exitCode} before answering`)
  return { proc, url, call }
}

let service: Service
let browser: Browser
beforeAll(async () => {
  requireGStreamer()
  service = await startService()
  browser = await launchBrowser()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  if (service && service.proc.exitCode === null) {
    service.proc.kill('SIGTERM')
    await service.proc.exited
  }
})

const whepPath = (bus_info: string) => `/api/streams/${encodeURIComponent(bus_info)}/whep`
const health = async () => (await service.call('GET', '/api/health')).body.plugins.whep
const sessionCount = async (): Promise<number> => (await health()).sessions
/** UDP/TCP sockets the service holds (werift's ICE sockets among them). */
const socketsOf = (pid: number) => readdirSync(`/proc/${pid}/fd`).filter((fd) => {
  try {
    return readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith('socket:')
  } catch {
    return false
  }
}).length

/**
 * Streams a simulated single camera (no group) as `encode` at 640 wide or less, and returns it once it
 * runs: for H264 one with an H.264 node, for MJPG and SOFTWARE_H264 one that has none (an MJPG-only camera).
 */
async function streaming(encode: 'H264' | 'MJPG' | 'SOFTWARE_H264'): Promise<{ bus_info: string; width: number; height: number }> {
  const { body } = await service.call('GET', '/api/devices')
  const format = encode === 'H264' ? 'H264' : 'MJPG'
  for (const d of body) {
    if (d.leader || d.followers?.length) continue // groups are not what these tests are about
    const formats = (d.cameras ?? []).flatMap((c: any) => Object.keys(c.formats ?? {}))
    if (encode !== 'H264' && formats.includes('H264')) continue
    const size = d.cameras.flatMap((c: any) => c.formats?.[format] ?? []).find((s: any) => s.width <= 640) ?? null
    if (!size) continue
    const interval = size.intervals.find((i: any) => i.denominator / i.numerator === 15) ?? size.intervals[0]
    const r = await service.call('POST', '/api/devices/configure_stream', {
      bus_info: d.bus_info,
      stream_type: 'UDP',
      stream_format: { width: size.width, height: size.height, interval },
      encode_type: encode,
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port: d.stream.endpoints?.[0]?.port ?? 47000 }],
    })
    expect(r.status).toBe(200)
    await until('the stream running', () => service.call('GET', '/api/devices'), (r) => r.body.find((x: any) => x.bus_info === d.bus_info)?.stream_status?.state === 'running', 20_000)
    return { bus_info: d.bus_info, width: size.width, height: size.height }
  }
  throw new Error(`no simulated single camera to stream as ${encode} at 640 wide or less`)
}

test('Chromium watches an H.264 camera over WHEP: frames at the camera size within 2 s, DELETE ends the session', async () => {
  const cam = await streaming('H264')
  const page = await openPage(browser, service.url)
  try {
    const opened = await openSession(page, whepPath(cam.bus_info), 'a')
    expect(opened.status).toBe(201)
    // The Location ends in the session's secret: 24 random bytes, base64url (192 bits).
    expect(opened.location).toMatch(new RegExp(`^${whepPath(cam.bus_info).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/[A-Za-z0-9_-]{32}$`))
    const v = await watch(page, 'a', (v) => v.framesDecoded > 0 && v.width > 0, 20_000)
    console.log(`whep: first decoded frame ${Math.round(v.firstFrameMs!)} ms after the POST (${cam.width}x${cam.height})`)
    expect([v.width, v.height]).toEqual([cam.width, cam.height])
    expect(v.firstFrameMs!).toBeLessThan(2000)
    expect(await sessionCount()).toBe(1)

    // Decoding goes on.
    const later = await watch(page, 'a', (w) => w.framesDecoded > v.framesDecoded + 10, 10_000)
    expect(later.state).toBe('connected')

    // DELETE: the server forgets it, the browser's connection ends, a second DELETE is 404.
    const del = await fetch(service.url + opened.location!, { method: 'DELETE' })
    expect(del.status).toBe(200)
    expect(await sessionCount()).toBe(0)
    await watch(page, 'a', (w) => w.state === 'closed' || w.state === 'failed' || w.state === 'disconnected', 40_000)
    expect((await fetch(service.url + opened.location!, { method: 'DELETE' })).status).toBe(404)
  } finally {
    await page.close()
  }
}, 90_000)

test("a session's Location is its own secret: unguessable, and nowhere else (logs, health, metrics, events); a wrong one ends nothing", async () => {
  const cam = await streaming('H264')
  const events = listenEvents(`${service.url}/api/events`)
  await events.ready
  const page = await openPage(browser, service.url)
  try {
    const opened = [await openSession(page, whepPath(cam.bus_info), 's1'), await openSession(page, whepPath(cam.bus_info), 's2')]
    const secrets = opened.map((o) => o.location!.split('/').at(-1)!)
    for (const secret of secrets) expect(Buffer.from(secret, 'base64url').length * 8).toBeGreaterThanOrEqual(128)
    expect(secrets[0]).not.toBe(secrets[1])
    await watch(page, 's1', (v) => v.framesDecoded > 0, 20_000)
    // Someone else's guess, and the other session's secret on a wrong camera: 404, and both sessions live on.
    const guess = await fetch(`${service.url}${whepPath(cam.bus_info)}/${Buffer.alloc(24).toString('base64url')}`, { method: 'DELETE' })
    expect(guess.status).toBe(404)
    expect(await sessionCount()).toBe(2)
    expect((await fetch(service.url + opened[0]!.location!, { method: 'DELETE' })).status).toBe(200)
    const everywhere = [
      JSON.stringify((await service.call('GET', '/api/logs?limit=1000')).body),
      JSON.stringify((await service.call('GET', '/api/health')).body),
      await (await fetch(`${service.url}/metrics`)).text(),
      JSON.stringify(events.events),
      JSON.stringify((await service.call('GET', '/api/devices')).body),
    ]
    for (const text of everywhere) for (const secret of secrets) expect(text).not.toContain(secret)
    // The log names sessions by a label of their own.
    expect(everywhere[0]).toMatch(/whep-\d+/)
    expect((await fetch(service.url + opened[1]!.location!, { method: 'DELETE' })).status).toBe(200)
  } finally {
    events.close()
    await page.close()
  }
}, 90_000)

test('every well-formed offer is answered and plays: audio first, max-bundle, balanced, max-compat, a data channel, two video sections', async () => {
  const cam = await streaming('H264')
  const page = await openPage(browser, service.url)
  const shapes: { kinds: ('audio' | 'video' | 'data')[]; policy: 'balanced' | 'max-bundle' | 'max-compat' }[] = [
    { kinds: ['audio', 'video'], policy: 'max-bundle' }, // the medooze whip-whep client's offer
    { kinds: ['audio', 'video'], policy: 'balanced' },
    { kinds: ['video', 'audio'], policy: 'max-compat' },
    { kinds: ['video', 'audio', 'data'], policy: 'max-bundle' },
    { kinds: ['data', 'video'], policy: 'balanced' },
    { kinds: ['video', 'video'], policy: 'max-bundle' },
  ]
  let open: string | undefined
  try {
    for (const [i, shape] of shapes.entries()) {
      const key = `shape${i}`
      const opened = await openOffer(page, whepPath(cam.bus_info), key, shape.kinds, shape.policy)
      open = opened.location
      const what = `${shape.kinds.join('+')} ${shape.policy}`
      expect({ what, status: opened.status, error: opened.error, detail: opened.detail }).toEqual({ what, status: 201, error: undefined, detail: undefined })
      // The frame's size comes in the stats a moment after the first decoded frame (0 was seen once).
      const v = await watch(page, key, (v) => v.framesDecoded > 0 && v.width > 0, 20_000)
      expect([what, v.width, v.height]).toEqual([what, cam.width, cam.height])
      expect((await fetch(service.url + opened.location!, { method: 'DELETE' })).status).toBe(200)
      open = undefined
    }
  } finally {
    // A failure leaves no session behind for the next test to count.
    if (open) await fetch(service.url + open, { method: 'DELETE' })
    await page.close()
  }
}, 180_000)

test('a tab closed without DELETE is reaped after the idle timeout, and its sockets are closed', async () => {
  const cam = await streaming('H264')
  const before = socketsOf(service.proc.pid)
  const tab = await launchBrowser() // its own browser, killed outright like a crashed tab
  const page = await openPage(tab, service.url)
  const opened = await openSession(page, whepPath(cam.bus_info), 'b')
  expect(opened.status).toBe(201)
  await watch(page, 'b', (v) => v.framesDecoded > 0, 20_000)
  expect(await sessionCount()).toBe(1)
  expect(socketsOf(service.proc.pid)).toBeGreaterThan(before)
  tab.process()!.kill('SIGKILL')
  await tab.close().catch(() => {})
  const killedAt = Date.now()
  await until('the session reaped', sessionCount, (n: number) => n === 0, 30_000)
  const reapedAfter = Date.now() - killedAt
  console.log(`whep: a killed browser's session reaped ${reapedAfter} ms later (idle timeout ${IDLE_TIMEOUT_S} s)`)
  // Not at once: only once it has been quiet for the timeout (its last RTCP came up to ~1 s before the kill).
  expect(reapedAfter).toBeGreaterThan(1000)
  expect((await health()).ended.idle).toBeGreaterThanOrEqual(1)
  await until('its sockets closed', async () => socketsOf(service.proc.pid), (n: number) => n <= before, 10_000)
  expect((await fetch(service.url + opened.location!, { method: 'DELETE' })).status).toBe(404)
}, 90_000)

test('the ninth viewer of one camera is refused with 503; the eight others decode', async () => {
  const cam = await streaming('H264')
  const page = await openPage(browser, service.url)
  try {
    const opened: Opened[] = []
    for (let i = 0; i < 8; i++) opened.push(await openSession(page, whepPath(cam.bus_info), `v${i}`))
    expect(opened.map((o) => o.status)).toEqual(Array(8).fill(201))
    const ninth = await openSession(page, whepPath(cam.bus_info), 'v8')
    expect(ninth.status).toBe(503)
    expect(ninth.detail).toContain('--max-viewers')
    for (let i = 0; i < 8; i++) await watch(page, `v${i}`, (v) => v.framesDecoded > 0, 30_000)
    for (const o of opened) expect((await fetch(service.url + o.location!, { method: 'DELETE' })).status).toBe(200)
    expect(await sessionCount()).toBe(0)
  } finally {
    await page.close()
  }
}, 120_000)

test("a restart of the camera's child keeps the session decoding; an unplugged camera's session waits for it and decodes again when it returns, and a new one can start then", async () => {
  const cam = await streaming('H264')
  const page = await openPage(browser, service.url)
  try {
    const r = await openSession(page, whepPath(cam.bus_info), 'r')
    expect(r.status).toBe(201)
    const first = await watch(page, 'r', (v) => v.framesDecoded > 0, 20_000)
    expect((await service.call('POST', '/api/devices/restart_stream', { bus_info: cam.bus_info })).status).toBe(200)
    // The new child numbers its packets afresh; the session carries on from its next key frame.
    await watch(page, 'r', (v) => v.framesDecoded > first.framesDecoded + 30, 20_000)
    expect(await sessionCount()).toBe(1)

    const endedBefore = (await health()).ended['stream ended'] ?? 0
    expect((await service.call('POST', '/api/mock/unplug', { bus_info: cam.bus_info })).status).toBe(200)
    await until('the camera gone', () => service.call('GET', '/api/devices'), (r) => !r.body.some((x: any) => x.bus_info === cam.bus_info), 15_000)
    // Its session waits for it (a player that cannot ask again plays on when it returns); a new one cannot start meanwhile.
    const gone = await openSession(page, whepPath(cam.bus_info), 'gone')
    expect([404, 409]).toContain(gone.status)
    expect(await sessionCount()).toBe(1)

    const waited = await videoStats(page, 'r')
    expect((await service.call('POST', '/api/mock/plug', { bus_info: cam.bus_info })).status).toBe(200)
    await until('the stream running again', () => service.call('GET', '/api/devices'), (r) => r.body.find((x: any) => x.bus_info === cam.bus_info)?.stream_status?.state === 'running', 30_000)
    await watch(page, 'r', (v) => v.framesDecoded > waited.framesDecoded + 10, 20_000)
    expect((await health()).ended['stream ended'] ?? 0).toBe(endedBefore)
    const again = await openSession(page, whepPath(cam.bus_info), 'again')
    expect(again.status).toBe(201)
    const v = await watch(page, 'again', (v) => v.framesDecoded > 0, 20_000)
    expect([v.width, v.height]).toEqual([cam.width, cam.height])
    expect((await fetch(service.url + again.location!, { method: 'DELETE' })).status).toBe(200)
    expect((await fetch(service.url + r.location!, { method: 'DELETE' })).status).toBe(200)
  } finally {
    await page.close()
  }
}, 120_000)

test('a stream that stops ends its sessions: the Location is gone, no viewer is counted, the browser sees it close; a new session works once it runs again', async () => {
  const cam = await streaming('H264')
  const page = await openPage(browser, service.url)
  try {
    const opened = await openSession(page, whepPath(cam.bus_info), 'g')
    expect(opened.status).toBe(201)
    await watch(page, 'g', (v) => v.framesDecoded > 0, 20_000)
    expect(await sessionCount()).toBe(1)
    const endedBefore = (await health()).ended['stream ended']

    // The camera stays plugged in; only its stream stops (its hub says 'closed': the session ends).
    expect((await service.call('POST', '/api/devices/unconfigure_stream', { bus_info: cam.bus_info })).status).toBe(200)
    await until('the session ended with its stream', sessionCount, (n) => n === 0, 30_000)
    expect((await health()).ended['stream ended']).toBe(endedBefore + 1)
    const del = await fetch(service.url + opened.location!, { method: 'DELETE' })
    expect(del.status).toBe(404)
    expect(((await del.json()) as { detail: string }).detail).toContain('session')
    await watch(page, 'g', (v) => v.state === 'closed' || v.state === 'failed' || v.state === 'disconnected', 40_000)
    const meanwhile = await openSession(page, whepPath(cam.bus_info), 'stopped')
    expect(meanwhile.status).toBe(409)
    expect(meanwhile.detail).toContain('restart_stream')

    const again = await streaming('H264')
    expect(again.bus_info).toBe(cam.bus_info)
    const reopened = await openSession(page, whepPath(cam.bus_info), 'g2')
    expect(reopened.status).toBe(201)
    const v = await watch(page, 'g2', (v) => v.framesDecoded > 0, 20_000)
    expect([v.width, v.height]).toEqual([cam.width, cam.height])
    expect(await sessionCount()).toBe(1)
    expect((await fetch(service.url + reopened.location!, { method: 'DELETE' })).status).toBe(200)
    expect(await sessionCount()).toBe(0)
  } finally {
    await page.close()
  }
}, 120_000)

test('an MJPG stream is refused with 409 pointing to MJPEG; the same camera streaming SOFTWARE_H264 is watched', async () => {
  const mjpg = await streaming('MJPG')
  const refused = await withPage(service.url, (page) => openSession(page, whepPath(mjpg.bus_info), 'm'))
  expect(refused.status).toBe(409)
  expect(refused.detail).toContain(`/api/streams/${encodeURIComponent(mjpg.bus_info)}/mjpeg`)
  const watchOf = async (bus_info: string) => ((await (await fetch(`${service.url}/api/devices`)).json()) as any[]).find((d) => d.bus_info === bus_info).watch
  expect((await watchOf(mjpg.bus_info)).whep).toBeNull() // the device says so too

  const soft = await streaming('SOFTWARE_H264')
  expect((await watchOf(soft.bus_info)).whep).toBe(`${service.url}${whepPath(soft.bus_info)}`)
  await withPage(service.url, async (page) => {
    const opened = await openSession(page, whepPath(soft.bus_info), 's')
    expect(opened.status).toBe(201)
    const v = await watch(page, 's', (v) => v.framesDecoded > 0 && v.width > 0, 20_000)
    expect(soft.bus_info).toBe(mjpg.bus_info)
    expect([v.width, v.height]).toEqual([soft.width, soft.height])
  })
  await until('the closed page reaped', sessionCount, (n) => n === 0, 30_000)
}, 120_000)

test('refusals on a real service: malformed offer 400, wrong content type 415, not running 409, unknown 404, PATCH 405', async () => {
  const running = (await streaming('H264')).bus_info
  const stopped = (await streaming('MJPG')).bus_info
  expect((await service.call('POST', '/api/devices/unconfigure_stream', { bus_info: stopped })).status).toBe(200)
  const post = (bus_info: string, sdp: string, type = 'application/sdp') => fetch(service.url + whepPath(bus_info), { method: 'POST', headers: { 'content-type': type }, body: sdp })
  const credentials = 'a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuv\r\na=fingerprint:sha-256 ' + Array(32).fill('AB').join(':') + '\r\n'
  const offerish = 'v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n' + credentials + 'm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 VP8/90000\r\n'
  const bad = await post(running, 'hello')
  expect(bad.status).toBe(400)
  expect(((await bad.json()) as { detail: string }).detail).toContain('v=0')
  const vp8Only = await post(running, offerish)
  expect(vp8Only.status).toBe(400)
  expect(((await vp8Only.json()) as { detail: string }).detail).toMatch(/\S/)
  // Hostile offers against a running stream: each a 400 with a sentence, never a 500, no session left.
  const hostile = [
    'v=0\r\nm=video',
    'v=0\r\nm=video \r\n',
    offerish.replace('VP8', 'H264') + 'a=fmtp:96 packetization-mode=0\r\n',
    offerish.replace('VP8', 'H264') + 'a=fingerprint:sha-256 zz\r\na=ice-ufrag:\r\n',
    'v=0\nm=video 9 RTP/AVP 96\n' + 'm=video 9 RTP/AVP 96\n'.repeat(200),
    offerish.replace(/a=fingerprint.*\r\n/, ''),
    offerish.replace(/a=ice-pwd.*\r\n/, ''),
  ]
  for (const sdp of hostile) {
    const r = await post(running, sdp)
    expect([r.status, typeof (await r.json() as { detail: unknown }).detail]).toEqual([400, 'string'])
  }
  const huge = await post(running, offerish + 'a=' + 'x'.repeat(100_000) + '\r\n')
  expect([huge.status, typeof (await huge.json() as { detail: unknown }).detail]).toEqual([413, 'string'])
  // The offer that froze the service for 8 minutes: 2,000 video sections, refused within 1 s, /api/health unhindered.
  const sections = 'v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n' + credentials + 'm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\n'.repeat(2000)
  const started = performance.now()
  const refusal = post(running, sections).then((r) => ({ status: r.status, ms: performance.now() - started }))
  const healthMs: number[] = []
  for (let i = 0; i < 5; i++) {
    const t = performance.now()
    expect((await service.call('GET', '/api/health')).status).toBe(200)
    healthMs.push(performance.now() - t)
  }
  expect((await refusal).status).toBe(413)
  expect((await refusal).ms).toBeLessThan(1000)
  expect(Math.max(...healthMs)).toBeLessThan(100)
  const wrongType = await post(running, offerish, 'application/json')
  expect(wrongType.status).toBe(415)
  expect(((await wrongType.json()) as { detail: string }).detail).toContain('application/sdp')
  const notRunning = await post(stopped, offerish)
  expect(notRunning.status).toBe(409)
  expect(((await notRunning.json()) as { detail: string }).detail).toContain('restart_stream')
  expect((await post('usb-nowhere', offerish)).status).toBe(404)
  const patch = await fetch(service.url + whepPath(running) + '/0000', { method: 'PATCH', headers: { 'content-type': 'application/trickle-ice-sdpfrag' }, body: 'a=end-of-candidates' })
  expect(patch.status).toBe(405)
  expect(patch.headers.get('allow')).toContain('DELETE')
  expect(await sessionCount()).toBe(0)
}, 60_000)

test('SIGTERM with a session open: the service closes it and exits cleanly, and the browser sees it end', async () => {
  const own = await startService()
  const previous = service
  service = own // streaming() and the helpers talk to `service`
  try {
    const cam = await streaming('H264')
    const page = await openPage(browser, own.url)
    try {
      expect((await openSession(page, whepPath(cam.bus_info), 'term')).status).toBe(201)
      await watch(page, 'term', (v) => v.framesDecoded > 0, 20_000)
      own.proc.kill('SIGTERM')
      expect(await own.proc.exited).toBe(0)
      await watch(page, 'term', (v) => v.state !== 'connected', 40_000)
    } finally {
      await page.close()
    }
  } finally {
    service = previous
    await stopProcess(own.proc) // and its children, before the next test
  }
}, 120_000)
