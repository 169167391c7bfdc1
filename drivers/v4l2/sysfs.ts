// Which video nodes exist and which physical device each belongs to, from /sys/class/video4linux.
// sysfs attributes live in memory, so these reads never wait on the hardware.
import { existsSync, readdirSync, readFileSync, realpathSync } from 'node:fs'
import { dirname, join } from 'node:path'

export const SYSFS_V4L = '/sys/class/video4linux'

export interface UsbInfo { vid: number; pid: number; manufacturer: string | null; product: string | null; serial: string }

/** The nodes of one physical device (sysfs parent), natural-sorted; the unit a worker serves. */
export interface NodeGroup { key: string; nodes: string[]; usb: UsbInfo | null }

const natural = new Intl.Collator('en', { numeric: true }).compare

/** Node names that answer VIDIOC_QUERYCAP (sub-devices do not). */
export function nodeNames(root = SYSFS_V4L): string[] {
  if (!existsSync(root)) return []
  return readdirSync(root).filter((n) => !n.startsWith('v4l-subdev')).sort(natural)
}

const realpathOr = (p: string) => {
  try {
    return realpathSync(p)
  } catch {
    return p
  }
}

const attr = (dir: string, name: string): string | null => {
  try {
    return readFileSync(join(dir, name), 'utf8').trim()
  } catch {
    return null
  }
}

/** Walks up from the interface to the USB device (the directory holding idVendor), within <sysfs>/devices. */
function usbInfo(deviceDir: string, devicesRoot: string): UsbInfo | null {
  for (let d = deviceDir; d.startsWith(devicesRoot + '/'); d = dirname(d)) {
    const vid = attr(d, 'idVendor')
    if (vid === null) continue
    return {
      vid: parseInt(vid, 16),
      pid: parseInt(attr(d, 'idProduct') ?? '0', 16),
      manufacturer: attr(d, 'manufacturer'),
      product: attr(d, 'product'),
      serial: attr(d, 'serial') ?? '',
    }
  }
  return null
}

export function scanGroups(root = SYSFS_V4L): NodeGroup[] {
  const groups = new Map<string, NodeGroup>()
  const devicesRoot = realpathOr(join(root, '../../devices'))
  for (const name of nodeNames(root)) {
    let key: string
    try {
      key = realpathSync(join(root, name, 'device'))
    } catch {
      continue // vanished while we looked
    }
    let g = groups.get(key)
    if (!g) groups.set(key, (g = { key, nodes: [], usb: usbInfo(key, devicesRoot) }))
    g.nodes.push(`/dev/${name}`)
  }
  return [...groups.values()]
}
