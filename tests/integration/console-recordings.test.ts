// The console's Recordings page in real Chromium against the real service (simulated cameras, real
// recordings written by the real GStreamer): each flow done in the page, then checked independently
// (GET /api/recordings, the recordings folder, a real zip reader), and in the page again after a
// reload. A refused request must never show as success. Each test makes the recordings it changes.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, unlinkSync } from 'node:fs'
import { basename, join } from 'node:path'
import { tempDir, until } from '../helpers'
import { openConsole, waitInPage, type ConsoleSession } from './console.helpers'
import { answerTokenPrompt, keptToken, press, textOf, typeInto, waitForTokenRefused, watchNotices } from './console-page.helpers'
import { copyFixtures, pythonZip, requireTools, run } from './fixtures/recordings/support'
import { requireGStreamer } from './gstreamer.helpers'
import { h264Device } from './service.helpers'

let c: ConsoleSession
let recordingsDir: string
let downloads: string
let camera: { bus_info: string; width: number; height: number; fps: number }

beforeAll(async () => {
  requireGStreamer()
  requireTools()
  c = await openConsole()
  recordingsDir = join(c.service.dataDir, 'recordings')
  downloads = tempDir('periscope-console-downloads-')
  camera = await h264Device(c.service)
  // The browser saves downloads (the zip) here, without asking.
  const browserSession = await c.browser.target().createCDPSession()
  await browserSession.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads, eventsEnabled: true })
}, 90_000)

afterAll(async () => {
  await c?.close()
  if (downloads) rmSync(downloads, { recursive: true, force: true })
})

const row = (fileName: string) => `tr[data-recording="${fileName}"]`
const listed = async (): Promise<any[]> => {
  const r = await c.service.call('GET', '/api/recordings')
  expect(r.status).toBe(200)
  return r.body
}
/** The recordings on disk by the name the API and the page give them: a segmented one's `<stem>_seg001.mkv` … is `<stem>.mkv`. */
const fileNames = (): string[] => (existsSync(recordingsDir) ? [...new Set(readdirSync(recordingsDir).filter((f) => f.endsWith('.mkv')).map((f) => f.replace(/_seg\d{3,}\.mkv$/, '.mkv')))] : [])
/** The file on disk of a recording named `name`: itself, or its first segment. */
const onDisk = (name: string) => (existsSync(join(recordingsDir, name)) ? join(recordingsDir, name) : join(recordingsDir, name.replace(/\.mkv$/, '_seg001.mkv')))

/** The camera's stream as a RECORDING (H.264), enabled or not. */
async function recordingStream(enabled: boolean): Promise<void> {
  const r = await c.service.call('POST', '/api/devices/configure_stream', {
    bus_info: camera.bus_info,
    stream_type: 'RECORDING',
    stream_format: { width: camera.width, height: camera.height, interval: { numerator: 1, denominator: camera.fps } },
    encode_type: 'H264',
    enabled,
    endpoints: [],
  })
  expect(r.status).toBe(200)
}

/** Starts a recording; answers its file name once the file holds video (the muxer flushes each second). */
async function startRecording(): Promise<string> {
  const before = new Set(fileNames())
  await recordingStream(true)
  return until(
    'a new recording with video in it',
    async () => fileNames().find((f) => !before.has(f) && statSync(onDisk(f)).size > 40_000),
    (f) => f !== undefined,
    30_000,
  ) as Promise<string>
}

/** Ends the recording and waits until the service no longer lists it as in progress. */
async function stopRecording(fileName: string): Promise<void> {
  await recordingStream(false)
  await until('the recording finished', async () => (await listed()).find((r) => r.path.endsWith(`/${fileName}`)), (r) => r && !r.in_progress, 15_000)
}

/** A whole new recording of a second or two of real H.264. */
async function record(): Promise<string> {
  const name = await startRecording()
  await stopRecording(name)
  return name
}

async function openRecordings(): Promise<void> {
  await c.open('recordings')
  await c.page.waitForSelector('main [data-recordings], main p.muted')
}

test('the list shows every recording as the service lists it, with the disk usage; a recording started and stopped shows live', async () => {
  const first = await record()
  await openRecordings()
  await c.page.waitForSelector(row(first))
  const disk = (await c.service.call('GET', '/api/recordings/disk')).body
  expect(disk.total).toBeGreaterThan(0)
  expect(await textOf(c.page, '[data-disk]')).toMatch(/free of .* used\)$/)

  // Started with the page open: its row appears marked as recording, with no reload.
  const live = await startRecording()
  await c.page.waitForSelector(`${row(live)}[data-in-progress="true"]`, { timeout: 15_000 })
  expect((await listed()).find((r) => r.path.endsWith(`/${live}`)).in_progress).toBe(true)
  await stopRecording(live)
  await c.page.waitForSelector(`${row(live)}:not([data-in-progress])`, { timeout: 15_000 })

  // Each row says what the service says, in its order (newest first).
  const api = await listed()
  await waitInPage(c.page, 'the rows to settle', () => (globalThis as any).document.querySelectorAll('tr[data-recording]').length >= 2)
  const shown = await c.page.$$eval('tr[data-recording]', (rows: any[]) =>
    rows.map((r) => ({ name: r.getAttribute('data-recording'), size: r.querySelector('[data-size]').textContent, duration: r.querySelector('[data-duration]').textContent, created: r.querySelector('[data-created]').textContent })),
  )
  expect(shown).toEqual(api.map((r) => ({ name: r.path.split('/').pop(), size: r.size, duration: r.duration, created: r.created })))
  expect(shown.map((s) => s.name)).toContain(first)
  expect(shown.find((s) => s.name === live)!.duration).toMatch(/^\d\d:\d\d:\d\d$/)
  await c.screenshot('recordings-list')
  expect(c.errors()).toEqual([])
}, 120_000)

test('a recording plays in the page: the <video> decodes frames at the camera size', async () => {
  const name = await record()
  await openRecordings()
  await press(c.page, `${row(name)} [data-action="play"]`)
  await waitInPage(
    c.page,
    'the video to decode frames',
    () => {
      const v = (globalThis as any).document.querySelector('[data-player] video')
      return v && v.readyState >= 2 && v.videoWidth > 0 && v.currentTime > 0
    },
    20_000,
  )
  const size = await c.page.$eval('[data-player] video', (v: any) => [v.videoWidth, v.videoHeight, v.error])
  expect(size).toEqual([camera.width, camera.height, null])
  await c.screenshot('recordings-playing')
  expect(c.errors()).toEqual([])
}, 90_000)

test('rename in the page: the service has the new name, the old is gone, and a reload shows it', async () => {
  const name = await record()
  const next = `wreck-north-${Date.now()}.mkv`
  await openRecordings()
  const notices = await watchNotices(c.page)
  await press(c.page, `${row(name)} [data-action="rename"]`)
  await c.page.waitForSelector('[data-rename-dialog] [data-rules]')
  await typeInto(c.page, '[data-rename-dialog] input[name="new_name"]', next, 'Enter')
  await c.page.waitForSelector(row(next))

  const api = await listed()
  expect(api.some((r) => r.path.endsWith(`/${next}`))).toBe(true)
  expect(api.some((r) => r.path.endsWith(`/${name}`))).toBe(false)
  expect(existsSync(onDisk(next))).toBe(true)
  expect(existsSync(onDisk(name))).toBe(false)
  expect(await notices()).toContainEqual({ kind: 'ok', text: expect.stringContaining(`Renamed ${name} to ${next}`) })

  await openRecordings()
  await c.page.waitForSelector(row(next))
  expect(await c.page.$(row(name))).toBeNull()
  expect(c.errors()).toEqual([])
}, 90_000)

test('a refused rename shows the service rule beside the field, never a success, and nothing changes', async () => {
  const name = await record()
  await openRecordings()
  const notices = await watchNotices(c.page)
  await press(c.page, `${row(name)} [data-action="rename"]`)
  // The rules shown are the service's own, from its OpenAPI document.
  await c.page.waitForSelector('[data-rename-dialog] [data-rules]')
  const doc = (await c.service.call('GET', '/openapi.json')).body
  const rule = doc.paths['/api/recordings/{old_name}/{new_name}'].patch.parameters.find((p: any) => p.name === 'new_name').schema.description
  expect(await textOf(c.page, '[data-rename-dialog] [data-rules]')).toContain(rule)

  await typeInto(c.page, '[data-rename-dialog] input[name="new_name"]', 'dive:42.mkv', 'Enter')
  await c.page.waitForSelector('[data-rename-dialog] [data-field-error]')
  // What the service says of that name, asked directly.
  const refusal = await c.service.call('PATCH', `/api/recordings/${encodeURIComponent(name)}/${encodeURIComponent('dive:42.mkv')}`)
  expect(refusal.status).toBe(422)
  expect(refusal.body.detail[0].loc).toEqual(['path', 'new_name'])
  expect(await textOf(c.page, '[data-rename-dialog] [data-field-error]')).toBe(refusal.body.detail[0].msg)
  await c.screenshot('recordings-rename-refused')
  // Still open, still the old name everywhere; the only notice is the refusal.
  expect(await c.page.$('[data-rename-dialog][open]')).not.toBeNull()
  const seen = await notices()
  expect(seen.filter((n) => n.kind === 'ok')).toEqual([])
  expect(seen).toContainEqual({ kind: 'error', text: expect.stringContaining(refusal.body.detail[0].msg) })
  expect((await listed()).some((r) => r.path.endsWith(`/${name}`))).toBe(true)
  expect(fileNames()).toContain(name)

  await openRecordings()
  await c.page.waitForSelector(row(name))
  expect(c.errors()).toEqual([])
}, 90_000)

test('delete needs the confirmation: cancelled keeps the file, confirmed removes it (API, disk, and after a reload)', async () => {
  const name = await record()
  await openRecordings()
  const notices = await watchNotices(c.page)
  await press(c.page, `${row(name)} [data-action="delete"]`)
  await c.page.waitForSelector(`dialog[open] [data-confirm-delete="${name}"]`)
  await c.screenshot('recordings-delete-confirm')
  // Cancel: nothing is asked of the service.
  await c.page.keyboard.press('Escape')
  await waitInPage(c.page, 'the dialog closed', () => !(globalThis as any).document.querySelector('dialog[open]'))
  expect(fileNames()).toContain(name)
  expect((await listed()).some((r) => r.path.endsWith(`/${name}`))).toBe(true)

  await press(c.page, `${row(name)} [data-action="delete"]`)
  await c.page.waitForSelector(`dialog[open] [data-confirm-delete="${name}"]`)
  await press(c.page, 'dialog[open] button.danger')
  await waitInPage(c.page, 'the row gone', () => !(globalThis as any).document.querySelector('dialog[open]') && (globalThis as any).document.querySelector('[data-recordings], main p.muted'))
  await c.page.waitForFunction((s: string) => !(globalThis as any).document.querySelector(s), {}, row(name))
  expect((await listed()).some((r) => r.path.endsWith(`/${name}`))).toBe(false)
  expect(fileNames()).not.toContain(name)
  expect(await notices()).toContainEqual({ kind: 'ok', text: expect.stringContaining(`Deleted ${name}`) })

  await openRecordings()
  expect(await c.page.$(row(name))).toBeNull()
  expect(c.errors()).toEqual([])
}, 90_000)

test('a refused delete (the file gone behind the page) shows the service detail, never a success', async () => {
  const name = await record()
  await openRecordings()
  await c.page.waitForSelector(row(name))
  const notices = await watchNotices(c.page)
  await press(c.page, `${row(name)} [data-action="delete"]`)
  await c.page.waitForSelector(`dialog[open] [data-confirm-delete="${name}"]`)
  // Removed from the card by someone else while the pilot confirms: the service no longer has it.
  unlinkSync(onDisk(name))
  await press(c.page, 'dialog[open] button.danger')
  const refusal = await c.service.call('DELETE', `/api/recordings/${encodeURIComponent(name)}`)
  expect(refusal.status).toBe(404)
  await waitInPage(c.page, 'the refusal shown', () => (globalThis as any).document.querySelector('main [data-error]'))
  expect(await textOf(c.page, 'main [data-error]')).toBe(refusal.body.detail)
  const seen = await notices()
  expect(seen.filter((n) => n.kind === 'ok')).toEqual([])
  expect(seen).toContainEqual({ kind: 'error', text: expect.stringContaining(refusal.body.detail) })
  // The page then lists what the service has.
  await c.page.waitForFunction((s: string) => !(globalThis as any).document.querySelector(s), {}, row(name))
}, 90_000)

test('select two recordings and download them as one zip: progress from the job events, a valid archive arrives; one changed since, and the page refuses to call it downloaded', async () => {
  const names = [await record(), await record()]
  await openRecordings()
  // Every state the job shows, as the page shows it (a small zip is prepared in a blink).
  await c.page.evaluate(() => {
    const w = globalThis as any
    w.zipStates = []
    new w.MutationObserver(() => {
      const job = w.document.querySelector('[data-zip-state]')
      const entry = job && `${job.getAttribute('data-zip-state')}: ${job.textContent}`
      if (entry && w.zipStates.at(-1) !== entry) w.zipStates.push(entry)
    }).observe(w.document.body, { childList: true, subtree: true, attributes: true, characterData: true })
  })
  for (const name of names) await press(c.page, `${row(name)} [data-select]`)
  expect(await textOf(c.page, '[data-selected-count]')).toBe('2 selected')
  const before = new Set(readdirSync(downloads))
  await press(c.page, '[data-zip]')

  // The browser saves the archive; the service's events say it sent all of it.
  const zip = await until('the zip downloaded', async () => readdirSync(downloads).find((f) => !before.has(f) && f.endsWith('.zip')), (f) => f !== undefined, 30_000)
  await c.page.waitForSelector('[data-zip-state="ready"]')
  const states = (): Promise<string[]> => c.page.evaluate(() => (globalThis as any).zipStates)
  await waitInPage(c.page, 'the job to say the archive was sent whole', () => /sent whole/.test((globalThis as any).document.querySelector('[data-zip-state]')?.textContent ?? ''), 15_000).catch(async (e) => {
    throw new Error(`${(e as Error).message}; the job showed ${JSON.stringify(await states())}`)
  })
  // 'downloading' and 'sent whole' exist only in the job's events (the page asks for the state once, before).
  expect((await states()).some((s) => s.startsWith('downloading: '))).toBe(true)
  await c.screenshot('recordings-zip')

  const archive = join(downloads, zip!)
  const tested = await run(['unzip', '-t', archive])
  expect(tested.code).toBe(0)
  expect(tested.out).toContain('No errors detected')
  const py = await pythonZip(archive)
  expect(py.bad).toBeNull()
  expect(py.entries.map((e) => [e.name, e.size]).sort()).toEqual(names.map((n) => [basename(onDisk(n)), statSync(onDisk(n)).size]).sort())

  // A recording of it renamed behind the page: the service refuses that archive now, and so does the page.
  renameSync(onDisk(names[0]!), join(recordingsDir, `moved-${names[0]}`))
  const token = await c.page.$eval('[data-zip-state]', (e: any) => e.getAttribute('data-zip-token'))
  const head = await fetch(`${c.service.url}/api/recordings/zip/download?token=${token}`, { method: 'HEAD' })
  expect(head.status).toBe(409)
  const notices = await watchNotices(c.page)
  await press(c.page, '[data-zip-download]')
  await waitInPage(c.page, 'the refusal shown', () => (globalThis as any).document.querySelector('[data-zip-state] [data-error]'))
  expect(await textOf(c.page, '[data-zip-state] [data-error]')).toStartWith('The service answered 409 Conflict: the archive cannot be sent as it was prepared')
  expect(await textOf(c.page, '[data-zip-state]')).toContain('was not downloaded')
  const seen = await notices()
  expect(seen.filter((n) => n.kind === 'ok')).toEqual([])
  expect(seen.some((n) => n.kind === 'error' && n.text.includes('409'))).toBe(true)
  // The browser was never sent for it: no GET of the archive after the refused HEAD, no second file.
  expect(c.refusals.filter((r) => r.url.includes('/zip/download')).map((r) => [r.method, r.status])).toEqual([['HEAD', 409]])
  expect(readdirSync(downloads).filter((f) => !before.has(f))).toEqual([zip!])
  expect(c.errors()).toEqual([])
}, 120_000)

test('with --token: a rename asks for the token once; a wrong one is never a success; the right one lands and is kept for the tab', async () => {
  const TOKEN = 'recordings-sesame'
  const t = await openConsole({ args: ['--token', TOKEN] })
  try {
    // A real recording (a fixture of the recordings tier) put where the service keeps them: no change asked of it.
    const dir = join(t.service.dataDir, 'recordings')
    mkdirSync(dir, { recursive: true })
    copyFixtures(dir, ['finished.mkv'])
    const names = async () => ((await t.service.call('GET', '/api/recordings')).body as any[]).map((r) => r.path.split('/').pop())
    const rename = async (from: string, to: string) => {
      await t.page.waitForSelector(row(from))
      await press(t.page, `${row(from)} [data-action="rename"]`)
      await t.page.waitForSelector('[data-rename-dialog] [data-rules]')
      await typeInto(t.page, '[data-rename-dialog] input[name="new_name"]', to, 'Enter')
    }
    const unauthorized = () => t.refusals.filter((r) => r.status === 401).length
    await t.open('recordings')
    const notices = await watchNotices(t.page)
    await rename('finished.mkv', 'dive-1.mkv')

    // Asked; a wrong token is refused by the service, and the page says so and asks again: nothing renamed.
    await answerTokenPrompt(t.page, 'wrong')
    await waitForTokenRefused(t.page)
    expect(await names()).toEqual(['finished.mkv'])
    expect((await notices()).filter((n) => n.kind === 'ok')).toEqual([])
    expect(await keptToken(t.page)).toBeNull()

    await answerTokenPrompt(t.page, TOKEN)
    await until('the rename landed', names, (n) => n.join() === 'dive-1.mkv')
    await t.page.waitForSelector(row('dive-1.mkv'))
    expect(await notices()).toContainEqual({ kind: 'ok', text: expect.stringContaining('Renamed finished.mkv to dive-1.mkv') })
    expect(await keptToken(t.page)).toBe(TOKEN)
    // The first try without a token and the wrong one: the only refusals.
    expect(unauthorized()).toBe(2)

    // Kept for the tab: after a reload the next rename goes through, with no prompt and no refusal.
    await t.open('recordings')
    await rename('dive-1.mkv', 'dive-2.mkv')
    await until('the second rename landed', names, (n) => n.join() === 'dive-2.mkv')
    await t.page.waitForSelector(row('dive-2.mkv'))
    expect(await t.page.$('dialog[open] #token-input')).toBeNull()
    expect(unauthorized()).toBe(2)
    expect(t.errors()).toEqual([])
  } finally {
    await t.close()
  }
}, 90_000)

test('a recording in segments is one row with a row per segment (each plays and downloads alone); deleting the row deletes every file', async () => {
  const source = onDisk(await record())
  const stem = `survey-${Date.now()}`
  for (const n of [1, 2, 3]) Bun.spawnSync(['cp', source, join(recordingsDir, `${stem}_seg00${n}.mkv`)])
  const name = `${stem}.mkv`
  await openRecordings()
  await c.page.waitForSelector(row(name))
  expect(await textOf(c.page, `${row(name)} [data-segment-count]`)).toBe('3 segments')
  const segments = await c.page.$$eval('tr[data-segment]', (rows: any[]) => rows.map((r) => r.getAttribute('data-segment')))
  expect(segments.filter((s: string) => s.startsWith(stem))).toEqual([1, 2, 3].map((n) => `${stem}_seg00${n}.mkv`))
  const href = await c.page.$eval(`tr[data-segment="${stem}_seg002.mkv"] [data-action="download"]`, (a: any) => a.href)
  const got = await fetch(href)
  expect(got.status).toBe(200)
  expect((await got.arrayBuffer()).byteLength).toBe(statSync(source).size)
  await press(c.page, `tr[data-segment="${stem}_seg002.mkv"] [data-action="play"]`)
  await c.page.waitForSelector(`tr[data-segment="${stem}_seg002.mkv"].playing`)

  await press(c.page, `${row(name)} [data-action="delete"]`)
  await c.page.waitForSelector(`dialog[open] [data-confirm-delete="${name}"]`)
  await press(c.page, 'dialog[open] button.danger')
  await c.page.waitForFunction((s: string) => !(globalThis as any).document.querySelector(s), {}, row(name))
  expect(readdirSync(recordingsDir).filter((f) => f.startsWith(stem))).toEqual([])
  expect(c.errors()).toEqual([])
}, 90_000)
