// GET /api/health: version, uptime, the settings store, every plugin's state and who provides which backend.
import { Elysia } from 'elysia'
import { docs } from '../openapi'
import type { PluginHealth, Registry } from '../plugin'
import type { SettingsStore } from '../store'
import { VERSION } from '../version'

export interface HealthSources {
  store: SettingsStore
  registry: Registry
  /** Each plugin's health, by name, in the order the plugins were given. */
  plugins(): Record<string, PluginHealth>
}

export function health({ store, registry, plugins }: HealthSources) {
  const startedAt = Date.now()
  return new Elysia({ name: 'periscope:health' }).get(
    '/api/health',
    () => {
      const states = plugins()
      const settings: PluginHealth = store.health()
      return {
        // Degraded as soon as one plugin is not fine (NetworkManager away, a stream failing, …) or a
        // setting cannot be saved (a full card).
        status: settings.state === 'ok' && Object.values(states).every((h) => h.state === 'ok') ? 'ok' : 'degraded',
        version: VERSION,
        uptime_s: Math.round((Date.now() - startedAt) / 1000),
        settings,
        plugins: states,
        backends: registry.describe(),
      }
    },
    { ...docs({ tag: 'system', summary: 'Version, uptime, and the state of every plugin and backend' }) },
  )
}
