// The network driver's pure parts: ipv4 conversions, signal classification and the rollback guard's
// rules (the integration test shows the same guard against a real NetworkManager).
import { describe, expect, test } from 'bun:test'
import { Variant } from '../../drivers/networkmanager/bus'
import { classify } from '../../drivers/networkmanager/backend'
import { dnsToDotted, dottedToDns, ipv4FromSettings, ipv4Section, isIpv4 } from '../../drivers/networkmanager/ipv4'
import { NetworkError } from '../../drivers/networkmanager/errors'
import { RollbackGuard, type RollbackEvent } from '../../drivers/networkmanager/rollback'

describe('ipv4 conversions', () => {
  test('dotted quads are strict', () => {
    for (const ok of ['0.0.0.0', '10.0.0.1', '255.255.255.255', '192.168.2.1']) expect(isIpv4(ok)).toBe(true)
    for (const bad of ['256.0.0.1', '10.0.0', '10.0.0.1.2', '010.0.0.1', ' 10.0.0.1', '10.0.0.1/24', '', 'a.b.c.d', '1e1.0.0.1']) expect(isIpv4(bad)).toBe(false)
  })

  test('ipv4.dns integers are network byte order read on a little-endian host', () => {
    // 8.8.4.4 as NetworkManager reports it on x86-64 and aarch64.
    expect(dottedToDns('8.8.4.4')).toBe(0x04040808)
    expect(dnsToDotted(0x04040808)).toBe('8.8.4.4')
    for (const a of ['1.2.3.4', '255.0.128.7', '0.0.0.0', '255.255.255.255']) expect(dnsToDotted(dottedToDns(a))).toBe(a)
  })

  test('a profile section reads from address-data, with defaults for what is absent', () => {
    expect(ipv4FromSettings({ method: 'manual', 'address-data': [{ address: '10.0.0.2', prefix: 24 }], addresses: [[1, 2, 3]], gateway: '10.0.0.1', dns: [0x04040808], 'never-default': true })).toEqual({
      ip_addresses: [{ address: '10.0.0.2', prefix: 24 }],
      gateway: '10.0.0.1',
      method: 'manual',
      dns: ['8.8.4.4'],
      never_default: true,
    })
    expect(ipv4FromSettings(undefined)).toEqual({ ip_addresses: [], gateway: '', method: 'auto', dns: [], never_default: false })
  })

  test('a new section keeps unrelated keys, drops the deprecated addresses and omits an empty gateway', () => {
    const old = { 'route-metric': new Variant('x', 42n), addresses: new Variant('aau', [[1, 24, 0]]), gateway: new Variant('s', '10.0.0.1'), 'dhcp-timeout': new Variant('i', 5) }
    const s = ipv4Section(old, { ip_addresses: [{ address: '10.9.0.1', prefix: 16 }], gateway: '', method: 'manual', dns: ['1.1.1.1'], never_default: false }) as Record<string, Variant>
    expect(Object.keys(s).sort()).toEqual(['address-data', 'dhcp-timeout', 'dns', 'method', 'never-default', 'route-metric'])
    expect(s['route-metric']).toBe(old['route-metric'])
    expect(s.method!.value).toBe('manual')
    expect(s['address-data']!.signature).toBe('aa{sv}')
    expect((s['address-data']!.value as Record<string, Variant>[])[0]!.prefix!.value).toBe(16)
    expect(s.dns!.value).toEqual([dottedToDns('1.1.1.1')])
  })
})

describe('signal classification', () => {
  const msg = (m: Partial<{ path: string; interface: string; member: string; body: unknown[] }>) => m as never
  test('relevant signals name their change, noise is dropped', () => {
    expect(classify(msg({ interface: 'org.freedesktop.DBus', member: 'NameOwnerChanged', body: ['org.freedesktop.NetworkManager', '', ':1.5'] }))).toBe('networkmanager_started')
    expect(classify(msg({ interface: 'org.freedesktop.DBus', member: 'NameOwnerChanged', body: ['org.freedesktop.NetworkManager', ':1.5', ''] }))).toBe('networkmanager_stopped')
    expect(classify(msg({ path: '/org/freedesktop/NetworkManager/Devices/2', interface: 'org.freedesktop.NetworkManager.Device', member: 'StateChanged', body: [100, 70, 0] }))).toBe('device_state')
    expect(classify(msg({ path: '/org/freedesktop/NetworkManager/Settings', interface: 'org.freedesktop.NetworkManager.Settings', member: 'NewConnection', body: ['/x'] }))).toBe('profiles')
    expect(classify(msg({ path: '/org/freedesktop/NetworkManager/Settings/3', interface: 'org.freedesktop.NetworkManager.Settings.Connection', member: 'Updated', body: [] }))).toBe('profiles')
    expect(classify(msg({ path: '/org/freedesktop/NetworkManager/IP4Config/4', interface: 'org.freedesktop.DBus.Properties', member: 'PropertiesChanged', body: ['org.freedesktop.NetworkManager.IP4Config', {}, []] }))).toBe('ip_config')
    expect(classify(msg({ path: '/org/freedesktop/NetworkManager/Devices/2', interface: 'org.freedesktop.DBus.Properties', member: 'PropertiesChanged', body: ['org.freedesktop.NetworkManager.Device.Statistics', { RxBytes: 1 }, []] }))).toBe(null)
    expect(classify(msg({ path: '/org/freedesktop/NetworkManager/IP6Config/4', interface: 'org.freedesktop.DBus.Properties', member: 'PropertiesChanged', body: ['org.freedesktop.NetworkManager.IP6Config', {}, []] }))).toBe(null)
  })
})

describe('rollback guard', () => {
  const waitFor = async (check: () => boolean, timeoutMs = 5000) => {
    const deadline = Date.now() + timeoutMs
    while (!check()) {
      if (Date.now() > deadline) throw new Error('timed out')
      await Bun.sleep(10)
    }
  }
  const setup = (seconds = 0.3) => {
    let lastActivity = 0
    const events: RollbackEvent[] = []
    const log: string[] = []
    const guard = new RollbackGuard({ seconds, lastActivity: () => lastActivity, onEvent: (e) => events.push(e), tickMs: 20, retryMs: 50 })
    const change = (name: string, fail = { restore: 0, confirm: 0 }) => ({
      description: name,
      interfaces: ['eth0'],
      restore: async () => {
        if (fail.restore-- > 0) throw new Error('NetworkManager is not available')
        log.push(`restore ${name}`)
      },
      confirm: async () => {
        if (fail.confirm-- > 0) throw new Error('NetworkManager is not available')
        log.push(`confirm ${name}`)
      },
    })
    return { guard, events, log, change, hear: () => (lastActivity = Date.now() + 1) }
  }

  test('no client within the window → the previous configuration is restored, and the event says so', async () => {
    const { guard, events, log, change } = setup()
    const armed = Date.now()
    guard.arm(change('a'))
    expect(guard.pending()).toMatchObject({ description: 'a', phase: 'watching' })
    await waitFor(() => log.length > 0)
    expect(Date.now() - armed).toBeGreaterThanOrEqual(300)
    expect(log).toEqual(['restore a'])
    expect(events.map((e) => e.outcome)).toEqual(['rolled_back'])
    expect(events[0]!.detail).toContain('the previous configuration was restored')
    expect(guard.pending()).toBeNull()
  })

  test('a client heard from confirms the change early', async () => {
    const { guard, events, log, change, hear } = setup(5)
    guard.arm(change('a'))
    hear()
    await waitFor(() => log.length > 0)
    expect(log).toEqual(['confirm a'])
    expect(events.map((e) => e.outcome)).toEqual(['confirmed'])
  })

  test('a restore that fails is retried and reported each time', async () => {
    const { guard, events, log, change } = setup(0.05)
    guard.arm(change('a', { restore: 2, confirm: 0 }))
    await waitFor(() => log.length > 0)
    expect(log).toEqual(['restore a'])
    // Failures are reported once, not at every retry.
    expect(events.map((e) => e.outcome)).toEqual(['rollback_failed', 'rolled_back'])
  })

  test('a restore whose profile is gone gives up and says so', async () => {
    const { guard, events, change } = setup(0.05)
    guard.arm({ ...change('a'), restore: async () => Promise.reject(new NetworkError('not_found', 'No connection profile at /x')) })
    await waitFor(() => events.length > 0)
    expect(events[0]).toMatchObject({ outcome: 'rollback_failed' })
    expect(events[0]!.detail).toContain('giving up')
    expect(guard.pending()).toBeNull()
  })

  test('a second change first settles the first; one that cannot be settled refuses the second', async () => {
    const { guard, log, change, hear } = setup(5)
    guard.arm(change('a'))
    hear()
    await guard.ready()
    expect(log).toEqual(['confirm a'])
    guard.arm(change('b', { restore: 0, confirm: 5 }))
    hear()
    await expect(guard.ready()).rejects.toThrow('still being confirmed')
    await guard.stop()
  })

  test('stopping the service with an unconfirmed change rolls it back', async () => {
    const { guard, log, change } = setup(60)
    guard.arm(change('a'))
    await guard.stop()
    expect(log).toEqual(['restore a'])
  })
})
