// The console's Cameras page in real Chromium against the real service (simulated cameras, real
// GStreamer): each flow done in the page, then checked independently through the API (GET), and in
// the page again after a reload. Each test leaves the devices as it found them.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { CID } from '../../drivers/mock/cameras'
import { until } from '../helpers'
import { openConsole, waitInPage, type ConsoleSession } from './console.helpers'
import { press as pressIn, typeInto as typeIntoPage, watchNotices as watchPageNotices } from './console-page.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264 and MJPG nodes, auto modes, a read-only control
const LEADER = 'usb-0000:00:14.0-2' // stellarHD leader
const FOLLOWER = 'usb-0000:00:14.0-3' // stellarHD follower
const WEBCAM = 'usb-0000:00:14.0-4' // Logitech, MJPG

let c: ConsoleSession
beforeAll(async () => {
  c = await openConsole()
  await c.open('cameras')
  await c.page.waitForSelector(card(WEBCAM))
}, 60_000)
afterAll(() => c?.close())

const card = (bus: string) => `[data-device="${bus}"]`
const control = (bus: string, id: number) => `${card(bus)} [data-control="${id}"]`
const device = async (bus: string) => ((await c.service.call('GET', '/api/devices')).body as any[]).find((d) => d.bus_info === bus)
const valueOf = async (bus: string, id: number) => (await device(bus)).controls.find((x: any) => x.control_id === id).value

async function openSection(bus: string, section: 'controls' | 'stream' | 'group'): Promise<void> {
  const selector = `${card(bus)} details[data-section="${section}"]`
  await c.page.waitForSelector(selector) // after a reload, the cards come with the device list
  await c.page.$eval(selector, (d: any) => void (d.open = true))
}

// The shared keyboard helpers (console-page.helpers.ts), bound to this file's page; a typed value is
// committed with Enter unless the test says otherwise (null: the edit stays uncommitted).
const typeInto = (selector: string, text: string, key: 'Enter' | 'Tab' | null = 'Enter') => typeIntoPage(c.page, selector, text, key ?? undefined)
const press = (selector: string) => pressIn(c.page, selector)
const watchNotices = () => watchPageNotices(c.page)

test('a control changed in the page: the API holds it, the page shows the value the camera took, and after a reload; reset to defaults', async () => {
  await openSection(EHD, 'controls')
  await typeInto(`${control(EHD, CID.BRIGHTNESS)} input[type=number]`, '17')
  await c.page.waitForSelector(`${control(EHD, CID.BRIGHTNESS)}[data-value="17"]`)
  expect(await valueOf(EHD, CID.BRIGHTNESS)).toBe(17)

  // Auto white balance off in the page: the temperature becomes settable; the firmware rounds to 10 K,
  // and the page shows what it took, not what was typed.
  await press(`${control(EHD, CID.AUTO_WHITE_BALANCE)} input[type=checkbox]`)
  await c.page.waitForSelector(`${control(EHD, CID.WHITE_BALANCE_TEMPERATURE)} input[type=number]:not([disabled])`)
  await typeInto(`${control(EHD, CID.WHITE_BALANCE_TEMPERATURE)} input[type=number]`, '4567')
  await c.page.waitForSelector(`${control(EHD, CID.WHITE_BALANCE_TEMPERATURE)}[data-value="4570"]`)
  expect(await c.page.$eval(`${control(EHD, CID.WHITE_BALANCE_TEMPERATURE)} input[type=number]`, (i: any) => i.value)).toBe('4570')
  expect(await valueOf(EHD, CID.WHITE_BALANCE_TEMPERATURE)).toBe(4570)

  await c.open('cameras')
  await openSection(EHD, 'controls')
  await c.page.waitForSelector(`${control(EHD, CID.BRIGHTNESS)}[data-value="17"]`)
  await c.page.waitForSelector(`${control(EHD, CID.WHITE_BALANCE_TEMPERATURE)}[data-value="4570"]`)

  await press(`${card(EHD)} [data-controls] > .actions button`)
  await until('every control back to its default', () => device(EHD), (d) => d.controls.every((x: any) => x.flags.read_only || x.flags.inactive || x.value === x.flags.default_value), 10_000)
  expect(await valueOf(EHD, CID.BRIGHTNESS)).toBe(0)
  expect(await valueOf(EHD, CID.AUTO_WHITE_BALANCE)).toBe(1)
  await c.page.waitForSelector(`${control(EHD, CID.BRIGHTNESS)}[data-value="0"]`)
  expect(c.errors()).toEqual([])
}, 60_000)

test('an inactive control cannot be changed and says why, naming the auto control that governs it', async () => {
  await openSection(EHD, 'controls')
  const exposure = control(EHD, CID.EXPOSURE_ABSOLUTE)
  expect(await c.page.$$eval(`${exposure} input`, (inputs: any[]) => inputs.map((i) => i.disabled))).toEqual([true, true])
  expect(await c.page.$eval(`${exposure} [data-reason]`, (e: any) => e.textContent)).toBe('Exposure Time, Absolute is set automatically: set Auto Exposure to Manual Mode')
  expect(await c.page.$eval(`${control(EHD, CID.PRIVACY)} [data-reason]`, (e: any) => e.textContent)).toContain('read-only')
  const before = (await device(EHD)).controls
  // Clicking and typing reach nothing: a disabled input takes no focus and no text.
  await c.page.evaluate(() => (globalThis as any).document.activeElement?.blur())
  await c.page.click(`${exposure} input[type=number]`)
  await c.page.keyboard.type('999')
  await c.page.keyboard.press('Enter')
  const value = before.find((x: any) => x.control_id === CID.EXPOSURE_ABSOLUTE).value
  expect(await c.page.$eval(`${exposure} input[type=number]`, (i: any) => i.value)).toBe(String(value))
  expect((await device(EHD)).controls).toEqual(before)
}, 30_000)

test('a refused request never shows as success: a control the camera fails (EIO) and a stream form the service rejects (422)', async () => {
  const seen = await watchNotices()
  await openSection(EHD, 'controls')
  expect((await c.service.call('POST', '/api/mock/fail', { bus_info: EHD, errno: 'EIO', count: 1, control_id: CID.CONTRAST })).status).toBe(200)
  const before = await valueOf(EHD, CID.CONTRAST)
  await typeInto(`${control(EHD, CID.CONTRAST)} input[type=number]`, '40')
  await c.page.waitForSelector(`${control(EHD, CID.CONTRAST)} [data-error]`)
  const shown = await c.page.$eval(`${control(EHD, CID.CONTRAST)} [data-error]`, (e: any) => e.textContent)
  expect(shown).toContain('EIO')
  // The page keeps the camera's value, not the one typed.
  expect(await c.page.$eval(`${control(EHD, CID.CONTRAST)} input[type=number]`, (i: any) => i.value)).toBe(String(before))
  expect(await valueOf(EHD, CID.CONTRAST)).toBe(before)

  // A port out of range: the service's 422 shows beside the port field, and nothing is saved.
  await openSection(WEBCAM, 'stream')
  const form = `${card(WEBCAM)} [data-stream-form]`
  const streamBefore = (await device(WEBCAM)).stream
  await typeInto(`${form} input[name=port-0]`, '70000', 'Tab')
  await press(`${form} [data-action=save-stream]`)
  await c.page.waitForSelector(`${form} [data-endpoint="0"] [data-field-error]`)
  expect(await c.page.$eval(`${form} [data-endpoint="0"] [data-field-error]`, (e: any) => e.textContent)).toBe('Input should be less than or equal to 65535')
  expect((await device(WEBCAM)).stream).toEqual(streamBefore)
  await press(`${form} .actions button:nth-child(2)`) // Revert

  const notices = await seen()
  expect(notices.filter((n) => n.kind === 'ok')).toEqual([])
  expect(notices.filter((n) => n.kind === 'error').map((n) => n.text).join('\n')).toContain('EIO')
}, 30_000)

test('configure and enable a stream in the page: the API runs it as set, the MJPEG preview shows frames, a reload shows it', async () => {
  try {
    await openSection(WEBCAM, 'stream')
    const form = `${card(WEBCAM)} [data-stream-form]`
    // Only what the camera offers: the webcam has MJPG (and so SOFTWARE_H264), no H.264 of its own.
    expect(await c.page.$$eval(`${form} select[name=encode_type] option`, (o: any[]) => o.map((x) => x.value))).toEqual(['MJPG', 'SOFTWARE_H264', 'NONE'])
    await c.page.select(`${form} select[name=encode_type]`, 'MJPG')
    await c.page.select(`${form} select[name=size]`, '640x480')
    const rates = await c.page.$$eval(`${form} select[name=interval] option`, (o: any[]) => o.map((x) => x.value))
    const offered = (await device(WEBCAM)).cameras.flatMap((cam: any) => cam.formats.MJPG ?? []).find((s: any) => s.width === 640 && s.height === 480).intervals.map((i: any) => `${i.numerator}/${i.denominator}`)
    expect(rates).toEqual(offered)
    await c.page.select(`${form} select[name=interval]`, '1/15')
    if (!(await c.page.$eval(`${form} input[name=enabled]`, (i: any) => i.checked))) await press(`${form} input[name=enabled]`)
    await press(`${form} [data-action=save-stream]`)
    const running = await until('the webcam streaming 640×480 MJPG at 15 fps', () => device(WEBCAM), (d) => d.stream.width === 640 && d.stream.enabled && d.stream_status.state === 'running', 20_000)
    expect(running.stream).toMatchObject({ encode_type: 'MJPG', width: 640, height: 480, interval: { numerator: 1, denominator: 15 }, enabled: true })
    await waitInPage(c.page, 'the MJPEG preview to show a picture', () => ((globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-4"] [data-preview="mjpeg"] img')?.naturalWidth ?? 0) > 0, 20_000)
    expect(await c.page.$eval(`${card(WEBCAM)} [data-preview="mjpeg"] img`, (i: any) => [i.naturalWidth, i.naturalHeight])).toEqual([640, 480])

    await c.open('cameras')
    await c.page.waitForSelector(`${card(WEBCAM)} [data-stream-state="running"]`, { timeout: 15_000 })
    expect(await c.page.$eval(`${card(WEBCAM)} .stream-status`, (e: any) => e.textContent)).toContain('MJPG 640×480 15 fps UDP')
  } finally {
    const d = await device(WEBCAM)
    await c.service.call('POST', '/api/devices/configure_stream', { bus_info: WEBCAM, stream_type: d.stream.stream_type, encode_type: d.stream.encode_type, stream_format: { width: d.stream.width, height: d.stream.height, interval: d.stream.interval }, enabled: false, endpoints: d.stream.endpoints })
  }
}, 60_000)

test('an H.264 stream enabled from its card plays over WebRTC (frames decoded, by getStats); its WHEP link copies; a recording starts and stops from the card', async () => {
  try {
    await press(`${card(EHD)} [data-action=enable]`)
    await until('the exploreHD streaming', () => device(EHD), (d) => d.stream.enabled && d.stream_status.state === 'running', 20_000)
    await c.page.waitForSelector(`${card(EHD)} [data-preview="whep"]`, { timeout: 10_000 })
    await waitInPage(c.page, 'WebRTC frames decoded in the preview', () => Number((globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-1"] [data-preview="whep"]')?.getAttribute('data-frames-decoded')) > 0, 20_000)
    // The link shown to copy is the service's own.
    const links = await c.page.$$eval(`${card(EHD)} [data-watch-links] code`, (e: any[]) => e.map((x) => x.textContent))
    const watch = (await device(EHD)).watch
    expect(links).toContain(watch.whep)
    if (watch.rtsp) expect(links).toContain(watch.rtsp)
    // Copy puts the service's link on the clipboard (loopback is a secure context: the Clipboard API).
    await c.browser.defaultBrowserContext().overridePermissions(c.origin, ['clipboard-read', 'clipboard-write', 'clipboard-sanitized-write'])
    await press(`${card(EHD)} [data-watch-links] .copy-url:last-child button`)
    expect(await c.page.evaluate(() => (globalThis as any).navigator.clipboard.readText())).toBe(watch.whep)

    // Record while it streams, from the card; the API and the card agree; stop it.
    await press(`${card(EHD)} [data-action=start-recording]`)
    const recording = await until('a recording under way', () => device(EHD), (d) => d.recording.active, 15_000)
    await c.page.waitForSelector(`${card(EHD)} [data-recording-state="active"]`)
    expect(await c.page.$eval(`${card(EHD)} [data-recording-state]`, (e: any) => e.textContent)).toContain(recording.recording.file)
    await press(`${card(EHD)} [data-action=stop-recording]`)
    await until('the recording ended', () => device(EHD), (d) => !d.recording.active, 15_000)
    await c.page.waitForSelector(`${card(EHD)} [data-recording-state="ended"]`)
  } finally {
    await c.service.call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD }).catch(() => {})
    const d = await device(EHD)
    await c.service.call('POST', '/api/devices/configure_stream', { bus_info: EHD, stream_type: 'UDP', encode_type: d.stream.encode_type, stream_format: { width: d.stream.width, height: d.stream.height, interval: d.stream.interval }, enabled: false, endpoints: [{ host: '127.0.0.1', port: 5600 }] })
  }
}, 60_000)

test('an endpoint added in the form gets the next free port and the caller\'s host; applied, the API has it; removed again', async () => {
  const before = (await device(LEADER)).stream
  try {
    await openSection(LEADER, 'stream')
    const form = `${card(LEADER)} [data-stream-form]`
    await press(`${form} [data-action=add-endpoint]`)
    await c.page.waitForSelector(`${form} [data-action=save-stream]:not([disabled])`) // the save is over in the page too
    await c.page.waitForSelector(`${form} [data-endpoint="1"]`)
    const all = (await c.service.call('GET', '/api/devices')).body as any[]
    const used = new Set(all.flatMap((d) => d.stream.endpoints.flatMap((e: any) => Array.from({ length: d.followers.length + 1 }, (_, n) => e.port + n))))
    const prefs = (await c.service.call('GET', '/api/preferences')).body
    let port = prefs.default_stream.port
    while (used.has(port)) port++
    const host = (await c.service.call('GET', '/api/preferences/get_recommended_host')).body.host
    expect(await c.page.$eval(`${form} input[name=host-1]`, (i: any) => i.value)).toBe(host)
    expect(await c.page.$eval(`${form} input[name=port-1]`, (i: any) => i.value)).toBe(String(port))
    await press(`${form} [data-action=save-stream]`)
    await until('the second endpoint saved', () => device(LEADER), (d) => d.stream.endpoints.length === 2)
    expect((await device(LEADER)).stream.endpoints).toEqual([...before.endpoints, { host, port }])
    await c.page.waitForSelector(`${form} [data-action=save-stream]:not([disabled])`) // the save is over in the page too
    await c.page.waitForSelector(`${form} [data-endpoint="1"]`)

    await press(`${form} [data-endpoint="1"] button`)
    await press(`${form} [data-action=save-stream]`)
    await until('back to one endpoint', () => device(LEADER), (d) => d.stream.endpoints.length === 1)
    expect((await device(LEADER)).stream).toEqual(before)
  } finally {
    const now = (await device(LEADER)).stream
    if (now.endpoints.length !== before.endpoints.length)
      await c.service.call('POST', '/api/devices/configure_stream', { bus_info: LEADER, stream_type: before.stream_type, encode_type: before.encode_type, stream_format: { width: before.width, height: before.height, interval: before.interval }, enabled: before.enabled, endpoints: before.endpoints })
  }
}, 30_000)

test('followers: one added and removed in the page (the API agrees); a refused one shows the service\'s reason', async () => {
  try {
    await openSection(LEADER, 'group')
    const group = `${card(LEADER)} [data-group]`
    await c.page.select(`${group} select[data-follower-pick]`, FOLLOWER)
    await press(`${group} [data-action=add-follower]`)
    await until('the follower in the leader\'s group', () => device(LEADER), (d) => d.followers.includes(FOLLOWER))
    await c.page.waitForSelector(`${group} [data-follower="${FOLLOWER}"]`)
    expect((await device(FOLLOWER)).leader).toBe(LEADER)

    await press(`${group} [data-follower="${FOLLOWER}"] button`)
    await c.page.waitForSelector('dialog.dialog[open] button.primary')
    await press('dialog.dialog[open] button.primary')
    await until('the follower out of the group', () => device(LEADER), (d) => d.followers.length === 0)
    await c.page.waitForSelector(`${group} [data-follower="${FOLLOWER}"]`, { hidden: true })
    // The removal's own success notice is shown before the watch below starts, so it is not taken for the refusal's.
    await c.page.waitForFunction(() => [...(globalThis as any).document.querySelectorAll('[data-notice="ok"]')].some((n: any) => n.textContent.includes('no longer follows')))

    // An externally managed camera may not follow: the service says so, and the page shows its words.
    expect((await c.service.call('POST', '/api/devices/external/notify_camera', { bus_info: FOLLOWER, event: 'DEVICE_MANAGED' })).status).toBe(200)
    const seen = await watchNotices()
    await c.page.waitForFunction((bus: string) => [...(globalThis as any).document.querySelectorAll('[data-device="usb-0000:00:14.0-2"] select[data-follower-pick] option')].some((o: any) => o.value === bus && o.textContent.includes('externally managed')), {}, FOLLOWER)
    await c.page.select(`${group} select[data-follower-pick]`, FOLLOWER)
    const refusal = await c.service.call('POST', '/api/devices/add_follower', { leader_bus_info: LEADER, follower_bus_info: FOLLOWER })
    expect(refusal.status).toBe(409)
    await press(`${group} [data-action=add-follower]`)
    await c.page.waitForSelector(`${group} > [data-error]`)
    expect(await c.page.$eval(`${group} > [data-error]`, (e: any) => e.textContent)).toBe(refusal.body.detail)
    expect((await device(LEADER)).followers).toEqual([])
    expect((await seen()).filter((n) => n.kind === 'ok')).toEqual([])
  } finally {
    await c.service.call('POST', '/api/devices/external/notify_camera', { bus_info: FOLLOWER, event: 'DEVICE_UNMANAGED' })
    if ((await device(LEADER)).followers.length) await c.service.call('POST', '/api/devices/remove_follower', { leader_bus_info: LEADER, follower_bus_info: FOLLOWER })
  }
}, 60_000)

test('hot-plug: an unplugged camera\'s card leaves within 1 s, and comes back within 1 s of the plug, by events alone', async () => {
  let devicesGets = 0
  const count = (r: any) => r.url().endsWith('/api/devices') && r.method() === 'GET' && devicesGets++
  c.page.on('request', count)
  try {
    expect((await c.service.call('POST', '/api/mock/unplug', { bus_info: WEBCAM })).status).toBe(200)
    let at = Date.now()
    await c.page.waitForSelector(card(WEBCAM), { hidden: true, timeout: 1000 })
    const left = Date.now() - at
    expect((await c.service.call('POST', '/api/mock/plug', { bus_info: WEBCAM })).status).toBe(200)
    at = Date.now()
    await c.page.waitForSelector(card(WEBCAM), { timeout: 1000 })
    const back = Date.now() - at
    expect(left).toBeLessThanOrEqual(1000)
    expect(back).toBeLessThanOrEqual(1000)
  } finally {
    c.page.off('request', count)
    if (!(await device(WEBCAM))) await c.service.call('POST', '/api/mock/plug', { bus_info: WEBCAM })
  }
  // At most the one reload the added device's watch links take: no polling.
  expect(devicesGets).toBeLessThanOrEqual(2)
}, 30_000)

test('the nickname is saved when the edit is committed (Enter), not at each keystroke', async () => {
  let posts = 0
  const count = (r: any) => r.url().endsWith('/api/devices/set_nickname') && posts++
  c.page.on('request', count)
  try {
    const input = `${card(EHD)} input[data-nickname]`
    await typeInto(input, 'Port camera', null)
    expect((await device(EHD)).nickname).toBe('')
    expect(posts).toBe(0)
    await c.page.keyboard.press('Enter')
    await until('the nickname saved', () => device(EHD), (d) => d.nickname === 'Port camera')
    expect(posts).toBe(1)
    await c.open('cameras')
    await c.page.waitForSelector(`${card(EHD)} input[data-nickname]`)
    expect(await c.page.$eval(`${card(EHD)} input[data-nickname]`, (i: any) => i.value)).toBe('Port camera')
  } finally {
    c.page.off('request', count)
    await c.service.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: '' })
  }
}, 30_000)

test('two cameras of one model have different titles: nickname, else model and port; a nickname wins', async () => {
  await c.open('cameras')
  await c.page.waitForSelector(card(FOLLOWER))
  const leader = await device(LEADER)
  const follower = await device(FOLLOWER)
  expect(leader.name).toBe(follower.name) // the stellarHD pair: one model
  const title = (bus: string) => c.page.$eval(card(bus), (e: any) => e.getAttribute('aria-label'))
  const placeholder = (bus: string) => c.page.$eval(`${card(bus)} input[data-nickname]`, (i: any) => i.placeholder)
  expect(await placeholder(LEADER)).toBe(`${leader.name} (port 2)`)
  expect(await placeholder(FOLLOWER)).toBe(`${follower.name} (port 3)`)
  expect(await title(LEADER)).toBe(leader.nickname || `${leader.name} (port 2)`)
  expect(await title(FOLLOWER)).toBe(follower.nickname || `${follower.name} (port 3)`)
  expect(await title(LEADER)).not.toBe(await title(FOLLOWER))
  try {
    await c.service.call('POST', '/api/devices/set_nickname', { bus_info: FOLLOWER, nickname: 'Starboard' })
    await waitInPage(c.page, 'the follower titled by its nickname', () => (globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-3"]')?.getAttribute('aria-label') === 'Starboard')
  } finally {
    await c.service.call('POST', '/api/devices/set_nickname', { bus_info: FOLLOWER, nickname: follower.nickname })
  }
}, 30_000)

test('the WebRTC frame rate is read over a window: nothing shown until one has passed, then never above the stream\'s rate', async () => {
  try {
    await press(`${card(EHD)} [data-action=enable]`)
    const d = await until('the exploreHD streaming', () => device(EHD), (x) => x.stream.enabled && x.stream_status.state === 'running', 20_000)
    const rate = d.stream.interval.denominator / d.stream.interval.numerator
    const preview = '[data-device="usb-0000:00:14.0-1"] [data-preview="whep"]'
    await c.page.waitForSelector(preview, { timeout: 10_000 })
    // The first decoded frames (the stream's last group of pictures, sent at once, then live): no rate yet.
    await waitInPage(c.page, 'WebRTC frames decoded in the preview', () => Number((globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-1"] [data-preview="whep"]')?.getAttribute('data-frames-decoded')) > 0, 20_000)
    expect(await c.page.$eval(preview, (e: any) => e.getAttribute('data-fps'))).toBe('')
    expect(await c.page.$eval(`${preview} .overlay`, (e: any) => e.textContent)).toContain('… fps')
    // Then five readings, each after the page's stats moved on: none above the stream's rate (a little
    // slack for the clock).
    await waitInPage(c.page, 'a frame rate shown', () => (globalThis as any).document.querySelector('[data-device="usb-0000:00:14.0-1"] [data-preview="whep"]')?.getAttribute('data-fps'), 15_000)
    const attr = (name: string) => c.page.$eval(preview, (e: any, n: string) => e.getAttribute(n), name)
    const readings: number[] = []
    for (let i = 0; i < 5; i++) {
      const frames = await attr('data-frames-decoded')
      const moved = (sel: string, before: string) => (globalThis as any).document.querySelector(sel)?.getAttribute('data-frames-decoded') !== before
      await c.page.waitForFunction(moved, { timeout: 10_000, polling: 100 }, preview, frames)
      readings.push(Number(await attr('data-fps')))
    }
    expect(readings.length).toBeGreaterThan(0)
    for (const fps of readings) expect(fps).toBeLessThanOrEqual(rate * 1.1)
    expect(Math.max(...readings)).toBeGreaterThan(0)
  } finally {
    await c.service.call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD }).catch(() => {})
    const d = await device(EHD)
    await c.service.call('POST', '/api/devices/configure_stream', { bus_info: EHD, stream_type: 'UDP', encode_type: d.stream.encode_type, stream_format: { width: d.stream.width, height: d.stream.height, interval: d.stream.interval }, enabled: false, endpoints: [{ host: '127.0.0.1', port: 5600 }] })
  }
}, 60_000)

test('an idle console asks nothing of the service: no request in 3 s while nothing changes', async () => {
  await c.open('cameras')
  await c.page.waitForSelector(card(EHD))
  await Bun.sleep(500) // the first load's requests are done
  const requests: string[] = []
  const count = (r: any) => requests.push(`${r.method()} ${r.url()}`)
  c.page.on('request', count)
  await Bun.sleep(3000) // a window of observation, not a wait for a condition
  c.page.off('request', count)
  expect(requests).toEqual([])
  expect(c.errors()).toEqual([])
}, 30_000)
