// Where the preferences live and what they are when never saved: one place for every plugin that reads
// them (preferences serves them, cameras takes the default stream host and port, the frame sync its offset).
import type { Static } from '@sinclair/typebox'
import type { Registry } from './plugin'
import { PreferencesModel } from './schemas'
import type { SettingsStore } from './store'
import { check } from './validation'

export type Preferences = Static<typeof PreferencesModel>

const NS = 'preferences'
const KEY = 'current'

/**
 * Where streams go by default while the cameras are simulated. The anchor's default (192.168.2.1, the
 * pilot's station on a vehicle's tether) would, on a laptop with a default route, send a demo's video
 * to whatever private address answers there.
 */
export const SIMULATED_STREAM_HOST = '127.0.0.1'

/** True when any camera backend is simulated (the mock plugin: --simulate, a demo, a test). */
export function simulatedCameras(registry: Registry): boolean {
  return registry.cameraBackends().some((backend) => backend.simulated === true)
}

/** The preferences of this machine when never saved: the anchor's, with a loopback stream host while cameras are simulated. */
export function defaultPreferences(registry: Registry): Preferences {
  const defaults = check<Preferences>(PreferencesModel, {}, [])
  if (simulatedCameras(registry)) defaults.default_stream = { ...defaults.default_stream, host: SIMULATED_STREAM_HOST }
  return defaults
}

/** The saved preferences, else the defaults. */
export function readPreferences(store: SettingsStore, registry: Registry): Preferences {
  return store.get<Preferences>(NS, KEY) ?? defaultPreferences(registry)
}

export function savePreferences(store: SettingsStore, preferences: Preferences): void {
  store.set(NS, KEY, preferences)
}
