// Which pixel formats a camera node may be read in for each encode type, preferred first: SOFTWARE_H264
// re-encodes MJPG, or raw YUYV (4:2:2) when the camera offers no MJPG (vivid, raw-only cameras). Its own
// module, free of server imports, because the web console's stream form offers only what this allows.
import type { EncodeType } from '../../core/types'

export const SOURCE_FORMAT: Record<Exclude<EncodeType, 'NONE'>, readonly string[]> = {
  H264: ['H264'],
  MJPG: ['MJPG'],
  SOFTWARE_H264: ['MJPG', 'YUYV'],
}
