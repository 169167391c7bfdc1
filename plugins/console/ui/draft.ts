// useDraft: a form over settings the service keeps (a stream, the preferences, the retention policy).
// It follows the saved settings until the pilot edits it, then keeps the edits until they are saved
// or reverted, even when the saved settings change meanwhile (another client, an event's reload).
import { useEffect, useRef, useState } from 'preact/hooks'

export interface Draft<F> {
  /** null until the saved settings have loaded. */
  form: F | null
  /** Edited since the last save or revert. */
  dirty: boolean
  edit(change: Partial<F>): void
  /** Call as a save is sent; call what it returns once the service has the new settings. Edits made
   * while the save was on its way keep the form dirty. */
  saving(): () => void
  /** Back to the saved settings. */
  revert(): void
}

/**
 * `saved` is what the service has (null while loading); `formOf` turns it into the form's fields; the
 * form refills when `key` changes (default: `saved`) and nothing is edited.
 */
export function useDraft<S, F>(saved: S | null | undefined, formOf: (s: S) => F, key: unknown = saved): Draft<F> {
  const [form, setForm] = useState<F | null>(() => (saved ? formOf(saved) : null))
  const [dirty, setDirty] = useState(false)
  // Counted in refs, read when the refill runs: Preact runs an effect after the next paint, so an edit
  // can come between the render that scheduled a refill and the refill, and must not be overwritten.
  const edits = useRef(0)
  const cleanAt = useRef(0)
  useEffect(() => {
    if (saved && edits.current === cleanAt.current) setForm(formOf(saved))
  }, [key, dirty])
  const markClean = (at: number) => {
    cleanAt.current = at
    setDirty(false)
  }
  return {
    form,
    dirty,
    edit(change) {
      edits.current++
      setForm((f) => (f ? { ...f, ...change } : f))
      setDirty(true)
    },
    saving() {
      const at = edits.current
      return () => {
        if (edits.current === at) markClean(at)
      }
    },
    revert() {
      markClean(edits.current)
      if (saved) setForm(formOf(saved))
    },
  }
}
