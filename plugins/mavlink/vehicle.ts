// The autopilot's telemetry on the link (ArduSub's, in BlueOS mavlink-router forwards it to us), into the
// registry's TelemetrySource (core/telemetry.ts): HEARTBEAT (armed bit, flight mode), VFR_HUD (depth,
// heading), ATTITUDE, SCALED_PRESSURE/2/3, GLOBAL_POSITION_INT and SYS_STATUS. Only our own vehicle's
// system counts, and only a component that is an autopilot (a camera's or a ground station's heartbeat is not).
import { ardupilotmega, common, minimal } from 'mavlink-mappings'
import type { MavLinkPacket } from 'node-mavlink'
import type { TelemetrySource, VehicleTelemetry } from '../../core/telemetry'

const IDS = {
  heartbeat: minimal.Heartbeat.MSG_ID,
  vfrHud: common.VfrHud.MSG_ID,
  attitude: common.Attitude.MSG_ID,
  pressure: common.ScaledPressure.MSG_ID,
  pressure2: common.ScaledPressure2.MSG_ID,
  pressure3: common.ScaledPressure3.MSG_ID,
  position: common.GlobalPositionInt.MSG_ID,
  sysStatus: common.SysStatus.MSG_ID,
}
const HANDLED = new Set<number>(Object.values(IDS))
const DEG = 180 / Math.PI

/** ArduSub's flight mode from HEARTBEAT.custom_mode (ardupilotmega.xml SUB_MODE); another vehicle's as a number. */
export function flightMode(type: number, customMode: number): string {
  if (type === minimal.MavType.SUBMARINE) {
    const name = (ardupilotmega.SubMode as unknown as Record<number, string>)[customMode]
    if (name) return name
  }
  return `MODE ${customMode}`
}

export class VehicleTelemetryReader {
  /** The autopilot's component id once heard (its other messages count from then on). */
  private autopilot: number | null = null
  /** Which SCALED_PRESSURE the water values came from last: 2 (ArduSub's external sensor) wins over 1 and 3. */
  private pressureFrom = 0
  /** VFR_HUD seen: its depth wins over GLOBAL_POSITION_INT's. */
  private hud = false

  constructor(private readonly sysid: number, private readonly telemetry: TelemetrySource) {}

  static handles(msgid: number): boolean {
    return HANDLED.has(msgid)
  }

  /** Whether the packet was the autopilot's (a HEARTBEAT from elsewhere is for the caller to read). */
  onPacket(packet: MavLinkPacket): boolean {
    const { msgid, sysid, compid } = packet.header
    if (sysid !== this.sysid) return false
    const data = <T>(type: new () => T) => packet.protocol.data(packet.payload, type as never) as T
    if (msgid === IDS.heartbeat) {
      const hb = data(minimal.Heartbeat)
      if (hb.autopilot === minimal.MavAutopilot.INVALID || hb.type === minimal.MavType.GCS) return false
      this.autopilot = compid
      const armed = (hb.baseMode & minimal.MavModeFlag.SAFETY_ARMED) !== 0
      this.telemetry.heartbeat(armed, flightMode(hb.type, hb.customMode))
      return true
    }
    if (this.autopilot !== null && compid !== this.autopilot) return false
    const values: Partial<VehicleTelemetry> = {}
    switch (msgid) {
      case IDS.vfrHud: {
        const m = data(common.VfrHud)
        this.hud = true
        values.depth_m = -m.alt
        values.heading_deg = ((m.heading % 360) + 360) % 360
        break
      }
      case IDS.attitude: {
        const m = data(common.Attitude)
        values.roll_deg = m.roll * DEG
        values.pitch_deg = m.pitch * DEG
        break
      }
      case IDS.pressure:
      case IDS.pressure2:
      case IDS.pressure3: {
        const which = msgid === IDS.pressure2 ? 2 : msgid === IDS.pressure3 ? 3 : 1
        if (which !== 2 && this.pressureFrom === 2) return true
        this.pressureFrom = which
        const m = data(which === 2 ? common.ScaledPressure2 : which === 3 ? common.ScaledPressure3 : common.ScaledPressure)
        values.pressure_hpa = m.pressAbs
        values.water_temp_c = m.temperature / 100
        break
      }
      case IDS.position: {
        const m = data(common.GlobalPositionInt)
        const fix = m.lat !== 0 || m.lon !== 0
        values.lat = fix ? m.lat / 1e7 : null
        values.lon = fix ? m.lon / 1e7 : null
        // ArduSub's depth is its relative altitude; VFR_HUD says it too, and wins when present.
        if (!this.hud) values.depth_m = -m.relativeAlt / 1000
        break
      }
      case IDS.sysStatus: {
        const m = data(common.SysStatus)
        values.battery_v = m.voltageBattery === 0xffff ? null : m.voltageBattery / 1000
        values.battery_a = m.currentBattery === -1 ? null : m.currentBattery / 100
        values.battery_pct = m.batteryRemaining === -1 ? null : m.batteryRemaining
        break
      }
      default:
        return false
    }
    this.telemetry.update(values)
    return true
  }
}
