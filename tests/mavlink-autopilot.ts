// An ArduSub autopilot for the tests, independent of the service's node-mavlink/mavlink-mappings: it
// sends, through the ground station's own framing (mavlink-gcs.ts, from common.xml), the telemetry a
// vehicle puts on the link: HEARTBEAT, VFR_HUD, ATTITUDE, SCALED_PRESSURE2, GLOBAL_POSITION_INT and
// SYS_STATUS, with known values, from system 1 component 1 (MAV_COMP_ID_AUTOPILOT1).
import type { GroundStation } from './mavlink-gcs'

/** minimal.xml / common.xml enums the autopilot uses. */
export const AP = {
  TYPE_SUBMARINE: 12,
  AUTOPILOT_ARDUPILOTMEGA: 3,
  MODE_FLAG_CUSTOM_MODE_ENABLED: 1,
  MODE_FLAG_SAFETY_ARMED: 128,
  STATE_STANDBY: 3,
  STATE_ACTIVE: 4,
} as const

/** ardupilotmega.xml, enum SUB_MODE (ArduSub's custom_mode). */
export const SUB_MODE = { STABILIZE: 0, ACRO: 1, ALT_HOLD: 2, AUTO: 3, GUIDED: 4, CIRCLE: 7, SURFACE: 9, POSHOLD: 16, MANUAL: 19 } as const

export interface AutopilotState {
  armed: boolean
  mode: keyof typeof SUB_MODE
  /** Metres below the surface (VFR_HUD.alt is its negative). */
  depth: number
  heading: number
  /** Degrees (ATTITUDE carries radians). */
  roll: number
  pitch: number
  lat: number
  lon: number
  /** Volts and percent (SYS_STATUS carries mV and %). */
  battery: number
  batteryPct: number
  /** SCALED_PRESSURE2: hPa and °C. */
  pressure: number
  waterTemp: number
}

export const AUTOPILOT = { sysid: 1, compid: 1 }

export class TestAutopilot {
  private timer: ReturnType<typeof setInterval> | null = null
  private bootAt = Date.now()
  /** Each HEARTBEAT's send time and what it said, for matching the recording's cues. */
  readonly heartbeats: { at: number; armed: boolean; mode: string }[] = []

  constructor(private readonly link: GroundStation, public state: AutopilotState) {}

  /** Sends everything now and then every `periodMs` (ArduSub sends HEARTBEAT at 1 Hz, the rest faster). */
  start(periodMs = 500): void {
    this.sendAll()
    this.timer = setInterval(() => this.sendAll(), periodMs)
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
  }

  /** Changes the state and sends a HEARTBEAT at once (as ArduSub does on arming or a mode change); answers its send time. */
  set(change: Partial<AutopilotState>): number {
    this.state = { ...this.state, ...change }
    this.sendAll()
    return this.heartbeats[this.heartbeats.length - 1]!.at
  }

  sendAll(): void {
    const s = this.state
    const time_boot_ms = Date.now() - this.bootAt
    this.link.send('HEARTBEAT', {
      type: AP.TYPE_SUBMARINE,
      autopilot: AP.AUTOPILOT_ARDUPILOTMEGA,
      base_mode: AP.MODE_FLAG_CUSTOM_MODE_ENABLED | (s.armed ? AP.MODE_FLAG_SAFETY_ARMED : 0),
      custom_mode: SUB_MODE[s.mode],
      system_status: s.armed ? AP.STATE_ACTIVE : AP.STATE_STANDBY,
      mavlink_version: 3,
    }, AUTOPILOT)
    this.heartbeats.push({ at: Date.now(), armed: s.armed, mode: s.mode })
    this.link.send('VFR_HUD', { airspeed: 0, groundspeed: 0, heading: s.heading, throttle: 50, alt: -s.depth, climb: 0 }, AUTOPILOT)
    this.link.send('ATTITUDE', { time_boot_ms, roll: (s.roll * Math.PI) / 180, pitch: (s.pitch * Math.PI) / 180, yaw: (s.heading * Math.PI) / 180 }, AUTOPILOT)
    this.link.send('SCALED_PRESSURE2', { time_boot_ms, press_abs: s.pressure, press_diff: 0, temperature: Math.round(s.waterTemp * 100) }, AUTOPILOT)
    this.link.send('GLOBAL_POSITION_INT', { time_boot_ms, lat: Math.round(s.lat * 1e7), lon: Math.round(s.lon * 1e7), alt: 0, relative_alt: Math.round(-s.depth * 1000), hdg: s.heading * 100 }, AUTOPILOT)
    this.link.send('SYS_STATUS', { voltage_battery: Math.round(s.battery * 1000), current_battery: 150, battery_remaining: s.batteryPct }, AUTOPILOT)
  }
}
