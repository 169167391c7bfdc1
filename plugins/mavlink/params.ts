// The PARAM_EXT protocol (https://mavlink.io/en/services/parameter_ext.html) for one service's camera
// components: the parameters of each camera's definition (camdef.ts) read with PARAM_EXT_REQUEST_LIST and
// PARAM_EXT_REQUEST_READ (answered with PARAM_EXT_VALUE) and set with PARAM_EXT_SET (answered with
// PARAM_EXT_ACK). A set is POST /api/devices/set_uvc_control: the cameras plugin's own setter, so it is
// checked against the control's flags, saved and announced exactly as an API set is.
// Values travel as QGroundControl writes them: the value's own bytes, little-endian, at the start of
// param_value (char[128]), typed by param_type (MAV_PARAM_EXT_TYPE); an int32 parameter is 4 bytes.
import { common, type MavLinkData } from 'mavlink-mappings'
import type { MavLinkPacket } from 'node-mavlink'
import { HttpError, RequestValidationError } from '../../core/errors'
import type { Logger } from '../../core/log'
import type { ControlValue, Device } from '../../core/types'
import { cameraParams, type CameraParam } from './camdef'

const ExtType = common.MavParamExtType
const Ack = common.ParamAck
const VALUE_BYTES = 128
const ID_BYTES = 16

export interface ParamHost {
  /** The camera components a message for (target system, target component) reaches. */
  targets(sysid: number, compid: number): { bus_info: string; compid: number }[]
  device(bus_info: string): Device | undefined
  setControl(bus_info: string, control_id: number, value: number): Promise<{ value: ControlValue }>
  send(compid: number, message: MavLinkData): void
  log: Logger
}

/** The definition's type as MAV_PARAM_EXT_TYPE. */
const extType = (param: CameraParam) => (param.type === 'int32' ? ExtType.INT32 : ExtType.UINT8)

/** A value as param_value carries it: its little-endian bytes, as a latin1 string (node-mavlink writes one byte per char). */
export function encodeValue(value: number, type: common.MavParamExtType): string {
  const bytes = Buffer.alloc(8)
  if (type === ExtType.INT32) bytes.writeInt32LE(value | 0)
  else bytes.writeUInt8(value & 0xff)
  const used = type === ExtType.INT32 ? 4 : 1
  return bytes.subarray(0, used).toString('latin1')
}

/** param_value's bytes read as `type`; null for a type a camera control cannot take. */
export function decodeValue(bytes: Buffer, type: number): number | null {
  switch (type) {
    case ExtType.UINT8:
      return bytes.readUInt8(0)
    case ExtType.INT8:
      return bytes.readInt8(0)
    case ExtType.UINT16:
      return bytes.readUInt16LE(0)
    case ExtType.INT16:
      return bytes.readInt16LE(0)
    case ExtType.UINT32:
      return bytes.readUInt32LE(0)
    case ExtType.INT32:
      return bytes.readInt32LE(0)
    case ExtType.REAL32:
      return bytes.readFloatLE(0)
    case ExtType.REAL64:
      return bytes.readDoubleLE(0)
    default:
      return null
  }
}

/** A char[n] field's text up to its first NUL. */
const cString = (bytes: Buffer) => {
  const end = bytes.indexOf(0)
  return bytes.subarray(0, end < 0 ? bytes.length : end).toString('latin1')
}

export class CameraParams {
  constructor(private readonly host: ParamHost) {}

  static handles(msgid: number): boolean {
    return msgid === common.ParamExtRequestList.MSG_ID || msgid === common.ParamExtRequestRead.MSG_ID || msgid === common.ParamExtSet.MSG_ID
  }

  onPacket(packet: MavLinkPacket): void {
    const { msgid } = packet.header
    // Read from the payload itself (MAVLink 2 cuts its trailing zeros): param_value is bytes, not text,
    // and a text decoder would stop at its first zero byte.
    const payload = Buffer.alloc(160)
    packet.payload.copy(payload)
    if (msgid === common.ParamExtRequestList.MSG_ID) {
      // target_system, target_component
      for (const target of this.host.targets(payload[0]!, payload[1]!)) this.sendAll(target)
    } else if (msgid === common.ParamExtRequestRead.MSG_ID) {
      // int16 param_index, target_system, target_component, char[16] param_id
      const index = payload.readInt16LE(0)
      const id = cString(payload.subarray(4, 4 + ID_BYTES))
      for (const target of this.host.targets(payload[2]!, payload[3]!)) this.sendOne(target, index, id)
    } else if (msgid === common.ParamExtSet.MSG_ID) {
      // target_system, target_component, char[16] param_id, char[128] param_value, uint8 param_type
      const id = cString(payload.subarray(2, 2 + ID_BYTES))
      const value = payload.subarray(18, 18 + VALUE_BYTES)
      const type = payload[18 + VALUE_BYTES]!
      for (const target of this.host.targets(payload[0]!, payload[1]!)) {
        this.set(target, id, value, type).catch((e) => this.host.log.warn('MAVLink parameter set failed', { bus_info: target.bus_info, param_id: id, err: e }))
      }
    }
  }

  private params(bus_info: string): { device: Device; params: CameraParam[] } | null {
    const device = this.host.device(bus_info)
    return device ? { device, params: cameraParams(device) } : null
  }

  private valueMessage(param: CameraParam, index: number, count: number): common.ParamExtValue {
    const msg = new common.ParamExtValue()
    msg.paramId = param.id
    msg.paramValue = encodeValue(Number(param.control.value), extType(param))
    msg.paramType = extType(param)
    msg.paramCount = count
    msg.paramIndex = index
    return msg
  }

  private sendAll(target: { bus_info: string; compid: number }): void {
    const found = this.params(target.bus_info)
    if (!found) return
    found.params.forEach((param, i) => this.host.send(target.compid, this.valueMessage(param, i, found.params.length)))
  }

  /** By index when it is not -1, else by id; an unknown parameter gets no answer (the protocol's rule). */
  private sendOne(target: { bus_info: string; compid: number }, index: number, id: string): void {
    const found = this.params(target.bus_info)
    if (!found) return
    const at = index >= 0 ? index : found.params.findIndex((p) => p.id === id)
    const param = found.params[at]
    if (param) this.host.send(target.compid, this.valueMessage(param, at, found.params.length))
  }

  private ack(compid: number, id: string, value: number, type: common.MavParamExtType, result: common.ParamAck): void {
    const msg = new common.ParamExtAck()
    msg.paramId = id
    msg.paramValue = encodeValue(value, type)
    msg.paramType = type
    msg.paramResult = result
    this.host.send(compid, msg)
  }

  /**
   * Refused by the checks (wrong type, out of range, off step, not a menu entry, inactive now):
   * VALUE_UNSUPPORTED with the value the camera still holds. The camera failing, or the setting not
   * saved: FAILED. Accepted: the value the camera holds afterwards.
   */
  private async set(target: { bus_info: string; compid: number }, id: string, bytes: Buffer, type: number): Promise<void> {
    const found = this.params(target.bus_info)
    const param = found?.params.find((p) => p.id === id)
    if (!param) {
      this.host.log.info('MAVLink set of an unknown parameter', { bus_info: target.bus_info, param_id: id })
      return this.ack(target.compid, id, 0, ExtType.INT32, Ack.VALUE_UNSUPPORTED)
    }
    const current = Number(param.control.value)
    const value = decodeValue(bytes, type)
    if (value === null || !Number.isInteger(value)) return this.ack(target.compid, id, current, extType(param), Ack.VALUE_UNSUPPORTED)
    try {
      const { value: held } = await this.host.setControl(target.bus_info, param.control_id, value)
      this.ack(target.compid, id, Number(held), extType(param), Ack.ACCEPTED)
    } catch (e) {
      const refused = e instanceof RequestValidationError || (e instanceof HttpError && e.status === 409)
      this.host.log.info('MAVLink parameter set refused', { bus_info: target.bus_info, param_id: id, value, detail: e instanceof HttpError ? e.detail : e instanceof RequestValidationError ? e.errors.map((x) => x.msg).join('; ') : (e as Error).message })
      const now = this.params(target.bus_info)?.params.find((p) => p.id === id)
      this.ack(target.compid, id, Number(now?.control.value ?? current), extType(param), refused ? Ack.VALUE_UNSUPPORTED : Ack.FAILED)
    }
  }
}
