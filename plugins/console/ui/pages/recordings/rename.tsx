// Renaming a recording: PATCH /api/recordings/{old_name}/{new_name}. The rules a new name must follow
// are the service's, read from its OpenAPI document (the new_name parameter's description), and a
// refusal shows the service's own sentence beside the field its `loc` names.
import { useEffect, useRef, useState } from 'preact/hooks'
import { api } from '../../api'
import { parameter, useApiDoc } from '../../apidoc'
import { ErrorLine, Field, useAction } from '../../widgets'

export const RENAME_PATH = '/api/recordings/{old_name}/{new_name}'

export function RenameDialog({ fileName, onRenamed, onCancel }: { fileName: string; onRenamed(newName: string): void; onCancel(): void }) {
  // A new name is "as a recording name, and …": both of the service's descriptions, in its words.
  const rules = useApiDoc((doc) => ({ name: parameter(doc, RENAME_PATH, 'patch', 'old_name')?.description, newName: parameter(doc, RENAME_PATH, 'patch', 'new_name')?.description }))
  const [name, setName] = useState(fileName)
  const [run, state] = useAction()
  const dialog = useRef<HTMLDialogElement>(null)
  const input = useRef<HTMLInputElement>(null)
  useEffect(() => {
    const d = dialog.current
    if (d && !d.open) d.showModal()
    // The name without its extension selected: what one usually changes.
    const dot = fileName.lastIndexOf('.')
    input.current?.setSelectionRange(0, dot > 0 ? dot : fileName.length)
    return () => d?.close()
  }, [])
  const fieldError = state.fields.new_name ?? state.fields.old_name
  const submit = () =>
    run(async () => {
      const next = name
      await api('PATCH', `/api/recordings/${encodeURIComponent(fileName)}/${encodeURIComponent(next)}`)
      onRenamed(next)
    }, `Renamed ${fileName} to ${name}`)
  return (
    <dialog ref={dialog} class="dialog" aria-labelledby="rename-title" onCancel={(e) => (e.preventDefault(), onCancel())} data-rename-dialog>
      <form
        class="form"
        onSubmit={(e) => {
          e.preventDefault()
          void submit()
        }}
      >
        <h2 id="rename-title">Rename recording</h2>
        <p class="muted">{fileName}</p>
        <Field label="New name" error={fieldError}>
          {(id, note) => (
            <input
              id={id}
              ref={input}
              aria-describedby={note}
              name="new_name"
              value={name}
              autocomplete="off"
              spellcheck={false}
              onInput={(e) => setName(e.currentTarget.value)}
            />
          )}
        </Field>
        {rules?.newName && (
          <p class="hint" data-rules>
            The service's rule for a new name: {rules.newName}
            {rules.name ? `; a recording name is ${rules.name}` : ''}.
          </p>
        )}
        {/* Refusals that name no field (a taken name, a recording still being written, one gone). */}
        <ErrorLine error={fieldError ? null : state.error} />
        <div class="actions">
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" class="primary" disabled={state.busy || name === fileName}>
            Rename
          </button>
        </div>
      </form>
    </dialog>
  )
}
