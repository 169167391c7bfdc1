// Preferences: saved whole, read back, and announced (the frame-sync module re-sends on change).
import { Elysia, t } from 'elysia'
import { callerAddress } from '../../core/front'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { defaultPreferences, readPreferences, savePreferences, type Preferences } from '../../core/preferences'
import { PreferencesModel, RecommendedHostModel, SuccessModel } from '../../core/schemas'
import { typed, validated } from '../../core/validation'

// The body as read: the documented model, but default_stream without the model's own default (the
// anchor's 192.168.2.1), so a save that leaves it out takes this machine's (loopback while cameras are
// simulated: a demo must not stream off the machine).
const SaveBody = t.Object({ ...PreferencesModel.properties, default_stream: t.Optional(t.Object(PreferencesModel.properties.default_stream.properties)) })
const { parse: parseSaveBody } = validated({ body: SaveBody })

export default definePlugin({
  name: 'preferences',
  setup({ store, events, registry }) {
    const tag = 'preferences'
    return new Elysia({ name: 'periscope:preferences' })
      .get('/api/preferences', () => readPreferences(store, registry), { ...docs({ tag, summary: 'The saved preferences', ok: PreferencesModel }) })
      .post(
        '/api/preferences/save_preferences',
        typed({ body: SaveBody }, ({ body }) => {
          const prefs: Preferences = { ...body, default_stream: body.default_stream ?? defaultPreferences(registry).default_stream }
          savePreferences(store, prefs)
          events.emit('preferences_updated', prefs)
          return { success: true }
        }),
        {
          ...docs({ tag, summary: 'Save the preferences (replaces them whole; missing fields take their defaults)', body: PreferencesModel, ok: SuccessModel, errors: [507] }),
          parse: parseSaveBody,
        },
      )
      .get(
        '/api/preferences/get_recommended_host',
        // The caller's address: where a pilot's station would receive streams.
        ({ request }) => ({ host: callerAddress(request) ?? '' }),
        { ...docs({ tag, summary: "The caller's IP address, as the suggested stream host", ok: RecommendedHostModel }) },
      )
  },
})
