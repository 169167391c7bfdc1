// What a simulated camera outputs, as a gst-launch fragment: the same caps a real camera's node gives
// for that encode type (H.264 byte-stream, or MJPG which SOFTWARE_H264 re-encodes; a simulated camera always offers MJPG). One place, shared
// by the mock camera driver and the streamer's tests; it imports nothing but core/types on purpose.
import type { EncodeType, Interval } from '../../core/types'

/** Frames per second as a GStreamer fraction: interval is seconds per frame, so fps = denominator/numerator. */
export function framerate(interval: Interval): string {
  return `${interval.denominator}/${interval.numerator}`
}

/**
 * Seconds between a simulated H.264 camera's key frames: 1, like a UVC H.264 camera's default GOP, or
 * PERISCOPE_SIMULATED_GOP_SECONDS (tests: a camera with a long GOP, e.g. the power-cut test's 3 s).
 */
export function simulatedGopSeconds(): number {
  const asked = Number(process.env.PERISCOPE_SIMULATED_GOP_SECONDS)
  return Number.isFinite(asked) && asked > 0 ? asked : 1
}

/**
 * `timecode`: paint each frame's capture time across the top 1/16 of the picture before it is encoded
 * (periscopetimecode, drivers/gstreamer/elements: the child must be spawned with `withElements`).
 */
export function simulatedSource(encode_type: EncodeType, width: number, height: number, interval: Interval, pattern = 'ball', timecode = false): string {
  const fps = framerate(interval)
  const raw = `videotestsrc is-live=true pattern=${pattern} ! video/x-raw,format=I420,width=${width},height=${height},framerate=${fps}${timecode ? ' ! periscopetimecode' : ''}`
  if (encode_type === 'H264') {
    const gop = Math.max(1, Math.round((simulatedGopSeconds() * interval.denominator) / interval.numerator))
    return `${raw} ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=${gop} bitrate=2000 ! video/x-h264,stream-format=byte-stream,alignment=au`
  }
  // MJPG and SOFTWARE_H264 both read the camera's MJPG output; NONE is given one too, it just is not streamed.
  return `${raw} ! jpegenc ! image/jpeg,width=${width},height=${height},framerate=${fps}`
}
