// DeepWater Exploration's cameras as data (FIELD-NOTES §1): USB ids → device type and group role.
import type { VendorModel } from '../../core/types'

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
