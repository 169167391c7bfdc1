// A device's controls, each drawn by its type: a slider with a number for INTEGER, a switch for
// BOOLEAN, a select for MENU and INTEGER_MENU, a button for BUTTON. A control that cannot be set now is
// greyed with the reason, derived from the device's own data (the auto control that governs it).
// The value shown is always the one the service reported: after a set, the value the camera took.
import { useEffect, useRef, useState } from 'preact/hooks'
import { post } from './api'
import { devices, reloadDevices, replaceDevice } from './devices'
import type { Control, Device } from './types'
import { governingAuto, isAuto } from '../../cameras/governs'
import { ErrorLine, notify, useAction } from './widgets'

/** Why a control cannot be set now, in words a pilot can act on; null when it can. */
export function whyLocked(c: Control, all: Control[]): string | null {
  const f = c.flags
  if (f.disabled) return `${c.name} is disabled by the camera`
  if (f.read_only) return `${c.name} is read-only: the camera reports it and takes no value`
  if (f.inactive) {
    const auto = governingAuto(c, all)
    if (!auto) return `${c.name} is inactive now: another setting of the camera governs it`
    const manual = auto.flags.menu?.find((m) => /manual/i.test(m.name))
    const action = auto.flags.control_type === 'BOOLEAN' ? `turn ${auto.name} off` : manual ? `set ${auto.name} to ${manual.name}` : `change ${auto.name}`
    return `${c.name} is set automatically: ${action}`
  }
  if (c.flags.control_type === 'STRING') return `${c.name} is text: the API sets numbers only`
  return null
}

/** Settable and not at its default: what "reset to defaults" changes. */
const offDefault = (c: Control, all: Control[]) => c.flags.control_type !== 'BUTTON' && c.flags.control_type !== 'CTRL_CLASS' && !whyLocked(c, all) && c.value !== c.flags.default_value

async function setControl(d: Device, c: Control, value: number): Promise<number | string> {
  const answer = await post<{ success: boolean; value: number | string }>('/api/devices/set_uvc_control', { bus_info: d.bus_info, control_id: c.control_id, value })
  if (answer?.success !== true) throw new Error(`The service did not confirm ${c.name}`)
  // What the camera holds now, at once; the reload brings flags other controls changed (auto modes).
  replaceDevice({ ...d, controls: d.controls.map((x) => (x.control_id === c.control_id ? { ...x, value: answer.value } : x)) })
  void reloadDevices()
  return answer.value
}

function ControlRow({ d, c }: { d: Device; c: Control }) {
  const [run, state] = useAction()
  // The number box's text while it is edited; the service's value otherwise.
  const [draft, setDraft] = useState<string | null>(null)
  // The edit not yet sent (a ref: a range's change event follows its input event before a re-render).
  // Only an edit is ever sent: a blur with nothing typed sends nothing, so a refused value is not sent again.
  const pending = useRef<string | null>(null)
  const edit = (text: string) => {
    pending.current = text
    setDraft(text)
  }
  useEffect(() => {
    pending.current = null
    setDraft(null)
  }, [c.value])
  const locked = whyLocked(c, d.controls)
  const disabled = Boolean(locked) || state.busy
  const id = `ctl-${d.bus_info}-${c.control_id}`
  const reason = `${id}-why`
  const set = (value: number) =>
    run(async () => {
      // A refusal re-renders the row from the service's value (Preact sets value/checked from props).
      const took = await setControl(d, c, value)
      if (c.flags.control_type !== 'BUTTON' && Number(took) !== value) notify('ok', `${c.name}: the camera took ${took} (asked ${value})`)
    })
  const f = c.flags
  let input
  switch (f.control_type) {
    case 'BOOLEAN':
      input = <input id={id} type="checkbox" role="switch" checked={Boolean(Number(c.value))} disabled={disabled} aria-describedby={locked ? reason : undefined} onChange={(e) => void set(e.currentTarget.checked ? 1 : 0)} />
      break
    case 'MENU':
    case 'INTEGER_MENU':
      input = (
        <select id={id} value={String(c.value)} disabled={disabled} aria-describedby={locked ? reason : undefined} onChange={(e) => void set(Number(e.currentTarget.value))}>
          {(f.menu ?? []).map((m) => (
            <option key={m.index} value={String(m.index)}>
              {m.name}
            </option>
          ))}
        </select>
      )
      break
    case 'BUTTON':
      input = (
        <button id={id} type="button" disabled={disabled} aria-describedby={locked ? reason : undefined} onClick={() => void set(1)}>
          {c.name}
        </button>
      )
      break
    case 'INTEGER':
    case 'INTEGER64':
    case 'BITMASK': {
      const slider = f.control_type === 'INTEGER' && f.max_value > f.min_value
      const commit = () => {
        const text = pending.current
        pending.current = null
        setDraft(null)
        if (text === null) return
        const n = Number(text)
        if (text.trim() !== '' && Number.isFinite(n) && n !== c.value) void set(n)
      }
      input = (
        <span class="range">
          {slider && (
            <input
              type="range"
              aria-label={c.name}
              min={f.min_value}
              max={f.max_value}
              step={f.step || 1}
              value={draft ?? String(c.value)}
              disabled={disabled}
              onInput={(e) => edit(e.currentTarget.value)}
              onChange={commit}
            />
          )}
          <input
            id={id}
            class="number"
            type="number"
            min={f.min_value}
            max={f.max_value}
            step={f.step || 1}
            value={draft ?? String(c.value)}
            disabled={disabled}
            aria-describedby={locked ? reason : undefined}
            onInput={(e) => edit(e.currentTarget.value)}
            onBlur={commit}
            onKeyDown={(e) => {
              if (e.key === 'Enter') commit()
              if (e.key === 'Escape') {
                pending.current = null
                setDraft(null)
              }
            }}
          />
        </span>
      )
      break
    }
    default:
      input = <output id={id}>{String(c.value)}</output>
  }
  return (
    <div class={`control${locked ? ' locked' : ''}`} data-control={c.control_id} data-type={f.control_type} data-value={String(c.value)}>
      {f.control_type !== 'BUTTON' && <label for={id}>{c.name}</label>}
      {input}
      {locked && (
        <span id={reason} class="hint reason" data-reason>
          {locked}
        </span>
      )}
      <ErrorLine error={state.error} />
    </div>
  )
}

export function ControlsPanel({ d }: { d: Device }) {
  const [run, state] = useAction()
  const shown = d.controls.filter((c) => c.flags.control_type !== 'CTRL_CLASS')
  const standard = shown.filter((c) => c.control_id >= 0)
  const vendor = shown.filter((c) => c.control_id < 0)
  const reset = () =>
    run(async () => {
      // An auto mode set back first makes the controls it governs inactive: two passes, each on the
      // service's newest view, and a control refused in both is reported.
      let changed = 0
      for (let pass = 0; pass < 2; pass++) {
        await reloadDevices()
        const now = devices.get()?.find((x) => x.bus_info === d.bus_info)
        if (!now) throw new Error('The camera left')
        const todo = now.controls.filter((c) => offDefault(c, now.controls))
        if (!todo.length) break
        for (const c of todo.sort((a, b) => Number(isAuto(b)) - Number(isAuto(a)))) {
          const latest = devices.get()?.find((x) => x.bus_info === d.bus_info) ?? now
          await setControl(latest, c, c.flags.default_value)
          changed++
        }
      }
      notify('ok', changed ? `${d.nickname || d.name}: ${changed} control${changed === 1 ? '' : 's'} back to default` : 'Every control was at its default already')
    })
  return (
    <div class="controls" data-controls>
      {standard.map((c) => (
        <ControlRow key={c.control_id} d={d} c={c} />
      ))}
      {vendor.length > 0 && (
        <fieldset class="vendor" data-vendor-controls>
          <legend>Vendor options</legend>
          {vendor.map((c) => (
            <ControlRow key={c.control_id} d={d} c={c} />
          ))}
        </fieldset>
      )}
      <div class="actions">
        <button type="button" onClick={() => void reset()} disabled={state.busy}>
          Reset to defaults
        </button>
      </div>
      <ErrorLine error={state.error} />
    </div>
  )
}
