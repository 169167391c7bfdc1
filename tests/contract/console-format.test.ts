// The console's one way of saying sizes, disk usage, camera titles and frame rates
// (plugins/console/ui/format.ts, framerate.ts): pure functions, tested directly.
import { describe, expect, test } from 'bun:test'
import { FrameRate } from '../../plugins/console/ui/framerate'
import { bytes, cameraTitle, diskUsage, healthLine, usbPort } from '../../plugins/console/ui/format'

describe('sizes: binary units, labelled as the service labels a recording', () => {
  test('the same bytes read the same as the service writes a recording size ("12.34 MB" = bytes / 1048576)', () => {
    expect(bytes(Math.round(12.34 * 1048576))).toBe('12.3 MB')
    expect(bytes(1536)).toBe('1.50 KB')
    expect(bytes(500)).toBe('500 bytes')
    expect(bytes(30 * 2 ** 30)).toBe('30.0 GB')
  })
})

describe('disk usage: one percent, from the same fields, on every page', () => {
  test('used / (used + free), as df counts it: the root-reserved blocks are neither', () => {
    // A 100 GB card with 5 % reserved: 30 used, 65 free.
    const disk = { total: 100 * 2 ** 30, used: 30 * 2 ** 30, free: 65 * 2 ** 30 }
    const usage = diskUsage(disk)
    expect(Math.round(usage.share * 100)).toBe(32)
    expect(usage.text).toBe('65.0 GB free of 100.0 GB (32 % used)')
  })

  test('an empty answer is 0 %, not NaN', () => {
    expect(diskUsage({ total: 0, used: 0, free: 0 }).text).toBe('0 bytes free of 0 bytes (0 % used)')
  })
})

describe('camera titles: nickname, else model and port', () => {
  const stellar = (bus_info: string, nickname = '') => ({ nickname, name: 'stellarHD USB Camera', bus_info })

  test('two cameras of one model have different titles', () => {
    const a = cameraTitle(stellar('usb-0000:00:14.0-2'))
    const b = cameraTitle(stellar('usb-0000:00:14.0-3'))
    expect(a).toBe('stellarHD USB Camera (port 2)')
    expect(b).toBe('stellarHD USB Camera (port 3)')
  })

  test('a nickname wins', () => {
    expect(cameraTitle(stellar('usb-0000:00:14.0-2', 'Port side'))).toBe('Port side')
  })

  test('ports behind hubs, and devices that are not USB', () => {
    expect(usbPort('usb-0000:00:14.0-1.4.2')).toBe('1.4.2')
    expect(usbPort('platform:vivid-000')).toBeNull()
    expect(cameraTitle({ nickname: '', name: 'vivid', bus_info: 'platform:vivid-000' })).toBe('vivid (platform:vivid-000)')
    expect(cameraTitle({ nickname: '', name: null, bus_info: 'usb-0000:00:14.0-5' })).toBe('usb-0000:00:14.0-5')
  })
})

describe('frame rate: measured over a window, shown only after a full one', () => {
  /** A 30 fps stream that starts with a burst of `burst` replayed frames, sampled once a second. */
  function readings(burst: number, seconds: number): (number | null)[] {
    const rate = new FrameRate()
    const out: (number | null)[] = []
    for (let s = 0; s <= seconds; s++) {
      const at = 1000 + s * 1000
      const frames = s === 0 ? 0 : burst + 30 * s
      out.push(rate.add(at, frames))
    }
    return out
  }

  test('a 30 fps stream with a 30-frame burst at the start never reads above 30', () => {
    const shown = readings(30, 8)
    // Nothing before a full window past the start-up burst.
    expect(shown.slice(0, 4).every((r) => r === null)).toBe(true)
    const values = shown.filter((r): r is number => r !== null)
    expect(values.length).toBeGreaterThan(3)
    for (const v of values) expect(v).toBeCloseTo(30, 5)
  })

  test('a burst still being decoded at the first reading is left out of the window too', () => {
    // Sampled mid-burst: 15 of the 30 replayed frames decoded at the first reading, the rest by the next.
    const rate = new FrameRate()
    const counts = [15, 60, 90, 120, 150, 180]
    const shown = counts.map((frames, i) => rate.add(1000 * (i + 1), frames))
    expect(shown.slice(0, 3)).toEqual([null, null, null])
    for (const v of shown.slice(3)) expect(v).toBeCloseTo(30, 5)
  })

  test('a frozen picture reads 0 fps; a new session starts the window again', () => {
    const rate = new FrameRate()
    let last: number | null = null
    for (let s = 1; s <= 5; s++) last = rate.add(s * 1000, 30 * s)
    expect(last).toBeCloseTo(30, 5)
    expect(rate.add(6000, 150)).toBeCloseTo(15, 5) // 2 s window: 150 − 120 over 2 s
    expect(rate.add(7000, 150)).toBe(0)
    expect(rate.add(8000, 10)).toBeNull() // the count went back: a new session
  })
})

test("a stream's health in one line: the rate delivered of configured (or none now), bitrate, key frames for H.264, drops, losses, stalls", () => {
  const h = { fps: 29.6, configured_fps: 30, bitrate: 2_450_000, keyframe_interval: 1.002, dropped_frames: 3, lost_packets: 0, stalls: 1, stalled: false }
  expect(healthLine(h)).toBe('30 of 30 fps · 2.5 Mbit/s · key frame every 1.0 s · 3 dropped · 0 lost · 1 stall')
  expect(healthLine({ ...h, bitrate: 182_000, keyframe_interval: 12.4, stalls: 2 }, true)).toBe('30 of 30 fps · 182 kbit/s · key frame every 12 s · 3 dropped · 0 lost · 2 stalls')
  expect(healthLine({ ...h, fps: null, bitrate: null, keyframe_interval: null })).toBe('… of 30 fps · 3 dropped · 0 lost · 1 stall')
  expect(healthLine({ ...h, stalled: true }, false)).toBe('no frames now · 2.5 Mbit/s · 3 dropped · 0 lost · 1 stall')
})
