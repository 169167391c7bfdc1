// Where the preferences live and what they are when never saved: one place for every plugin that reads
// them (preferences serves them, cameras takes the default stream host and port, the frame sync its offset).
import type { Static } from '@sinclair/typebox'
import { PreferencesModel } from './schemas'
import type { SettingsStore } from './store'
import { check } from './validation'

export type Preferences = Static<typeof PreferencesModel>

const NS = 'preferences'
const KEY = 'current'

export function readPreferences(store: SettingsStore): Preferences {
  return store.get<Preferences>(NS, KEY) ?? check<Preferences>(PreferencesModel, {}, [])
}

export function savePreferences(store: SettingsStore, preferences: Preferences): void {
  store.set(NS, KEY, preferences)
}
