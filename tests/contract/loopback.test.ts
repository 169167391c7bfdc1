// A demo must not send video off the machine: while cameras are simulated, the default stream host is
// loopback (core/preferences.ts), so a first-seen device's endpoint and a restart_stream stay on this
// machine; with real cameras the anchor's default (192.168.2.1, the pilot's station) stays. And no test,
// bench, example or script names a stream endpoint outside loopback.
import { describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join, relative } from 'node:path'
import { loadPlugin } from '../../core/loader'
import { definePlugin } from '../../core/plugin'
import { MockCameraBackend } from '../../drivers/mock/backend'
import { PRESETS } from '../../drivers/mock/cameras'
import { startTestServer, until } from '../helpers'
import { device, startContractServer, WEBCAM } from './setup'

const isLoopback = (host: string) => /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === '::1' || host === 'localhost'

describe('simulated cameras stream to loopback by default', () => {
  test.each(['default', 'fleet'])('preset %s: the default preferences and every device endpoint are loopback', async (preset) => {
    const s = await startContractServer({ config: { simulate: preset } })
    try {
      const prefs = await s.call('GET', '/api/preferences')
      expect(prefs.status).toBe(200)
      expect(prefs.body.default_stream).toEqual({ host: '127.0.0.1', port: 5600 })
      const { body: devices } = await s.call('GET', '/api/devices')
      expect(devices.length).toBeGreaterThan(0)
      const endpoints = devices.flatMap((d: any) => d.stream.endpoints as { host: string; port: number }[])
      expect(endpoints.length).toBe(devices.length) // one each on first sight
      expect(endpoints.filter((e: { host: string }) => !isLoopback(e.host))).toEqual([])
    } finally {
      await s.stop()
    }
  })

  test('saved preferences win: a device first seen after a save takes the saved host and port', async () => {
    const s = await startContractServer()
    try {
      const saved = { host: '127.0.0.9', port: 7000 }
      expect((await s.call('POST', '/api/preferences/save_preferences', { default_stream: saved })).status).toBe(200)
      expect((await s.call('GET', '/api/preferences')).body.default_stream).toEqual(saved)
      // The webcam has no serial, so its settings follow its port: on a new port it is seen for the first time.
      expect((await s.call('POST', '/api/mock/unplug', { bus_info: WEBCAM })).status).toBe(200)
      expect((await s.call('POST', '/api/mock/plug', { bus_info: WEBCAM, new_bus_info: 'usb-0000:00:14.0-9' })).status).toBe(200)
      const moved: any = await until('the webcam on its new port', () => device(s, 'usb-0000:00:14.0-9'), Boolean)
      expect(moved.stream.endpoints).toEqual([saved])
    } finally {
      await s.stop()
    }
  })
})

test("with real cameras the default stays the anchor's 192.168.2.1 (nothing streams: no streamer is loaded)", async () => {
  // The simulated cameras' data behind a backend that does not call itself simulated, as the v4l2 backend
  // on a vehicle; without the gstreamer plugin there is no streamer, so no packet can leave.
  class VehicleCameras extends MockCameraBackend {
    override readonly simulated = false
  }
  const vehicle = definePlugin({ name: 'vehicle-cameras', setup: ({ registry }) => (registry.addCameraBackend(new VehicleCameras(PRESETS.single!), 'vehicle-cameras'), new Elysia({ name: 'periscope:vehicle-cameras' })) })
  const s = await startTestServer({ plugins: [vehicle, ...(await Promise.all(['cameras', 'preferences'].map(loadPlugin)))], config: { simulate: null } })
  try {
    expect(s.ctx.registry.get('streamer')).toBeUndefined()
    expect((await s.call('GET', '/api/preferences')).body.default_stream).toEqual({ host: '192.168.2.1', port: 5600 })
    const [device] = (await s.call('GET', '/api/devices')).body
    expect(device.stream).toMatchObject({ endpoints: [{ host: '192.168.2.1', port: 5600 }], enabled: false })
    // A save that leaves default_stream out takes the same default.
    expect((await s.call('POST', '/api/preferences/save_preferences', { suggest_host: false })).status).toBe(200)
    expect((await s.call('GET', '/api/preferences')).body.default_stream).toEqual({ host: '192.168.2.1', port: 5600 })
  } finally {
    await s.stop()
  }
})

test('no test, bench, example or script names a stream endpoint outside loopback', () => {
  // Literal endpoints only (`host: '…'`, `host=…`, `clients=…`, SDP `c=IN IP4 …`): cheap, and what a
  // copied command line or fixture would carry. Network namespaces' addresses (tests/integration/nm,
  // network tests) are interface addresses, never in these forms.
  const root = join(import.meta.dir, '../..')
  const forms = [/\bhost\s*[:=]\s*['"`]?([0-9a-fA-F.:]+\.[0-9.]+|[0-9a-fA-F:]*::[0-9a-fA-F:]*)/g, /\bclients=([^\s'"`]+)/g, /\bc=IN IP4 ([0-9.]+)/g]
  const files: string[] = []
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name)
      if (name === 'node_modules' || name.startsWith('.')) continue
      if (statSync(path).isDirectory()) walk(path)
      else if (/\.(ts|js|mjs|sh|py|md|service|toml|json)$/.test(name)) files.push(path)
    }
  }
  for (const dir of ['tests', 'bench', 'examples', 'scripts']) walk(join(root, dir))
  expect(files.length).toBeGreaterThan(20)
  const offenders: string[] = []
  for (const file of files) {
    if (file === import.meta.path) continue
    readFileSync(file, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        // A model's default that nothing streams to (the FastAPI reference mirrors the anchor) says so on its line.
        if (line.includes('loopback-guard: not an endpoint')) return
        for (const form of forms) {
          for (const m of line.matchAll(form)) {
            const hosts = m[1]!.split(',').map((c) => c.replace(/:\d+$/, ''))
            for (const host of hosts) if (!isLoopback(host)) offenders.push(`${relative(root, file)}:${i + 1}: ${host}`)
          }
        }
      })
  }
  expect(offenders).toEqual([])
})
