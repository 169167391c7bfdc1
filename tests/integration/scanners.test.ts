// Scanners finish against the real service: every simulated camera streaming, two of them with sound
// (the simulated sources: a camera's microphone and a hydrophone, so `audio_level` events come four times
// a second), BlueOS's helper (tests/contract/blueos/detect_service.py, written from BlueOS's
// core/services/helper/main.py `detect_service`) scans the port and must finish within 3 s, no request
// timing out; `curl -N` and an EventSource's request still get the live stream.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { FOLLOW_EVENTS, until } from '../helpers'
import { detectService } from '../contract/blueos/detect-service'
import { freePort, requireGStreamer } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

let service: Service
beforeAll(async () => {
  requireGStreamer()
  service = await startService()
  const devices = (await service.call('GET', '/api/devices')).body as any[]
  expect(devices.length).toBe(4)
  // The hydrophone goes to the stellarHD leader; the exploreHD carries its own microphone ('auto').
  const leader = devices.find((d) => d.device_type === 1)
  expect((await service.call('POST', '/api/audio/attach', { bus_info: leader.bus_info, source: 'sim:hydrophone' })).status).toBe(200)
  for (const d of devices) {
    // Small and slow, so four encoders fit a loaded 2-core machine.
    const encode = d.cameras.some((c: any) => c.formats.H264) ? 'H264' : 'MJPG'
    const res = await service.call('POST', '/api/devices/configure_stream', {
      bus_info: d.bus_info,
      stream_type: 'UDP',
      encode_type: encode,
      stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port: freePort() }],
    })
    expect({ bus_info: d.bus_info, status: res.status, body: res.body }).toMatchObject({ status: 200 })
  }
  await until(
    'every stream running and both sounds measured',
    async () => ({ devices: (await service.call('GET', '/api/devices')).body as any[], sound: (await service.call('GET', '/api/audio/streams')).body as any[] }),
    ({ devices, sound }) => devices.every((d) => d.stream_status?.state === 'running') && sound.filter((a) => a.state === 'running' && a.level).length === 2,
    60_000,
  )
}, 90_000)
afterAll(async () => {
  await service?.kill()
})

/** `audio_level` events seen by a client following the stream with `headers` for `ms`. */
async function levelsWithin(headers: Record<string, string>, ms: number): Promise<number> {
  const controller = new AbortController()
  const res = await fetch(`${service.url}/api/events`, { headers, signal: controller.signal })
  const reader = res.body!.getReader()
  let text = ''
  const deadline = Bun.sleep(ms).then(() => null)
  for (;;) {
    const next = await Promise.race([reader.read(), deadline])
    if (!next || next.done) break
    text += new TextDecoder().decode(next.value)
  }
  controller.abort()
  return text.split('event: audio_level').length - 1
}

test("BlueOS's helper lists the service within 3 s while every camera streams, two with sound", async () => {
  // The bus never pauses for a second: what made the helper hang before.
  expect(await levelsWithin(FOLLOW_EVENTS, 2000)).toBeGreaterThanOrEqual(6)
  const info = await detectService(Number(new URL(service.url).port), 20_000)
  expect(info.requests.filter((r) => r.timeout || r.error)).toEqual([])
  expect(info.seconds).toBeLessThan(3)
  expect(info).toMatchObject({ valid: true, title: 'Periscope', documentation_url: '/docs', metadata: { name: 'Periscope', api: '/docs' } })
  // It GETs the documented templates as written: the endless MJPEG among them answers at once.
  expect(info.requests.find((r) => r.path === '/api/streams/{bus_info}/mjpeg')).toMatchObject({ status: 404, timeout: false })
  expect(info.requests.find((r) => r.path === '/api/events')).toMatchObject({ status: 200, timeout: false })
}, 30_000)

test('curl -N still follows the event stream live', async () => {
  const curl = Bun.spawn(['curl', '-sN', '--max-time', '3', `${service.url}/api/events`], { stdout: 'pipe', stderr: 'pipe' })
  const [out, code] = await Promise.all([new Response(curl.stdout).text(), curl.exited])
  expect(code).toBe(28) // still streaming when curl's 3 s ran out
  expect(out).toContain(': connected')
  expect(out.split('event: audio_level').length - 1).toBeGreaterThanOrEqual(6)
}, 15_000)

test("an EventSource's request (Accept: text/event-stream) gets the live stream", async () => {
  expect(await levelsWithin({ ...FOLLOW_EVENTS, 'cache-control': 'no-cache' }, 2000)).toBeGreaterThanOrEqual(6)
}, 15_000)
