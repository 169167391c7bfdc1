// Preferences: where new streams go by default, whether to suggest the pilot's own address, and the
// frame-sync offset. Saved whole; the form shows what the service saved.
import { get, post } from '../api'
import { useDraft } from '../draft'
import { useResource } from '../resource'
import type { Preferences } from '../types'
import { ErrorLine, Field, useAction } from '../widgets'

interface Form {
  host: string
  port: string
  suggest_host: boolean
  frequency_offset: string
}

const formOf = (p: Preferences): Form => ({ host: p.default_stream.host, port: String(p.default_stream.port), suggest_host: p.suggest_host, frequency_offset: String(p.frequency_offset) })

/** A number field's text as the service should see it: a number when it is one, else the text (so the 422 names it). */
const numeric = (text: string): number | string => (text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text)

export function PreferencesPage() {
  const saved = useResource<Preferences>('/api/preferences', ['preferences_updated'])
  const { form, dirty, edit, saving, revert } = useDraft(saved.data, formOf)
  const [run, state] = useAction()
  const save = () =>
    run(async () => {
      if (!form) return
      const done = saving()
      await post('/api/preferences/save_preferences', { default_stream: { host: form.host.trim(), port: numeric(form.port) }, suggest_host: form.suggest_host, frequency_offset: numeric(form.frequency_offset) })
      await saved.reload()
      done()
    }, 'Preferences saved')
  return (
    <section aria-labelledby="prefs-title">
      <h1 id="prefs-title">Preferences</h1>
      <ErrorLine error={saved.error} />
      {form && (
        <form
          class="form narrow"
          data-preferences
          onSubmit={(e) => {
            e.preventDefault()
            void save()
          }}
        >
          <fieldset>
            <legend>Default stream endpoint</legend>
            <p class="hint">Where a newly seen camera streams to: usually the pilot's computer.</p>
            <Field label="Host" error={state.fields['default_stream.host'] ?? state.fields['default_stream']}>
              {(id, note) => <input id={id} aria-describedby={note} name="host" value={form.host} required onInput={(e) => edit({ host: e.currentTarget.value })} />}
            </Field>
            <Field label="Port" error={state.fields['default_stream.port']}>
              {(id, note) => <input id={id} aria-describedby={note} name="port" inputMode="numeric" value={form.port} onInput={(e) => edit({ port: e.currentTarget.value })} />}
            </Field>
            <button
              type="button"
              onClick={() =>
                run(async () => {
                  const { host } = await get<{ host: string }>('/api/preferences/get_recommended_host')
                  edit({ host })
                })
              }
            >
              Use this computer's address
            </button>
          </fieldset>
          <Field label="Suggest this computer's address for new endpoints" inline error={state.fields.suggest_host}>
            {(id, note) => <input id={id} aria-describedby={note} type="checkbox" name="suggest_host" checked={form.suggest_host} onChange={(e) => edit({ suggest_host: e.currentTarget.checked })} />}
          </Field>
          <Field label="Frame-sync offset (Hz)" hint="Added to the stream's frame rate in the frame-sync board's command." error={state.fields.frequency_offset}>
            {(id, note) => <input id={id} aria-describedby={note} name="frequency_offset" inputMode="decimal" value={form.frequency_offset} onInput={(e) => edit({ frequency_offset: e.currentTarget.value })} />}
          </Field>
          <div class="actions">
            <button type="submit" class="primary" disabled={state.busy}>
              Save
            </button>
            <button type="button" disabled={!dirty || state.busy} onClick={revert}>
              Revert
            </button>
          </div>
          <ErrorLine error={state.error} />
        </form>
      )}
    </section>
  )
}
