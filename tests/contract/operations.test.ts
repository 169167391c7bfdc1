// Spec operations 7–13 at the contract level, with no NetworkManager and no GStreamer: the network
// operations validate first and then answer 503; the recordings operations work on real files.
// (Their real backends are proven in tests/integration.)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TestServer } from '../helpers'
import { startContractServer } from './setup'

let s: TestServer
const previousBus = process.env.DBUS_SYSTEM_BUS_ADDRESS
beforeAll(async () => {
  // Whatever this machine runs, the contract instance must find no system bus.
  process.env.DBUS_SYSTEM_BUS_ADDRESS = 'unix:path=/nonexistent/periscope-contract-bus'
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'recordings', 'network'] })
})
afterAll(async () => {
  await s.stop()
  if (previousBus === undefined) delete process.env.DBUS_SYSTEM_BUS_ADDRESS
  else process.env.DBUS_SYSTEM_BUS_ADDRESS = previousBus
})

const IP = { ip_addresses: [{ address: '192.168.2.2', prefix: 24 }], gateway: '192.168.2.1', method: 'manual', dns: ['1.1.1.1'], never_default: false }

describe('network operations without NetworkManager', () => {
  test('health says degraded and why', async () => {
    const { body } = await s.call('GET', '/api/health')
    expect(body.status).toBe('degraded')
    expect(body.plugins.network.state).toBe('degraded')
    expect(body.plugins.cameras.state).toBe('ok')
  })

  test('7, 8: 503 with a detail that names the system bus', async () => {
    for (const path of ['/api/network/wired/devices', '/api/network/connection_profiles']) {
      const r = await s.call('GET', path)
      expect(r.status).toBe(503)
      expect(r.body.detail).toContain('D-Bus')
    }
  })

  test('9: the query parameter and body are validated before the backend is asked', async () => {
    const noPath = await s.call('POST', '/api/network/update_connection_profile', IP)
    expect(noPath).toMatchObject({ status: 422, body: { detail: [{ type: 'missing', loc: ['query', 'path'], msg: 'Field required', input: null }] } })
    const both = await s.call('POST', '/api/network/update_connection_profile', { ...IP, ip_addresses: [{ address: '192.168.2.2', prefix: 'x' }] })
    expect(both.body.detail.map((e: any) => e.loc)).toEqual([
      ['query', 'path'],
      ['body', 'ip_addresses', 0, 'prefix'],
    ])
    const valid = await s.call('POST', '/api/network/update_connection_profile?path=/org/freedesktop/NetworkManager/Settings/1', IP)
    expect(valid.status).toBe(503)
  })
})

describe('recordings operations on real files', () => {
  test('list, rename, delete, zip/prepare with their refusals', async () => {
    const dir = s.ctx.config.recordingsDir
    writeFileSync(join(dir, 'dive_2026-01-01_10-00-00.mkv'), Buffer.alloc(2048, 1))
    writeFileSync(join(dir, 'notes.txt'), 'not a recording')
    const list = await s.call('GET', '/api/recordings')
    expect(list.status).toBe(200)
    expect(list.body.map((r: any) => r.name)).toEqual(['dive_2026-01-01_10-00-00'])
    const [rec] = list.body
    expect(Object.keys(rec).filter((k) => ['path', 'name', 'format', 'duration', 'size', 'created'].includes(k)).sort()).toEqual(['created', 'duration', 'format', 'name', 'path', 'size'])
    expect(rec).toMatchObject({ path: join(dir, 'dive_2026-01-01_10-00-00.mkv'), format: 'mkv', size: '0.00 MB' })
    expect(rec.duration).toMatch(/^\d\d:\d\d:\d\d$/)
    expect(rec.created).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/)

    expect((await s.call('PATCH', '/api/recordings/missing.mkv/x.mkv')).status).toBe(404)
    expect((await s.call('PATCH', '/api/recordings/dive_2026-01-01_10-00-00.mkv/renamed.mp4')).status).toBe(422)
    const renamed = await s.call('PATCH', '/api/recordings/dive_2026-01-01_10-00-00.mkv/wreck.mkv')
    expect(renamed).toMatchObject({ status: 200, body: [{ name: 'wreck', format: 'mkv' }] })

    const empty = await s.call('POST', '/api/recordings/zip/prepare', [])
    expect(empty.status).toBe(422)
    expect(empty.body.detail[0].type).toBe('too_short')
    expect(await s.call('POST', '/api/recordings/zip/prepare', ['wreck', 'ghost'])).toMatchObject({ status: 404, body: { detail: expect.stringContaining('ghost') } })
    const job = await s.call('POST', '/api/recordings/zip/prepare', ['wreck'])
    expect(job.status).toBe(200)
    expect(typeof job.body.token).toBe('string')

    expect(await s.call('DELETE', '/api/recordings/wreck.mkv')).toMatchObject({ status: 200, body: [] })
    expect((await s.call('DELETE', '/api/recordings/wreck.mkv')).status).toBe(404)
  })
})
