// The contracts between the core, the plugins and the drivers. The core imports no driver: plugins hand
// their backends to the registry under these interfaces, and everything above them is backend-agnostic.
import type { Static } from '@sinclair/typebox'
import type {
  CameraModel,
  ConnectionProfileModel,
  ControlFlagsModel,
  ControlModel,
  DeviceModel,
  DeviceRecordingModel,
  FormatSizeModel,
  IntervalModel,
  IpAddressModel,
  IpConfiguration as IpConfigurationModel,
  MenuItemModel,
  RecordingModel,
  StreamEndpointModel,
  StreamModel,
  StreamStatusModel,
  StreamHealthModel,
  WatchModel,
  WiredDeviceModel,
} from './schemas'
import type { ExtensionUnit } from './xu'

// ---- wire shapes (spec/api.md §2): the TypeBox schemas of core/schemas.ts, as TypeScript types ----

export type ControlType = Static<typeof ControlFlagsModel>['control_type']
export type EncodeType = Static<typeof StreamModel>['encode_type']
export type StreamType = Static<typeof StreamModel>['stream_type']

export type Interval = Static<typeof IntervalModel>
export type FormatSize = Static<typeof FormatSizeModel>
export type Camera = Static<typeof CameraModel>
export type MenuItem = Static<typeof MenuItemModel>
export type ControlFlags = Static<typeof ControlFlagsModel>
export type Control = Static<typeof ControlModel>
/**
 * A control's value on the wire, from every backend: a number for every numeric type, BOOLEAN included
 * (0/1, as the anchor's `ControlModel.value: float` sends it), a string only for STRING controls. No
 * boolean, so a UI tested on simulated cameras reads the same type from a real one.
 */
export type ControlValue = Control['value']
export type Endpoint = Static<typeof StreamEndpointModel>
export type Stream = Static<typeof StreamModel>

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
  /** Simulated cameras (a demo or a test, not a vehicle): streams then default to loopback (core/preferences.ts). */
  readonly simulated?: boolean
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

/** The serial board that triggers every camera of a leader/follower group at once. */
export interface FrameSyncBoard {
  /** USB ids of the board (or of its serial adapter). */
  usb: { vid: number; pid: number }[]
  baud: number
  /** The line sent, with {frequency} (the group's fps + frequency_offset, rounded) and {duty}; stop sends both as 0. */
  command: string
  duty: number
}

export interface VendorDefinition {
  vendor: string
  models: VendorModel[]
  /** UVC extension-unit controls as data (core/xu.ts interprets them; simulated cameras simulate them). */
  extensionUnits?: ExtensionUnit[]
  /** Controls whose protocol is not an extension unit's: vendor code. */
  controls?: VendorControl[]
  frameSync?: FrameSyncBoard
  /**
   * Cameras of this vendor that --simulate adds after its preset's: each states one of the vendor's own
   * USB ids, offers the formats given, has the usual UVC controls, and answers the vendor's extension
   * units as declared above (core/vendors.ts checks that they fit the vendor's models).
   */
  simulated?: SimulatedCamera[]
}

/** A simulated camera a vendor plugin declares (no hardware needed): what it reports to V4L2. */
export interface SimulatedCamera {
  /** The card name it reports, as GET /api/devices shows it. */
  name: string
  vid: number
  pid: number
  /** USB serial number (string descriptor 3); '' or absent: none, so its settings follow its port. */
  serial?: string
  /** Its video nodes in order: a capture node's formats (see `formatSizes`), null for a metadata node. */
  nodes: (Camera['formats'] | null)[]
}

// ---- sound (drivers/alsa, drivers/mock/audio.ts, plugins/audio) ----

/** A sound capture device: an ALSA capture PCM, or a simulated one (audiotestsrc). */
export interface AudioSource {
  /** Stable while plugged: 'alsa:<card id>,<pcm device>' or 'sim:<name>'. */
  id: string
  /** The card's name as ALSA reports it ('USB Audio Device'), or the simulated source's. */
  name: string
  kind: 'alsa' | 'simulated'
  /** The USB port in a camera's bus_info form ('usb-0000:00:14.0-1'): a camera there has this microphone. Null when not USB. */
  usb_port: string | null
  /** Most channels it captures. */
  channels: number
  /** Sample rates it captures (Hz), ascending; null when the driver does not say until it is opened (not USB). */
  rates: number[] | null
}

export interface AudioBackend {
  readonly name: string
  /** Every source present now. */
  list(): AudioSource[]
  /** gst-launch tokens producing raw audio of this source at `rate` Hz and `channels`, named `asrc`; null when it is gone. */
  sourceTokens(id: string, rate: number, channels: number): string[] | null
  /** Hot-plug: called when sources appeared or vanished. */
  onChange(listener: () => void): () => void
}

/** The sound of one camera's stream (plugins/audio), as GET /api/audio/streams shows it. */
export interface AudioStreamStatus {
  bus_info: string
  /** The attached source's id; null: none attached (or the camera's own microphone is absent). */
  source: string | null
  state: 'off' | 'starting' | 'running' | 'gone' | 'backoff' | 'error'
  error: string | null
  rate: number
  channels: number
  gain_db: number
  muted: boolean
  /** The last level measured (dBFS, after the gain, before the mute); null while nothing is measured. */
  level: { peak_db: number; rms_db: number } | null
  /** Where the Opus RTP goes beside the video: each UDP endpoint's port plus this offset; null when the stream is not UDP. */
  port_offset: number | null
  /** The loopback port the sound's RTP is copied to for the service's own readers (the recorder), while it runs. */
  tap_port: number | null
  /** Endpoints (host:port) the sound is not sent to: another stream's video goes there. */
  not_sent_to: string[]
}

/** What other plugins read of the audio plugin: the SDP endpoint, /metrics. */
export interface AudioService {
  streams(): AudioStreamStatus[]
  status(bus_info: string): AudioStreamStatus | undefined
  /** Sound-only streams (a hydrophone with no camera) that run now, with their hubs: RTSP mounts them at `/sound/<source>`. */
  soundOnly(): { source: string; hub: StreamHub }[]
  /** The recording files sound-only streams write now. */
  activeRecordings(): string[]
}

// ---- streaming (drivers/gstreamer) ----

export type StreamStatus = Static<typeof StreamStatusModel>
export type StreamHealth = Static<typeof StreamHealthModel>
/** A hub's health figures of one member (media/health.ts): the API's less the camera's own drops, with `alert` saying only whether it is raised. */
export type HubHealth = Omit<StreamHealth, 'alert' | 'dropped_frames'> & { alert: boolean }
export type StreamState = StreamStatus['state']

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
  /**
   * Stops the job. `cameraLeft`: the camera went away (unplugged); the stream's readers wait for its
   * next start (the hub's 'replaced') instead of ending, as viewers that cannot ask again need.
   */
  stop(bus_info: string, options?: { cameraLeft?: boolean }): Promise<void>
  status(bus_info: string): StreamStatus
  /** Frames lost since the job (re)started: v4l2src QoS losses plus group frames dropped out of step. */
  frameDrops(bus_info: string): number
  /** Absolute paths of recording files being written right now (rename/delete refuse them). */
  activeRecordings(): string[]
  /**
   * The hub of the job that streams this camera (a lone camera's, or its group's with `member` its
   * place: 0 = leader), for readers; null while no job streams it.
   */
  live(bus_info: string): { hub: StreamHub; member: number } | null
  /**
   * What a one-shot capture of this member reads as gst-launch tokens, up to the camera's native caps
   * (v4l2src with its caps, or a simulated camera's description): the JPEG views' still source.
   */
  captureSource?(member: StreamMember, stream: Stream): string[]
  /** The environment a child running captureSource's tokens needs (a simulated camera's own GStreamer element). */
  captureEnv?(): Record<string, string | undefined>
  /**
   * Starts recording the running stream of this camera (a group's: one file, one track per camera) from
   * the stream's hub, without a second encoder; null when no job streams it. Throws when the recorder fails to start.
   */
  startRecording(bus_info: string): Promise<DeviceRecording | null>
  /** Ends the recording (EOS: the file is closed and kept); null when none was active. The stream runs on. */
  stopRecording(bus_info: string): Promise<DeviceRecording | null>
  /** The camera's recording now (or the last one's, inactive), as GET /api/devices shows it. */
  recording(bus_info: string): DeviceRecording
  /** The job a bus_info leads while it runs (its endpoints: the sound of the stream follows them). */
  job?(bus_info: string): StreamJob | undefined
  stopAll(): Promise<void>
}

/** The ways to watch a camera (a device's `watch`): each filled by the plugin that serves it. */
export type WatchKind = keyof Static<typeof WatchModel>
/** The ways to watch a camera that count viewers (a snapshot is not a viewer): `registry.addViewerCount`. */
export type ViewerKind = 'rtsp' | 'whep' | 'cockpit' | 'mjpeg'
/** The ways that are WebRTC sessions (media/webrtc/session.ts): --max-viewers holds for all of them together. */
export const WEBRTC_VIEWER_KINDS: readonly ViewerKind[] = ['whep', 'cockpit']
/** A viewer plugin's link to a camera, on the origin the API request came to; null when not available now. */
export type WatchLink = (bus_info: string, origin: URL) => string | null
/** The recording made while streaming, on every device of GET /api/devices. */
export type DeviceRecording = Static<typeof DeviceRecordingModel>

/** A device as GET /api/devices shows it. */
export type Device = Static<typeof DeviceModel>

/** What other plugins read of the cameras plugin's devices (viewers: does it exist, whom does it follow, its nickname). */
export interface DeviceDirectory {
  /** The device as GET /api/devices shows it; undefined when none with that bus_info is connected. */
  device(bus_info: string): Device | undefined
  devices(): Device[]
  /**
   * What a one-shot capture of this camera reads while its stream does not run: the source the streamer
   * would read, in its stream's format (a follower: its leader's). Undefined when not connected or its
   * stream format is NONE; throws a 409 when a follower cannot take its leader's format.
   */
  stillSource(bus_info: string): { member: StreamMember; stream: Stream } | undefined
  /**
   * POST /api/devices/start_recording and stop_recording, for plugins that offer them another way
   * (MAVLink): the same checks and the same HttpErrors (404 unknown, 409 refused, 503 no recorder).
   */
  startRecording(bus_info: string): Promise<DeviceRecording>
  stopRecording(bus_info: string): Promise<DeviceRecording>
  /** POST /api/devices/set_uvc_control, for plugins that set controls another way (MAVLink PARAM_EXT): checked, saved, announced. */
  setControl(bus_info: string, control_id: number, value: number): Promise<{ success: true; value: ControlValue }>
}

/** What a hub carries: H.264 (payload type 96, RFC 6184) or JPEG (payload type 26, RFC 2435). */
export type MediaEncoding = 'H264' | 'JPEG'

/**
 * A consumer of a running stream's hub (media/hub.ts): a viewer, the recorder, a loopback feeder, a
 * counter. Each reader has its own bounded queue: one that falls behind skips to the next key frame
 * (H.264) or frame (JPEG) on its own queue and never holds the others.
 */
export interface HubReader {
  /** Who reads, for the log and /metrics: 'whep', 'rtsp', 'mjpeg', 'recorder', 'mavlink', … */
  readonly name: string
  /** 'key': from the next key frame (H.264) or frame start (JPEG); 'now' (the default): every packet from now on. */
  readonly from?: 'now' | 'key'
  /**
   * One RTP packet, shared with the other readers (copy it before changing it). A returned promise holds
   * this reader's next packets in its queue until it settles. A throw or a rejection ends this reader
   * alone (logged once with its reason).
   */
  packet(packet: Uint8Array): void | Promise<unknown>
  /** The reader ended without closing itself: its handler failed, or the stream stopped or was replaced by `next`. */
  ended?(end: ReaderEnd): void
}

export interface ReaderEnd {
  reason: 'failed' | 'closed' | 'replaced'
  /** A sentence: the error, or what happened to the stream. */
  detail: string
  /** For 'replaced': the hub of the restarted stream (`next.memberOf(bus_info)` finds the camera in it). */
  next?: StreamHub
}

/** A reader's place at a hub. */
export interface Reading {
  /** Leaves the hub (idempotent); `ended` is not called. */
  close(): void
  /** Packets this reader lost to its queue's bound (it fell behind). */
  readonly dropped: number
}

/**
 * A running stream's RTP, one stream per member (0 = leader), as it leaves the camera's pipeline:
 * H.264 with payload type 96 or JPEG with 26. Readers come and go without touching the pipeline.
 * Packets keep the pipeline's RTP sequence numbers and timestamps (a child restart starts new ones).
 * A hub lives as long as its job: a restarted job gets a new hub ('replaced'), a stopped one none ('closed').
 */
export interface StreamHub {
  readonly encoding: MediaEncoding
  readonly width: number
  readonly height: number
  readonly fps: number
  readonly members: number
  /** The member that is this camera, or -1. */
  memberOf(bus_info: string): number
  /** Adds a reader of member `member`'s packets. Throws RangeError for a member the hub does not have. */
  read(member: number, reader: HubReader): Reading
  /**
   * What member `member`'s pipeline has sent since the hub opened (the job started; child restarts
   * included): RTP bytes of one copy (each UDP endpoint receives as many) and frames (packets that end
   * one, with the RTP marker bit).
   */
  sent(member: number): { bytes: number; frames: number }
  /**
   * H.264: member `member`'s packets from its latest key frame (SPS, PPS, IDR) to the newest one, in
   * order and without a gap, so a new viewer or a snapshot can start at once instead of waiting for the
   * next key frame. Empty for JPEG, before the first key frame, or when the group of pictures outgrew
   * the cache's bound. The packets are shared: copy one before changing it.
   */
  lastGop(member: number): readonly Uint8Array[]
  /**
   * When member `member`'s frame stamped `ts` (its RTP timestamp, of the current timeline) was made, in ms
   * since the Unix epoch: its timeline anchored on the quickest packets (media/capture-clock.ts); null
   * before the first packet.
   */
  capturedAt(member: number, ts: number): number | null
  /** Member `member`'s health as it arrives (rate delivered, bitrate, key frames, stalls), measured once a second; null before its first frame. */
  health(member: number): HubHealth | null
  /** What a viewer of member `member` measured (its camera-to-screen delay in ms, the share of packets it lost; null: unknown): counted in its health for 2 s. */
  viewerFigures(member: number, delayMs: number | null, loss: number | null): void
  /** The camera-to-screen delays member `member`'s viewers said since the hub opened: cumulative counts per bound (seconds, then +Inf), their sum and count. */
  viewerDelays(member: number): { bounds: readonly number[]; counts: number[]; sum: number; count: number }
  /** Member `member`'s intervals between frames since the hub opened: cumulative counts per bound (seconds, then +Inf), their sum and count. */
  frameIntervals(member: number): { bounds: readonly number[]; counts: number[]; sum: number; count: number }
  /** Readers now (in all, and by name), what they lost to their queues' bounds since the hub opened (by name), and how many failed. */
  readerStats(): { readers: number; byName: Record<string, number>; dropped: Record<string, number>; failed: number }
  readonly closed: boolean
  /**
   * Whether the stream carries sound now: a source is attached and its packets (Opus RTP, payload type
   * 111, RFC 7587) come through sendSound — silence while its sound card is out (plugins/audio).
   */
  readonly hasSound: boolean
  /** Adds a reader of the stream's sound (every packet is a start: `from` does not matter). */
  readSound(reader: HubReader): Reading
  /** The sound's one writer (plugins/audio): a packet for the readers, or null when the stream's sound ends. */
  sendSound(packet: Uint8Array | null): void
  /** Sound packets and bytes sent since the hub opened. */
  soundStats(): { bytes: number; packets: number }
  /** The job restarted (restart_stream, a new configuration, a regrouping): `next` carries it now. */
  on(event: 'replaced', listener: (next: StreamHub) => void): () => void
  /** The job stopped (stop, unplug, unconfigure), with no hub after it. */
  on(event: 'closed', listener: (reason: string) => void): () => void
}

// ---- network (drivers/networkmanager) ----

export type IpAddress = Static<typeof IpAddressModel>
export type IpConfiguration = Static<typeof IpConfigurationModel>
export type WiredDevice = Static<typeof WiredDeviceModel>
export type ConnectionProfile = Static<typeof ConnectionProfileModel>

export interface NetworkBackend {
  readonly name: string
  wiredDevices(): Promise<WiredDevice[]>
  profiles(): Promise<ConnectionProfile[]>
  /** Resolves with the rollback window armed for the change (null when no active address changed). */
  updateProfile(path: string, ipv4: IpConfiguration): Promise<{ rollback_seconds: number | null } | void>
  activateProfile(iface: string, path: string): Promise<{ rollback_seconds: number | null } | void>
}

// ---- recordings (drivers/storage) ----

export type Recording = Static<typeof RecordingModel>
