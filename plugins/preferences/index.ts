// Preferences: saved whole, read back, and announced (the frame-sync module re-sends on change).
import { Elysia } from 'elysia'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { readPreferences, savePreferences, type Preferences } from '../../core/preferences'
import { PreferencesModel, RecommendedHostModel, SuccessModel } from '../../core/schemas'

export default definePlugin({
  name: 'preferences',
  setup({ store, events }) {
    const tag = 'preferences'
    return new Elysia()
      .get('/api/preferences', () => readPreferences(store), { ...docs({ tag, summary: 'The saved preferences', ok: PreferencesModel }) })
      .post(
        '/api/preferences/save_preferences',
        ({ body }) => {
          const prefs = body as Preferences
          savePreferences(store, prefs)
          events.emit('preferences_updated', prefs)
          return { success: true }
        },
        { ...docs({ tag, summary: 'Save the preferences (replaces them whole; missing fields take their defaults)', body: PreferencesModel, ok: SuccessModel, errors: [507] }) },
      )
      .get(
        '/api/preferences/get_recommended_host',
        ({ request, server }) => {
          // The caller's address: where a pilot's station would receive streams.
          const ip = server?.requestIP(request)?.address ?? ''
          return { host: ip.startsWith('::ffff:') ? ip.slice(7) : ip }
        },
        { ...docs({ tag, summary: "The caller's IP address, as the suggested stream host", ok: RecommendedHostModel }) },
      )
  },
})
