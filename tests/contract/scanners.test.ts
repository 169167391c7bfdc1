// Scanners finish: GET /api/events streams only to a client that asks for it (Accept: text/event-stream,
// as EventSource sends, or curl), so BlueOS's helper, which GETs every documented path and reads each
// answer to its end with a 1 s timeout per read, finishes even when events never pause for a second
// (sound's `audio_level` events come twice a second per stream). Here the bus carries an event every
// 50 ms; the integration tier runs the same helper against real streams with sound (tests/integration/scanners.test.ts).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { FOLLOW_EVENTS, type TestServer } from '../helpers'
import { detectService } from './blueos/detect-service'
import { startContractServer } from './setup'

let s: TestServer
let ticker: ReturnType<typeof setInterval>
beforeAll(async () => {
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'blueos', 'console'] })
  ticker = setInterval(() => s.ctx.events.emit('audio_level', { bus_info: 'usb-0000:00:14.0-1', peak_db: -6, rms_db: -9 }), 50)
})
afterAll(async () => {
  clearInterval(ticker)
  await s?.stop()
})

/** GET /api/events with `headers`; what came within `ms`, and whether the answer had ended by then. */
async function within(headers: Record<string, string>, ms: number): Promise<{ status: number; type: string | null; ended: boolean; text: string }> {
  const controller = new AbortController()
  const res = await fetch(`${s.url}/api/events`, { headers, signal: controller.signal })
  const reader = res.body!.getReader()
  const decoder = new TextDecoder()
  let text = ''
  let ended = false
  const deadline = Bun.sleep(ms).then(() => 'late' as const)
  for (;;) {
    const next = await Promise.race([reader.read(), deadline])
    if (next === 'late') break
    if (next.done) {
      ended = true
      break
    }
    text += decoder.decode(next.value, { stream: true })
  }
  controller.abort()
  return { status: res.status, type: res.headers.get('content-type'), ended, text }
}

describe('GET /api/events and who follows it', () => {
  test("BlueOS's helper scans every documented path within 3 s while events never pause, and lists the service", async () => {
    const started = performance.now()
    const info = await detectService(Number(new URL(s.url).port), 10_000)
    const seconds = (performance.now() - started) / 1000
    const slow = info.requests.filter((r) => r.timeout || r.seconds > 0.5)
    expect(slow).toEqual([])
    expect(seconds).toBeLessThan(3)
    expect(info).toMatchObject({ valid: true, documentation_url: '/docs', metadata: { name: 'Periscope' } })
    expect(info.requests.find((r) => r.path === '/api/events')).toMatchObject({ status: 200, timeout: false, error: null })
  }, 15_000)

  const plain: [string, Record<string, string>][] = [
    ["BlueOS's helper (User-Agent: python, Accept: */*)", { 'user-agent': 'python', 'accept-encoding': 'gzip, deflate', accept: '*/*' }],
    ['a plain fetch (Bun\'s own headers)', {}],
    ['a browser navigating to it', { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64)', accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }],
    ['Accept: text/event-stream;q=0', { accept: 'text/event-stream;q=0, application/json' }],
    ["BlueOS's User-Agent even with Accept: text/event-stream", { 'user-agent': 'python', accept: 'text/event-stream' }],
  ]
  for (const [who, headers] of plain) {
    test(`${who}: a short finished answer within 2 s saying how to follow the stream`, async () => {
      const got = await within(headers, 2000)
      expect({ status: got.status, type: got.type, ended: got.ended }).toEqual({ status: 200, type: 'text/event-stream', ended: true })
      expect(got.text).toStartWith(': ')
      expect(got.text).toContain('Accept: text/event-stream')
      expect(got.text).not.toContain('event: ')
    })
  }

  const followers: [string, Record<string, string>][] = [
    ['an EventSource (Accept: text/event-stream)', { ...FOLLOW_EVENTS, 'cache-control': 'no-cache', 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64)' }],
    ['curl -N (User-Agent: curl/…, Accept: */*)', { 'user-agent': 'curl/7.88.1', accept: '*/*' }],
    ['an SSE library naming it among others', { accept: 'application/json, text/event-stream' }],
  ]
  for (const [who, headers] of followers) {
    test(`${who}: the stream, still open after 1.5 s, with its events`, async () => {
      const got = await within(headers, 1500)
      expect({ status: got.status, type: got.type, ended: got.ended }).toEqual({ status: 200, type: 'text/event-stream', ended: false })
      expect(got.text).toContain(': connected')
      expect(got.text.split('event: audio_level').length - 1).toBeGreaterThan(5)
    })
  }

  test('the OpenAPI description says who gets the stream', async () => {
    const doc = (await s.call('GET', '/openapi.json')).body
    expect(doc.paths['/api/events'].get.description).toContain('Accept: text/event-stream')
  })
})
