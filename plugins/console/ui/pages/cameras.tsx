// Cameras: a card per device, kept current by events (devices.ts): who it is, its group role, its
// stream's state, a live picture, its controls, its stream settings and endpoints, recording, and its
// stereo group. Every change is a request to /api; what the card shows afterwards is what the service
// reports, and a refusal shows the service's reason.
import { useEffect, useState } from 'preact/hooks'
import { get, post } from '../api'
import { useDraft } from '../draft'
import { SOURCE_FORMAT } from '../../../cameras/source-formats'
import { ControlsPanel } from '../controls'
import { devices, devicesError, reloadDevices, unplugged } from '../devices'
import { bytes, cameraTitle } from '../format'
import { Preview } from '../preview'
import { SoundBar, SoundOnlyCards } from '../sound'
import { useResource } from '../resource'
import { useValue } from '../state'
import type { Device, EncodeType, FormatSize, Interval, Preferences, StreamType } from '../types'
import { ConfirmDialog, CopyUrl, ErrorLine, Field, useAction } from '../widgets'

/** device_type values that can lead or follow a stereo group (see DeviceModel's description). */
const LEADS = new Set([1, 3])
const FOLLOWS = new Set([2, 4])

/** What the device is in a stereo group, in words. */
export function groupRole(d: Device, all: Device[]): string {
  const name = (bus: string) => {
    const other = all.find((x) => x.bus_info === bus)
    return other ? cameraTitle(other) : bus
  }
  if (d.followers.length) return `leads ${d.followers.map(name).join(', ')}`
  if (d.leader) return `follows ${name(d.leader)}`
  if (LEADS.has(d.device_type)) return 'can lead a group'
  if (FOLLOWS.has(d.device_type)) return 'can follow a leader'
  return 'no group role'
}

// ---- what a camera can stream (the service's own table: plugins/cameras/source-formats.ts) ----

/** The sizes a stream of this encode type can take: the preferred pixel format that any node offers. */
function sizesFor(d: Device, encode: EncodeType): FormatSize[] {
  if (encode === 'NONE') return []
  for (const pixel of SOURCE_FORMAT[encode]) {
    const camera = d.cameras?.find((c) => c.formats[pixel]?.length)
    if (camera) return camera.formats[pixel]!
  }
  return []
}

const encodeTypes = (d: Device): EncodeType[] => [...(Object.keys(SOURCE_FORMAT) as EncodeType[]).filter((e) => sizesFor(d, e).length), 'NONE']
const fps = (i: Interval) => i.denominator / i.numerator
const rateLabel = (i: Interval) => `${Number.isInteger(fps(i)) ? fps(i) : fps(i).toFixed(2)} fps`
const sameInterval = (a: Interval, b: Interval) => a.numerator * b.denominator === b.numerator * a.denominator

/** Ports in use by any device's endpoints (a group's follower n takes port + n). */
function usedPorts(all: Device[]): Set<number> {
  const used = new Set<number>()
  for (const d of all) for (const e of d.stream.endpoints) for (let n = 0; n <= d.followers.length; n++) used.add(e.port + n)
  return used
}

// ---- the card's parts ----

function Nickname({ d }: { d: Device }) {
  const [text, setText] = useState(d.nickname)
  const [run, state] = useAction()
  useEffect(() => setText(d.nickname), [d.nickname])
  // Saved when the edit is committed (Enter or leaving the box), not at each keystroke.
  const commit = () => {
    const nickname = text.trim()
    if (nickname === d.nickname) return setText(d.nickname)
    void run(async () => {
      await post('/api/devices/set_nickname', { bus_info: d.bus_info, nickname })
      await reloadDevices()
    }, nickname ? `Renamed to ${nickname}` : 'Nickname cleared').then((ok) => ok || setText(d.nickname))
  }
  return (
    <div class="nickname">
      <input
        aria-label={`Nickname of ${cameraTitle({ ...d, nickname: '' })}`}
        placeholder={cameraTitle({ ...d, nickname: '' })}
        value={text}
        disabled={state.busy}
        data-nickname
        onInput={(e) => setText(e.currentTarget.value)}
        onBlur={commit}
        onKeyDown={(e) => {
          if (e.key === 'Enter') e.currentTarget.blur()
          if (e.key === 'Escape') setText(d.nickname)
        }}
      />
      <ErrorLine error={state.error} />
    </div>
  )
}

function StreamStatusLine({ d }: { d: Device }) {
  const s = d.stream_status ?? { state: 'stopped', error: null, restarts: 0 }
  const interval = d.stream.interval
  return (
    <p class="stream-status" data-stream-state={s.state}>
      <span class={`tag ${s.state}`}>{s.state}</span>{' '}
      {d.stream.encode_type === 'NONE' ? 'no stream' : `${d.stream.encode_type} ${d.stream.width}×${d.stream.height} ${rateLabel(interval)} ${d.stream.stream_type}`} · restarts{' '}
      <span data-restarts>{s.restarts}</span> · drops <span data-drops>{d.frame_stats.num_drops}</span>
      {!d.stream.enabled && !d.leader && <span class="muted"> · disabled</span>}
      {s.error && <span class="error-text"> · {s.error}</span>}
    </p>
  )
}

/** The body of configure_stream for this device's stream as it is, with `change` applied. */
const configureBody = (d: Device, change: Partial<{ enabled: boolean }> = {}) => ({
  bus_info: d.bus_info,
  stream_type: d.stream.stream_type,
  stream_format: { width: d.stream.width, height: d.stream.height, interval: d.stream.interval },
  encode_type: d.stream.encode_type,
  enabled: d.stream.enabled,
  endpoints: d.stream.endpoints,
  ...change,
})

function StreamActions({ d }: { d: Device }) {
  const [run, state] = useAction()
  const name = cameraTitle(d)
  const running = d.stream_status?.state === 'running'
  const recording = d.recording?.active ?? false
  if (d.leader) return null
  const act = (work: () => Promise<unknown>, done: string) => run(async () => (await work(), await reloadDevices()), done)
  return (
    <div class="stream-actions">
      <div class="actions">
        {d.stream.enabled ? (
          <button type="button" data-action="disable" disabled={state.busy} onClick={() => act(() => post('/api/devices/configure_stream', configureBody(d, { enabled: false })), `${name}: stream disabled`)}>
            Disable stream
          </button>
        ) : (
          <button type="button" class="primary" data-action="enable" disabled={state.busy || d.stream.encode_type === 'NONE'} onClick={() => act(() => post('/api/devices/configure_stream', configureBody(d, { enabled: true })), `${name}: stream enabled`)}>
            Enable stream
          </button>
        )}
        <button type="button" data-action="restart" disabled={state.busy} onClick={() => act(() => post('/api/devices/restart_stream', { bus_info: d.bus_info }), `${name}: stream restarted`)}>
          Restart
        </button>
        {recording ? (
          <button type="button" class="danger" data-action="stop-recording" disabled={state.busy} onClick={() => act(() => post('/api/devices/stop_recording', { bus_info: d.bus_info }), `${name}: recording stopped`)}>
            Stop recording
          </button>
        ) : (
          <button type="button" data-action="start-recording" disabled={state.busy || !running} title={running ? undefined : 'Start the stream first'} onClick={() => act(() => post('/api/devices/start_recording', { bus_info: d.bus_info }), `${name}: recording`)}>
            Record
          </button>
        )}
      </div>
      <label class="inline-check" title="When the autopilot on the MAVLink link arms, a recording starts; when it disarms, it stops">
        <input
          type="checkbox"
          data-record-while-armed
          checked={d.record_while_armed ?? false}
          disabled={state.busy}
          onChange={(e) => {
            const enabled = e.currentTarget.checked
            void act(() => post('/api/devices/set_record_while_armed', { bus_info: d.bus_info, enabled }), `${name}: ${enabled ? 'records while the vehicle is armed' : 'no longer records when armed'}`)
          }}
        />{' '}
        Record while armed
      </label>
      {d.recording?.file && (
        <p class="muted" data-recording-state={recording ? 'active' : 'ended'}>
          {recording ? <span class="tag live">REC</span> : 'Last recording'} {d.recording.file} · {bytes(d.recording.bytes)}
          {d.recording.telemetry && (
            <>
              {' '}
              <span class="tag ok" data-recording-telemetry title="The file carries the vehicle's telemetry as a subtitle track">
                telemetry
              </span>
            </>
          )}
          {d.recording.error && <span class="error-text"> · {d.recording.error}</span>}
        </p>
      )}
      <ErrorLine error={state.error} />
    </div>
  )
}

function WatchLinks({ d }: { d: Device }) {
  const w = d.watch
  if (!w?.rtsp && !w?.whep) return null
  return (
    <div class="watch-links" data-watch-links>
      {w.cockpit && <CopyUrl label="Cockpit" url={w.cockpit} />}
      {w.rtsp && <CopyUrl label="RTSP" url={w.rtsp} />}
      {w.whep && <CopyUrl label="WHEP" url={w.whep} />}
    </div>
  )
}

interface StreamForm {
  encode_type: EncodeType
  stream_type: StreamType
  size: string
  interval: string
  enabled: boolean
  endpoints: { host: string; port: string }[]
}

const sizeKey = (w: number, h: number) => `${w}x${h}`
const intervalKey = (i: Interval) => `${i.numerator}/${i.denominator}`

function formOf(d: Device): StreamForm {
  return {
    encode_type: d.stream.encode_type,
    stream_type: d.stream.stream_type,
    size: sizeKey(d.stream.width, d.stream.height),
    interval: intervalKey(d.stream.interval),
    enabled: d.stream.enabled,
    endpoints: d.stream.endpoints.map((e) => ({ host: e.host, port: String(e.port) })),
  }
}

function StreamSettings({ d, all, prefs }: { d: Device; all: Device[]; prefs: Preferences | null }) {
  // The form refills when the device's stream changes (not on every reload of the list).
  const draft = useDraft(d, formOf, d.stream)
  const { dirty, edit, revert } = draft
  const form = draft.form ?? formOf(d)
  const [run, state] = useAction()
  if (d.leader) return <p class="muted">This camera streams with its leader's settings.</p>
  const sizes = sizesFor(d, form.encode_type)
  const size = sizes.find((s) => sizeKey(s.width, s.height) === form.size)
  const intervals = size?.intervals ?? []
  // Changing the encode type or size keeps the choice when it is still offered, else takes the first offered.
  const pickEncode = (encode_type: EncodeType) => {
    const nextSizes = sizesFor(d, encode_type)
    const keep = nextSizes.find((s) => sizeKey(s.width, s.height) === form.size) ?? nextSizes[0]
    const interval = keep?.intervals.find((i) => intervalKey(i) === form.interval) ?? keep?.intervals[0]
    edit({ encode_type, size: keep ? sizeKey(keep.width, keep.height) : form.size, interval: interval ? intervalKey(interval) : form.interval })
  }
  const pickSize = (key: string) => {
    const next = sizes.find((s) => sizeKey(s.width, s.height) === key)
    const interval = next?.intervals.find((i) => intervalKey(i) === form.interval) ?? next?.intervals[0]
    edit({ size: key, interval: interval ? intervalKey(interval) : form.interval })
  }
  const addEndpoint = () =>
    run(async () => {
      // The next port no device uses, from the default; the pilot's own address when suggesting is on.
      const used = usedPorts(all)
      for (const e of form.endpoints) used.add(Number(e.port))
      let port = prefs?.default_stream.port ?? 5600
      while (used.has(port)) port++
      const host = prefs?.suggest_host === false ? prefs.default_stream.host : (await get<{ host: string }>('/api/preferences/get_recommended_host')).host || (prefs?.default_stream.host ?? '')
      edit({ endpoints: [...form.endpoints, { host, port: String(port) }] })
    })
  const save = () =>
    run(async () => {
      const done = draft.saving()
      const [width, height] = form.size.split('x').map(Number)
      const [numerator, denominator] = form.interval.split('/').map(Number)
      await post('/api/devices/configure_stream', {
        bus_info: d.bus_info,
        stream_type: form.stream_type,
        encode_type: form.encode_type,
        stream_format: { width: width ?? 0, height: height ?? 0, interval: { numerator: numerator ?? 1, denominator: denominator ?? 30 } },
        enabled: form.enabled,
        // A port that is not a number goes as typed: the service's 422 names it.
        endpoints: form.endpoints.map((e) => ({ host: e.host.trim(), port: e.port.trim() !== '' && Number.isInteger(Number(e.port)) ? Number(e.port) : e.port })),
      })
      // The form shows the saved stream once the list has it (never the old one in between), unless
      // it was edited again meanwhile.
      await reloadDevices()
      done()
    }, `${cameraTitle(d)}: stream settings saved`)
  const fields = state.fields
  return (
    <form
      class="form"
      data-stream-form
      onSubmit={(e) => {
        e.preventDefault()
        void save()
      }}
    >
      <div class="row">
        <Field label="Encoding" error={fields.encode_type}>
          {(fid, note) => (
            <select id={fid} aria-describedby={note} name="encode_type" value={form.encode_type} onChange={(e) => pickEncode(e.currentTarget.value as EncodeType)}>
              {encodeTypes(d).map((e) => (
                <option key={e} value={e}>
                  {e === 'SOFTWARE_H264' ? 'H.264 (encoded on the vehicle)' : e === 'H264' ? 'H.264 (camera)' : e === 'MJPG' ? 'MJPEG (camera)' : 'none'}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Size" error={fields.stream_format}>
          {(fid, note) => (
            <select id={fid} aria-describedby={note} name="size" value={form.size} disabled={!sizes.length} onChange={(e) => pickSize(e.currentTarget.value)}>
              {sizes.map((s) => (
                <option key={sizeKey(s.width, s.height)} value={sizeKey(s.width, s.height)}>
                  {s.width}×{s.height}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Rate" error={fields['stream_format.interval']}>
          {(fid, note) => (
            <select id={fid} aria-describedby={note} name="interval" value={form.interval} disabled={!intervals.length} onChange={(e) => edit({ interval: e.currentTarget.value })}>
              {intervals.map((i) => (
                <option key={intervalKey(i)} value={intervalKey(i)}>
                  {rateLabel(i)}
                </option>
              ))}
            </select>
          )}
        </Field>
        <Field label="Output" error={fields.stream_type}>
          {(fid, note) => (
            <select id={fid} aria-describedby={note} name="stream_type" value={form.stream_type} onChange={(e) => edit({ stream_type: e.currentTarget.value as StreamType })}>
              <option value="UDP">RTP over UDP</option>
              <option value="RECORDING">Record to a file</option>
            </select>
          )}
        </Field>
      </div>
      <fieldset>
        <legend>UDP endpoints</legend>
        {fields.endpoints && <span class="field-error">{fields.endpoints}</span>}
        {form.endpoints.map((e, n) => (
          <div class="row endpoint" key={n} data-endpoint={n}>
            <Field label="Host" error={fields[`endpoints.${n}.host`]}>
              {(fid, note) => <input id={fid} aria-describedby={note} name={`host-${n}`} value={e.host} onInput={(ev) => edit({ endpoints: form.endpoints.map((x, k) => (k === n ? { ...x, host: ev.currentTarget.value } : x)) })} />}
            </Field>
            <Field label="Port" error={fields[`endpoints.${n}.port`]}>
              {(fid, note) => <input id={fid} aria-describedby={note} class="port" name={`port-${n}`} inputMode="numeric" value={e.port} onInput={(ev) => edit({ endpoints: form.endpoints.map((x, k) => (k === n ? { ...x, port: ev.currentTarget.value } : x)) })} />}
            </Field>
            <button type="button" class="small" aria-label={`Remove endpoint ${e.host}:${e.port}`} onClick={() => edit({ endpoints: form.endpoints.filter((_, k) => k !== n) })}>
              Remove
            </button>
          </div>
        ))}
        <div>
          <button type="button" class="small" data-action="add-endpoint" onClick={() => void addEndpoint()}>
            Add endpoint
          </button>
        </div>
      </fieldset>
      <Field label="Enabled (streams now and after a restart)" inline error={fields.enabled}>
        {(fid, note) => <input id={fid} aria-describedby={note} type="checkbox" role="switch" name="enabled" checked={form.enabled} onChange={(e) => edit({ enabled: e.currentTarget.checked })} />}
      </Field>
      <div class="actions">
        <button type="submit" class="primary" disabled={state.busy} data-action="save-stream">
          Apply
        </button>
        <button type="button" disabled={!dirty || state.busy} onClick={revert}>
          Revert
        </button>
      </div>
      <ErrorLine error={state.error} />
    </form>
  )
}

function GroupPanel({ d, all }: { d: Device; all: Device[] }) {
  const [run, state] = useAction()
  const [pick, setPick] = useState('')
  const [removing, setRemoving] = useState<string | null>(null)
  const name = (bus: string) => {
    const x = all.find((o) => o.bus_info === bus)
    return x ? cameraTitle(x) : bus
  }
  const remove = (leader: string, follower: string) =>
    run(async () => {
      await post('/api/devices/remove_follower', { leader_bus_info: leader, follower_bus_info: follower })
      await reloadDevices()
    }, `${name(follower)} no longer follows ${name(leader)}`)
  if (d.leader) {
    return (
      <div class="group" data-group>
        <p>
          Follows <strong>{name(d.leader)}</strong>: streams in step with it, on its settings.
        </p>
        <button type="button" onClick={() => void remove(d.leader!, d.bus_info)} disabled={state.busy}>
          Leave the group
        </button>
        <ErrorLine error={state.error} />
      </div>
    )
  }
  if (!LEADS.has(d.device_type) && !d.followers.length) return <p class="muted">This camera cannot lead a stereo group.</p>
  // Every camera that can follow: the service says no, with its reason, to one that may not (led already, externally managed).
  const candidates = all.filter((o) => o.bus_info !== d.bus_info && FOLLOWS.has(o.device_type) && !d.followers.includes(o.bus_info))
  const note = (o: Device) => (o.leader ? ` (follows ${name(o.leader)})` : o.is_externally_managed ? ' (externally managed)' : '')
  // The pick, while it is still offered; else the first offered.
  const chosen = candidates.find((o) => o.bus_info === pick)?.bus_info ?? candidates[0]?.bus_info ?? ''
  return (
    <div class="group" data-group>
      {d.followers.length ? (
        <ul class="list">
          {d.followers.map((f) => (
            <li key={f} data-follower={f}>
              {name(f)}{' '}
              <button type="button" class="small" disabled={state.busy} onClick={() => setRemoving(f)}>
                Remove
              </button>
            </li>
          ))}
        </ul>
      ) : (
        <p class="muted">No followers.</p>
      )}
      {candidates.length > 0 ? (
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault()
            const follower = chosen
            void run(async () => {
              await post('/api/devices/add_follower', { leader_bus_info: d.bus_info, follower_bus_info: follower })
              await reloadDevices()
            }, `${name(follower)} now follows ${cameraTitle(d)}`)
          }}
        >
          <Field label="Add a follower">
            {(fid, note2) => (
              <select id={fid} aria-describedby={note2} value={chosen} onChange={(e) => setPick(e.currentTarget.value)} data-follower-pick>
                {candidates.map((o) => (
                  <option key={o.bus_info} value={o.bus_info}>
                    {cameraTitle(o)} · {o.bus_info}
                    {note(o)}
                  </option>
                ))}
              </select>
            )}
          </Field>
          <button type="submit" disabled={state.busy} data-action="add-follower">
            Add
          </button>
        </form>
      ) : (
        <p class="muted">No other camera here can follow.</p>
      )}
      <ErrorLine error={state.error} />
      {removing && (
        <ConfirmDialog
          title={`Remove ${name(removing)} from the group?`}
          confirm="Remove"
          onCancel={() => setRemoving(null)}
          onConfirm={() => {
            const follower = removing
            setRemoving(null)
            void remove(d.bus_info, follower)
          }}
        >
          <p>Its own stream stays stopped until you enable it; {cameraTitle(d)}'s stream restarts without it.</p>
        </ConfirmDialog>
      )}
    </div>
  )
}

function CameraCard({ d, all, prefs }: { d: Device; all: Device[]; prefs: Preferences | null }) {
  return (
    <article class="card" data-device={d.bus_info} aria-label={cameraTitle(d)}>
      <header>
        <Nickname d={d} />
        <p class="muted">
          {[d.manufacturer, d.name].filter(Boolean).join(' ')} · <code>{d.bus_info}</code>
        </p>
        <p class="muted" data-role>
          {groupRole(d, all)}
          {d.is_externally_managed && ' · managed by another program'}
        </p>
      </header>
      <Preview d={d} />
      <SoundBar d={d} />
      <StreamStatusLine d={d} />
      <StreamActions d={d} />
      <WatchLinks d={d} />
      <details data-section="controls">
        <summary>Controls</summary>
        <ControlsPanel d={d} />
      </details>
      <details data-section="stream">
        <summary>Stream settings</summary>
        <StreamSettings d={d} all={all} prefs={prefs} />
      </details>
      {(LEADS.has(d.device_type) || FOLLOWS.has(d.device_type) || d.followers.length > 0 || d.leader) && (
        <details data-section="group">
          <summary>Stereo group</summary>
          <GroupPanel d={d} all={all} />
        </details>
      )}
    </article>
  )
}

/** A camera unplugged while it streamed: its card stays, saying so, until it is back. */
function UnpluggedCard({ d }: { d: Device }) {
  return (
    <article class="card" data-unplugged={d.bus_info} aria-label={`${cameraTitle(d)} (unplugged)`}>
      <header>
        <h2>{cameraTitle(d)}</h2>
        <p class="muted">
          {[d.manufacturer, d.name].filter(Boolean).join(' ')} · <code>{d.bus_info}</code>
        </p>
      </header>
      <div class="preview-box empty" data-preview="none" data-frozen="true">
        <span class="preview-state" role="status" data-preview-state>
          camera unplugged — the video comes back when it is plugged in again
        </span>
      </div>
    </article>
  )
}

export function CamerasPage() {
  const list = useValue(devices)
  const away = useValue(unplugged)
  const error = useValue(devicesError)
  const prefs = useResource<Preferences>('/api/preferences', ['preferences_updated'])
  return (
    <section aria-labelledby="cameras-title">
      <h1 id="cameras-title">Cameras</h1>
      <ErrorLine error={error} />
      {list && !list.length && !away.length && <p class="muted">No camera is connected.</p>}
      <div class="cards" data-cards>
        {list?.map((d) => <CameraCard key={d.bus_info} d={d} all={list} prefs={prefs.data} />)}
        {away.map((d) => <UnpluggedCard key={`unplugged-${d.bus_info}`} d={d} />)}
      </div>
      <SoundOnlyCards />
    </section>
  )
}
