// Without gst-launch-1.0 the plugin provides no streamer (the cameras plugin then answers 503) and
// reports itself down with what to install.
import { expect, test } from 'bun:test'
import type { Config } from '../../core/config'
import { EventBus } from '../../core/events'
import { createLogger } from '../../core/log'
import { Registry } from '../../core/plugin'
import { SettingsStore } from '../../core/store'
import plugin from '../../plugins/gstreamer'
import { tempDir } from './gstreamer.helpers'

test('no gst-launch-1.0 on PATH: no streamer, health down with the fix', async () => {
  const dataDir = tempDir()
  const registry = new Registry()
  const ctx = { config: { dataDir } as Config, registry, events: new EventBus(), store: SettingsStore.open(dataDir), log: createLogger('error'), activity: { lastRequestAt: 0 } }
  const path = process.env.PATH
  process.env.PATH = '/nonexistent'
  try {
    await plugin.setup(ctx)
  } finally {
    process.env.PATH = path
  }
  expect(registry.get('streamer')).toBeUndefined()
  expect(plugin.health?.()).toEqual({ state: 'down', detail: expect.stringContaining('gst-launch-1.0 not found: install gstreamer1.0-tools') })
  expect(() => registry.require('streamer')).toThrow()
  await plugin.stop?.()
})
