// Preferences: saved whole, read back, and announced (the frame-sync module re-sends on change).
import { Elysia } from 'elysia'
import { callerAddress } from '../../core/front'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { readPreferences, savePreferences } from '../../core/preferences'
import { PreferencesModel, RecommendedHostModel, SuccessModel } from '../../core/schemas'
import { typed } from '../../core/validation'

export default definePlugin({
  name: 'preferences',
  setup({ store, events }) {
    const tag = 'preferences'
    return new Elysia({ name: 'periscope:preferences' })
      .get('/api/preferences', () => readPreferences(store), { ...docs({ tag, summary: 'The saved preferences', ok: PreferencesModel }) })
      .post(
        '/api/preferences/save_preferences',
        typed({ body: PreferencesModel }, ({ body: prefs }) => {
          savePreferences(store, prefs)
          events.emit('preferences_updated', prefs)
          return { success: true }
        }),
        { ...docs({ tag, summary: 'Save the preferences (replaces them whole; missing fields take their defaults)', body: PreferencesModel, ok: SuccessModel, errors: [507] }) },
      )
      .get(
        '/api/preferences/get_recommended_host',
        // The caller's address: where a pilot's station would receive streams.
        ({ request }) => ({ host: callerAddress(request) ?? '' }),
        { ...docs({ tag, summary: "The caller's IP address, as the suggested stream host", ok: RecommendedHostModel }) },
      )
  },
})
