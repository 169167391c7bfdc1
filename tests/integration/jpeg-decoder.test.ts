// The JPEG views decode H.264 with FFmpeg's avdec_h264 where gstreamer1.0-libav is installed, else with
// OpenH264's openh264dec (the container image carries only that one). Both are driven here through the
// service's own pipeline description (gopTokens): a group of pictures of H.264 RTP in, JPEGs out.
import { expect, test } from 'bun:test'
import { gopTokens, h264Decoder, pickH264Decoder } from '../../plugins/jpeg/gst'
import { JpegSplitter, jpegSize } from '../../plugins/jpeg/jpeg'
import { requireGStreamer } from './gstreamer.helpers'

test('the decoder is FFmpeg\'s where present, else OpenH264\'s; this machine (the tests install libav) has FFmpeg\'s', () => {
  expect(pickH264Decoder((e) => e === 'avdec_h264' || e === 'openh264dec')).toBe('avdec_h264')
  expect(pickH264Decoder((e) => e === 'openh264dec')).toBe('openh264dec')
  requireGStreamer()
  expect(h264Decoder()).toBe('avdec_h264')
})

for (const decoder of ['avdec_h264', 'openh264dec']) {
  test(`${decoder}: 30 frames of software H.264 as RTP (RFC 4571 framed) decode into JPEGs of the stream's size`, async () => {
    requireGStreamer()
    // What the service hands the child: RTP packets of x264's output, each after its 16-bit length.
    // One slice per picture: OpenH264, like ffmpeg, takes parameter sets between the slices of a key
    // frame for a new picture and decodes nothing of it.
    const rtp = Bun.spawnSync(['gst-launch-1.0', '-q', 'videotestsrc', 'num-buffers=30', '!', 'video/x-raw,width=320,height=240,framerate=30/1',
      '!', 'x264enc', 'tune=zerolatency', 'speed-preset=ultrafast', 'key-int-max=30', 'sliced-threads=false', '!', 'h264parse', '!', 'rtph264pay', 'pt=96', 'config-interval=-1',
      '!', 'rtpstreampay', '!', 'fdsink', 'fd=1'])
    expect(rtp.exitCode).toBe(0)
    expect(rtp.stdout.length).toBeGreaterThan(1000)
    const child = Bun.spawnSync(['gst-launch-1.0', '-q', ...gopTokens(80, decoder)], { stdin: rtp.stdout })
    expect(child.stderr.toString()).not.toContain('ERROR')
    const jpegs = new JpegSplitter().push(child.stdout)
    expect(jpegs.length).toBeGreaterThan(0)
    for (const jpeg of jpegs) expect(jpegSize(jpeg)).toEqual({ width: 320, height: 240 })
  }, 60_000)
}
