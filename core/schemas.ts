// One TypeBox schema per wire model, named as in spec/api.md. They drive request validation
// (core/validation.ts, pydantic semantics), the OpenAPI components (core/openapi.ts) and the TypeScript
// types of the wire shapes (core/types.ts: `Static<typeof …>`), so a shape is declared only here.
import { Type as t, type TLiteral, type TSchema, type TUnion } from '@sinclair/typebox'
import { LOG_LEVELS } from './log'

/** A string enum, validated as pydantic validates an Enum (type 'enum', ctx.expected). */
export const Enum = <const V extends string>(values: readonly V[], description?: string) =>
  t.Union(values.map((v) => t.Literal(v)), description ? { description } : {}) as unknown as TUnion<TLiteral<V>[]>

export const CONTROL_TYPES = ['INTEGER', 'BOOLEAN', 'MENU', 'BUTTON', 'INTEGER64', 'CTRL_CLASS', 'STRING', 'BITMASK', 'INTEGER_MENU'] as const
export const ENCODE_TYPES = ['MJPG', 'H264', 'SOFTWARE_H264', 'NONE'] as const
export const STREAM_TYPES = ['UDP', 'RECORDING'] as const
export const NOTIFY_EVENTS = ['DEVICE_MANAGED', 'DEVICE_UNMANAGED', 'STREAM_START'] as const
export const IPV4_METHODS = ['auto', 'manual', 'link-local', 'shared', 'disabled'] as const
const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
/** A dotted-quad IPv4 address without leading zeros (Python's ipaddress rejects "010.0.0.1" too). */
export const IPV4_PATTERN = `^${OCTET}(\\.${OCTET}){3}$`
const Ipv4Address = (description?: string) => t.String({ pattern: IPV4_PATTERN, examples: ['192.168.2.2', '10.0.0.1'], ...(description ? { description } : {}) })

// ---- cameras ----

/** The largest frame side and interval term accepted: beyond any camera (V4L2 sizes are 16-bit; 8K is 7680×4320). */
export const MAX_FRAME_SIDE = 16384
export const MAX_INTERVAL_TERM = 1_000_000
export const IntervalModel = t.Object(
  { numerator: t.Integer({ minimum: 1, maximum: MAX_INTERVAL_TERM }), denominator: t.Integer({ minimum: 1, maximum: MAX_INTERVAL_TERM }) },
  { description: 'Seconds per frame as a fraction: 1/30 is 30 fps.' },
)
export const FormatSizeModel = t.Object({ width: t.Integer(), height: t.Integer(), intervals: t.Array(IntervalModel) })
export const CameraModel = t.Object({
  path: t.String(),
  formats: t.Record(t.String(), t.Array(FormatSizeModel), { description: 'Keyed by pixel format: H264, MJPG, YUYV, …' }),
})
export const MenuItemModel = t.Object({ index: t.Integer(), name: t.String() })
const ControlValue = t.Union([t.Number(), t.Integer(), t.String()], { description: 'A number on every backend, BOOLEAN as 0/1; a string only for STRING controls.' })
export const ControlFlagsModel = t.Object({
  default_value: t.Number(),
  max_value: t.Number({ default: 0 }),
  min_value: t.Number({ default: 0 }),
  step: t.Number({ default: 0 }),
  control_type: Enum(CONTROL_TYPES),
  menu: t.Optional(t.Array(MenuItemModel)),
  read_only: t.Optional(t.Boolean({ description: 'Beyond the spec: the control cannot be set.' })),
  inactive: t.Optional(t.Boolean({ description: 'Beyond the spec: another control disables it now (e.g. exposure under auto-exposure).' })),
  disabled: t.Optional(t.Boolean({ description: 'Beyond the spec: permanently unusable.' })),
  read_error: t.Optional(t.String({ description: "Beyond the spec: why the camera did not answer when this control was last read; `value` is then the control's default, not the camera's." })),
})
export const ControlModel = t.Object({ flags: ControlFlagsModel, control_id: t.Integer(), name: t.String(), value: ControlValue })
export const StreamEndpointModel = t.Object({ host: t.String({ minLength: 1 }), port: t.Integer({ minimum: 1, maximum: 65535 }) })
export const StreamModel = t.Object({
  device_path: t.String(),
  encode_type: Enum(ENCODE_TYPES),
  stream_type: Enum(STREAM_TYPES),
  endpoints: t.Array(StreamEndpointModel),
  width: t.Integer(),
  height: t.Integer(),
  interval: IntervalModel,
  enabled: t.Boolean(),
})
export const DeviceInfoModel = t.Object({
  device_name: t.String(),
  bus_info: t.String(),
  device_paths: t.Array(t.String()),
  vid: t.Integer(),
  pid: t.Integer(),
})
export const FrameDropStats = t.Object({ num_drops: t.Integer() })
export const STREAM_STATES = ['stopped', 'starting', 'running', 'backoff', 'error'] as const
export const StreamHealthModel = t.Object(
  {
    fps: t.Union([t.Number({ minimum: 0 }), t.Null()], { description: 'Frames delivered per second over the last second, as the service receives them from the camera\'s pipeline; null until the first whole second of frames.' }),
    configured_fps: t.Number({ minimum: 0, description: 'The frame rate the stream is configured for.' }),
    bitrate: t.Union([t.Integer({ minimum: 0 }), t.Null()], { description: 'Bits per second of RTP over the last second (one copy); null until the first whole second.' }),
    frames: t.Integer({ minimum: 0, description: 'Frames delivered since the stream started.' }),
    lost_packets: t.Integer({ minimum: 0, description: 'RTP packets missing from the sequence since the stream started.' }),
    dropped_frames: t.Integer({ minimum: 0, description: "Frames the camera's pipeline dropped since the stream started (frame_stats.num_drops: v4l2src QoS, and a group's frames out of step; a follower: its group's)." }),
    keyframe_interval: t.Union([t.Number({ minimum: 0 }), t.Null()], { description: 'Seconds between the last two key frames; null before the second one.' }),
    stalls: t.Integer({ minimum: 0, description: 'Times no frame came for more than a second since the stream started (one still going on counts when it ends).' }),
    stalled: t.Boolean({ description: 'No frame has come for more than a second now.' }),
    viewer_delay_ms: t.Union([t.Integer({ minimum: 0 }), t.Null()], {
      description: "The worst camera-to-screen delay its viewers measured in the last 2 s (the console's WebRTC views say theirs: docs/latency.md); null while none does.",
    }),
    viewer_loss: t.Union([t.Number({ minimum: 0, maximum: 1 }), t.Null()], { description: "The worst share of the video's packets its viewers lost in the last 2 s, as they measured it; null while none says." }),
    alert: t.Union([t.String(), t.Null()], {
      description:
        'While, for 2 s, the delivered rate has been below 90 % of the configured rate, a viewer\'s delay past --delay-alert, or a viewer losing more than 5 % of the packets (until all is back for 2 s): the sentence, e.g. "exploreHD: video at 12 fps of 30" or "exploreHD: video 640 ms behind, link losing 12 %"; else null. Raised and cleared as stream_health events.',
    }),
  },
  { description: "Beyond the spec: the stream's health as the service receives it (this camera's own frames), measured once a second; null while no stream of it runs." },
)
export const StreamStatusModel = t.Object(
  {
    state: Enum(STREAM_STATES),
    error: t.Union([t.String(), t.Null()]),
    restarts: t.Integer(),
    health: t.Optional(t.Union([StreamHealthModel, t.Null()])),
  },
  { description: 'Beyond the spec: what the stream is doing now.' },
)
const WatchUrl = t.Union([t.String(), t.Null()])
export const WatchModel = t.Object(
  { rtsp: WatchUrl, whep: WatchUrl, cockpit: t.Union([t.String(), t.Null()], { description: "Cockpit's WebRTC signalling (a ws:// URL to give Cockpit under General → Video connection): null when the stream does not run as H.264" }), mjpeg: WatchUrl, snapshot: WatchUrl },
  { description: 'Beyond the spec: where to watch the camera, as absolute URLs on the host the request was sent to; null where that way is not available (not loaded, or the stream does not run).' },
)

export const DeviceRecordingModel = t.Object(
  {
    active: t.Boolean({ description: 'A recording of the running stream is being written now.' }),
    file: t.Union([t.String(), t.Null()], { description: "The file name in the recordings directory (GET /api/recordings/{name}): the current recording's, else the last one's; null when none was made since the service started." }),
    started: t.Union([t.String({ format: 'date-time' }), t.Null()], { description: 'When that recording started, ISO 8601 in UTC.' }),
    bytes: t.Integer({ minimum: 0, description: 'Its size on disk now (updated every second while active).' }),
    error: t.Union([t.String(), t.Null()], { description: 'Why that recording ended by itself (recorder failure, full disk); while it runs, why it cannot be pushed to the disk (fsync failing), if so; else null.' }),
    telemetry: t.Optional(t.Boolean({ description: "The file carries the vehicle's telemetry as a subtitle track (an autopilot was on the MAVLink link when it started): GET /api/recordings/{name}/telemetry.ass and .csv." })),
  },
  { description: 'Beyond the spec: the recording made while streaming (POST /api/devices/start_recording). A group records one file: its leader and followers show the same object.' },
)
export const DeviceModel = t.Object({
  cameras: t.Union([t.Array(CameraModel), t.Null()]),
  controls: t.Array(ControlModel),
  stream: StreamModel,
  name: t.Union([t.String(), t.Null()]),
  vid: t.Integer(),
  pid: t.Integer(),
  bus_info: t.String(),
  manufacturer: t.Union([t.String(), t.Null()]),
  nickname: t.String(),
  device_info: t.Union([DeviceInfoModel, t.Null()]),
  device_type: t.Integer({ enum: [0, 1, 2, 3, 4], description: '0 exploreHD (and any camera without a group role), 1 stellarHD leader, 2 stellarHD follower, 3 stellarHD leader Pro, 4 stellarHD follower Pro' }),
  followers: t.Array(t.String()),
  is_managed: t.Boolean(),
  frame_stats: FrameDropStats,
  is_externally_managed: t.Boolean(),
  string3: t.String(),
  stream_status: t.Optional(StreamStatusModel),
  leader: t.Optional(t.Union([t.String(), t.Null()], { description: 'Beyond the spec: bus_info of the leader this device follows.' })),
  connected: t.Optional(t.Boolean({ description: 'Beyond the spec: false for a device that is known but unplugged.' })),
  watch: t.Optional(WatchModel),
  recording: t.Optional(DeviceRecordingModel),
  record_while_armed: t.Optional(t.Boolean({ description: 'Beyond the spec: arming the vehicle (the autopilot on the MAVLink link) starts a recording of this camera, disarming stops it (POST /api/devices/set_record_while_armed).' })),
})

// ---- camera requests ----

export const SetUVCControlRequest = t.Object({ bus_info: t.String(), control_id: t.Integer(), value: t.Number() })
export const FollowerRequest = t.Object({ leader_bus_info: t.String(), follower_bus_info: t.String() })
export const BusInfoRequest = t.Object({ bus_info: t.String() })
export const RecordWhileArmedRequest = t.Object({ bus_info: t.String(), enabled: t.Boolean() })
export const NotifyCameraRequest = t.Object({
  bus_info: t.String(),
  event: t.Optional(Enum(NOTIFY_EVENTS, 'DEVICE_MANAGED when absent (the spec sends bus_info only)')),
})
export const StreamFormatModel = t.Object({ width: t.Integer({ minimum: 1, maximum: MAX_FRAME_SIDE }), height: t.Integer({ minimum: 1, maximum: MAX_FRAME_SIDE }), interval: IntervalModel })
export const ConfigureStreamRequest = t.Object({
  bus_info: t.String(),
  stream_type: Enum(STREAM_TYPES),
  stream_format: StreamFormatModel,
  encode_type: Enum(ENCODE_TYPES),
  enabled: t.Boolean(),
  endpoints: t.Array(StreamEndpointModel),
})
/**
 * A nickname is shown in UIs, logs and MAVLink: no control characters (C0 such as NUL and BEL, DEL, C1)
 * and no bidirectional embeddings, overrides or isolates (U+202A–U+202E, U+2066–U+2069), which can make
 * a name display as another (U+202E reverses what follows). Written as escapes, so the pattern means the
 * same to JavaScript and to pydantic's Rust regex, and reads the same in a 422's message.
 */
export const NICKNAME_PATTERN = '^[^\\u0000-\\u001f\\u007f-\\u009f\\u202a-\\u202e\\u2066-\\u2069]*$'
export const SetNicknameRequest = t.Object({ bus_info: t.String(), nickname: t.String({ maxLength: 64, pattern: NICKNAME_PATTERN, examples: ['Port camera', 'Kamera vorne'] }) })
export const SuccessModel = t.Object({ success: t.Boolean() })

// ---- preferences ----

export const PreferencesModel = t.Object({
  default_stream: t.Object({ host: t.String({ minLength: 1 }), port: t.Integer({ minimum: 1, maximum: 65535 }) }, { default: { host: '192.168.2.1', port: 5600 } }),
  suggest_host: t.Boolean({ default: true }),
  frequency_offset: t.Number({ default: 0, description: 'Added to the stream fps in the frame-sync command (Hz).' }),
})
export const RecommendedHostModel = t.Object({ host: t.String() })

// ---- network ----

export const IpAddressModel = t.Object({ address: Ipv4Address(), prefix: t.Integer({ minimum: 0, maximum: 32 }) })
export const IpConfiguration = t.Object({
  ip_addresses: t.Array(IpAddressModel, { default: [], description: "at least one when method is 'manual'" }),
  gateway: t.Union([Ipv4Address(), t.Null()], { default: null }),
  method: t.Union(
    IPV4_METHODS.map((m) => t.Literal(m)),
    { default: 'auto' },
  ),
  dns: t.Array(Ipv4Address(), { default: [] }),
  never_default: t.Boolean({ default: false }),
})
export const WiredDeviceModel = t.Object({
  interface: t.String(),
  state: t.Integer(),
  is_active: t.Boolean(),
  available_profiles: t.Array(t.String()),
  active_profile_id: t.Union([t.String(), t.Null()]),
  active_ip_configuration: t.Union([IpConfiguration, t.Null()]),
})
export const ConnectionProfileModel = t.Object({ id: t.String(), path: t.String(), ipv4_settings: IpConfiguration })
export const StatusModel = t.Object({ status: t.Boolean() })
export const PendingChangeModel = t.Object({ description: t.String(), interfaces: t.Array(t.String()), phase: t.String(), seconds_left: t.Integer() })
export const RollbackStatus = t.Object({
  pending: t.Union([PendingChangeModel, t.Null()]),
  rollback_seconds: t.Integer({
    description: 'the window (--network-rollback) an address change gets: known before the change, since the answer to a change of the address a client uses may never reach it',
  }),
})

// ---- recordings ----

export const RecordingModel = t.Object({
  path: t.String(),
  name: t.String(),
  format: t.String(),
  duration: t.String({ description: 'HH:MM:SS' }),
  size: t.String({ description: "'12.34 MB' (bytes / 1048576)" }),
  created: t.String({ description: 'YYYY-MM-DD HH:MM:SS' }),
  kind: t.Union([t.Literal('recording'), t.Literal('still')], {
    description: "Beyond the spec: 'still' for a JPEG taken by MAVLink's IMAGE_START_CAPTURE or POST /api/devices/capture_still (its name to the millisecond: `<camera>_<YYYY-MM-DD_HH-MM-SS-mmm>`), 'recording' for a video or sound recording.",
  }),
  segments: t.Optional(
    t.Array(
      t.Object({
        file: t.String({ description: 'the file name: GET /api/recordings/{file} serves it alone' }),
        duration: t.String({ description: 'HH:MM:SS' }),
        size: t.String({ description: "'12.34 MB'" }),
        in_progress: t.Optional(t.Literal(true)),
        kept: t.Optional(t.Literal(true)),
        telemetry: t.Optional(t.Literal(true, { description: "the file carries the vehicle's telemetry track: its sidecars are at /api/recordings/{file}/telemetry.ass and .csv" })),
      }),
      {
        description:
          'Beyond the spec: a recording written in segments (`<name>_seg001.mkv` …, cut every --record-segment-seconds and before 4 GiB), its files in order. ' +
          'Its `path` is then `<dir>/<name>.<format>`, a name for them all: rename, delete, keep and zip act on every file; duration and size are the sums.',
      },
    ),
  ),
})
/** Bounds of the retention policy: a petabyte, a century (beyond them a number is a typo, not a policy). */
export const MAX_FREE_GB = 1_048_576
export const MAX_AGE_DAYS = 36_500
export const RetentionPolicyModel = t.Object(
  {
    enabled: t.Boolean({ default: false, description: 'Off by default: nothing is deleted unless turned on.' }),
    min_free_gb: t.Number({ default: 0, minimum: 0, maximum: MAX_FREE_GB, description: 'Keep at least this many GB (2^30 bytes) free, deleting the oldest finished recordings; 0: no free-space rule.' }),
    max_age_days: t.Number({ default: 0, minimum: 0, maximum: MAX_AGE_DAYS, description: 'Delete finished recordings last written more than this many days ago; 0: no age rule.' }),
  },
  { description: 'Beyond the spec: the retention policy. Never deletes a recording being written or one marked kept (POST /api/recordings/{name}/keep).' },
)
export const RecordingDeletionModel = t.Object({
  name: t.String({ description: 'the file name' }),
  size: t.Integer({ description: 'bytes' }),
  reason: t.Union([t.Literal('max_age'), t.Literal('min_free'), t.Literal('manual')]),
  detail: t.String({ description: 'why, in one sentence' }),
  time: t.String({ format: 'date-time' }),
})
export const RetentionStateModel = t.Object({
  ...RetentionPolicyModel.properties,
  free: t.Union([t.Integer(), t.Null()], { description: 'free bytes on the recordings disk now; null when unavailable' }),
  short_bytes: t.Integer({ description: 'bytes the last pass could not free (the rest is kept or being written); 0 when the rule is met' }),
  last_run: t.Union([t.String({ format: 'date-time' }), t.Null()]),
  deletions: t.Array(RecordingDeletionModel, { description: 'recent deletions (the pilot\'s and the policy\'s), newest first' }),
})
export const KeptModel = t.Object({ name: t.String(), kept: t.Boolean() })
export const DiskModel = t.Object({ total: t.Integer(), used: t.Integer(), free: t.Integer() }, { description: 'bytes, of the file system holding the recordings' })
export const ZipStatusModel = t.Object({
  token: t.String(),
  state: t.Union([t.Literal('preparing'), t.Literal('ready'), t.Literal('downloading'), t.Literal('failed'), t.Literal('cancelled')]),
  files: t.Array(t.String()),
  bytes_done: t.Integer({ description: 'bytes of the preparing pass (CRC-32) done' }),
  bytes_total: t.Integer(),
  archive_size: t.Union([t.Integer(), t.Null()], { description: 'exact archive length once ready' }),
  downloaded: t.Integer(), // archive bytes sent by the download in progress (or the last one)
  error: t.Union([t.String(), t.Null()]),
  expires_at: t.String(),
  status_url: t.String(),
  download_url: t.String(),
})

// ---- logs (core/log.ts) ----

export const LOG_RING_CAPACITY = 1000
export const LogLevelEnum = Enum(LOG_LEVELS)
export const LogEntryModel = t.Object(
  {
    seq: t.Integer({ minimum: 1, description: 'Increasing by one for each entry written in this service run (from 1 after a restart)' }),
    time: t.String({ format: 'date-time' }),
    level: LogLevelEnum,
    msg: t.String({ examples: ['pipeline failed'] }),
    fields: t.Record(t.String(), t.Unknown(), { description: 'What else the entry carries: plugin, bus_info, reason, status, err {name, message}, …' }),
  },
  { description: 'One log entry, as written to stderr (without the stack of an error)' },
)
export const LogsModel = t.Object({
  entries: t.Array(LogEntryModel, { description: 'Oldest first' }),
  next_since: t.Integer({ minimum: 0, description: 'Pass as `since` next time to get only what follows' }),
})
export const LogsQuery = t.Object({
  since: t.Optional(
    t.Integer({ minimum: 0, description: 'Only entries with a larger seq, the oldest first (for polling: the last answer\'s next_since); without it, the newest entries' }),
  ),
  level: t.Optional(Enum(LOG_LEVELS, 'Only entries at this level or above (debug < info < warn < error); without it, every level kept')),
  limit: t.Optional(t.Integer({ minimum: 1, maximum: LOG_RING_CAPACITY, default: 100, description: 'At most this many entries' })),
})

// ---- errors ----

export const ValidationError = t.Object({
  loc: t.Array(t.Union([t.String(), t.Integer()])),
  msg: t.String(),
  type: t.String(),
  input: t.Optional(t.Any()),
  ctx: t.Optional(t.Object({})),
})
export const HTTPValidationError = t.Object({ detail: t.Array(ValidationError) })
export const WhepTimingModel = t.Object(
  {
    rtp_timestamp: t.Union([t.Integer(), t.Null()], { description: "The RTP timestamp of the newest frame sent to this viewer, as the viewer gets it (90 kHz); null before the first" }),
    captured_at: t.Union([t.Number(), t.Null()], { description: 'When that frame was made, in ms since the Unix epoch on the vehicle\'s clock (its timeline anchored on its quickest packets: docs/latency.md); null before the first' }),
    clock_rate: t.Integer({ description: "The video's RTP clock rate: 90000" }),
    server_time: t.Number({ description: "The vehicle's clock as it answered, in ms since the Unix epoch: with the request's round trip, the viewer's clock offset" }),
  },
  {
    description:
      "A WHEP session's timing, for the viewer's camera-to-screen delay: a frame stamped rtp_timestamp + n ticks was made at captured_at + n / 90 ms. The console polls it each second.",
  },
)

export const ErrorModel = t.Object({ detail: t.String() }, { description: 'Every failure but validation: a sentence a person can act on.' })

/** The named components of the OpenAPI document; nested occurrences become $refs. */
export const COMPONENTS: Record<string, TSchema> = {
  DeviceModel,
  CameraModel,
  FormatSizeModel,
  IntervalModel,
  ControlModel,
  ControlFlagsModel,
  MenuItemModel,
  StreamModel,
  StreamEndpointModel,
  DeviceInfoModel,
  FrameDropStats,
  StreamStatusModel,
  StreamHealthModel,
  DeviceRecordingModel,
  SetUVCControlRequest,
  FollowerRequest,
  BusInfoRequest,
  NotifyCameraRequest,
  ConfigureStreamRequest,
  StreamFormatModel,
  SetNicknameRequest,
  RecordWhileArmedRequest,
  SuccessModel,
  PreferencesModel,
  RecommendedHostModel,
  IpConfiguration,
  IpAddressModel,
  WiredDeviceModel,
  ConnectionProfileModel,
  StatusModel,
  RecordingModel,
  RetentionPolicyModel,
  HTTPValidationError,
  ValidationError,
  ErrorModel,
  LogEntryModel,
}
