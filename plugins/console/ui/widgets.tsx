// Shared form pieces: a field with its inline error (from a 422's loc), a confirmation dialog, a copy
// button, the notices, and useAction(), which runs a request and reports its outcome: success only
// after the service said yes, else the service's own sentence.
import type { ComponentChildren } from 'preact'
import { useEffect, useId, useRef, useState } from 'preact/hooks'
import { ApiError, type FieldErrors } from './api'
import { useValue, Value } from './state'

// ---- notices ----

export interface Notice {
  id: number
  kind: 'ok' | 'error'
  text: string
}

export const notices = new Value<Notice[]>([])
let nextNotice = 1

/** Shows a notice; a success fades after a few seconds, a failure stays until dismissed. */
export function notify(kind: Notice['kind'], text: string): void {
  const notice = { id: nextNotice++, kind, text }
  notices.set([...notices.get().slice(-4), notice])
  if (kind === 'ok') setTimeout(() => dismiss(notice.id), 4000)
}

export const dismiss = (id: number) => notices.set(notices.get().filter((n) => n.id !== id))

export function Notices() {
  const list = useValue(notices)
  return (
    <div class="notices" aria-live="polite">
      {list.map((n) => (
        <div key={n.id} class={`notice ${n.kind}`} role={n.kind === 'error' ? 'alert' : 'status'} data-notice={n.kind}>
          <span>{n.text}</span>
          <button type="button" class="plain" aria-label="Dismiss" onClick={() => dismiss(n.id)}>
            ×
          </button>
        </div>
      ))}
    </div>
  )
}

// ---- actions ----

export interface ActionState {
  busy: boolean
  /** The last failure's sentence, shown beside the control that made it. */
  error: string | null
  /** The last failure's fields (a 422), for Field's inline errors. */
  fields: FieldErrors
}

/**
 * run(work, done?) calls the service; `done` (a sentence) is announced only once `work` resolved. A
 * failure shows the service's detail, inline (state.error) and as a notice.
 */
export function useAction(): [(work: () => Promise<unknown>, done?: string) => Promise<boolean>, ActionState, () => void] {
  const [state, setState] = useState<ActionState>({ busy: false, error: null, fields: {} })
  const mounted = useRef(true)
  useEffect(() => () => void (mounted.current = false), [])
  const run = async (work: () => Promise<unknown>, done?: string) => {
    setState({ busy: true, error: null, fields: {} })
    try {
      await work()
      if (mounted.current) setState({ busy: false, error: null, fields: {} })
      if (done) notify('ok', done)
      return true
    } catch (e) {
      const detail = e instanceof ApiError ? e.detail : String((e as Error)?.message ?? e)
      if (mounted.current) setState({ busy: false, error: detail, fields: e instanceof ApiError ? e.fields : {} })
      notify('error', detail)
      return false
    }
  }
  const clear = () => setState({ busy: false, error: null, fields: {} })
  return [run, state, clear]
}

/** The sentence of a failed action, beside what made it. */
export function ErrorLine({ error }: { error: string | null | undefined }) {
  if (!error) return null
  return (
    <p class="error-line" role="alert" data-error>
      {error}
    </p>
  )
}

// ---- fields ----

export function Field({ label, error, hint, children, inline }: { label: string; error?: string; hint?: string; children: (id: string, describedBy: string | undefined) => ComponentChildren; inline?: boolean }) {
  const id = useId()
  const note = `${id}-note`
  return (
    <div class={`field${inline ? ' inline' : ''}${error ? ' invalid' : ''}`}>
      <label for={id}>{label}</label>
      {children(id, error || hint ? note : undefined)}
      {error ? (
        <span id={note} class="field-error" role="alert" data-field-error>
          {error}
        </span>
      ) : hint ? (
        <span id={note} class="hint">
          {hint}
        </span>
      ) : null}
    </div>
  )
}

// ---- confirm ----

export function ConfirmDialog({ title, children, confirm, danger, onConfirm, onCancel }: { title: string; children?: ComponentChildren; confirm: string; danger?: boolean; onConfirm(): void; onCancel(): void }) {
  const ref = useRef<HTMLDialogElement>(null)
  useEffect(() => {
    const dialog = ref.current
    if (dialog && !dialog.open) dialog.showModal()
    return () => dialog?.close()
  }, [])
  return (
    <dialog ref={ref} class="dialog" onCancel={(e: Event) => (e.preventDefault(), onCancel())} aria-labelledby="confirm-title">
      <h2 id="confirm-title">{title}</h2>
      {children}
      <div class="actions">
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
        <button type="button" class={danger ? 'danger' : 'primary'} onClick={onConfirm}>
          {confirm}
        </button>
      </div>
    </dialog>
  )
}

// ---- copy ----

/** Copies `text`: the Clipboard API where the page is a secure context, else a selected textarea (plain http to the vehicle). */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard && window.isSecureContext) return navigator.clipboard.writeText(text)
  const area = document.createElement('textarea')
  area.value = text
  area.setAttribute('readonly', '')
  area.style.position = 'fixed'
  area.style.opacity = '0'
  document.body.appendChild(area)
  area.select()
  const ok = document.execCommand('copy')
  area.remove()
  if (!ok) throw new Error('the browser refused to copy')
}

export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle')
  useEffect(() => {
    if (state === 'idle') return
    const t = setTimeout(() => setState('idle'), 2000)
    return () => clearTimeout(t)
  }, [state])
  return (
    <button type="button" class="small" title={`Copy ${text}`} onClick={() => copyText(text).then(() => setState('copied'), () => setState('failed'))}>
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Select and copy' : label}
    </button>
  )
}

/** A URL with its copy button. */
export function CopyUrl({ label, url }: { label: string; url: string }) {
  return (
    <div class="copy-url">
      <span class="muted">{label}</span>
      <code>{url}</code>
      <CopyButton text={url} />
    </div>
  )
}
