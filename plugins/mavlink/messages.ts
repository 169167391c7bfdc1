// The MAVLink camera protocol's messages for one camera (common.xml, mavlink-mappings' classes):
// what QGroundControl reads to list a camera, play its stream and record it.
import { common, minimal } from 'mavlink-mappings'
import type { DeviceRecording } from '../../core/types'

/** One camera as its MAVLink component describes it. */
export interface CameraFacts {
  vendor: string
  model: string
  /** The stream's name in a ground station's list: the nickname, else the device name. */
  streamName: string
  /** The largest size the camera offers (CAMERA_INFORMATION's resolution). */
  sensor: { width: number; height: number }
  /** Periscope's version as CAMERA_INFORMATION's firmware_version (the camera's own is not known). */
  firmware: string
  /** The camera definition (plugins/mavlink/camdef.ts) a ground station downloads for the camera's settings. */
  definition: { uri: string; version: number }
  /** Stills can be taken (MAV_CMD_IMAGE_START_CAPTURE: the jpeg plugin's snapshot). */
  stills: boolean
}

/**
 * The camera's mode (CAMERA_SETTINGS mode_id, MAV_CMD_SET_CAMERA_MODE). Both modes do both things here
 * (a still is a snapshot of the running stream, a recording a copy of it): the mode only tells a ground
 * station what its one shutter button does. QGroundControl's button records in video mode and calls
 * takePhoto only in image mode (PhotoVideoControl.qml), so a pilot who wants stills switches to image.
 */
export type CameraMode = 'image' | 'video'

/** The stream as it runs now. */
export interface StreamFacts {
  running: boolean
  width: number
  height: number
  fps: number
  encoding: 'H264' | 'JPEG'
  /** Measured at the stream's hub, bits/s (0 until a second has been measured). */
  bitrate: number
  uri: { type: 'RTSP' | 'RTPUDP' | 'WHEP'; uri: string }
  /** Its stream id (1: RTSP or RTP/UDP; 2: WHEP, when the camera can be watched so) and how many the camera has. */
  id: number
  count: number
}

export interface DiskFacts {
  total: number
  used: number
  free: number
}

const MiB = 1 << 20

/**
 * VIDEO_STREAM_TYPE_WHEP: WebRTC-HTTP Egress Protocol, in common.xml (and mavlink/c_library_v2's
 * common.h) since 2025. mavlink-mappings 1.0.21 predates it, so it is written here by its number.
 */
export const VIDEO_STREAM_TYPE_WHEP = 4 as common.VideoStreamType
const STREAM_TYPES = { RTSP: common.VideoStreamType.RTSP, RTPUDP: common.VideoStreamType.RTPUDP, WHEP: VIDEO_STREAM_TYPE_WHEP }

/** The time since the service started, as every *_time_boot_ms field wants it. */
export const timeBootMs = () => Math.floor(process.uptime() * 1000) >>> 0

/** A string as the bytes MAVLink carries (UTF-8), cut at a character boundary to fit `max` bytes. */
export function utf8Bytes(text: string, max: number): number[] {
  const bytes = Buffer.from(text, 'utf8')
  let end = Math.min(bytes.length, max)
  while (end > 0 && end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end--
  return [...bytes.subarray(0, end)]
}

/** A char[] field: node-mavlink writes one byte per UTF-16 unit, so the UTF-8 bytes go as a latin1 string. */
export const charField = (text: string, max: number) => Buffer.from(utf8Bytes(text, max)).toString('latin1')

/** `major.minor.patch` as CAMERA_INFORMATION's firmware_version: (Dev << 24) | (Patch << 16) | (Minor << 8) | Major. */
export function firmwareVersion(version: string): number {
  const [major = 0, minor = 0, patch = 0] = version.split(/[.-]/).map((part) => Number.parseInt(part, 10) || 0)
  return ((patch & 0xff) << 16) | ((minor & 0xff) << 8) | (major & 0xff)
}

export function heartbeat(running: boolean): minimal.Heartbeat {
  const msg = new minimal.Heartbeat()
  msg.type = minimal.MavType.CAMERA
  msg.autopilot = minimal.MavAutopilot.INVALID
  msg.baseMode = 0 as minimal.MavModeFlag
  msg.customMode = 0
  msg.systemStatus = running ? minimal.MavState.ACTIVE : minimal.MavState.STANDBY
  msg.mavlinkVersion = 3
  return msg
}

export function cameraInformation(camera: CameraFacts): common.CameraInformation {
  const msg = new common.CameraInformation()
  msg.timeBootMs = timeBootMs()
  msg.vendorName = utf8Bytes(camera.vendor, 32)
  msg.modelName = utf8Bytes(camera.model, 32)
  msg.firmwareVersion = firmwareVersion(camera.firmware)
  msg.focalLength = NaN
  msg.sensorSizeH = NaN
  msg.sensorSizeV = NaN
  msg.resolutionH = camera.sensor.width
  msg.resolutionV = camera.sensor.height
  msg.lensId = 0
  msg.flags = cameraFlags(camera)
  msg.camDefinitionVersion = camera.definition.version
  msg.camDefinitionUri = charField(camera.definition.uri, 140)
  msg.gimbalDeviceId = 0
  msg.cameraDeviceId = 0
  return msg
}

/**
 * A video stream, and video capture: recording while streaming (POST /api/devices/start_recording). With
 * stills: image capture in either mode, and two modes to choose between (QGroundControl shows its
 * photo/video switch only with HAS_MODES; VehicleCameraControl::takePhoto refuses in video mode without
 * CAN_CAPTURE_IMAGE_IN_VIDEO_MODE, startVideoRecording in image mode without CAN_CAPTURE_VIDEO_IN_IMAGE_MODE).
 */
export function cameraFlags(camera: Pick<CameraFacts, 'stills'>): common.CameraCapFlags {
  const F = common.CameraCapFlags
  const video = F.HAS_VIDEO_STREAM | F.CAPTURE_VIDEO
  return (camera.stills ? video | F.CAPTURE_IMAGE | F.HAS_MODES | F.CAN_CAPTURE_IMAGE_IN_VIDEO_MODE | F.CAN_CAPTURE_VIDEO_IN_IMAGE_MODE : video) as common.CameraCapFlags
}

export function cameraSettings(mode: CameraMode): common.CameraSettings {
  const msg = new common.CameraSettings()
  msg.timeBootMs = timeBootMs()
  msg.modeId = mode === 'image' ? common.CameraMode.IMAGE : common.CameraMode.VIDEO
  msg.zoomLevel = NaN
  msg.focusLevel = NaN
  msg.cameraDeviceId = 0
  return msg
}

const streamFlags = (stream: StreamFacts) => (stream.running ? common.VideoStreamStatusFlags.RUNNING : (0 as common.VideoStreamStatusFlags))

/** VIDEO_STREAM_INFORMATION's name is a char[32]: one byte is left for the NUL that ends it. */
export const STREAM_NAME_BYTES = 31
/** How each kind of stream is named in a ground station's list, after the camera's name. */
const STREAM_KINDS = { RTSP: 'RTSP', RTPUDP: 'RTP', WHEP: 'WebRTC' }

/**
 * A stream's name: the camera's, then its kind ("Bow camera RTSP", "Bow camera WebRTC"), the camera's
 * name cut so the kind always shows. QGroundControl lists streams by name and finds the one picked by its
 * name (VehicleCameraControl::_findStream): two alike would both play the first. At most 31 bytes: QGC
 * reads the char[32] as a NUL-ended string, and a full one would run on into the URI.
 */
export function streamName(camera: Pick<CameraFacts, 'streamName'>, stream: Pick<StreamFacts, 'uri'>): string {
  const kind = ` ${STREAM_KINDS[stream.uri.type]}`
  const base = Buffer.from(utf8Bytes(camera.streamName.trim(), STREAM_NAME_BYTES - Buffer.byteLength(kind))).toString('utf8').trimEnd()
  return (base || 'Camera') + kind
}

export function videoStreamInformation(camera: CameraFacts, stream: StreamFacts): common.VideoStreamInformation {
  const msg = withStreamFacts(new common.VideoStreamInformation(), stream)
  msg.count = stream.count
  msg.type = STREAM_TYPES[stream.uri.type]
  msg.name = charField(streamName(camera, stream), STREAM_NAME_BYTES)
  msg.uri = charField(stream.uri.uri, 160)
  // MJPG has no VIDEO_STREAM_ENCODING value.
  msg.encoding = stream.encoding === 'H264' ? common.VideoStreamEncoding.H264 : common.VideoStreamEncoding.UNKNOWN
  return msg
}

export function videoStreamStatus(stream: StreamFacts): common.VideoStreamStatus {
  return withStreamFacts(new common.VideoStreamStatus(), stream)
}

/** The fields VIDEO_STREAM_INFORMATION and VIDEO_STREAM_STATUS share, from the same facts. */
function withStreamFacts<M extends common.VideoStreamInformation | common.VideoStreamStatus>(msg: M, stream: StreamFacts): M {
  msg.streamId = stream.id
  msg.flags = streamFlags(stream)
  msg.framerate = stream.fps
  msg.resolutionH = stream.width
  msg.resolutionV = stream.height
  msg.bitrate = stream.bitrate >>> 0
  msg.rotation = 0
  msg.hfov = 0
  msg.cameraDeviceId = 0
  return msg
}

/** `images`: the stills taken over MAVLink since the service started (image_count). */
export function cameraCaptureStatus(recording: DeviceRecording, disk: DiskFacts | null, images = 0): common.CameraCaptureStatus {
  const msg = new common.CameraCaptureStatus()
  msg.timeBootMs = timeBootMs()
  // Idle: each still is taken at once; QGroundControl's photo button works only while this says idle.
  msg.imageStatus = 0
  msg.videoStatus = recording.active ? 1 : 0
  msg.imageInterval = 0
  msg.recordingTimeMs = recording.active && recording.started ? Math.max(0, Date.now() - Date.parse(recording.started)) >>> 0 : 0
  msg.availableCapacity = disk ? disk.free / MiB : NaN
  msg.imageCount = images
  msg.cameraDeviceId = 0
  return msg
}

/** The recordings disk (GET /api/recordings/disk) as the camera's one storage; null when it cannot be read. */
export function storageInformation(disk: DiskFacts | null): common.StorageInformation {
  const msg = new common.StorageInformation()
  msg.timeBootMs = timeBootMs()
  msg.storageId = 1
  msg.storageCount = 1
  msg.status = disk ? common.StorageStatus.READY : common.StorageStatus.NOT_SUPPORTED
  msg.totalCapacity = disk ? disk.total / MiB : 0
  msg.usedCapacity = disk ? disk.used / MiB : 0
  msg.availableCapacity = disk ? disk.free / MiB : 0
  msg.readSpeed = 0
  msg.writeSpeed = 0
  msg.type = common.StorageType.OTHER
  msg.name = charField('Periscope recordings', 32)
  msg.storageUsage = common.StorageUsageFlag.SET | common.StorageUsageFlag.VIDEO | common.StorageUsageFlag.PHOTO
  return msg
}

export function commandAck(command: number, result: common.MavResult, to: { sysid: number; compid: number }): common.CommandAck {
  const msg = new common.CommandAck()
  msg.command = command as common.MavCmd
  msg.result = result
  msg.progress = 0
  msg.resultParam2 = 0
  msg.targetSystem = to.sysid
  msg.targetComponent = to.compid
  return msg
}
