// The contracts between the core, the plugins and the drivers. The core imports no driver: plugins hand
// their backends to the registry under these interfaces, and everything above them is backend-agnostic.

// ---- wire shapes (spec/api.md §2); the TypeBox schemas in core/schemas.ts describe the same shapes ----

export type ControlType =
  | 'INTEGER' | 'BOOLEAN' | 'MENU' | 'BUTTON' | 'INTEGER64' | 'CTRL_CLASS' | 'STRING' | 'BITMASK' | 'INTEGER_MENU'
export type EncodeType = 'MJPG' | 'H264' | 'SOFTWARE_H264' | 'NONE'
export type StreamType = 'UDP' | 'RECORDING'

export interface Interval { numerator: number; denominator: number }
export interface FormatSize { width: number; height: number; intervals: Interval[] }
export interface Camera { path: string; formats: Record<string, FormatSize[]> }
export interface MenuItem { index: number; name: string }
/**
 * A control's value on the wire, from every backend: a number for every numeric type, BOOLEAN included
 * (0/1, as the anchor's `ControlModel.value: float` sends it), a string only for STRING controls. No
 * boolean, so a UI tested on simulated cameras reads the same type from a real one.
 */
export type ControlValue = number | string
export interface ControlFlags {
  default_value: number
  max_value: number
  min_value: number
  step: number
  control_type: ControlType
  menu?: MenuItem[]
  // Beyond the spec (added fields are allowed): what the UI needs to grey a control out.
  read_only?: boolean
  inactive?: boolean
  disabled?: boolean
}
export interface Control { flags: ControlFlags; control_id: number; name: string; value: ControlValue }
export interface Endpoint { host: string; port: number }
export interface Stream {
  device_path: string
  encode_type: EncodeType
  stream_type: StreamType
  endpoints: Endpoint[]
  width: number
  height: number
  interval: Interval
  enabled: boolean
}

// ---- camera backends (drivers/mock, drivers/v4l2) ----

/** One physical device as a backend sees it: every video node sharing one bus_info. */
export interface RawDevice {
  bus_info: string
  name: string
  vid: number
  pid: number
  manufacturer: string | null
  /** USB string descriptor 3 (the serial number by convention); '' when absent. */
  serial: string
  device_paths: string[]
  /** Capture nodes that offer formats; keys of `formats` are fourcc-like names: 'H264', 'MJPG', 'YUYV', … */
  cameras: Camera[]
  controls: Control[]
}

/** Where a stream's video comes from: a real V4L2 node, or a GStreamer description that imitates one. */
export type VideoSource =
  | { kind: 'v4l2'; device: string }
  /** gst-launch description producing the camera's native output (image/jpeg, video/x-h264, video/x-raw). */
  | { kind: 'gst'; description: string }

/** A failure a backend reports; the core maps `code` to an HTTP status (see core/errors.ts). */
export class DeviceError extends Error {
  constructor(
    /** errno name: 'EINVAL', 'ERANGE', 'EACCES', 'EBUSY', 'ENODEV', 'ENOENT', 'EIO', 'EPROTO', 'ETIMEDOUT', … */
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = 'DeviceError'
  }
}

export interface ActiveFormat {
  device_path: string
  encode_type: EncodeType
  width: number
  height: number
  interval: Interval
}

export interface CameraBackend {
  readonly name: string
  /** Every device present now. */
  list(): Promise<RawDevice[]>
  /** Applies a control and resolves with the value the hardware holds afterwards. Throws DeviceError. */
  setControl(bus_info: string, control_id: number, value: ControlValue): Promise<ControlValue>
  /** Re-reads one device's controls (values and flags) without enumerating everything again. */
  controls?(bus_info: string): Promise<Control[]>
  /** setControl, answering too the device's controls read right after it in the same pass (one device round trip instead of setControl + controls). */
  setControlAndRead?(bus_info: string, control_id: number, value: ControlValue): Promise<{ value: ControlValue; controls: Control[] }>
  /** The format the camera runs right now (VIDIOC_G_FMT/G_PARM); for notify_camera STREAM_START. */
  activeFormat?(bus_info: string): Promise<ActiveFormat | null>
  /** What the streamer should read for this camera node. */
  videoSource(device_path: string, format: ActiveFormat): VideoSource
  /** Raw UVC extension-unit transfer (UVCIOC_CTRL_QUERY) for vendor plugins. */
  xuQuery?(device_path: string, q: XuQuery): Promise<Uint8Array>
  /** Hot-plug: called with the bus_info of a device that appeared or vanished. */
  onChange(listener: (change: { kind: 'added' | 'removed'; bus_info: string }) => void): () => void
  start?(): Promise<void>
  stop?(): Promise<void>
}

export interface XuQuery {
  unit: number
  selector: number
  /** UVC_SET_CUR = 0x01, UVC_GET_CUR = 0x81, GET_MIN 0x82, GET_MAX 0x83, GET_RES 0x84, GET_LEN 0x85, GET_INFO 0x86, GET_DEF 0x87 */
  query: number
  data: Uint8Array
}

// ---- vendor definitions (plugins/dwe, examples/): a vendor device is mostly data ----

export type GroupRole = 'none' | 'leader' | 'follower'

export interface VendorModel {
  vid: number
  pids: number[]
  device_type: number // spec DeviceType, 0..4
  role: GroupRole
  model: string
}

export interface VendorControl {
  /** Negative ids are vendor options (spec: set_uvc_control with control_id < 0). */
  control_id: number
  name: string
  flags: ControlFlags
  /** Which devices carry the control. */
  appliesTo(device: RawDevice): boolean
  get(device: RawDevice, backend: CameraBackend): Promise<number>
  set(device: RawDevice, backend: CameraBackend, value: number): Promise<void>
}

export interface VendorDefinition {
  vendor: string
  models: VendorModel[]
  controls?: VendorControl[]
}

// ---- streaming (drivers/gstreamer) ----

export type StreamState = 'stopped' | 'starting' | 'running' | 'backoff' | 'error'
export interface StreamStatus { state: StreamState; error: string | null; restarts: number }

/** One camera of a stream group (a lone camera is a group of one). */
export interface StreamMember {
  bus_info: string
  /** File-name stem for recordings: nickname, else device name. */
  label: string
  source: VideoSource
  /** The pixel format the stream reads from the camera ('MJPG', 'YUYV', …); absent: the encode type's own. */
  pixel_format?: string
}

export interface StreamJob {
  /** The leader's bus_info, or the lone camera's: the key of the job. */
  bus_info: string
  stream: Stream
  members: StreamMember[]
  recordings_dir: string
}

export interface Streamer {
  readonly name: string
  /** Starts (or restarts) the job; resolves once the child is spawned, not when frames flow. */
  start(job: StreamJob): Promise<void>
  stop(bus_info: string): Promise<void>
  status(bus_info: string): StreamStatus
  /** Frames lost since the job (re)started: v4l2src QoS losses plus group frames dropped out of step. */
  frameDrops(bus_info: string): number
  /** Absolute paths of recording files being written right now (rename/delete refuse them). */
  activeRecordings(): string[]
  stopAll(): Promise<void>
}

// ---- network (drivers/networkmanager) ----

export interface IpAddress { address: string; prefix: number }
export interface IpConfiguration {
  ip_addresses: IpAddress[]
  gateway: string | null
  method: string
  dns: string[]
  never_default: boolean
}
export interface WiredDevice {
  interface: string
  state: number
  is_active: boolean
  available_profiles: string[]
  active_profile_id: string | null
  active_ip_configuration: IpConfiguration | null
}
export interface ConnectionProfile { id: string; path: string; ipv4_settings: IpConfiguration }

export interface NetworkBackend {
  readonly name: string
  wiredDevices(): Promise<WiredDevice[]>
  profiles(): Promise<ConnectionProfile[]>
  /** Resolves with the rollback window armed for the change (null when no active address changed). */
  updateProfile(path: string, ipv4: IpConfiguration): Promise<{ rollback_seconds: number | null } | void>
  activateProfile(iface: string, path: string): Promise<{ rollback_seconds: number | null } | void>
}

// ---- recordings (drivers/storage) ----

export interface Recording { path: string; name: string; format: string; duration: string; size: string; created: string }
