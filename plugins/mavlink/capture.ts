// MAV_CMD_IMAGE_START_CAPTURE: a still of the camera, taken by the jpeg plugin's snapshot (the same
// shared capture as GET /api/streams/{bus_info}/snapshot.jpg: from the running stream without touching
// it, else one capture), saved as a JPEG in the recordings directory (GET /api/recordings lists it), and
// announced with CAMERA_IMAGE_CAPTURED carrying the vehicle's last GLOBAL_POSITION_INT when the link has one.
import { rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { common, standard } from 'mavlink-mappings'
import type { Config } from '../../core/config'
import type { Registry } from '../../core/plugin'
import type { Device } from '../../core/types'
import { recordingFileName } from '../../core/naming'
import { charField, timeBootMs } from './messages'

/** How long a still may take (an H.264 camera's next key frame, or a camera's first frame, plus the encode). */
export const STILL_TIMEOUT_MS = 15_000
/** A position older than this is not the vehicle's position when the still was taken. */
export const POSITION_MAX_AGE_MS = 5_000

export interface Position {
  lat: number // degE7
  lon: number // degE7
  alt: number // mm, MSL
  relativeAlt: number // mm
  at: number
}

/** The service's own HTTP API, reached from inside it (the snapshot route is the one home of stills). */
function ownOrigin(config: Config): URL {
  const wildcard = config.host === '' || config.host === '0.0.0.0' || config.host === '::'
  const host = wildcard ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host
  return new URL(`http://${host}:${config.port}`)
}

/** Whether this service can take stills of the camera now (the jpeg plugin and GStreamer are here). */
export const canCapture = (registry: Registry, bus_info: string, config: Config) => registry.watch(bus_info, ownOrigin(config)).snapshot !== null

/** Takes a still and saves it; answers its file name. Throws with a sentence when it cannot. */
export async function captureStill(registry: Registry, config: Config, device: Device): Promise<string> {
  const url = registry.watch(device.bus_info, ownOrigin(config)).snapshot
  if (!url) throw new Error('no snapshot service (the jpeg plugin or GStreamer is missing)')
  // With --token (the security flags; scope 'all' guards reads too) the service's own request carries it.
  const token = (config as { token?: string | null }).token
  const res = await fetch(url, { signal: AbortSignal.timeout(STILL_TIMEOUT_MS), headers: token ? { authorization: `Bearer ${token}` } : {} })
  if (res.status !== 200) throw new Error(`the snapshot failed: ${res.status} ${await res.text().catch(() => '')}`)
  const jpeg = new Uint8Array(await res.arrayBuffer())
  const dir = config.recordingsDir
  const name = recordingFileName(dir, device.nickname || device.name || device.bus_info, 'jpg')
  // Written aside, then renamed: the listing never shows half a file.
  const part = join(dir, `.${name}.part`)
  await writeFile(part, jpeg)
  await rename(part, join(dir, name))
  return name
}

export function imageCaptured(options: { index: number; ok: boolean; fileUrl: string; position: Position | null }): common.CameraImageCaptured {
  const msg = new common.CameraImageCaptured()
  const fresh = options.position && Date.now() - options.position.at <= POSITION_MAX_AGE_MS ? options.position : null
  msg.timeBootMs = timeBootMs()
  msg.timeUtc = BigInt(Date.now()) * 1000n
  msg.cameraId = 0
  msg.lat = fresh?.lat ?? 0
  msg.lon = fresh?.lon ?? 0
  msg.alt = fresh?.alt ?? 0
  msg.relativeAlt = fresh?.relativeAlt ?? 0
  msg.q = [NaN, NaN, NaN, NaN] // the camera's attitude is not known (common.xml: NaN when unknown)
  msg.imageIndex = options.index
  msg.captureResult = (options.ok ? 1 : 0) as standard.MavBool
  msg.fileUrl = charField(options.fileUrl, 205)
  return msg
}
