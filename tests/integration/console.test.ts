// The web console in real Chromium against the real service on simulated cameras: every page loads
// with no console error (a screenshot of each is saved as an artifact).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { CONSOLE_PAGES, openConsole, waitInPage, type ConsoleSession } from './console.helpers'

let c: ConsoleSession
beforeAll(async () => {
  c = await openConsole()
}, 60_000)
afterAll(() => c?.close())

test('every page loads with no console error, at 1280×800 and at 1024×600 (screenshots in .tmp/artifacts/console/)', async () => {
  for (const viewport of [{ width: 1280, height: 800 }, { width: 1024, height: 600 }]) {
    await c.page.setViewport(viewport)
    for (const name of CONSOLE_PAGES) {
      await c.open(name)
      // Each page has loaded what it shows: a card, a table, a form, or the service's reason it cannot.
      await waitInPage(c.page, `the ${name} page's content`, () => (globalThis as any).document.querySelector('main [data-cards] .card, main table, main form, main dl, main [data-error], main p.muted'))
      await c.screenshot(`${name}-${viewport.width}x${viewport.height}`)
    }
  }
  expect(c.errors()).toEqual([])
  // The only refusals: the network page's, when this machine has no NetworkManager (the page shows why).
  expect(c.refusals.filter((r) => !new URL(r.url).pathname.startsWith('/api/network/'))).toEqual([])
}, 120_000)
