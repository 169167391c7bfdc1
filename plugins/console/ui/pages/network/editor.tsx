// The IPv4 form of a connection profile: method, addresses with their prefixes, gateway, DNS servers,
// never-default (saved through network/change.ts, which watches a change to a profile in use). The methods offered are the service's (its OpenAPI enum); nothing is checked here
// that the service checks: its 422 is shown beside each field its `loc` names (an address row, a
// prefix, one DNS entry), and a refusal that names no field under the form.
import { useState } from 'preact/hooks'
import { property, useApiDoc } from '../../apidoc'
import type { ConnectionProfile, IpConfiguration, WiredDevice } from '../../types'
import { ApiError, type FieldErrors } from '../../api'
import { ErrorLine, Field, notify } from '../../widgets'
import { applyChange } from './change'

interface AddressRow {
  address: string
  prefix: string
}
interface Form {
  method: string
  addresses: AddressRow[]
  gateway: string
  dns: string
  never_default: boolean
}

const formOf = (ip: IpConfiguration): Form => ({
  method: ip.method,
  addresses: ip.ip_addresses.map((a) => ({ address: a.address, prefix: String(a.prefix) })),
  gateway: ip.gateway ?? '',
  dns: ip.dns.join(', '),
  never_default: ip.never_default,
})

/** A number field's text as the service should see it: a number when it is one, else the text (so its 422 names it). */
const numeric = (text: string): number | string => (text.trim() !== '' && Number.isFinite(Number(text)) ? Number(text) : text)

/** The body, and which form row each sent address came from (empty rows are not sent). */
function bodyOf(form: Form): { body: IpConfiguration; rowOf: number[] } {
  const rowOf: number[] = []
  const ip_addresses = form.addresses.flatMap((row, i) => {
    if (!row.address.trim() && !row.prefix.trim()) return []
    rowOf.push(i)
    return [{ address: row.address.trim(), prefix: numeric(row.prefix) as number }]
  })
  return {
    body: { method: form.method as IpConfiguration['method'], ip_addresses, gateway: form.gateway.trim() || null, dns: form.dns.split(/[\s,]+/).filter(Boolean), never_default: form.never_default },
    rowOf,
  }
}

/** The service's sentence, its address pattern (a long regular expression) said in words. */
const readable = (msg: string, example: string) => msg.replace(/ pattern '\^.*'$/, ` the pattern of an IPv4 address (like ${example})`)

export function Ipv4Editor({ profile, wired, onDone, onCancel }: { profile: ConnectionProfile; wired: WiredDevice[]; onDone(): void; onCancel(): void }) {
  const doc = useApiDoc((d) => ({
    methods: (property(d, 'IpConfiguration', 'method')?.enum as string[] | undefined) ?? null,
    addresses: property(d, 'IpConfiguration', 'ip_addresses')?.description ?? null,
    example: String(property(d, 'IpConfiguration', 'gateway')?.anyOf?.[0]?.examples?.[0] ?? '192.168.2.2'),
  }))
  const example = doc?.example ?? '192.168.2.2'
  const [form, setForm] = useState<Form>(() => formOf(profile.ipv4_settings))
  const [sent, setSent] = useState<{ rowOf: number[]; dns: string[] }>({ rowOf: [], dns: [] })
  const [state, setState] = useState<{ busy: boolean; error: string | null; fields: FieldErrors }>({ busy: false, error: null, fields: {} })
  const edit = (change: Partial<Form>) => setForm((f) => ({ ...f, ...change }))
  const editRow = (i: number, change: Partial<AddressRow>) => edit({ addresses: form.addresses.map((r, j) => (j === i ? { ...r, ...change } : r)) })
  const activeOn = wired.filter((w) => w.active_profile_id === profile.path).map((w) => w.interface)

  // Each 422 entry where its loc points; what points nowhere known goes under the form.
  const fields = state.fields
  const shown = new Set<string>()
  const fieldError = (key: string) => {
    const msg = fields[key]
    if (msg === undefined) return undefined
    shown.add(key)
    return readable(msg, example)
  }
  const rowError = (row: number, part: 'address' | 'prefix') => {
    const sentIndex = sent.rowOf.indexOf(row)
    return sentIndex < 0 ? undefined : fieldError(`ip_addresses.${sentIndex}.${part}`)
  }
  const dnsErrors = sent.dns.flatMap((entry, i) => {
    const msg = fieldError(`dns.${i}`)
    return msg ? [`'${entry}': ${msg}`] : []
  })
  const dnsError = [fieldError('dns'), ...dnsErrors].filter(Boolean).join('; ') || undefined

  const submit = async () => {
    const { body, rowOf } = bodyOf(form)
    setSent({ rowOf, dns: body.dns })
    setState({ busy: true, error: null, fields: {} })
    try {
      await applyChange(profile, body, wired)
      setState({ busy: false, error: null, fields: {} })
      onDone()
    } catch (e) {
      // The service's sentence, its address pattern said in words (beside the fields, and in the notice).
      const refusal = e instanceof ApiError ? e : new ApiError(0, String((e as Error)?.message ?? e))
      const entries = Object.entries(refusal.fields)
      const sentence = entries.length ? entries.map(([field, msg]) => (field ? `${field}: ${readable(msg, example)}` : readable(msg, example))).join('; ') : refusal.detail
      setState({ busy: false, error: sentence, fields: refusal.fields })
      notify('error', sentence)
    }
  }

  const rows = form.addresses
  const content = (
    <form
      class="form ipv4-editor"
      data-ipv4-editor={profile.id}
      onSubmit={(e) => {
        e.preventDefault()
        void submit()
      }}
    >
      {activeOn.length > 0 && (
        <p class="hint warn-text">
          Active on {activeOn.join(', ')}: the change applies at once. If it cuts this page off, the vehicle restores the previous setting unless a client reaches it within the rollback window.
        </p>
      )}
      <Field label="Method" error={fieldError('method')}>
        {(id, note) => (
          <select id={id} aria-describedby={note} name="method" value={form.method} onChange={(e) => edit({ method: e.currentTarget.value })}>
            {(doc?.methods ?? [form.method]).map((m) => (
              <option key={m} value={m}>
                {m}
              </option>
            ))}
          </select>
        )}
      </Field>
      <fieldset class="addresses">
        <legend>Addresses</legend>
        {doc?.addresses && <p class="hint">{doc.addresses}</p>}
        {rows.map((row, i) => (
          <div class="address-row" key={i} data-address-row={i}>
            <Field label={`Address ${i + 1}`} error={rowError(i, 'address')}>
              {(id, note) => <input id={id} aria-describedby={note} name={`address-${i}`} inputMode="decimal" autocomplete="off" value={row.address} placeholder={example} onInput={(e) => editRow(i, { address: e.currentTarget.value })} />}
            </Field>
            <Field label="Prefix" error={rowError(i, 'prefix')}>
              {(id, note) => <input id={id} aria-describedby={note} name={`prefix-${i}`} class="prefix" inputMode="numeric" autocomplete="off" value={row.prefix} placeholder="24" onInput={(e) => editRow(i, { prefix: e.currentTarget.value })} />}
            </Field>
            <button type="button" class="small" aria-label={`Remove address ${i + 1}`} onClick={() => edit({ addresses: rows.filter((_, j) => j !== i) })}>
              Remove
            </button>
          </div>
        ))}
        {fieldError('ip_addresses') && (
          <span class="field-error" role="alert" data-field-error>
            {fieldError('ip_addresses')}
          </span>
        )}
        <div>
          <button type="button" class="small" data-add-address onClick={() => edit({ addresses: [...rows, { address: '', prefix: '24' }] })}>
            Add address
          </button>
        </div>
      </fieldset>
      <Field label="Gateway" hint="Empty: none." error={fieldError('gateway')}>
        {(id, note) => <input id={id} aria-describedby={note} name="gateway" inputMode="decimal" autocomplete="off" value={form.gateway} onInput={(e) => edit({ gateway: e.currentTarget.value })} />}
      </Field>
      <Field label="DNS servers" hint="Separated by commas or spaces." error={dnsError}>
        {(id, note) => <input id={id} aria-describedby={note} name="dns" autocomplete="off" value={form.dns} onInput={(e) => edit({ dns: e.currentTarget.value })} />}
      </Field>
      <Field label="Never the default route" inline error={fieldError('never_default')}>
        {(id, note) => <input id={id} aria-describedby={note} type="checkbox" name="never_default" checked={form.never_default} onChange={(e) => edit({ never_default: e.currentTarget.checked })} />}
      </Field>
      <div class="actions">
        <button type="submit" class="primary" disabled={state.busy}>
          {state.busy ? 'Saving…' : 'Save'}
        </button>
        <button type="button" disabled={state.busy} onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  )
  // Rendered first so that `shown` knows every field that took its error.
  const unplaced = Object.keys(fields).some((k) => !shown.has(k))
  return (
    <>
      {content}
      <ErrorLine error={state.error && (unplaced || !Object.keys(fields).length) ? state.error : null} />
    </>
  )
}
