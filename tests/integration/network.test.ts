// The network plugin against a real NetworkManager 1.42 in a network namespace on a private system bus
// (tests/integration/nm/lab.ts). The service runs in this process, in the host namespace, and reaches
// NetworkManager through the private bus only. Prerequisites: root, scripts/setup/networkmanager.sh.
import { afterAll, beforeAll, beforeEach, describe, expect, setDefaultTimeout, test } from 'bun:test'
import { chownSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PeriscopeEvent } from '../../core/events'
import { NetworkManagerBackend } from '../../drivers/networkmanager/backend'
import { MATCH_RULES } from '../../drivers/networkmanager/bus'
import { createNetworkPlugin } from '../../plugins/network'
import { FOLLOW_EVENTS, freeTcpPort, startTestServer, until, type TestServer } from '../helpers'
import { startNmLab, type NmLab } from './nm/lab'

const ROLLBACK_SECONDS = 2
// Rollback windows and NetworkManager restarts take seconds; on a busy 2-core CI box, more.
setDefaultTimeout(60_000)
let lab: NmLab
let server: TestServer
const events: PeriscopeEvent[] = []

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
/** `nmcli -t` lines as field arrays (its escaping of ':' inside values is not needed for these fields). */
const rows = async (...args: string[]) =>
  (await lab.nmcli('-t', ...args))
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(':'))
/** `nmcli -t -f A,B … show X` → { A: value, 'IP4.ADDRESS': [..] } (multi-valued fields collected). */
async function showFields(...args: string[]): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {}
  for (const line of (await lab.nmcli('-t', ...args)).trim().split('\n')) {
    const i = line.indexOf(':')
    const key = line.slice(0, i).replace(/\[\d+\]$/, '')
    ;(out[key] ??= []).push(line.slice(i + 1))
  }
  return out
}
const profilePath = async (id: string) => (await server.call('GET', '/api/network/connection_profiles')).body.find((p: { id: string }) => p.id === id).path as string

/**
 * The lab as every test starts from, whatever the test before it left: NetworkManager running, no change
 * waiting for a rollback, exactly three profiles (static0 up on eth0 at 10.77.0.1/24, peer up on eth1,
 * spare inactive with DHCP, an MTU and a route metric of its own).
 */
async function labBaseline(): Promise<void> {
  await lab.startNetworkManager()
  // A change still waiting is confirmed by any request (a client is heard from), then settles.
  await until('no change waiting for a rollback', async () => (await server.call('GET', '/api/network/rollback')).body?.pending, (p) => p === null, 20_000)
  for (const [uuid] of await rows('-f', 'UUID', 'connection', 'show')) await lab.nmcli('connection', 'delete', 'uuid', uuid!)
  const add = (...args: string[]) => lab.nmcli('connection', 'add', 'type', 'ethernet', ...args)
  await add('ifname', 'eth0', 'con-name', 'static0', 'ipv4.method', 'manual', 'ipv4.addresses', '10.77.0.1/24', 'ipv4.gateway', '10.77.0.254', 'ipv4.dns', '1.1.1.1,8.8.4.4', 'ipv6.method', 'disabled', 'connection.autoconnect', 'no')
  await add('ifname', 'eth1', 'con-name', 'peer', 'ipv4.method', 'manual', 'ipv4.addresses', '10.77.0.2/24', 'ipv6.method', 'disabled', 'connection.autoconnect', 'no')
  await add('con-name', 'spare', 'ipv4.method', 'auto', 'ipv6.method', 'disabled', 'connection.autoconnect', 'no', 'ethernet.mtu', '1400', 'ipv4.route-metric', '42')
  await lab.nmcli('connection', 'up', 'static0')
  await lab.nmcli('connection', 'up', 'peer')
  await until('the baseline addresses', async () => [(await lab.ipv4('eth0')).join(), (await lab.ipv4('eth1')).join()], (both) => both.join(' ') === '10.77.0.1/24 10.77.0.2/24')
}

// One lab and one service for the file (NetworkManager takes seconds to start); each test starts from labBaseline().
beforeAll(async () => {
  lab = await startNmLab({ pairs: 1 })
  server = await startTestServer({ plugins: [createNetworkPlugin({ busAddress: lab.busAddress })], config: { networkRollbackSeconds: ROLLBACK_SECONDS } })
  server.ctx.events.subscribe((e) => e.type === 'network_changed' && events.push(e))
}, 90_000)

beforeEach(labBaseline, 60_000)

afterAll(async () => {
  await server?.stop()
  await lab?.stop()
})

describe('network over a real NetworkManager', () => {
  test('wired devices equal what nmcli reports', async () => {
    const { status, body } = await server.call('GET', '/api/network/wired/devices')
    expect(status).toBe(200)
    const ethernet = (await rows('-f', 'DEVICE,TYPE', 'device')).filter(([, type]) => type === 'ethernet').map(([dev]) => dev)
    expect(body.map((d: { interface: string }) => d.interface).sort()).toEqual(ethernet.sort())
    const active = new Map((await rows('-f', 'DEVICE,DBUS-PATH', 'connection', 'show', '--active')).map(([dev, path]) => [dev, path]))
    for (const device of body) {
      const nm = await showFields('-f', 'GENERAL.STATE,IP4.ADDRESS,IP4.GATEWAY,IP4.DNS', 'device', 'show', device.interface)
      expect(device.state).toBe(Number.parseInt(nm['GENERAL.STATE']![0]!, 10))
      expect(device.is_active).toBe(device.state === 100)
      expect(device.active_profile_id).toBe(active.get(device.interface) ?? '')
      const addresses = device.active_ip_configuration.ip_addresses.map((a: { address: string; prefix: number }) => `${a.address}/${a.prefix}`)
      expect(addresses).toEqual(nm['IP4.ADDRESS'] ?? [])
      expect(device.active_ip_configuration.gateway).toBe(nm['IP4.GATEWAY']?.[0] ?? '')
      expect(device.active_ip_configuration.dns).toEqual(nm['IP4.DNS'] ?? [])
      expect(device.active_ip_configuration.method).toBe('manual')
      expect(device.active_ip_configuration.never_default).toBe(false)
      expect(device.available_profiles).toContain(device.active_profile_id)
    }
    const eth0 = body.find((d: { interface: string }) => d.interface === 'eth0')
    expect(eth0.active_ip_configuration).toEqual({ ip_addresses: [{ address: '10.77.0.1', prefix: 24 }], gateway: '10.77.0.254', method: 'manual', dns: ['1.1.1.1', '8.8.4.4'], never_default: false })
    // 'spare' is bound to no interface: available on both; 'peer' is bound to eth1.
    expect(eth0.available_profiles).toContain(await profilePath('spare'))
    expect(eth0.available_profiles).not.toContain(await profilePath('peer'))
  })

  test('connection profiles equal what nmcli reports, from address-data', async () => {
    const { status, body } = await server.call('GET', '/api/network/connection_profiles')
    expect(status).toBe(200)
    const nm = (await rows('-f', 'NAME,TYPE,DBUS-PATH', 'connection', 'show')).filter(([, type]) => type === '802-3-ethernet')
    expect(body.map((p: { id: string; path: string }) => [p.id, p.path]).sort()).toEqual(nm.map(([name, , path]) => [name, path]).sort())
    for (const profile of body) {
      const s = await showFields('-f', 'ipv4.method,ipv4.addresses,ipv4.gateway,ipv4.dns,ipv4.never-default', 'connection', 'show', 'path', profile.path)
      const v = profile.ipv4_settings
      expect(v.method).toBe(s['ipv4.method']![0])
      expect(v.ip_addresses.map((a: { address: string; prefix: number }) => `${a.address}/${a.prefix}`).join(',')).toBe(s['ipv4.addresses']![0]!)
      expect(v.gateway).toBe(s['ipv4.gateway']![0] === '--' ? '' : s['ipv4.gateway']![0])
      expect(v.dns.join(',')).toBe(s['ipv4.dns']![0]!)
      expect(v.never_default).toBe(s['ipv4.never-default']![0] === 'yes')
    }
  })

  test('bad bodies are 422 in pydantic shape, every error at once', async () => {
    const path = await profilePath('spare')
    const bad = await server.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, {
      ip_addresses: [{ address: '300.1.1.1', prefix: 33 }, { address: '10.0.0.01', prefix: 8 }],
      gateway: 'nope',
      method: 'bogus',
      dns: ['8.8.8.8', 'x'],
      never_default: false,
    })
    expect(bad.status).toBe(422)
    // Field order, as pydantic reports them; the address syntax, prefix range and methods are the schema's.
    expect(bad.body.detail.map((e: { loc: unknown[]; type: string }) => [e.type, ...e.loc])).toEqual([
      ['string_pattern_mismatch', 'body', 'ip_addresses', 0, 'address'],
      ['less_than_equal', 'body', 'ip_addresses', 0, 'prefix'],
      ['string_pattern_mismatch', 'body', 'ip_addresses', 1, 'address'],
      ['string_pattern_mismatch', 'body', 'gateway'],
      ['enum', 'body', 'method'],
      ['string_pattern_mismatch', 'body', 'dns', 1],
    ])
    expect(bad.body.detail[0].input).toBe('300.1.1.1')

    const manual = await server.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, { method: 'manual', ip_addresses: [] })
    expect(manual.status).toBe(422)
    expect(manual.body.detail).toEqual([
      { type: 'value_error', loc: ['body', 'ip_addresses'], msg: "Value error, method 'manual' needs at least one address", input: [], ctx: { error: "method 'manual' needs at least one address" } },
    ])

    const types = await server.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, { ip_addresses: [{ address: '10.0.0.1', prefix: 'x' }], never_default: 'maybe' })
    expect(types.status).toBe(422)
    expect(types.body.detail.map((e: { type: string }) => e.type)).toEqual(['int_parsing', 'bool_parsing'])

    const noPath = await server.call('POST', '/api/network/update_connection_profile', { method: 'auto' })
    expect(noPath.status).toBe(422)
    expect(noPath.body.detail[0]).toMatchObject({ type: 'missing', loc: ['query', 'path'] })

    // Nothing reached NetworkManager.
    expect((await showFields('-f', 'ipv4.method', 'connection', 'show', 'spare'))['ipv4.method']).toEqual(['auto'])
  })

  test('settings NetworkManager itself refuses are 422 with its reason, and nothing changes', async () => {
    const path = await profilePath('spare')
    const r = await server.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, { method: 'disabled', ip_addresses: [{ address: '10.1.2.3', prefix: 24 }] })
    expect(r.status).toBe(422)
    expect(r.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body'] })
    expect(r.body.detail[0].msg).toContain('NetworkManager refused the settings')
    expect((await showFields('-f', 'ipv4.method', 'connection', 'show', 'spare'))['ipv4.method']).toEqual(['auto'])
  })

  test('unknown profile paths and interfaces are 404', async () => {
    for (const path of ['/org/freedesktop/NetworkManager/Settings/999', 'nonsense', '/org/freedesktop/NetworkManager/Devices/1']) {
      const r = await server.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, { method: 'auto' })
      expect(r.status).toBe(404)
      expect(r.body.detail).toContain(path)
    }
    const spare = await profilePath('spare')
    const r = await server.call('POST', '/api/network/wired/activate_profile', { interface: 'wlan9', path: spare })
    expect(r.status).toBe(404)
    expect(r.body.detail).toContain('wlan9')
  })

  test('updating an inactive profile changes only its ipv4 setting, with no rollback', async () => {
    const path = await profilePath('spare')
    const ipv4 = { ip_addresses: [{ address: '10.88.0.5', prefix: 16 }], gateway: '10.88.0.1', method: 'manual', dns: ['9.9.9.9'], never_default: false }
    const r = await server.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, ipv4)
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ status: true, rollback_seconds: null })
    const s = await showFields('-f', 'ipv4.method,ipv4.addresses,ipv4.gateway,ipv4.dns,ipv4.never-default,ipv4.route-metric,802-3-ethernet.mtu,connection.autoconnect', 'connection', 'show', 'spare')
    expect(s).toMatchObject({
      'ipv4.method': ['manual'],
      'ipv4.addresses': ['10.88.0.5/16'],
      'ipv4.gateway': ['10.88.0.1'],
      'ipv4.dns': ['9.9.9.9'],
      'ipv4.never-default': ['no'],
      // kept
      'ipv4.route-metric': ['42'],
      '802-3-ethernet.mtu': ['1400'],
      'connection.autoconnect': ['no'],
    })
    const listed = (await server.call('GET', '/api/network/connection_profiles')).body.find((p: { id: string }) => p.id === 'spare')
    expect(listed.ipv4_settings).toEqual(ipv4)
  })

  test('updating the active profile changes the address in the namespace; a client heard from keeps it', async () => {
    const path = await profilePath('static0')
    const before = events.length
    const r = await server.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, {
      ip_addresses: [{ address: '10.77.0.9', prefix: 24 }],
      gateway: '10.77.0.254',
      method: 'manual',
      dns: ['1.1.1.1'],
      never_default: false,
    })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ status: true, rollback_seconds: ROLLBACK_SECONDS })
    await until('the new address on eth0', () => lab.ipv4('eth0'), (a) => a.join() === '10.77.0.9/24')
    // Until confirmed, the change lives in memory only: the keyfile still holds the old address.
    const keyfile = join(lab.dir, 'system-connections', 'static0.nmconnection')
    expect(readFileSync(keyfile, 'utf8')).toContain('address1=10.77.0.1/24')
    // A client is heard from (this very request), so the change is confirmed and written to disk.
    expect((await server.call('GET', '/api/network/wired/devices')).status).toBe(200)
    await until('the change to be confirmed', async () => (await server.call('GET', '/api/network/rollback')).body.pending, (p) => p === null)
    expect(readFileSync(keyfile, 'utf8')).toContain('address1=10.77.0.9/24')
    expect(events.slice(before).some((e) => (e.data as { rollback?: { outcome: string } }).rollback?.outcome === 'confirmed')).toBe(true)
    // Nothing must undo it: an absence takes a wait of time, past the rollback window.
    await sleep(ROLLBACK_SECONDS * 1000 + 700)
    expect(await lab.ipv4('eth0')).toEqual(['10.77.0.9/24'])
  })

  test('the rollback restores the old address when no client returns', async () => {
    const path = await profilePath('static0')
    const before = events.length
    const r = await server.call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, {
      ip_addresses: [{ address: '10.99.0.1', prefix: 8 }],
      method: 'manual',
    })
    expect(r.status).toBe(200)
    await until('the new address on eth0', () => lab.ipv4('eth0'), (a) => a.join() === '10.99.0.1/8')
    // No API call from here on: only the namespace is looked at.
    const restored = await until('the old address to come back', () => lab.ipv4('eth0'), (a) => a[0] === '10.77.0.1/24', ROLLBACK_SECONDS * 1000 + 15_000)
    expect(restored).toEqual(['10.77.0.1/24'])
    const rollback = events.slice(before).map((e) => (e.data as { rollback?: { outcome: string; detail: string } }).rollback).find(Boolean)
    expect(rollback?.outcome).toBe('rolled_back')
    expect(rollback?.detail).toContain('previous configuration was restored')
    expect((await showFields('-f', 'ipv4.addresses,ipv4.gateway', 'connection', 'show', 'static0'))).toMatchObject({ 'ipv4.addresses': ['10.77.0.1/24'], 'ipv4.gateway': ['10.77.0.254'] })
  })

  test('activate_profile is rolled back to the previous profile when no client returns', async () => {
    // spare with an address of its own (no DHCP server in the namespace), set behind the service's back.
    await lab.nmcli('connection', 'modify', 'spare', 'ipv4.method', 'manual', 'ipv4.addresses', '10.88.0.5/16')
    const spare = await profilePath('spare')
    const static0 = await profilePath('static0')
    const r = await server.call('POST', '/api/network/wired/activate_profile', { interface: 'eth0', path: spare })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ status: true, rollback_seconds: ROLLBACK_SECONDS })
    await until('spare to be up on eth0', () => lab.ipv4('eth0'), (a) => a.includes('10.88.0.5/16'))
    await until('static0 to come back on eth0', () => lab.ipv4('eth0'), (a) => a.join() === '10.77.0.1/24', ROLLBACK_SECONDS * 1000 + 15_000)
    const active = new Map((await rows('-f', 'DEVICE,DBUS-PATH', 'connection', 'show', '--active')).map(([dev, path]) => [dev, path]))
    expect(active.get('eth0')).toBe(static0)
  })

  test('network_changed events follow NetworkManager signals', async () => {
    // Over HTTP, as the UI sees them.
    const abort = new AbortController()
    const subscribed = server.ctx.events.subscribers
    const stream = await fetch(`${server.url}/api/events`, { signal: abort.signal, headers: FOLLOW_EVENTS })
    expect(stream.status).toBe(200)
    const reader = stream.body!.getReader()
    let seen = ''
    const sse = (async () => {
      for (;;) {
        const { value, done } = await reader.read()
        if (done) return
        seen += new TextDecoder().decode(value)
        if (/event: network_changed\ndata: .*"profiles"/.test(seen)) return
      }
    })()
    await until('the SSE client subscribed', async () => server.ctx.events.subscribers, (n) => n > subscribed)
    const before = events.length
    await lab.nmcli('connection', 'modify', 'spare', 'ipv4.dns', '9.9.9.10')
    await until('a profiles event', async () => events.slice(before), (es) => es.some((e) => (e.data as { reasons: string[] }).reasons.includes('profiles')), 5000)
    await Promise.race([sse, sleep(5000)])
    abort.abort()
    expect(seen).toMatch(/event: network_changed\ndata: \{"reasons":\[[^\]]*"profiles"/)
    await lab.nmcli('device', 'disconnect', 'eth1')
    await until('a device_state event', async () => events.slice(before), (es) => es.some((e) => (e.data as { reasons: string[] }).reasons.includes('device_state')), 5000)
    const eth1 = (await server.call('GET', '/api/network/wired/devices')).body.find((d: { interface: string }) => d.interface === 'eth1')
    expect(eth1).toMatchObject({ state: 30, is_active: false, active_profile_id: '', active_ip_configuration: null })
  })

  test('the service keeps exactly its two match rules on the bus', async () => {
    const backend = server.ctx.registry.get('network') as NetworkManagerBackend
    const matchRules = async () => {
      const [all] = (await lab.busCall('org.freedesktop.DBus.Debug.Stats', 'GetAllMatchRules')) as [Record<string, string[]>]
      return all[backend.bus.uniqueName!]!.length
    }
    expect(await matchRules()).toBe(MATCH_RULES.length)
    for (let i = 0; i < 50; i++) {
      await server.call('GET', '/api/network/wired/devices')
      await server.call('GET', '/api/network/connection_profiles')
    }
    expect(await matchRules()).toBe(MATCH_RULES.length)
  })

  test('NetworkManager stopped → 503 with a clear detail; started again → works by itself', async () => {
    await lab.stopNetworkManager()
    for (const [method, path, body] of [
      ['GET', '/api/network/wired/devices'],
      ['GET', '/api/network/connection_profiles'],
      ['POST', `/api/network/update_connection_profile?path=${encodeURIComponent('/org/freedesktop/NetworkManager/Settings/2')}`, { method: 'auto' }],
    ] as const) {
      const r = await server.call(method, path, body)
      expect(r.status).toBe(503)
      expect(r.body.detail).toContain('NetworkManager')
    }
    const health = await until('health to notice', async () => (await server.call('GET', '/api/health')).body.plugins.network, (h) => h.state === 'degraded')
    expect(health.detail).toContain('NetworkManager is not running')
    await lab.startNetworkManager()
    const back = await until('the devices route to answer again', () => server.call('GET', '/api/network/wired/devices'), (r) => r.status === 200 && r.body.length === 2)
    expect(back.body.map((d: { interface: string }) => d.interface).sort()).toEqual(['eth0', 'eth1'])
    expect((await server.call('GET', '/api/health')).body.plugins.network.state).toBe('ok')
    await until('a networkmanager_started event', async () => events, (es) => es.some((e) => (e.data as { reasons: string[] }).reasons.includes('networkmanager_started')), 5000)
  })
})

describe('without NetworkManager', () => {
  test('a service started with no system bus answers 503 on the network routes and nothing else is affected', async () => {
    const lonely = await startTestServer({ plugins: [createNetworkPlugin({ busAddress: `unix:path=${join(lab.dir, 'no-such-socket')}` })] })
    try {
      const r = await lonely.call('GET', '/api/network/wired/devices')
      expect(r.status).toBe(503)
      expect(r.body.detail).toContain('Cannot reach the system D-Bus')
      const health = await lonely.call('GET', '/api/health')
      expect(health.status).toBe(200)
      expect(health.body.plugins.network).toMatchObject({ state: 'degraded' })
    } finally {
      await lonely.stop()
    }
  })

  test('a service started while NetworkManager is down serves it as soon as it starts', async () => {
    await lab.stopNetworkManager()
    const early = await startTestServer({ plugins: [createNetworkPlugin({ busAddress: lab.busAddress })] })
    try {
      const r = await early.call('GET', '/api/network/connection_profiles')
      expect(r.status).toBe(503)
      expect(r.body.detail).toContain('NetworkManager is not running')
      await lab.startNetworkManager()
      const back = await until('profiles to be served', () => early.call('GET', '/api/network/connection_profiles'), (x) => x.status === 200)
      expect(back.body.map((p: { id: string }) => p.id).sort()).toEqual(['peer', 'spare', 'static0'])
    } finally {
      await early.stop()
    }
  })
})

describe('as an unprivileged user', () => {
  // The service as a user NetworkManager does not authorise (the lab runs it with auth-polkit=root-only,
  // as a vehicle with no polkit rule for that user): a separate process under setpriv, on the same bus.
  test('reads work; changes are 502 saying what to allow in polkit, and nothing changes', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'periscope-nobody-'))
    chownSync(dataDir, 65534, 65534)
    const port = freeTcpPort()
    const root = join(import.meta.dir, '../..')
    const service = Bun.spawn(
      ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--', process.execPath, 'run', join(root, 'core/main.ts'),
        '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--plugins', 'network', '--simulate', 'off', '--log-level', 'warn'],
      { cwd: root, env: { ...process.env, HOME: dataDir, DBUS_SYSTEM_BUS_ADDRESS: lab.busAddress }, stdout: 'ignore', stderr: 'pipe' },
    )
    try {
      const url = `http://127.0.0.1:${port}`
      const call = async (method: string, path: string, body?: unknown) => {
        const r = await fetch(url + path, { method, body: body === undefined ? undefined : JSON.stringify(body), headers: { 'content-type': 'application/json' } })
        return { status: r.status, body: (await r.json()) as any }
      }
      await until('the unprivileged service to answer', () => call('GET', '/api/network/connection_profiles').catch(() => ({ status: 0, body: null })), (r) => r.status === 200, 20_000)
      expect(Number(readFileSync(`/proc/${service.pid}/status`, 'utf8').match(/^Uid:\s+(\d+)/m)![1])).toBe(65534)
      const devices = await call('GET', '/api/network/wired/devices')
      expect(devices.status).toBe(200)
      expect(devices.body.map((d: { interface: string }) => d.interface).sort()).toEqual(['eth0', 'eth1'])

      const before = await showFields('-f', 'ipv4.method,ipv4.addresses', 'connection', 'show', 'spare')
      const path = await profilePath('spare')
      const update = await call('POST', `/api/network/update_connection_profile?path=${encodeURIComponent(path)}`, { method: 'manual', ip_addresses: [{ address: '10.99.0.1', prefix: 24 }] })
      expect(update.status).toBe(502)
      expect(update.body.detail).toContain('permission denied')
      expect(update.body.detail).toContain('polkit')
      expect(await showFields('-f', 'ipv4.method,ipv4.addresses', 'connection', 'show', 'spare')).toEqual(before)

      const activate = await call('POST', '/api/network/wired/activate_profile', { interface: 'eth0', path })
      expect(activate.status).toBe(502)
      expect(activate.body.detail).toContain('permission denied')
      expect((await rows('-f', 'NAME,DEVICE', 'connection', 'show', '--active')).find((r) => r[1] === 'eth0')?.[0]).toBe('static0')
    } finally {
      service.kill()
      await service.exited
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
