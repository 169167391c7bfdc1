// Without gst-launch-1.0 the plugin provides no streamer (the cameras plugin then answers 503) and
// reports itself down with what to install.
import { expect, test } from 'bun:test'
import type { Config } from '../../core/config'
import { EventBus } from '../../core/events'
import { RequestWatchers } from '../../core/http/request-log'
import { Refusals } from '../../core/http/refusals'
import { createLogger } from '../../core/log'
import { mountPlugin, type MountedPlugin } from '../../core/lifecycle'
import { Registry } from '../../core/plugin'
import { SettingsStore } from '../../core/store'
import plugin from '../../plugins/gstreamer'
import { startTestServer } from '../helpers'
import { simulatedJob, tempDir, waitFor } from './gstreamer.helpers'

test('no gst-launch-1.0 on PATH: no streamer, health down with the fix', async () => {
  const dataDir = tempDir()
  const registry = new Registry()
  const ctx = { config: { dataDir } as Config, registry, events: new EventBus(), store: SettingsStore.open(dataDir), log: createLogger('error'), activity: { lastRequestAt: 0 }, requests: new RequestWatchers(), refusals: new Refusals(), handle: async () => new Response(null, { status: 404 }) }
  const path = process.env.PATH
  process.env.PATH = '/nonexistent'
  let instance: MountedPlugin
  try {
    instance = await mountPlugin(plugin, ctx)
  } finally {
    process.env.PATH = path
  }
  expect(registry.get('streamer')).toBeUndefined()
  expect(instance.health?.()).toEqual({ state: 'down', detail: expect.stringContaining('gst-launch-1.0 not found: install gstreamer1.0-tools') })
  expect(() => registry.require('streamer')).toThrow()
})

test('two services in one process each have their own streamer; stopping one leaves the other streaming', async () => {
  const a = await startTestServer({ plugins: [plugin] })
  const b = await startTestServer({ plugins: [plugin] })
  try {
    const sa = a.ctx.registry.require('streamer')
    const sb = b.ctx.registry.require('streamer')
    expect(sa).not.toBe(sb)
    const job = simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP' })
    await sb.start(job)
    await a.stop()
    await waitFor('running in b', () => sb.status(job.bus_info).state === 'running', 15_000)
    const health = (await b.call('GET', '/api/health')).body
    expect(JSON.stringify(health)).toContain('running')
  } finally {
    await a.stop()
    await b.stop()
  }
}, 30_000)
