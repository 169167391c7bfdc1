// The JPEG views decode H.264 with FFmpeg's avdec_h264 where gstreamer1.0-libav is installed, else with
// OpenH264's openh264dec (the container image carries only that one). Both are driven here through the
// service's own pipeline description (gopTokens): a group of pictures of H.264 RTP in, JPEGs out.
import { expect, test } from 'bun:test'
import { H264_PARSE } from '../../drivers/gstreamer/pipeline'
import { gopTokens, h264Decoder, pickH264Decoder, probeH264Decoder } from '../../plugins/jpeg/gst'
import { JpegSplitter, jpegSize } from '../../plugins/jpeg/jpeg'
import { requireGStreamer } from './gstreamer.helpers'

test('the decoder is FFmpeg\'s where present, else OpenH264\'s; this machine (the tests install libav) has FFmpeg\'s', async () => {
  expect(pickH264Decoder((e) => e === 'avdec_h264' || e === 'openh264dec')).toBe('avdec_h264')
  expect(pickH264Decoder((e) => e === 'openh264dec')).toBe('openh264dec')
  requireGStreamer()
  await probeH264Decoder() // what the jpeg plugin asks at start, off the event loop
  expect(h264Decoder()).toBe('avdec_h264')
})

for (const decoder of ['avdec_h264', 'openh264dec']) {
  test(`${decoder}: 30 frames of software H.264 as RTP (RFC 4571 framed) decode into JPEGs of the stream's size`, async () => {
    requireGStreamer()
    // What the service hands the child: RTP of x264's output (sliced, as the software encoder's), framed
    // by the camera's own parse (H264_PARSE: parameter sets once per access unit, none between slices,
    // which OpenH264, like ffmpeg, would take for a new picture), each packet after its 16-bit length.
    const rtp = Bun.spawnSync(['gst-launch-1.0', '-q', 'videotestsrc', 'num-buffers=30', '!', 'video/x-raw,width=640,height=480,framerate=30/1',
      '!', 'x264enc', 'tune=zerolatency', 'speed-preset=ultrafast', 'key-int-max=30', '!', ...H264_PARSE, '!', 'rtph264pay', 'pt=96',
      '!', 'rtpstreampay', '!', 'fdsink', 'fd=1'])
    expect(rtp.exitCode).toBe(0)
    expect(rtp.stdout.length).toBeGreaterThan(1000)
    const child = Bun.spawnSync(['gst-launch-1.0', '-q', ...gopTokens(80, decoder)], { stdin: rtp.stdout })
    expect(child.stderr.toString()).not.toContain('ERROR')
    const jpegs = new JpegSplitter().push(child.stdout)
    expect(jpegs.length).toBeGreaterThan(0)
    for (const jpeg of jpegs) expect(jpegSize(jpeg)).toEqual({ width: 640, height: 480 })
  }, 60_000)
}
