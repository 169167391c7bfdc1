// The vehicle's state as its autopilot reports it on the MAVLink link (plugins/mavlink fills it), for
// whoever records or shows it (the recorder writes it into each recording's text track) without
// importing a plugin. One source per app, on the registry. It also holds the one text form of that
// state: the line a recording's subtitle track carries, and its parser (the sidecars read it back).

/** The autopilot's last word, in the units a pilot reads. Null: not reported (yet). */
export interface VehicleTelemetry {
  /** When the autopilot's last HEARTBEAT arrived (ms since epoch). */
  heartbeat_at: number
  armed: boolean
  /** ArduSub's flight mode name (ardupilotmega.xml SUB_MODE), else `MODE <custom_mode>`. */
  mode: string
  /** Metres below the surface, as ArduSub reports it (VFR_HUD.alt, else GLOBAL_POSITION_INT.relative_alt, negated). */
  depth_m: number | null
  /** Degrees 0..359 (VFR_HUD.heading). */
  heading_deg: number | null
  roll_deg: number | null
  pitch_deg: number | null
  /** Degrees (GLOBAL_POSITION_INT), null while the vehicle has no fix (lat and lon both 0). */
  lat: number | null
  lon: number | null
  battery_v: number | null
  battery_pct: number | null
  battery_a: number | null
  /** SCALED_PRESSURE2 (ArduSub's external depth sensor), else SCALED_PRESSURE: hPa and °C. */
  pressure_hpa: number | null
  water_temp_c: number | null
}

/** An autopilot unheard for this long is gone: HEARTBEAT comes at 1 Hz, so three missed ones. */
export const AUTOPILOT_TIMEOUT_MS = 3000
/** How far back TelemetrySource.at reaches: the longest pre-record buffer (--pre-record-seconds, at most 30) and a margin. */
const HISTORY_MS = 32_000
/** And at most this many states (an autopilot streams a few dozen messages a second). */
const HISTORY_MAX = 4096

export type TelemetryChange = 'armed' | 'mode' | 'values' | 'autopilot'

/** The vehicle's telemetry: plugins/mavlink writes it, readers take snapshots and hear of changes. */
export class TelemetrySource {
  private state: VehicleTelemetry | null = null
  /** Every state of the last HISTORY_MS, oldest first: a recording's pre-record seconds show their own. */
  private history: { at: number; state: VehicleTelemetry }[] = []
  private listeners = new Set<(change: TelemetryChange, now: VehicleTelemetry | null) => void>()

  /** The state now; null without an autopilot on the link (never heard, or silent for AUTOPILOT_TIMEOUT_MS). */
  current(now = Date.now()): VehicleTelemetry | null {
    if (!this.state || now - this.state.heartbeat_at > AUTOPILOT_TIMEOUT_MS) return null
    return { ...this.state }
  }

  /** The state as it was at `when` (Date.now() ms; the last HISTORY_MS are kept); null without an autopilot then. */
  at(when: number): VehicleTelemetry | null {
    for (let i = this.history.length - 1; i >= 0; i--) {
      const { at, state } = this.history[i]!
      if (at > when) continue
      return when - state.heartbeat_at > AUTOPILOT_TIMEOUT_MS ? null : { ...state }
    }
    return null
  }

  /** When (Date.now() ms) the armed state or the mode changed after `since`, from what is kept. */
  changesSince(since: number): number[] {
    const at: number[] = []
    for (let i = 1; i < this.history.length; i++) {
      const [before, after] = [this.history[i - 1]!, this.history[i]!]
      if (after.at > since && (before.state.armed !== after.state.armed || before.state.mode !== after.state.mode)) at.push(after.at)
    }
    return at
  }

  private remember(): void {
    const now = Date.now()
    this.history.push({ at: now, state: this.state! })
    while (this.history.length > HISTORY_MAX || this.history[0]!.at < now - HISTORY_MS) this.history.shift()
  }

  /** A HEARTBEAT from the autopilot: armed and mode changes are announced as such. */
  heartbeat(armed: boolean, mode: string): void {
    const before = this.current()
    // Armed is compared with the last word heard, even a stale one: a vehicle disarmed while its link was
    // down must still stop what arming started.
    const wasArmed = this.state?.armed ?? false
    this.state = { ...(this.state ?? emptyTelemetry()), heartbeat_at: Date.now(), armed, mode }
    this.remember()
    if (!before) this.announce('autopilot')
    if (wasArmed !== armed) this.announce('armed')
    else if (before && before.mode !== mode) this.announce('mode')
  }

  /** Values from the other messages; kept even before the first HEARTBEAT (shown once it comes). */
  update(values: Partial<Omit<VehicleTelemetry, 'heartbeat_at' | 'armed' | 'mode'>>): void {
    this.state = { ...(this.state ?? { ...emptyTelemetry(), heartbeat_at: 0 }), ...values }
    this.remember()
    if (this.current()) this.announce('values')
  }

  /** Called on every change; answers the unsubscribe. A throwing listener is its own problem. */
  onChange(listener: (change: TelemetryChange, now: VehicleTelemetry | null) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Forgets the autopilot (the MAVLink link stopped). */
  clear(): void {
    const had = this.current()
    this.state = null
    this.history = []
    if (had) this.announce('autopilot')
    if (had?.armed) this.announce('armed')
  }

  private announce(change: TelemetryChange): void {
    const now = this.current()
    for (const listener of this.listeners) {
      try {
        listener(change, now)
      } catch {
        // a listener's failure must not stop the others or the MAVLink reader
      }
    }
  }
}

function emptyTelemetry(): VehicleTelemetry {
  return {
    heartbeat_at: 0, armed: false, mode: '', depth_m: null, heading_deg: null, roll_deg: null, pitch_deg: null, lat: null, lon: null,
    battery_v: null, battery_pct: null, battery_a: null, pressure_hpa: null, water_temp_c: null,
  }
}

// ---- the text a recording's subtitle track carries ----

/** One cue of the text track: what the pilot sees, and what the sidecars parse back. */
export interface TelemetryLine {
  /** The autopilot's state; null when the autopilot went silent during the recording. */
  vehicle: VehicleTelemetry | null
  /** The camera's stream state (StreamState: running, starting, stalled, …). */
  stream: string
  /** Wall-clock time the line was written. */
  utc: Date
}

const SEP = ' · '
const fixed = (v: number, digits: number) => (Object.is(Number(v.toFixed(digits)), -0) ? (0).toFixed(digits) : v.toFixed(digits))

/**
 * Two lines, each of `·`-separated items that start with their name: readable on the video, and the
 * one form the sidecars parse (parseTelemetryText). Items the autopilot did not report are left out.
 */
export function formatTelemetryText(line: TelemetryLine): string {
  const v = line.vehicle
  const clock = `${line.utc.toISOString().slice(11, 19)} UTC`
  if (!v) return [`no autopilot${SEP}video ${line.stream}${SEP}${clock}`].join('\n')
  const first = [
    v.depth_m !== null ? `depth ${fixed(v.depth_m, 2)} m` : null,
    v.heading_deg !== null ? `heading ${Math.round(v.heading_deg)}°` : null,
    v.roll_deg !== null ? `roll ${fixed(v.roll_deg, 1)}°` : null,
    v.pitch_deg !== null ? `pitch ${fixed(v.pitch_deg, 1)}°` : null,
    v.water_temp_c !== null ? `water ${fixed(v.water_temp_c, 1)} °C` : null,
  ].filter(Boolean)
  const battery = v.battery_v !== null ? `battery ${fixed(v.battery_v, 2)} V${v.battery_pct !== null ? ` ${Math.round(v.battery_pct)}%` : ''}` : null
  const second = [
    v.armed ? 'ARMED' : 'DISARMED',
    v.mode,
    v.lat !== null && v.lon !== null ? `position ${fixed(v.lat, 7)} ${fixed(v.lon, 7)}` : null,
    battery,
    `video ${line.stream}`,
    clock,
  ].filter(Boolean)
  return [first.join(SEP), second.join(SEP)].filter((l) => l.length > 0).join('\n')
}

/** The values of one cue, as the CSV columns name them; null where the cue does not say. */
export interface TelemetryValues {
  armed: boolean | null
  mode: string | null
  depth_m: number | null
  heading_deg: number | null
  roll_deg: number | null
  pitch_deg: number | null
  water_temp_c: number | null
  lat: number | null
  lon: number | null
  battery_v: number | null
  battery_pct: number | null
  stream: string | null
  utc: string | null
}

export const TELEMETRY_COLUMNS: (keyof TelemetryValues)[] = ['utc', 'armed', 'mode', 'depth_m', 'heading_deg', 'roll_deg', 'pitch_deg', 'water_temp_c', 'lat', 'lon', 'battery_v', 'battery_pct', 'stream']

/** The inverse of formatTelemetryText; items it does not know are ignored (a newer version's). */
export function parseTelemetryText(text: string): TelemetryValues {
  const out: TelemetryValues = {
    armed: null, mode: null, depth_m: null, heading_deg: null, roll_deg: null, pitch_deg: null, water_temp_c: null,
    lat: null, lon: null, battery_v: null, battery_pct: null, stream: null, utc: null,
  }
  const num = (s: string | undefined) => (s === undefined ? null : Number(s))
  let m: RegExpExecArray | null
  for (const item of text.split(/\n| · /).map((s) => s.trim()).filter(Boolean)) {
    if ((m = /^depth (-?[\d.]+) m$/.exec(item))) out.depth_m = num(m[1])
    else if ((m = /^heading (-?\d+)°$/.exec(item))) out.heading_deg = num(m[1])
    else if ((m = /^roll (-?[\d.]+)°$/.exec(item))) out.roll_deg = num(m[1])
    else if ((m = /^pitch (-?[\d.]+)°$/.exec(item))) out.pitch_deg = num(m[1])
    else if ((m = /^water (-?[\d.]+) °C$/.exec(item))) out.water_temp_c = num(m[1])
    else if ((m = /^position (-?[\d.]+) (-?[\d.]+)$/.exec(item))) [out.lat, out.lon] = [num(m[1]), num(m[2])]
    else if ((m = /^battery (-?[\d.]+) V(?: (-?\d+)%)?$/.exec(item))) [out.battery_v, out.battery_pct] = [num(m[1]), num(m[2])]
    else if ((m = /^video (.+)$/.exec(item))) out.stream = m[1]!
    else if ((m = /^(\d\d:\d\d:\d\d) UTC$/.exec(item))) out.utc = m[1]!
    else if (item === 'ARMED' || item === 'DISARMED') out.armed = item === 'ARMED'
    else if (item === 'no autopilot') out.mode = null
    else if (/^[A-Z][A-Z0-9_ ]*$/.test(item)) out.mode = item
  }
  return out
}
