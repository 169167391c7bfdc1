// The retention policy on the Recordings page: its settings (off, keep N GB free, delete after D days),
// whether the last pass fell short, and the recent deletions with their reason. Kept current by the
// `retention_updated` and `recording_deleted` events.
import { post } from '../../api'
import { useDraft } from '../../draft'
import { bytes } from '../../format'
import { useResource } from '../../resource'
import { ErrorLine, Field, useAction } from '../../widgets'

interface Deletion {
  name: string
  size: number
  reason: 'max_age' | 'min_free' | 'manual'
  detail: string
  time: string
}
/** GET /api/recordings/retention */
interface RetentionState {
  enabled: boolean
  min_free_gb: number
  max_age_days: number
  free: number | null
  short_bytes: number
  last_run: string | null
  deletions: Deletion[]
}
interface Form {
  enabled: boolean
  min_free_gb: string
  max_age_days: string
}

const REASON: Record<Deletion['reason'], string> = { max_age: 'too old', min_free: 'disk space', manual: 'deleted by hand' }
const formOf = (s: RetentionState): Form => ({ enabled: s.enabled, min_free_gb: String(s.min_free_gb), max_age_days: String(s.max_age_days) })
/** A number field's text as the service should see it: a number when it is one, else the text (so the 422 names it). */
const numeric = (text: string): number | string => (text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text)

export function RetentionPanel() {
  const saved = useResource<RetentionState>('/api/recordings/retention', ['retention_updated', 'recording_deleted', 'recording_kept'])
  const { form, dirty, edit, saving, revert } = useDraft(saved.data, formOf)
  const [run, state] = useAction()
  const save = () =>
    run(async () => {
      if (!form) return
      const done = saving()
      await post('/api/recordings/retention', { enabled: form.enabled, min_free_gb: numeric(form.min_free_gb), max_age_days: numeric(form.max_age_days) })
      await saved.reload()
      done()
    }, 'Retention policy saved')
  const s = saved.data
  return (
    <details class="retention" data-retention>
      <summary>
        Automatic deletion: <strong data-retention-state>{s ? (s.enabled ? 'on' : 'off') : '…'}</strong>
        {s && s.short_bytes > 0 && (
          <span class="tag degraded" data-retention-short>
            {bytes(s.short_bytes)} short: the rest is kept or being recorded
          </span>
        )}
      </summary>
      <ErrorLine error={saved.error} />
      {form && (
        <form
          class="form narrow"
          data-retention-form
          onSubmit={(e) => {
            e.preventDefault()
            void save()
          }}
        >
          <p class="hint">Deletes the oldest finished recordings first. Never the one being recorded, never one marked kept.</p>
          <Field label="Delete recordings automatically" inline error={state.fields.enabled}>
            {(id, note) => <input id={id} aria-describedby={note} type="checkbox" name="enabled" checked={form.enabled} onChange={(e) => edit({ enabled: e.currentTarget.checked })} />}
          </Field>
          <Field label="Keep at least this much free (GB)" hint="0: no free-space rule." error={state.fields.min_free_gb}>
            {(id, note) => <input id={id} aria-describedby={note} name="min_free_gb" inputMode="decimal" value={form.min_free_gb} onInput={(e) => edit({ min_free_gb: e.currentTarget.value })} />}
          </Field>
          <Field label="Delete recordings older than (days)" hint="0: no age rule." error={state.fields.max_age_days}>
            {(id, note) => <input id={id} aria-describedby={note} name="max_age_days" inputMode="decimal" value={form.max_age_days} onInput={(e) => edit({ max_age_days: e.currentTarget.value })} />}
          </Field>
          <div class="actions">
            <button type="submit" class="primary" disabled={state.busy} data-retention-save>
              Save
            </button>
            <button type="button" disabled={!dirty || state.busy} onClick={revert}>
              Revert
            </button>
          </div>
          <ErrorLine error={state.error} />
        </form>
      )}
      {s && s.deletions.length > 0 && (
        <>
          <h2>Recently deleted</h2>
          <ul class="deletions" data-deletions>
            {s.deletions.map((d) => (
              <li key={`${d.time}-${d.name}`} data-deletion={d.name} data-reason={d.reason}>
                <time dateTime={d.time}>{new Date(d.time).toLocaleString()}</time> <strong>{d.name}</strong> ({bytes(d.size)}): <span class="tag">{REASON[d.reason]}</span>{' '}
                <span class="muted">{d.detail}</span>
              </li>
            ))}
          </ul>
        </>
      )}
    </details>
  )
}
