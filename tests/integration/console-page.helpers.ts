// Driving a console page as a pilot would (keyboard first), and watching what it tells them: used by
// the console's page tests (console-cameras, console-recordings, console-network). The functions handed to
// page.evaluate run in the page, where `globalThis` is the window (no DOM types in the tests' config).
import type { Page } from 'puppeteer-core'

/** Selects the text of an input, types `text` and presses `key` (none: the caller submits). */
export async function typeInto(page: Page, selector: string, text: string, key?: 'Enter' | 'Tab'): Promise<void> {
  await page.focus(selector)
  await page.keyboard.down('Control')
  await page.keyboard.press('A')
  await page.keyboard.up('Control')
  await page.keyboard.type(text)
  if (key) await page.keyboard.press(key)
}

/**
 * Presses a button (or toggles a checkbox) from the keyboard: focus, then Enter (Space for a checkbox),
 * once it can be pressed — as a person waits for a button greyed while a change is in flight.
 */
export async function press(page: Page, selector: string): Promise<void> {
  await page.waitForFunction((s: string) => {
    const e = (globalThis as any).document.querySelector(s)
    return e && !e.disabled
  }, {}, selector)
  await page.focus(selector)
  const checkbox = await page.$eval(selector, (e: any) => e.type === 'checkbox')
  await page.keyboard.press(checkbox ? 'Space' : 'Enter')
}

export interface SeenNotice {
  kind: string
  text: string
}

/**
 * Records every notice the page shows from now on (the page's own markup, watched by a MutationObserver
 * in the page, so one that fades in between two checks is still seen). Survives no reload.
 */
export async function watchNotices(page: Page): Promise<() => Promise<SeenNotice[]>> {
  await page.evaluate(() => {
    const w = globalThis as any
    w.seenNotices = []
    w.noticeObserver?.disconnect()
    const before = new Set(w.document.querySelectorAll('[data-notice]'))
    w.noticeObserver = new w.MutationObserver(() => {
      for (const n of w.document.querySelectorAll('[data-notice]')) {
        if (before.has(n)) continue
        const entry = { kind: n.getAttribute('data-notice'), text: n.textContent }
        if (!w.seenNotices.some((s: any) => s.kind === entry.kind && s.text === entry.text)) w.seenNotices.push(entry)
      }
    })
    w.noticeObserver.observe(w.document.body, { childList: true, subtree: true, characterData: true })
  })
  return () => page.evaluate(() => (globalThis as any).seenNotices as SeenNotice[])
}

/** The text of the first element matching `selector` (trimmed), or null when there is none. */
export const textOf = (page: Page, selector: string): Promise<string | null> =>
  page.evaluate((s) => (globalThis as any).document.querySelector(s)?.textContent?.trim() ?? null, selector)

// ---- the token (--token): the prompt the console opens at a 401 ----

/** Types `token` into the console's token prompt once it is open, and sends it (Enter). */
export async function answerTokenPrompt(page: Page, token: string): Promise<void> {
  await page.waitForSelector('dialog[open] #token-input', { timeout: 15_000 })
  await page.type('#token-input', token)
  await page.keyboard.press('Enter')
}

/** Waits until the prompt is open again, saying the token just typed was refused. */
export async function waitForTokenRefused(page: Page): Promise<void> {
  // The token's own dialog: another (the rename dialog) may be open beneath it.
  await page.waitForFunction(() => (globalThis as any).document.getElementById('token-title')?.closest('dialog[open]')?.textContent.includes('refused that token'), { timeout: 15_000, polling: 50 })
}

/** The token the console keeps for this tab (sessionStorage), or null. */
export const keptToken = (page: Page): Promise<string | null> => page.evaluate(() => (globalThis as any).sessionStorage.getItem('periscope.token'))
