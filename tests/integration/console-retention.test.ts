// The console's retention controls in real Chromium against the real service: a recording marked kept
// in the page (the service says kept), the policy saved from the page's form (a refused value shown
// beside its field, never as a success), and the deletion that policy made listed with its reason.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, mkdirSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { until } from '../helpers'
import { openConsole, waitInPage, type ConsoleSession } from './console.helpers'
import { press, textOf, typeInto, watchNotices } from './console-page.helpers'

let c: ConsoleSession
let recordingsDir: string

beforeAll(async () => {
  c = await openConsole()
  recordingsDir = join(c.service.dataDir, 'recordings')
}, 90_000)
afterAll(async () => {
  await c?.close()
})

/** A finished "recording" last written `ageDays` ago (its content does not matter to retention). */
function oldRecording(name: string, ageDays: number): void {
  mkdirSync(recordingsDir, { recursive: true })
  writeFileSync(join(recordingsDir, name), Buffer.alloc(64 * 1024, 1))
  const when = new Date(Date.now() - ageDays * 86_400_000)
  utimesSync(join(recordingsDir, name), when, when)
}
const row = (fileName: string) => `tr[data-recording="${fileName}"]`
const listed = async (): Promise<any[]> => (await c.service.call('GET', '/api/recordings')).body

test('kept toggle, the policy form (a refusal beside its field, then saved), and the deletion it made listed with its reason', async () => {
  oldRecording('dive-keep.mkv', 3)
  oldRecording('dive-old.mkv', 2)
  await c.open('recordings')
  await c.page.waitForSelector(row('dive-old.mkv'))
  await c.page.waitForSelector(row('dive-keep.mkv'))
  const notices = await watchNotices(c.page)

  // Kept, in the page: the service marks it.
  await press(c.page, `${row('dive-keep.mkv')} input[data-keep]`)
  await until('the service to say kept', listed, (l) => l.find((r) => r.name === 'dive-keep')?.kept === true, 10_000)
  await waitInPage(c.page, 'the toggle checked', () => (globalThis as any).document.querySelector('tr[data-recording="dive-keep.mkv"] input[data-keep]').checked)
  expect((await listed()).find((r) => r.name === 'dive-old')?.kept).toBeUndefined()

  // The policy form: off at first; a negative age is refused beside its field, and nothing is saved.
  expect(await textOf(c.page, '[data-retention-state]')).toBe('off')
  await press(c.page, '[data-retention] summary')
  await c.page.waitForSelector('[data-retention-form] input[name="max_age_days"]', { visible: true })
  await press(c.page, '[data-retention-form] input[name="enabled"]')
  await typeInto(c.page, '[data-retention-form] input[name="max_age_days"]', '-1')
  await press(c.page, '[data-retention-save]')
  await c.page.waitForSelector('[data-retention-form] [data-field-error]')
  const refusal = await c.service.call('POST', '/api/recordings/retention', { enabled: true, min_free_gb: 0, max_age_days: -1 })
  expect(refusal.status).toBe(422)
  expect(await textOf(c.page, '[data-retention-form] [data-field-error]')).toBe(refusal.body.detail[0].msg)
  expect((await c.service.call('GET', '/api/recordings/retention')).body.enabled).toBe(false)

  // Delete after one day: saved, and the pass it starts deletes the old recording, not the kept one.
  await typeInto(c.page, '[data-retention-form] input[name="max_age_days"]', '1')
  await press(c.page, '[data-retention-save]')
  const saved = await until('the policy saved', () => c.service.call('GET', '/api/recordings/retention'), (r) => r.body.enabled === true, 10_000)
  expect(saved.body).toMatchObject({ enabled: true, min_free_gb: 0, max_age_days: 1 })
  await until('the old one deleted', async () => existsSync(join(recordingsDir, 'dive-old.mkv')), (present) => !present, 10_000)
  expect(existsSync(join(recordingsDir, 'dive-keep.mkv'))).toBe(true)

  // The page: the deletion with its reason, the row gone, the kept one still there, the policy on.
  await c.page.waitForSelector('[data-deletions] [data-deletion="dive-old.mkv"][data-reason="max_age"]', { timeout: 10_000 })
  expect(await textOf(c.page, '[data-deletion="dive-old.mkv"]')).toContain('too old')
  await waitInPage(c.page, 'the deleted row gone', () => !(globalThis as any).document.querySelector('tr[data-recording="dive-old.mkv"]'))
  expect(await c.page.$(row('dive-keep.mkv'))).not.toBeNull()
  expect(await textOf(c.page, '[data-retention-state]')).toBe('on')
  expect(await notices()).toContainEqual({ kind: 'ok', text: expect.stringContaining('Retention policy saved') })
  await c.screenshot('recordings-retention')

  // After a reload, the same: the policy as saved, the deletion listed, the mark kept.
  await c.open('recordings')
  await c.page.waitForSelector('[data-deletion="dive-old.mkv"]')
  await c.page.waitForSelector('[data-retention-form] input[name="max_age_days"]') // the form fills once the policy has loaded
  await c.page.waitForSelector(row('dive-keep.mkv'))
  expect(await c.page.$eval('[data-retention-form] input[name="max_age_days"]', (e: any) => e.value)).toBe('1')
  expect(await c.page.$eval(`${row('dive-keep.mkv')} input[data-keep]`, (e: any) => e.checked)).toBe(true)
  expect(c.errors()).toEqual([])
}, 120_000)

test('an edit made just as a change from elsewhere is drawn is kept: the form refills from the service only while it is not edited', async () => {
  await c.open('recordings')
  await press(c.page, '[data-retention] summary')
  await c.page.waitForSelector('[data-retention-form] input[name="min_free_gb"]', { visible: true })
  const before = (await c.service.call('GET', '/api/recordings/retention')).body
  const flipped = before.enabled ? 'off' : 'on'
  // The pilot's edit lands the moment the page draws the change (the summary shows it): after the render
  // that schedules the form's refill, before the refill runs (Preact runs effects after the next paint).
  await c.page.evaluate((state: string) => {
    const w = globalThis as any
    const shown = w.document.querySelector('[data-retention-state]')
    const observer = new w.MutationObserver(() => {
      if (shown.textContent !== state) return
      observer.disconnect()
      const field = w.document.querySelector('[data-retention-form] input[name="min_free_gb"]')
      field.value = '7'
      field.dispatchEvent(new w.Event('input', { bubbles: true }))
      w.editedAt = true
    })
    observer.observe(shown, { childList: true, characterData: true, subtree: true })
  }, flipped)
  const changed = await c.service.call('POST', '/api/recordings/retention', { enabled: flipped === 'on', min_free_gb: before.min_free_gb, max_age_days: before.max_age_days })
  expect(changed.status).toBe(200)
  await waitInPage(c.page, 'the edit made as the change was drawn', () => (globalThis as any).editedAt === true)
  // A refill scheduled by that render has run by now: the next paint, or Preact's 100 ms fallback.
  await c.page.evaluate(() => new Promise((done) => (globalThis as any).requestAnimationFrame(() => setTimeout(done, 150))))
  expect(await c.page.$eval('[data-retention-form] input[name="min_free_gb"]', (e: any) => e.value)).toBe('7')
  expect(await c.page.$eval('[data-retention-form] button[type="button"]', (e: any) => e.disabled)).toBe(false) // Revert
  // Revert: the form shows what the service has now.
  await press(c.page, '[data-retention-form] button[type="button"]')
  await waitInPage(c.page, 'the form back to the saved policy', () => (globalThis as any).document.querySelector('[data-retention-form] input[name="min_free_gb"]').value === '0')
  expect(await c.page.$eval('[data-retention-form] input[name="enabled"]', (e: any) => e.checked)).toBe(flipped === 'on')
  expect(c.errors()).toEqual([])
}, 60_000)
