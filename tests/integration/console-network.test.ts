// The console's Network page in real Chromium against the real service and a real NetworkManager
// (tests/integration/nm/lab.ts). As on a vehicle, the service, NetworkManager and the browser all sit in
// the lab's network namespace and the page is loaded from the address being changed (eth0, 10.77.0.1):
// a change of it really cuts the page off, so the countdown, "keep this setting" (a request to the new
// address, with CORS) and the rollback are the real thing. Each flow is done in the page, then checked
// independently (ip addr and nmcli inside the namespace, the API through curl there — never during a
// rollback window, since any request keeps the change), and in the page again after a reload.
// Prerequisites: root, scripts/setup/networkmanager.sh, chromium.sh, recordings.sh (curl).
import { afterAll, beforeAll, beforeEach, expect, setDefaultTimeout, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { until } from '../helpers'
import { launchBrowser } from './browser'
import { openConsole, type ConsoleSession } from './console.helpers'
import { answerTokenPrompt, keptToken, press, textOf, typeInto, waitForTokenRefused, watchNotices, type SeenNotice } from './console-page.helpers'
import { startNmLab, type NmLab } from './nm/lab'
import { startServiceInLab, type LabService } from './nm/service'

/** Long enough to see the countdown and press "keep" on a loaded 2-core box; short enough to wait out. */
const ROLLBACK_SECONDS = 12
const OLD = '10.77.0.1'
const NEW = '10.77.0.9'
/** eth1's address (profile peer): no test changes it. */
const PEER = '10.77.0.2'
setDefaultTimeout(120_000)

let lab: NmLab
let service: LabService
let c: ConsoleSession

/**
 * The lab as each test starts from: no change waiting, exactly three profiles (static0 up on eth0 at
 * 10.77.0.1/24 with a gateway and DNS, peer up on eth1 at 10.77.0.2/24, spare in use nowhere, DHCP).
 */
async function baseline(): Promise<void> {
  // A change still waiting: heard from now (this request, by eth1's address, which no test changes), so it settles.
  if (service) await until('no change waiting for a rollback', () => service.callAt(`http://${PEER}:${service.port}`, 'GET', '/api/network/rollback'), (r) => r.status === 200 && r.body.pending === null, 60_000)
  for (const uuid of (await lab.nmcli('-t', '-f', 'UUID', 'connection', 'show')).trim().split('\n').filter(Boolean)) await lab.nmcli('connection', 'delete', 'uuid', uuid)
  const add = (...args: string[]) => lab.nmcli('connection', 'add', 'type', 'ethernet', ...args, 'ipv6.method', 'disabled', 'connection.autoconnect', 'no')
  await add('ifname', 'eth0', 'con-name', 'static0', 'ipv4.method', 'manual', 'ipv4.addresses', `${OLD}/24`, 'ipv4.gateway', '10.77.0.254', 'ipv4.dns', '1.1.1.1,8.8.4.4')
  await add('ifname', 'eth1', 'con-name', 'peer', 'ipv4.method', 'manual', 'ipv4.addresses', `${PEER}/24`)
  await add('con-name', 'spare', 'ipv4.method', 'auto')
  await lab.nmcli('connection', 'up', 'static0')
  await lab.nmcli('connection', 'up', 'peer')
  await until('the baseline addresses', async () => [(await lab.ipv4('eth0')).join(), (await lab.ipv4('eth1')).join()].join(' '), (both) => both === `${OLD}/24 ${PEER}/24`)
}

beforeAll(async () => {
  lab = await startNmLab({ pairs: 1 })
  await baseline()
  c = await openConsole({
    service: async () => (service = await startServiceInLab(lab, OLD, ['--network-rollback', String(ROLLBACK_SECONDS)])),
    browser: () => launchBrowser({ netns: lab.ns }),
  })
}, 180_000)

beforeEach(baseline, 90_000)

afterAll(async () => {
  await c?.close()
  await lab?.stop()
})

const profile = async (id: string, origin = service.url) => ((await service.callAt(origin, 'GET', '/api/network/connection_profiles')).body as any[]).find((p) => p.id === id)
/** What NetworkManager keeps on disk for the profiles (keyfiles): an unconfirmed change is not written there. */
const savedOnDisk = () =>
  readdirSync(join(lab.dir, 'system-connections'))
    .map((f) => readFileSync(join(lab.dir, 'system-connections', f), 'utf8'))
    .join('\n')
/** The page's console errors, less the browser's lines for requests that could not reach the vehicle (expected while cut off;
 * Chromium says INTERNET_DISCONNECTED when the namespace's only address is the one being changed). */
const unexpectedErrors = (session: ConsoleSession = c) => session.errors().filter((e) => !/net::ERR_(ADDRESS_UNREACHABLE|CONNECTION_|NETWORK_CHANGED|INTERNET_DISCONNECTED|EMPTY_RESPONSE|TIMED_OUT)/.test(e))

async function openNetwork(): Promise<void> {
  await c.open('network')
  await c.page.waitForSelector('tr[data-interface="eth0"] [data-address]')
  await c.page.waitForSelector('[data-profile="static0"]')
}

/** Opens static0's IPv4 form and sets its first address. */
async function editAddress(address: string, submit = true): Promise<void> {
  await press(c.page, '[data-edit="static0"]')
  await c.page.waitForSelector('[data-ipv4-editor="static0"] input[name="address-0"]')
  await typeInto(c.page, '[data-ipv4-editor="static0"] input[name="address-0"]', address, submit ? 'Enter' : undefined)
}

test('the wired interfaces and profiles as the service and NetworkManager have them', async () => {
  await openNetwork()
  const wired = (await service.call('GET', '/api/network/wired/devices')).body as any[]
  for (const w of wired) {
    const shown = w.active_ip_configuration.ip_addresses.map((a: any) => `${a.address}/${a.prefix}`).join(', ')
    await c.page.waitForFunction((i: string, s: string) => (globalThis as any).document.querySelector(`tr[data-interface="${i}"] [data-address]`)?.textContent === s, {}, w.interface, shown)
    expect(w.state).toBe(100)
    expect(await textOf(c.page, `tr[data-interface="${w.interface}"] [data-state]`)).toBe('connected')
  }
  expect((await lab.ipv4('eth0')).join()).toBe(`${OLD}/24`)
  expect(await textOf(c.page, 'tr[data-interface="eth0"] [data-address]')).toBe(`${OLD}/24`)
  expect(await textOf(c.page, '[data-profile="static0"] [data-addresses]')).toBe(`${OLD}/24`)
  expect(await textOf(c.page, '[data-profile="static0"] [data-gateway]')).toBe('10.77.0.254')
  expect(await textOf(c.page, '[data-profile="static0"] [data-dns]')).toBe('1.1.1.1, 8.8.4.4')
  expect(await textOf(c.page, '[data-profile="static0"] h3')).toContain('active on eth0')
  await c.screenshot('network')
  expect(unexpectedErrors()).toEqual([])
})

test('a bad address and a bad DNS entry: the 422 beside each field, never a success, and nothing changes', async () => {
  await openNetwork()
  const notices = await watchNotices(c.page)
  await editAddress('10.77.0.300', false)
  await typeInto(c.page, '[data-ipv4-editor="static0"] input[name="dns"]', '1.1.1.1, dns.example', 'Enter')
  await c.page.waitForSelector('[data-ipv4-editor="static0"] [data-address-row="0"] [data-field-error]')

  // What the service says of that body, asked directly.
  const body = { method: 'manual', ip_addresses: [{ address: '10.77.0.300', prefix: 24 }], gateway: '10.77.0.254', dns: ['1.1.1.1', 'dns.example'], never_default: false }
  const path = (await profile('static0')).path
  const refusal = await service.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, body)
  expect(refusal.status).toBe(422)
  expect(refusal.body.detail.map((e: any) => e.loc)).toEqual([
    ['body', 'ip_addresses', 0, 'address'],
    ['body', 'dns', 1],
  ])
  // Each beside its own field: the address in its row, the DNS entry under DNS, named.
  const addressError = await textOf(c.page, '[data-ipv4-editor="static0"] [data-address-row="0"] [data-field-error]')
  expect(addressError).toStartWith('String should match the pattern of an IPv4 address')
  expect(refusal.body.detail[0].msg).toStartWith('String should match pattern')
  const dnsError = await c.page.$eval('[data-ipv4-editor="static0"] input[name="dns"]', (input: any) => input.closest('.field').querySelector('[data-field-error]')?.textContent)
  expect(dnsError).toStartWith("'dns.example': String should match")
  expect(await c.page.$$eval('[data-ipv4-editor="static0"] [data-field-error]', (all: any[]) => all.length)).toBe(2)
  await c.screenshot('network-invalid')

  const seen = await notices()
  expect(seen.filter((n) => n.kind === 'ok')).toEqual([])
  expect(seen.some((n) => n.kind === 'error')).toBe(true)
  expect(await c.page.$('[data-change-phase]')).toBeNull()
  // Nothing changed: the API, NetworkManager, the interface.
  expect((await profile('static0')).ipv4_settings.ip_addresses).toEqual([{ address: OLD, prefix: 24 }])
  expect((await service.call('GET', '/api/network/rollback')).body.pending).toBeNull()
  expect((await lab.ipv4('eth0')).join()).toBe(`${OLD}/24`)
  await openNetwork()
  expect(await textOf(c.page, '[data-profile="static0"] [data-addresses]')).toBe(`${OLD}/24`)
  expect(unexpectedErrors()).toEqual([])
})

test('a profile no interface uses is saved at once: a success, no countdown, and NetworkManager has it', async () => {
  await openNetwork()
  const notices = await watchNotices(c.page)
  await press(c.page, '[data-edit="spare"]')
  const form = '[data-ipv4-editor="spare"]'
  // The methods are the service's (its OpenAPI enum), loaded with the form.
  await c.page.waitForFunction((sel: string) => [...((globalThis as any).document.querySelector(sel)?.options ?? [])].some((o: any) => o.value === 'manual'), {}, `${form} select[name="method"]`)
  await c.page.select(`${form} select[name="method"]`, 'manual')
  await press(c.page, `${form} [data-add-address]`)
  await typeInto(c.page, `${form} input[name="address-0"]`, '10.77.5.5')
  await typeInto(c.page, `${form} input[name="prefix-0"]`, '16', 'Enter')
  await c.page.waitForFunction((s: string) => (globalThis as any).document.querySelector(s)?.textContent === '10.77.5.5/16', { timeout: 15_000 }, '[data-profile="spare"] [data-addresses]')
  expect(await notices()).toContainEqual({ kind: 'ok', text: expect.stringContaining('Saved the IPv4 settings of spare') })
  expect(await c.page.$('[data-change-phase]')).toBeNull()

  expect((await profile('spare')).ipv4_settings).toMatchObject({ method: 'manual', ip_addresses: [{ address: '10.77.5.5', prefix: 16 }] })
  expect((await lab.nmcli('-g', 'ipv4.method,ipv4.addresses', 'connection', 'show', 'spare')).trim().split('\n')).toEqual(['manual', '10.77.5.5/16'])
  expect(savedOnDisk()).toContain('10.77.5.5/16')
  expect((await lab.ipv4('eth0')).join()).toBe(`${OLD}/24`)
  await openNetwork()
  expect(await textOf(c.page, '[data-profile="spare"] [data-method]')).toBe('manual')
  expect(await textOf(c.page, '[data-profile="spare"] [data-addresses]')).toBe('10.77.5.5/16')
  expect(unexpectedErrors()).toEqual([])
})

/**
 * Changes static0 to NEW in the page; answers once the page counts down and the interface has the new
 * address, with the notices the page showed from the change on.
 */
async function changeAndSeeCountdown(): Promise<() => Promise<SeenNotice[]>> {
  expect((await service.call('GET', '/api/network/rollback')).body).toEqual({ pending: null, rollback_seconds: ROLLBACK_SECONDS })
  await openNetwork()
  const notices = await watchNotices(c.page)
  await editAddress(NEW)
  // The page loses the vehicle with the change; it counts down all the same (the window it read before).
  await c.page.waitForSelector('[data-change-phase="counting"] [data-countdown]', { timeout: 20_000 })
  const first = Number(await textOf(c.page, '[data-countdown]'))
  expect(first).toBeGreaterThan(0)
  expect(first).toBeLessThanOrEqual(ROLLBACK_SECONDS)
  // Seen from inside the namespace, not through the API: a request now would keep the change.
  await until('the new address on eth0', async () => (await lab.ipv4('eth0')).join(), (a) => a === `${NEW}/24`)
  await c.page.waitForFunction(
    (from: number) => Number((globalThis as any).document.querySelector('[data-countdown]')?.textContent) < from || !!(globalThis as any).document.querySelector('[data-change-phase="checking"]'),
    { timeout: 5000, polling: 50 },
    first,
  )
  return notices
}

test('an address change: the countdown, then, with no client at the new address, the rollback and a clear message', async () => {
  const notices = await changeAndSeeCountdown()
  await c.screenshot('network-countdown')
  expect(savedOnDisk()).not.toContain(`${NEW}/24`)

  await c.page.waitForSelector('[data-change-phase="rolled_back"]', { timeout: (ROLLBACK_SECONDS + 60) * 1000 })
  const message = await textOf(c.page, '[data-change-phase="rolled_back"]')
  expect(message).toContain('Rolled back')
  expect(message).toContain('previous configuration')
  await c.screenshot('network-rolled-back')
  // Never a success, not even from the change's own answer arriving late.
  expect((await notices()).filter((n) => n.kind === 'ok')).toEqual([])

  expect((await lab.ipv4('eth0')).join()).toBe(`${OLD}/24`)
  expect((await service.call('GET', '/api/network/rollback')).body.pending).toBeNull()
  expect((await profile('static0')).ipv4_settings.ip_addresses).toEqual([{ address: OLD, prefix: 24 }])
  expect(savedOnDisk()).not.toContain(`${NEW}/24`)
  await c.page.waitForFunction((s: string) => (globalThis as any).document.querySelector('tr[data-interface="eth0"] [data-address]')?.textContent === s, {}, `${OLD}/24`)
  await openNetwork()
  expect(await textOf(c.page, 'tr[data-interface="eth0"] [data-address]')).toBe(`${OLD}/24`)
  expect(unexpectedErrors()).toEqual([])
})

test('keep this setting reaches the vehicle at its new address: kept on disk, and the console opens there', async () => {
  await changeAndSeeCountdown()
  await press(c.page, '[data-keep]')
  await c.page.waitForSelector('[data-change-phase="kept"]', { timeout: 30_000 })
  const target = `http://${NEW}:${service.port}`
  expect(await c.page.$eval('a[data-new-address]', (a: any) => a.href)).toBe(`${target}/#/network`)
  await c.screenshot('network-kept')

  // The service settled it, at its new address; NetworkManager wrote it to disk.
  expect((await service.callAt(target, 'GET', '/api/network/rollback')).body.pending).toBeNull()
  expect((await profile('static0', target)).ipv4_settings.ip_addresses).toEqual([{ address: NEW, prefix: 24 }])
  expect(savedOnDisk()).toContain(`${NEW}/24`)
  expect((await lab.ipv4('eth0')).join()).toBe(`${NEW}/24`)

  // Offered to go there: the console at the new address shows it, and again after a reload.
  await press(c.page, 'a[data-new-address]')
  await c.page.waitForFunction((o: string) => (globalThis as any).location.origin === o, {}, target)
  await c.page.waitForFunction((s: string) => (globalThis as any).document.querySelector('tr[data-interface="eth0"] [data-address]')?.textContent === s, { timeout: 20_000 }, `${NEW}/24`)
  await c.page.reload({ waitUntil: 'domcontentloaded' })
  await c.page.waitForFunction((s: string) => (globalThis as any).document.querySelector('[data-profile="static0"] [data-addresses]')?.textContent === s, { timeout: 20_000 }, `${NEW}/24`)
  expect(unexpectedErrors()).toEqual([])
})

test('a page that reaches the vehicle by another address keeps the change by asking there, and offers no move', async () => {
  // Loaded from eth1's address: the change of eth0 does not cut this page off.
  const other = `http://${PEER}:${service.port}`
  await c.page.goto(`${other}/#/network`, { waitUntil: 'domcontentloaded' })
  await c.page.waitForSelector('[data-profile="static0"] [data-edit="static0"]')
  await editAddress(NEW)
  await c.page.waitForSelector('[data-change-phase="counting"] [data-keep]', { timeout: 20_000 })
  expect(await textOf(c.page, '[data-keep]')).toBe(`Keep this setting (reach the vehicle at ${other})`)
  await until('the new address on eth0', async () => (await lab.ipv4('eth0')).join(), (a) => a === `${NEW}/24`)
  // Not kept by the page refreshing itself meanwhile: only by "keep".
  expect(savedOnDisk()).not.toContain(`${NEW}/24`)
  await press(c.page, '[data-keep]')
  await c.page.waitForSelector('[data-change-phase="kept"]', { timeout: 30_000 })
  expect(await c.page.$('a[data-new-address]')).toBeNull()
  expect((await service.callAt(other, 'GET', '/api/network/rollback')).body.pending).toBeNull()
  expect(savedOnDisk()).toContain(`${NEW}/24`)
  await c.page.reload({ waitUntil: 'domcontentloaded' })
  await c.page.waitForFunction((s: string) => (globalThis as any).document.querySelector('tr[data-interface="eth0"] [data-address]')?.textContent === s, { timeout: 20_000 }, `${NEW}/24`)
  expect(unexpectedErrors()).toEqual([])
})

test('with --token: a profile saved in the page asks for the token once; a wrong one is never a success; the right one lands and is kept for the tab', async () => {
  const TOKEN = 'network-sesame'
  // A second service in the lab, started with the token, and its own browser there: the first stays as it is.
  let guarded: LabService | undefined
  const t = await openConsole({
    service: async () => (guarded = await startServiceInLab(lab, OLD, ['--token', TOKEN])),
    browser: () => launchBrowser({ netns: lab.ns }),
  })
  try {
    const spare = async () => ((await guarded!.call('GET', '/api/network/connection_profiles')).body as any[]).find((p) => p.id === 'spare').ipv4_settings
    const form = '[data-ipv4-editor="spare"]'
    const unauthorized = () => t.refusals.filter((r) => r.status === 401).length
    const openSpare = async () => {
      await t.open('network')
      await t.page.waitForSelector('[data-profile="spare"]')
      await press(t.page, '[data-edit="spare"]')
      await t.page.waitForFunction((sel: string) => [...((globalThis as any).document.querySelector(sel)?.options ?? [])].some((o: any) => o.value === 'manual'), {}, `${form} select[name="method"]`)
    }
    await openSpare()
    const notices = await watchNotices(t.page)
    await t.page.select(`${form} select[name="method"]`, 'manual')
    await press(t.page, `${form} [data-add-address]`)
    await typeInto(t.page, `${form} input[name="address-0"]`, '10.77.6.6')
    await typeInto(t.page, `${form} input[name="prefix-0"]`, '16', 'Enter')

    // Asked; a wrong token is refused by the service and the page asks again: nothing saved, no success.
    await answerTokenPrompt(t.page, 'wrong')
    await waitForTokenRefused(t.page)
    expect((await spare()).method).toBe('auto')
    expect((await notices()).filter((n) => n.kind === 'ok')).toEqual([])
    expect(await keptToken(t.page)).toBeNull()

    await answerTokenPrompt(t.page, TOKEN)
    await until('the profile saved', spare, (s) => s.method === 'manual')
    expect((await spare()).ip_addresses).toEqual([{ address: '10.77.6.6', prefix: 16 }])
    expect((await lab.nmcli('-g', 'ipv4.method,ipv4.addresses', 'connection', 'show', 'spare')).trim().split('\n')).toEqual(['manual', '10.77.6.6/16'])
    await t.page.waitForFunction((s: string) => (globalThis as any).document.querySelector(s)?.textContent === '10.77.6.6/16', { timeout: 15_000 }, '[data-profile="spare"] [data-addresses]')
    expect(await notices()).toContainEqual({ kind: 'ok', text: expect.stringContaining('Saved the IPv4 settings of spare') })
    expect(await keptToken(t.page)).toBe(TOKEN)
    expect(unauthorized()).toBe(2) // the first try without a token and the wrong one

    // Kept for the tab: after a reload the next change goes through, with no prompt and no refusal.
    await openSpare()
    await typeInto(t.page, `${form} input[name="prefix-0"]`, '24', 'Enter')
    await until('the second change saved', spare, (s) => s.ip_addresses[0]?.prefix === 24)
    expect(await t.page.$('dialog[open] #token-input')).toBeNull()
    expect(unauthorized()).toBe(2)
    expect((await lab.ipv4('eth0')).join()).toBe(`${OLD}/24`)
    expect(unexpectedErrors(t)).toEqual([])
  } finally {
    await t.close()
  }
})
