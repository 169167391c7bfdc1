// What a camera can stream, and the stream a camera gets the first time it is seen.
import { valueError } from '../../core/errors'
import type { Camera, EncodeType, Endpoint, Interval, RawDevice, Stream } from '../../core/types'
import { SOURCE_FORMAT } from './source-formats'

export { SOURCE_FORMAT }

/** The camera node and the pixel format a stream of this encode type reads: the preferred format any node offers. */
function sourceOf(device: RawDevice, encode: Exclude<EncodeType, 'NONE'>): { camera: Camera; pixel_format: string } | undefined {
  for (const pixel_format of SOURCE_FORMAT[encode]) {
    const camera = device.cameras.find((c) => c.formats[pixel_format]?.length)
    if (camera) return { camera, pixel_format }
  }
  return undefined
}

export function offeredEncodeTypes(device: RawDevice): EncodeType[] {
  const out = (Object.keys(SOURCE_FORMAT) as Exclude<EncodeType, 'NONE'>[]).filter((e) => sourceOf(device, e))
  return [...out, 'NONE']
}

/** The pixel format the streamer must request from the camera for this encode type (undefined for NONE). */
export function sourcePixelFormat(device: RawDevice, encode: EncodeType): string | undefined {
  return encode === 'NONE' ? undefined : sourceOf(device, encode)?.pixel_format
}

const fps = (i: Interval) => i.denominator / i.numerator
const fmtInterval = (i: Interval) => `${i.numerator}/${i.denominator}`
const sameInterval = (a: Interval, b: Interval) => a.numerator * b.denominator === b.numerator * a.denominator

/**
 * Checks a requested stream against what the camera really offers; answers the camera node to read.
 * Each refusal is a 422 whose message says what the camera offers instead.
 */
export function checkStreamFormat(device: RawDevice, encode: EncodeType, width: number, height: number, interval: Interval): string {
  if (encode === 'NONE') return device.cameras[0]?.path ?? device.device_paths[0] ?? ''
  const source = sourceOf(device, encode)
  if (!source) {
    throw valueError(['body', 'encode_type'], `${device.name} cannot stream ${encode}; it offers ${offeredEncodeTypes(device).join(', ')}`, encode)
  }
  const { camera, pixel_format } = source
  const sizes = camera.formats[pixel_format]!
  const size = sizes.find((s) => s.width === width && s.height === height)
  if (!size) {
    const offered = sizes.map((s) => `${s.width}x${s.height}`).join(', ')
    throw valueError(['body', 'stream_format'], `${device.name} offers ${encode} at ${offered}, not ${width}x${height}`, { width, height })
  }
  if (!size.intervals.some((i) => sameInterval(i, interval))) {
    const offered = size.intervals.map(fmtInterval).join(', ')
    throw valueError(['body', 'stream_format', 'interval'], `${device.name} offers ${encode} ${width}x${height} at intervals ${offered} (seconds per frame), not ${fmtInterval(interval)}`, interval)
  }
  return camera.path
}

/** H264 when offered, else MJPG, else SOFTWARE_H264 (from raw YUYV); 1920x1080 at 30 fps when offered, else the largest size at its best rate up to 30 fps. */
export function defaultStream(device: RawDevice, endpoint: Endpoint): Stream {
  const encode: EncodeType = offeredEncodeTypes(device)[0]!
  const base = { stream_type: 'UDP' as const, endpoints: [endpoint], enabled: false }
  if (encode === 'NONE') {
    return { ...base, device_path: device.cameras[0]?.path ?? '', encode_type: 'NONE', width: 0, height: 0, interval: { numerator: 1, denominator: 30 } }
  }
  const { camera, pixel_format } = sourceOf(device, encode)!
  const sizes = camera.formats[pixel_format]!
  const size = sizes.find((s) => s.width === 1920 && s.height === 1080) ?? [...sizes].sort((a, b) => b.width * b.height - a.width * a.height)[0]!
  const byRate = [...size.intervals].sort((a, b) => fps(b) - fps(a))
  const interval = byRate.find((i) => Math.abs(fps(i) - 30) < 1e-9) ?? byRate.find((i) => fps(i) <= 30) ?? byRate[0] ?? { numerator: 1, denominator: 30 }
  return { ...base, device_path: camera.path, encode_type: encode, width: size.width, height: size.height, interval }
}
