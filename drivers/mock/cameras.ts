// Simulated cameras as data: what each model reports to V4L2 (nodes, formats, controls).
import type { Camera, ControlFlags, FormatSize, Interval, SimulatedCamera, VendorDefinition } from '../../core/types'

const iv = (fps: number): Interval => ({ numerator: 1, denominator: fps })
const sizes = (list: [number, number][], rates: number[]): FormatSize[] => list.map(([width, height]) => ({ width, height, intervals: rates.map(iv) }))

const HD_SIZES: [number, number][] = [
  [1920, 1080],
  [1280, 720],
  [800, 600],
  [640, 480],
  [320, 240],
]

export interface MockControlDef {
  control_id: number
  name: string
  flags: ControlFlags
  /** Hardware that quantizes more coarsely than it declares (real UVC firmware does). */
  quantum?: number
  /** This control is inactive while `when(values)` holds. */
  inactiveWhen?: (values: Map<number, number>) => boolean
}

// V4L2 control ids (linux/v4l2-controls.h).
export const CID = {
  BRIGHTNESS: 0x00980900,
  CONTRAST: 0x00980901,
  SATURATION: 0x00980902,
  HUE: 0x00980903,
  AUTO_WHITE_BALANCE: 0x0098090c,
  GAMMA: 0x00980910,
  GAIN: 0x00980913,
  POWER_LINE_FREQUENCY: 0x00980918,
  WHITE_BALANCE_TEMPERATURE: 0x0098091a,
  SHARPNESS: 0x0098091b,
  BACKLIGHT_COMPENSATION: 0x0098091c,
  EXPOSURE_AUTO: 0x009a0901,
  EXPOSURE_ABSOLUTE: 0x009a0902,
  PRIVACY: 0x009a0910,
  FOCUS_ABSOLUTE: 0x009a090a,
  FOCUS_AUTO: 0x009a090c,
} as const

const int = (min: number, max: number, def: number, step = 1): ControlFlags => ({ control_type: 'INTEGER', min_value: min, max_value: max, step, default_value: def })
const bool = (def: boolean): ControlFlags => ({ control_type: 'BOOLEAN', min_value: 0, max_value: 1, step: 1, default_value: def ? 1 : 0 })

const EXPOSURE_MANUAL = 1
const EXPOSURE_APERTURE_PRIORITY = 3

export const UVC_CONTROLS: MockControlDef[] = [
  { control_id: CID.BRIGHTNESS, name: 'Brightness', flags: int(-64, 64, 0) },
  { control_id: CID.CONTRAST, name: 'Contrast', flags: int(0, 64, 32) },
  { control_id: CID.SATURATION, name: 'Saturation', flags: int(0, 128, 64) },
  { control_id: CID.HUE, name: 'Hue', flags: int(-40, 40, 0) },
  { control_id: CID.AUTO_WHITE_BALANCE, name: 'White Balance, Automatic', flags: bool(true) },
  { control_id: CID.GAMMA, name: 'Gamma', flags: int(72, 500, 100) },
  { control_id: CID.GAIN, name: 'Gain', flags: int(0, 100, 0) },
  {
    control_id: CID.POWER_LINE_FREQUENCY,
    name: 'Power Line Frequency',
    flags: {
      control_type: 'MENU',
      min_value: 0,
      max_value: 2,
      step: 1,
      default_value: 1,
      menu: [
        { index: 0, name: 'Disabled' },
        { index: 1, name: '50 Hz' },
        { index: 2, name: '60 Hz' },
      ],
    },
  },
  {
    control_id: CID.WHITE_BALANCE_TEMPERATURE,
    name: 'White Balance Temperature',
    flags: int(2800, 6500, 4600),
    quantum: 10,
    inactiveWhen: (v) => v.get(CID.AUTO_WHITE_BALANCE) === 1,
  },
  { control_id: CID.SHARPNESS, name: 'Sharpness', flags: int(0, 6, 3) },
  { control_id: CID.BACKLIGHT_COMPENSATION, name: 'Backlight Compensation', flags: int(0, 2, 1) },
  {
    control_id: CID.EXPOSURE_AUTO,
    name: 'Auto Exposure',
    flags: {
      control_type: 'MENU',
      min_value: 0,
      max_value: 3,
      step: 1,
      default_value: EXPOSURE_APERTURE_PRIORITY,
      menu: [
        { index: EXPOSURE_MANUAL, name: 'Manual Mode' },
        { index: EXPOSURE_APERTURE_PRIORITY, name: 'Aperture Priority Mode' },
      ],
    },
  },
  {
    control_id: CID.EXPOSURE_ABSOLUTE,
    name: 'Exposure Time, Absolute',
    flags: int(1, 5000, 157),
    inactiveWhen: (v) => v.get(CID.EXPOSURE_AUTO) !== EXPOSURE_MANUAL,
  },
  { control_id: CID.PRIVACY, name: 'Privacy', flags: { ...bool(false), read_only: true } },
  // Its id is lower than the auto mode's that governs it, as in linux/v4l2-controls.h.
  {
    control_id: CID.FOCUS_ABSOLUTE,
    name: 'Focus, Absolute',
    flags: int(0, 255, 0, 5),
    inactiveWhen: (v) => v.get(CID.FOCUS_AUTO) === 1,
  },
  { control_id: CID.FOCUS_AUTO, name: 'Focus, Automatic Continuous', flags: bool(true) },
]

/**
 * A simulated model states the USB ids it pretends to have, as hardware does; it knows no vendor's
 * protocol. Extension units answer as the registered vendors declare them for those ids (drivers/mock/xu.ts).
 */
export interface MockModel {
  name: string
  manufacturer: string
  vid: number
  pid: number
  /** Nodes in order: capture nodes with formats, metadata nodes with none (as UVC creates them). */
  nodes: (Camera['formats'] | null)[]
  controls: MockControlDef[]
}

const H264_NODE = { H264: sizes(HD_SIZES.slice(0, 4), [30, 25, 15]) }
const MJPG_NODE = { MJPG: sizes(HD_SIZES, [30, 25, 15]), YUYV: sizes([[640, 480], [320, 240]], [30, 15]) }

export const MODELS = {
  exploreHD: {
    name: 'exploreHD USB Camera',
    manufacturer: 'DeepWater Exploration Inc.',
    vid: 0x3961,
    pid: 0x2100,
    nodes: [MJPG_NODE, null, H264_NODE, null],
    controls: UVC_CONTROLS,
  },
  stellarLeader: {
    name: 'stellarHD USB Camera',
    manufacturer: 'DeepWater Exploration Inc.',
    vid: 0x3961,
    pid: 0x1101,
    nodes: [MJPG_NODE, null, H264_NODE, null],
    controls: UVC_CONTROLS,
  },
  stellarFollower: {
    name: 'stellarHD USB Camera',
    manufacturer: 'DeepWater Exploration Inc.',
    vid: 0x3961,
    pid: 0x1102,
    nodes: [MJPG_NODE, null, H264_NODE, null],
    controls: UVC_CONTROLS,
  },
  webcam: {
    name: 'HD Webcam C270',
    manufacturer: 'Logitech',
    vid: 0x046d,
    pid: 0x0825,
    nodes: [{ MJPG: sizes([[1280, 720], [640, 480]], [30, 15]), YUYV: sizes([[640, 480]], [30]) }, null],
    controls: UVC_CONTROLS.filter((c) => c.control_id !== CID.PRIVACY && c.control_id !== CID.HUE),
  },
} satisfies Record<string, MockModel>

export interface MockDeviceSpec {
  model: MockModel
  bus_info: string
  serial: string
}

/** The simulated USB port n (1-based), as bus_info. */
export const port = (n: number) => `usb-0000:00:14.0-${n}`

const DEFAULT_PRESET: MockDeviceSpec[] = [
  { model: MODELS.exploreHD, bus_info: port(1), serial: 'EHD0001' },
  { model: MODELS.stellarLeader, bus_info: port(2), serial: 'SHL0001' },
  { model: MODELS.stellarFollower, bus_info: port(3), serial: 'SHF0001' },
  { model: MODELS.webcam, bus_info: port(4), serial: '' },
]

/** Presets for --simulate. The cameras vendor plugins declare (VendorDefinition.simulated) come after the preset's. */
export const PRESETS: Record<string, MockDeviceSpec[]> = {
  default: DEFAULT_PRESET,
  single: [{ model: MODELS.exploreHD, bus_info: port(1), serial: 'EHD0001' }],
  fleet: Array.from({ length: 8 }, (_, i) => ({ model: MODELS.exploreHD, bus_info: port(i + 1), serial: `EHD${String(i + 1).padStart(4, '0')}` })),
}

/**
 * The cameras the registered vendors declare, on the ports after `taken`: each with the usual UVC
 * controls (its extension units answer as its vendor declares them, drivers/mock/xu.ts).
 */
export function vendorCameras(vendors: readonly VendorDefinition[], taken: number): MockDeviceSpec[] {
  const cams = vendors.flatMap((v) => (v.simulated ?? []).map((cam): [VendorDefinition, SimulatedCamera] => [v, cam]))
  return cams.map(([v, cam], i) => ({
    model: { name: cam.name, manufacturer: v.vendor, vid: cam.vid, pid: cam.pid, nodes: cam.nodes, controls: UVC_CONTROLS },
    bus_info: port(taken + i + 1),
    serial: cam.serial ?? '',
  }))
}
