// WHEP with players that are not ours (issue 19): the medooze whip-whep client from npm (whip-whep,
// pinned in devDependencies) in Chromium, which offers audio first with bundlePolicy max-bundle and
// trickles its candidates (PATCH: 405 here, the answer has ours and Chromium's checks find us), and a
// non-browser player, GStreamer's webrtcbin (tests/integration/fixtures/whep-webrtcbin.py, libnice
// gathering on 127.0.0.1 only). Both decode the camera's pictures at its size; the npm player, which has
// no reconnect of its own, plays on through a stream restart and a new size (issue 33).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { until } from '../helpers'
import { launchBrowser, openPage, watch } from './browser'
import { freePort, requireGStreamer } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

let service: Service
let cam: { bus_info: string; width: number; height: number }
const whepUrl = () => `${service.url}/api/streams/${encodeURIComponent(cam.bus_info)}/whep`
const sessions = async () => (await service.call('GET', '/api/health')).body.plugins.whep.sessions as number

beforeAll(async () => {
  requireGStreamer()
  service = await startService({ args: ['--whep-idle-timeout', '3'] })
  const d = (await service.call('GET', '/api/devices')).body.find((x: any) => !x.leader && !x.followers?.length && (x.cameras ?? []).some((c: any) => c.formats?.H264))
  const size = d.cameras.flatMap((c: any) => c.formats?.H264 ?? []).sort((a: any, b: any) => a.width - b.width)[0]
  const r = await service.call('POST', '/api/devices/configure_stream', {
    bus_info: d.bus_info, stream_type: 'UDP', stream_format: { width: size.width, height: size.height, interval: size.intervals[0] },
    encode_type: 'H264', enabled: true, endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  expect(r.status).toBe(200)
  await until('the stream running', () => service.call('GET', '/api/devices'), (r) => r.body.find((x: any) => x.bus_info === d.bus_info)?.stream_status?.state === 'running', 30_000)
  cam = { bus_info: d.bus_info, width: size.width, height: size.height }
}, 60_000)
afterAll(async () => {
  await service?.kill()
})

test("the medooze whip-whep client (npm whip-whep) in Chromium, offering audio first with max-bundle, decodes the camera's pictures, and again within 5 s of a stream restart and of a new size, its one session kept", async () => {
  const browser = await launchBrowser()
  try {
    const page = await openPage(browser, service.url)
    const source = readFileSync(join(import.meta.dir, '../../node_modules/whip-whep/whep.js'), 'utf8')
    await page.addScriptTag({ type: 'module', content: `${source}\nwindow.WHEPClient = WHEPClient\n` })
    await page.waitForFunction(() => typeof (globalThis as any).WHEPClient === 'function')
    const viewed = await page.evaluate(async (url: string) => {
      const w = globalThis as any
      // As the client's README sets it up.
      const pc = new w.RTCPeerConnection({ bundlePolicy: 'max-bundle' })
      w.pcs = { medooze: pc }
      w.postedAt = { medooze: performance.now() }
      pc.addTransceiver('audio', { direction: 'recvonly' })
      pc.addTransceiver('video', { direction: 'recvonly' })
      pc.ontrack = (e: any) => {
        if (e.track.kind !== 'video') return
        const video = w.document.createElement('video')
        video.muted = true
        video.autoplay = true
        video.srcObject = new w.MediaStream([e.track])
        w.document.body.appendChild(video)
      }
      const client = new w.WHEPClient()
      w.client = client
      try {
        await client.view(pc, url)
        return { ok: true, offer: pc.localDescription.sdp as string, resource: String(client.resourceURL) }
      } catch (err) {
        return { ok: false, error: String(err), offer: pc.localDescription?.sdp as string }
      }
    }, whepUrl())
    expect(viewed).toMatchObject({ ok: true })
    // The offer is the one that could not play before: audio first, one bundle.
    expect(viewed.offer.indexOf('m=audio')).toBeLessThan(viewed.offer.indexOf('m=video'))
    expect(viewed.offer).toContain('a=group:BUNDLE 0 1')
    const v = await watch(page, 'medooze', (v) => v.framesDecoded > 10, 30_000)
    expect([v.width, v.height]).toEqual([cam.width, cam.height])

    // The player has no reconnect of its own: across a stream restart and a new size its one session
    // follows the stream (the service keeps it), and it decodes again within 5 s of the stream running.
    const d = (await service.call('GET', '/api/devices')).body.find((x: any) => x.bus_info === cam.bus_info)
    const bigger = d.cameras.flatMap((c: any) => c.formats?.H264 ?? []).sort((a: any, b: any) => a.width - b.width).find((s: any) => s.width > cam.width)
    const running = () => until('the stream running again', () => service.call('GET', '/api/devices'), (r) => r.body.find((x: any) => x.bus_info === cam.bus_info)?.stream_status?.state === 'running', 30_000)
    for (const [what, change, size] of [
      ['a stream restart', () => service.call('POST', '/api/devices/restart_stream', { bus_info: cam.bus_info }), [cam.width, cam.height]],
      ['a new size', () => service.call('POST', '/api/devices/configure_stream', { bus_info: cam.bus_info, stream_type: 'UDP', encode_type: 'H264', enabled: true, endpoints: d.stream.endpoints, stream_format: { width: bigger.width, height: bigger.height, interval: bigger.intervals[0] } }), [bigger.width, bigger.height]],
    ] as const) {
      const before = (await watch(page, 'medooze', () => true, 1000)).framesDecoded
      expect((await change()).status, what).toBe(200)
      await running()
      const back = Date.now()
      const again = await watch(page, 'medooze', (x) => x.framesDecoded >= before + 10 && x.width === size[0], 5_000)
      console.log(`whip-whep: decoding again ${Date.now() - back} ms after the stream ran again (${what}), at ${again.width}×${again.height}`)
      expect([again.width, again.height]).toEqual([...size])
      expect(await sessions()).toBe(1) // the same session: no new offer
    }
    // The stream back at its first size, as the next test finds it.
    expect((await service.call('POST', '/api/devices/configure_stream', { bus_info: cam.bus_info, stream_type: 'UDP', encode_type: 'H264', enabled: true, endpoints: d.stream.endpoints, stream_format: { width: cam.width, height: cam.height, interval: d.stream.interval } })).status).toBe(200)
    await running()
    // Its stop() DELETEs the resource.
    await page.evaluate(() => (globalThis as any).client.stop())
    await until('the session ended', sessions, (n) => n === 0, 15_000)
  } finally {
    await browser.close()
  }
}, 90_000)

test("GStreamer's webrtcbin, a non-browser player, decodes 30 of the camera's pictures at its size", async () => {
  const proc = Bun.spawn(['/usr/bin/python3', join(import.meta.dir, 'fixtures/whep-webrtcbin.py'), whepUrl(), '30', '30'], { stdout: 'pipe', stderr: 'pipe' })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  let result: { status: number; frames: number; width: number; height: number; detail?: string }
  try {
    result = JSON.parse(out.trim().split('\n').at(-1)!)
  } catch {
    throw new Error(`webrtcbin printed no result: ${out} ${err.slice(-2000)}`)
  }
  // The script stops once it has 30 pictures; a few more may be counted before its pipeline stops.
  expect(result).toMatchObject({ status: 201, width: cam.width, height: cam.height })
  expect(result.frames).toBeGreaterThanOrEqual(30)
  await until('its session ended (it DELETEs it)', sessions, (n) => n === 0, 15_000)
}, 90_000)
