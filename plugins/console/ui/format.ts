// How the console says things that several pages show, said one way everywhere (pure: tested in
// tests/contract/console-format.test.ts).

// Sizes: binary units (1 MB = 1,048,576 bytes), labelled as the service labels a recording's size
// ("12.34 MB" is bytes / 1048576 on the wire, which the interface fixes), so one file or disk reads the
// same on every page and in every answer.
const UNITS = ['bytes', 'KB', 'MB', 'GB', 'TB']

export function bytes(n: number): string {
  let value = n
  let unit = 0
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${n} bytes` : `${value.toFixed(value < 10 ? 2 : 1)} ${UNITS[unit]}`
}

/** GET /api/recordings/disk */
export interface Disk {
  total: number
  used: number
  free: number
}

/**
 * How full the recordings disk is, as `df` counts it: used / (used + free). The blocks reserved for root
 * are in `total` but neither used nor free to Periscope, so used / total would read lower than df.
 */
export function diskUsage(disk: Disk): { share: number; text: string } {
  const share = disk.used + disk.free > 0 ? disk.used / (disk.used + disk.free) : 0
  return { share, text: `${bytes(disk.free)} free of ${bytes(disk.total)} (${Math.round(share * 100)} % used)` }
}

/** The USB port a device is plugged into, from its bus_info (`usb-0000:00:14.0-1.2` → `1.2`); null when none shows. */
export function usbPort(busInfo: string): string | null {
  return /^usb-.*-(\d+(?:\.\d+)*)$/.exec(busInfo)?.[1] ?? null
}

/**
 * A camera's title: its nickname, else its model and the port it is plugged into, so two cameras of one
 * model never share a title (a non-USB device: its bus_info stands for the port).
 */
export function cameraTitle(d: { nickname: string; name: string | null; bus_info: string }): string {
  if (d.nickname) return d.nickname
  const port = usbPort(d.bus_info)
  return d.name ? `${d.name} (${port ? `port ${port}` : d.bus_info})` : d.bus_info
}

/**
 * A stream's health as the service receives it (stream_status.health), in one line: what a pilot's view
 * shows on a picture. `keyFrames`: an H.264 stream's key-frame interval is said (every JPEG is one).
 */
export function healthLine(
  h: {
  fps: number | null
  configured_fps: number
  bitrate: number | null
  keyframe_interval: number | null
  dropped_frames: number
  lost_packets: number
  stalls: number
  stalled: boolean
  },
  keyFrames = true,
): string {
  const rate = h.stalled ? 'no frames now' : h.fps === null ? `… of ${Math.round(h.configured_fps)} fps` : `${Math.round(h.fps)} of ${Math.round(h.configured_fps)} fps`
  const parts = [rate]
  if (h.bitrate !== null) parts.push(h.bitrate >= 1e6 ? `${(h.bitrate / 1e6).toFixed(1)} Mbit/s` : `${Math.round(h.bitrate / 1e3)} kbit/s`)
  if (keyFrames && h.keyframe_interval !== null) parts.push(`key frame every ${h.keyframe_interval < 10 ? h.keyframe_interval.toFixed(1) : Math.round(h.keyframe_interval)} s`)
  parts.push(`${h.dropped_frames} dropped`, `${h.lost_packets} lost`, `${h.stalls} ${h.stalls === 1 ? 'stall' : 'stalls'}`)
  return parts.join(' · ')
}
