// The one plugin shape (core/plugin.ts, run by core/lifecycle.ts): setup() returns a named Elysia
// instance and declares its lifecycle on the context; the plugin that provides a backend starts it,
// before the plugins that use it, and stops it after them; state is per app instance.
import { afterEach, describe, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { createApp } from '../../core/app'
import { loadConfig } from '../../core/config'
import { mountPlugin } from '../../core/lifecycle'
import { loadPlugin } from '../../core/loader'
import { createLogger } from '../../core/log'
import { definePlugin, Registry, type AppContext, type PeriscopePlugin } from '../../core/plugin'
import { SettingsStore } from '../../core/store'
import { EventBus } from '../../core/events'
import { RequestWatchers } from '../../core/http/request-log'
import { Refusals } from '../../core/http/refusals'
import { MockCameraBackend } from '../../drivers/mock/backend'
import { PRESETS } from '../../drivers/mock/cameras'
import { startTestServer, tempDir, type TestServer } from '../helpers'

const ACME = join(import.meta.dir, '..', '..', 'examples', 'acme-plugin.ts')
const RING_CAM = 'usb-0000:00:14.0-5' // the simulated Acme RingCam the example plugin declares, after the default preset's four

const servers: TestServer[] = []
const contexts: AppContext[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.stop()))
  for (const ctx of contexts.splice(0)) {
    ctx.store.close()
    rmSync(ctx.config.dataDir, { recursive: true, force: true })
  }
})

function appContext(): AppContext {
  const dataDir = tempDir()
  const config = loadConfig([], {}, { host: '127.0.0.1', port: 0, dataDir, recordingsDir: join(dataDir, 'recordings'), simulate: null, logLevel: 'error' })
  const ctx = { config, registry: new Registry(), events: new EventBus(), store: SettingsStore.open(dataDir), log: createLogger('error', {}, () => {}), activity: { lastRequestAt: 0 }, requests: new RequestWatchers(), refusals: new Refusals(), handle: async () => new Response(null, { status: 404 }) }
  contexts.push(ctx)
  return ctx
}

describe('the shape', () => {
  test('setup() must return its routes as new Elysia({ name: "periscope:<name>" }); the old shapes are refused, naming the fix', async () => {
    const shapes: [string, () => unknown][] = [
      ['nothing', () => undefined],
      ['a { routes, start } object', () => ({ routes: new Elysia({ name: 'periscope:old' }), start() {} })],
      ['an unnamed Elysia', () => new Elysia()],
      ["another plugin's name", () => new Elysia({ name: 'periscope:cameras' })],
    ]
    for (const [what, setup] of shapes) {
      const plugin = { name: 'old', setup } as unknown as PeriscopePlugin
      const refused = await mountPlugin(plugin, appContext()).then(() => null, (e: Error) => e.message)
      expect({ what, refused }).toEqual({ what, refused: "plugin 'old': setup() must return its routes as new Elysia({ name: 'periscope:old' }) (empty when it has none)" })
    }
  })

  test('routes made with another copy of Elysia (a plugin that bundled its own) are refused with a sentence saying so, not dropped', async () => {
    const other = await import(Bun.resolveSync('elysia', import.meta.dir) + '?another-copy')
    const plugin = definePlugin({ name: 'bundled', setup: () => new other.Elysia({ name: 'periscope:bundled' }).get('/api/bundled', () => 'hi') })
    const refused = await mountPlugin(plugin, appContext()).then(() => null, (e: Error) => e.message)
    expect(refused).toBe("plugin 'bundled': its routes are made with another copy of Elysia (bundled into the plugin?); import Elysia from 'periscope/plugin' and leave it out of the bundle")
  })

  test('a lifecycle is declared once', async () => {
    const twice = definePlugin({
      name: 'twice',
      setup({ lifecycle }) {
        lifecycle({})
        lifecycle({})
        return new Elysia({ name: 'periscope:twice' })
      },
    })
    await expect(mountPlugin(twice, appContext())).rejects.toThrow("plugin 'twice' declared its lifecycle twice")
  })

  test('a plugin without a lifecycle is ok; one whose start() fails is down with why, and the others start and serve', async () => {
    const broken = definePlugin({
      name: 'broken',
      setup({ lifecycle }) {
        lifecycle({
          start() {
            throw new Error('no such board')
          },
        })
        return new Elysia({ name: 'periscope:broken' })
      },
    })
    const s = await startTestServer({ plugins: [broken, await loadPlugin('preferences'), await loadPlugin(ACME)] })
    servers.push(s)
    const { body } = await s.call('GET', '/api/health')
    expect(body.plugins).toEqual({ broken: { state: 'down', detail: 'no such board' }, preferences: { state: 'ok' }, acme: { state: 'ok', lights_on: 0 } })
    expect(body.status).toBe('degraded')
    expect((await s.call('GET', '/api/preferences')).status).toBe(200)
    expect(s.logs).toContainEqual(expect.objectContaining({ level: 'error', msg: 'plugin failed to start', plugin: 'broken' }))
  })
})

describe('backends have one owner', () => {
  /** A camera backend provider that logs what happens to its backend, as the v4l2 plugin owns its own. */
  function provider(log: string[]) {
    return definePlugin({
      name: 'provider',
      setup({ registry, lifecycle }) {
        const backend = new MockCameraBackend(PRESETS.single!)
        const list = backend.list.bind(backend)
        backend.list = () => (log.push('backend listed'), list())
        // Methods a consumer could call if it still started camera backends itself.
        Object.assign(backend, { start: () => log.push('backend started by a consumer'), stop: () => log.push('backend stopped by a consumer') })
        registry.addCameraBackend(backend, 'provider')
        lifecycle({ start: () => void log.push('provider start'), stop: () => void log.push('provider stop') })
        return new Elysia({ name: 'periscope:provider' })
      },
    })
  }
  const consumer = (log: string[]) =>
    definePlugin({
      name: 'consumer',
      setup({ lifecycle }) {
        lifecycle({ start: () => void log.push('consumer start'), stop: () => void log.push('consumer stop') })
        return new Elysia({ name: 'periscope:consumer' })
      },
    })

  test('listed after its users, the provider still starts first and stops last; the cameras plugin lists its backend after that start, and never starts or stops it', async () => {
    const log: string[] = []
    const s = await startTestServer({ plugins: [consumer(log), await loadPlugin('cameras'), provider(log)] })
    expect(log[0]).toBe('provider start')
    expect(log.slice(1)).toContain('consumer start')
    expect(log.slice(1)).toContain('backend listed')
    expect(log.filter((line) => line.includes('by a consumer'))).toEqual([])
    expect((await s.call('GET', '/api/devices')).body).toHaveLength(1)
    // Health keeps the order the plugins were given.
    expect(Object.keys((await s.call('GET', '/api/health')).body.plugins)).toEqual(['consumer', 'cameras', 'provider'])
    log.length = 0
    await s.stop()
    expect(log).toEqual(['consumer stop', 'provider stop'])
  })

  test('state is per app instance: the v4l2 plugin makes a backend for each app', async () => {
    const v4l2 = await loadPlugin('v4l2')
    const a = appContext()
    const b = appContext()
    await mountPlugin(v4l2, a)
    await mountPlugin(v4l2, b)
    expect(a.registry.cameraBackends()).toHaveLength(1)
    expect(b.registry.cameraBackends()).toHaveLength(1)
    expect(a.registry.cameraBackends()[0]).not.toBe(b.registry.cameraBackends()[0])
  })

  test('state is per app instance: the example plugin of two services keeps two sets of ring lights', async () => {
    const acme = await loadPlugin(ACME)
    const plugins = await Promise.all(['mock', 'cameras', 'dwe'].map(loadPlugin))
    const a = await startTestServer({ plugins: [...plugins, acme], config: { simulate: 'default' } })
    servers.push(a)
    const b = await startTestServer({ plugins: [...plugins, acme], config: { simulate: 'default' } })
    servers.push(b)
    expect(await a.call('POST', '/api/devices/set_uvc_control', { bus_info: RING_CAM, control_id: -100, value: 40 })).toMatchObject({ status: 200, body: { value: 40 } })
    expect((await a.call('GET', '/api/acme/ring_light')).body).toEqual({ [RING_CAM]: 40 })
    expect((await b.call('GET', '/api/acme/ring_light')).body).toEqual({})
    expect((await a.call('GET', '/api/health')).body.plugins.acme).toEqual({ state: 'ok', lights_on: 1 })
    expect((await b.call('GET', '/api/health')).body.plugins.acme).toEqual({ state: 'ok', lights_on: 0 })
  })
})

test('createApp composes every plugin with .use(): its routes answer, in the order given', async () => {
  const app = await createApp(appContext().config, [await loadPlugin('preferences'), await loadPlugin(ACME)], createLogger('error', {}, () => {}))
  try {
    const paths = app.app.routes.map((route) => route.path)
    expect(paths.indexOf('/api/preferences')).toBeLessThan(paths.indexOf('/api/acme/ring_light'))
    expect((await app.app.handle(new Request('http://periscope.test/api/acme/ring_light'))).status).toBe(200)
  } finally {
    await app.stop()
  }
})
