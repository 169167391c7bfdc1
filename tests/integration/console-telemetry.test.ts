// The console and the vehicle's telemetry, in real Chromium against the real service with an ArduSub
// autopilot on its MAVLink link (tests/mavlink-autopilot.ts): the camera card's "Record while armed"
// switch (checked through the API), arming and disarming telling the pilot, and the Recordings page
// showing a recording's telemetry: its sidecar links (fetched independently) and its last values.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { until } from '../helpers'
import { TestAutopilot } from '../mavlink-autopilot'
import { GroundStation } from '../mavlink-gcs'
import { openConsole, waitInPage, type ConsoleSession } from './console.helpers'
import { press, watchNotices } from './console-page.helpers'
import { freePort, requireGStreamer } from './gstreamer.helpers'
import { h264Device } from './service.helpers'

let c: ConsoleSession
let link: GroundStation
let autopilot: TestAutopilot

beforeAll(async () => {
  requireGStreamer()
  const port = freePort()
  c = await openConsole({ args: ['--mavlink', `udpin:127.0.0.1:${port}`] })
  link = await GroundStation.udp()
  link.sendTo = { address: '127.0.0.1', port }
  autopilot = new TestAutopilot(link, {
    armed: false, mode: 'MANUAL', depth: 7.5, heading: 90, roll: 0, pitch: 0, lat: 0, lon: 0, battery: 16.1, batteryPct: 80, pressure: 1750, waterTemp: 14,
  })
  autopilot.start(500)
}, 90_000)

afterAll(async () => {
  autopilot?.stop()
  link?.close()
  await c?.close()
})

test('record while armed from the camera card; the recording shows its telemetry on the Recordings page', async () => {
  const { bus_info } = await h264Device(c.service)
  const configured = await c.service.call('POST', '/api/devices/configure_stream', {
    bus_info,
    stream_type: 'UDP',
    stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  expect(configured.status).toBe(200)
  const device = async () => (await c.service.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === bus_info)
  await until('the stream running', device, (d) => d?.stream_status?.state === 'running', 30_000)
  await until('the autopilot heard', () => c.service.call('GET', '/api/health'), (r) => r.body.plugins.mavlink.vehicle?.mode === 'MANUAL', 20_000)

  await c.open('cameras')
  const box = `article[data-device="${bus_info}"] input[data-record-while-armed]`
  await c.page.waitForSelector(box, { timeout: 15_000 })
  expect(await c.page.$eval(box, (e: any) => e.checked)).toBe(false)
  await press(c.page, box)
  await until('the setting saved', device, (d) => d.record_while_armed === true, 10_000)
  const seen = await watchNotices(c.page)

  autopilot.set({ armed: true })
  const recording = await until('recording since the vehicle armed', device, (d) => d.recording.active && d.recording.bytes > 0, 30_000)
  await waitInPage(c.page, 'the REC line with its telemetry tag', () => (globalThis as any).document.querySelector('[data-recording-state="active"] [data-recording-telemetry]'), 15_000)
  autopilot.set({ armed: false })
  await until('stopped as the vehicle disarmed', device, (d) => !d.recording.active, 30_000)
  const notices = await until('both notices', seen, (list) => list.length >= 2, 10_000)
  expect(notices.map((n) => n.text).join('\n')).toMatch(/armed: recording started[\s\S]*disarmed: recording stopped/)

  await c.screenshot('camera-record-while-armed')
  // After a reload the switch shows what was saved.
  await c.open('cameras')
  await c.page.waitForSelector(box, { timeout: 15_000 })
  expect(await c.page.$eval(box, (e: any) => e.checked)).toBe(true)

  const file: string = recording.recording.file
  await c.open('recordings')
  const row = `tr[data-recording="${file}"] [data-telemetry]`
  await c.page.waitForSelector(row, { timeout: 15_000 })
  for (const kind of ['ass', 'csv']) {
    const href = await c.page.$eval(`${row} a[data-sidecar="${kind}"]`, (a: any) => a.href)
    const res = await fetch(href)
    expect(res.status).toBe(200)
    expect(await res.text()).toContain(kind === 'csv' ? 'depth_m' : '[Events]')
  }
  await press(c.page, `${row} button[data-action="telemetry-values"]`)
  await waitInPage(c.page, 'the last values', () => (globalThis as any).document.querySelector('[data-telemetry-values]')?.textContent.includes('depth_m 7.5'), 10_000)
  const values = await c.page.$eval('[data-telemetry-values]', (e: any) => e.textContent)
  expect(values).toContain('mode MANUAL')
  expect(values).toContain('battery_v 16.1')
  await c.screenshot('recordings-telemetry')

  // The Status page says what the autopilot reports now.
  await c.open('status')
  await waitInPage(c.page, 'the vehicle line', () => (globalThis as any).document.querySelector('[data-vehicle]')?.textContent.includes('MANUAL'), 10_000)
  expect(await c.page.$eval('[data-vehicle]', (e: any) => e.textContent)).toBe('disarmed · MANUAL · depth 7.50 m · heading 90° · battery 16.10 V')
  expect(c.errors()).toEqual([])
}, 180_000)
