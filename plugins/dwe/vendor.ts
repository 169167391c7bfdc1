// DeepWater Exploration, declared once as data (FIELD-NOTES §1): its models, exploreHD's H.264 encoder
// options over the UVC extension unit, and the frame-sync board. The core interprets the extension unit
// (core/xu.ts), simulated cameras simulate it from this same declaration (drivers/mock/xu.ts), and the
// GStreamer plugin drives the board it finds here.
import type { VendorDefinition, VendorModel } from '../../core/types'
import type { ExtensionUnit } from '../../core/xu'

export const DWE_LEGACY_VID = 0x0c45
export const DWE_VID = 0x3961

// device_type: 0 exploreHD, 1 stellarHD leader, 2 stellarHD follower, 3 stellarHD leader Pro, 4 stellarHD follower Pro
export const DWE_MODELS: VendorModel[] = [
  { vid: DWE_LEGACY_VID, pids: [0x6366], device_type: 0, role: 'none', model: 'exploreHD (legacy)' },
  { vid: DWE_LEGACY_VID, pids: [0x6367], device_type: 1, role: 'leader', model: 'stellarHD leader (legacy)' },
  { vid: DWE_LEGACY_VID, pids: [0x6368], device_type: 2, role: 'follower', model: 'stellarHD follower (legacy)' },
  { vid: DWE_VID, pids: [0x2100, 0x2200, 0x2210], device_type: 0, role: 'none', model: 'exploreHD' },
  { vid: DWE_VID, pids: [0x1201, 0x1211], device_type: 3, role: 'leader', model: 'stellarHD Elite leader' },
  { vid: DWE_VID, pids: [0x1202, 0x1212], device_type: 4, role: 'follower', model: 'stellarHD Elite follower' },
  { vid: DWE_VID, pids: [0x1101, 0x1111], device_type: 1, role: 'leader', model: 'stellarHD leader' },
  { vid: DWE_VID, pids: [0x1102, 0x1112], device_type: 2, role: 'follower', model: 'stellarHD follower' },
  { vid: DWE_VID, pids: [0x3111], device_type: 1, role: 'leader', model: 'explore3D right' },
  { vid: DWE_VID, pids: [0x3112], device_type: 2, role: 'follower', model: 'explore3D left' },
]

/**
 * exploreHD's encoder options, on its H.264 node: unit 0x04, selector 0x02, 11-byte transfers. A command
 * transfer [0x9A, cmd, 0…] picks the option; the next SET_CUR carries the big-endian value, or GET_CUR
 * reads it. Negative ids: vendor options (spec: set_uvc_control with control_id < 0).
 */
export const EXPLOREHD_ENCODER: ExtensionUnit = {
  models: DWE_MODELS.filter((m) => m.device_type === 0),
  nodeFormat: 'H264',
  unit: 0x04,
  size: 11,
  addressing: { kind: 'command', selector: 0x02, prefix: [0x9a] },
  controls: [
    {
      control_id: -1, name: 'H.264 Bitrate (bits/s)', register: 0x02, encoding: 'u32be',
      flags: { control_type: 'INTEGER', min_value: 100_000, max_value: 20_000_000, step: 1, default_value: 5_000_000 },
    },
    {
      control_id: -2, name: 'H.264 GOP', register: 0x03, encoding: 'u16be',
      flags: { control_type: 'INTEGER', min_value: 0, max_value: 29, step: 1, default_value: 29 },
    },
    {
      control_id: -3, name: 'H.264 Bitrate Mode', register: 0x06, encoding: 'u8',
      flags: {
        control_type: 'MENU', min_value: 1, max_value: 2, step: 1, default_value: 2,
        menu: [{ index: 1, name: 'CBR' }, { index: 2, name: 'VBR' }],
      },
    },
  ],
}

export const DWE: VendorDefinition = {
  vendor: 'DeepWater Exploration',
  models: DWE_MODELS,
  extensionUnits: [EXPLOREHD_ENCODER],
  // "DeepWater Exploration Frame Sync Module" (legacy boards: an FTDI adapter), 9600 baud; the group's
  // fps + frequency_offset at duty 30 while a group streams, "0,0" when none does.
  frameSync: {
    usb: [{ vid: DWE_VID, pid: 0x5000 }, { vid: 0x0403, pid: 0x6001 }],
    baud: 9600,
    command: '{frequency},{duty}\n',
    duty: 30,
  },
}
