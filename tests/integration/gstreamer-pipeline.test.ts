// The pure parts of the streamer: pipeline builder, child-output parser, group step counter, frame-sync command.
import { describe, expect, test } from 'bun:test'
import type { StreamJob } from '../../core/types'
import { frameSyncCommand } from '../../drivers/gstreamer/framesync'
import { DWE } from '../../plugins/dwe/vendor'
import { gapFrames, lostFrames, outOfStep, parseChildLine } from '../../drivers/gstreamer/monitor'
import { buildPipeline, memberEndpoints, shellCommand, softwareBitrateKbps } from '../../drivers/gstreamer/pipeline'
import { sdp } from '../../drivers/gstreamer/sdp'
import { simulatedSource } from '../../drivers/gstreamer/simulated'

function v4l2Job(encode_type: StreamJob['stream']['encode_type'], stream_type: StreamJob['stream']['stream_type'], members = 1): StreamJob {
  return {
    bus_info: 'usb-1',
    recordings_dir: '/rec',
    stream: {
      device_path: '/dev/video2',
      encode_type,
      stream_type,
      endpoints: [
        { host: '127.0.0.1', port: 5600 },
        { host: '127.0.0.5', port: 6000 },
      ],
      width: 1920,
      height: 1080,
      interval: { numerator: 1, denominator: 30 },
      enabled: true,
    },
    members: Array.from({ length: members }, (_, i) => ({ bus_info: `usb-${i + 1}`, label: `cam${i}`, source: { kind: 'v4l2' as const, device: `/dev/video${2 * i + 2}` } })),
  }
}

const line = (tokens: string[] | null) => (tokens ?? []).join(' ')

describe('buildPipeline', () => {
  test('H264 over UDP: v4l2src caps, h264parse putting SPS/PPS in each IDR access unit, rtph264pay, every endpoint', () => {
    const p = line(buildPipeline(v4l2Job('H264', 'UDP')))
    expect(p).toBe(
      'v4l2src name=cam0 device=/dev/video2 ! video/x-h264,width=1920,height=1080,framerate=30/1' +
        ' ! identity name=mon0 check-imperfect-timestamp=true ! progressreport name=alive0 update-freq=1 silent=true do-query=false' +
        ' ! h264parse config-interval=-1 ! video/x-h264,alignment=au ! rtph264pay aggregate-mode=zero-latency pt=96' +
        ' ! multiudpsink clients=127.0.0.1:5600,127.0.0.5:6000 sync=false async=false',
    )
  })

  test('MJPG over UDP: rtpjpegpay', () => {
    const p = line(buildPipeline(v4l2Job('MJPG', 'UDP')))
    expect(p).toContain('v4l2src name=cam0 device=/dev/video2 ! image/jpeg,width=1920,height=1080,framerate=30/1')
    expect(p).toContain('! rtpjpegpay pt=26 ! multiudpsink clients=127.0.0.1:5600,127.0.0.5:6000 sync=false')
  })

  test('SOFTWARE_H264: the camera MJPG decoded, converted to 4:2:0 and re-encoded with a bitrate', () => {
    const p = line(buildPipeline(v4l2Job('SOFTWARE_H264', 'UDP')))
    expect(p).toContain('image/jpeg,width=1920,height=1080')
    expect(p).toContain(`jpegdec ! videoconvert ! video/x-raw,format=I420 ! x264enc tune=zerolatency speed-preset=ultrafast bitrate=${softwareBitrateKbps(1920, 1080, 30)} key-int-max=30`)
    expect(p).toContain('h264parse config-interval=-1 ! video/x-h264,alignment=au ! rtph264pay aggregate-mode=zero-latency pt=96')
    expect(line(buildPipeline(v4l2Job('SOFTWARE_H264', 'UDP'), { bitrateKbps: 1234 }))).toContain('bitrate=1234')
  })

  test('SOFTWARE_H264 from a raw YUYV camera: raw YUY2 caps, no jpegdec, converted to 4:2:0 and re-encoded', () => {
    const job = v4l2Job('SOFTWARE_H264', 'UDP')
    job.members[0]!.pixel_format = 'YUYV'
    const p = line(buildPipeline(job))
    expect(p).toBe(
      'v4l2src name=cam0 device=/dev/video2 ! video/x-raw,format=YUY2,width=1920,height=1080,framerate=30/1' +
        ' ! identity name=mon0 check-imperfect-timestamp=true ! progressreport name=alive0 update-freq=1 silent=true do-query=false' +
        ` ! videoconvert ! video/x-raw,format=I420 ! x264enc tune=zerolatency speed-preset=ultrafast bitrate=${softwareBitrateKbps(1920, 1080, 30)} key-int-max=30` +
        ' ! h264parse config-interval=-1 ! video/x-h264,alignment=au ! rtph264pay aggregate-mode=zero-latency pt=96' +
        ' ! multiudpsink clients=127.0.0.1:5600,127.0.0.5:6000 sync=false async=false',
    )
    // An explicit MJPG source is the default path.
    job.members[0]!.pixel_format = 'MJPG'
    expect(line(buildPipeline(job))).toBe(line(buildPipeline(v4l2Job('SOFTWARE_H264', 'UDP'))))
  })

  test('a raw pixel format the builder has no GStreamer name for is refused', () => {
    const job = v4l2Job('SOFTWARE_H264', 'UDP')
    job.members[0]!.pixel_format = 'Y10B'
    expect(() => buildPipeline(job)).toThrow('cannot read pixel format Y10B')
  })

  test('RECORDING goes into Matroska segments with short clusters and unbuffered writes', () => {
    for (const enc of ['H264', 'MJPG', 'SOFTWARE_H264'] as const) {
      // The recording's base (no extension): its files are <base>_seg001.mkv, … (docs/recordings.md).
      const p = line(buildPipeline(v4l2Job(enc, 'RECORDING'), { recordingPath: '/rec/cam0_2024-01-01_00-00-00' }))
      expect(p).toStartWith('splitmuxsink name=mux')
      expect(p).toContain('location=/rec/cam0_2024-01-01_00-00-00_seg%03d.mkv')
      expect(p).toContain('muxer-factory=matroskamux muxer-properties=properties,min-cluster-duration=(guint64)250000000,max-cluster-duration=(guint64)250000000')
      expect(p).toContain('sink-factory=filesink sink-properties=properties,buffer-mode=(int)2')
      expect(p).toEndWith('! queue ! mux.video')
      expect(p).not.toContain('multiudpsink')
    }
    expect(() => buildPipeline(v4l2Job('H264', 'RECORDING'))).toThrow(/file path/)
  })

  test('NONE streams nothing', () => {
    expect(buildPipeline(v4l2Job('NONE', 'UDP'))).toBeNull()
    expect(buildPipeline(v4l2Job('NONE', 'RECORDING'))).toBeNull()
  })

  test('H.264 parameter sets: h264parse inserts them per access unit on every path, the payloader never (not between slices)', () => {
    for (const enc of ['H264', 'SOFTWARE_H264'] as const) {
      for (const type of ['UDP', 'RECORDING'] as const) {
        const p = line(buildPipeline(v4l2Job(enc, type), { recordingPath: '/rec/x.mkv', tapPorts: [7000] }))
        expect(p).toContain('h264parse config-interval=-1 ! video/x-h264,alignment=au')
        expect(p).toContain('rtph264pay aggregate-mode=zero-latency pt=96') // the tap's payloader (UDP: also the endpoints')
        expect(p.match(/config-interval/g)?.length).toBe(1)
      }
    }
  })

  test('a UDP stream without endpoints is refused', () => {
    const job = v4l2Job('H264', 'UDP')
    job.stream.endpoints = []
    expect(() => buildPipeline(job)).toThrow(/endpoint/)
  })

  test('a simulated camera brings its own description', () => {
    const job = v4l2Job('H264', 'UDP')
    const description = simulatedSource('H264', 1280, 720, { numerator: 1, denominator: 30 })
    job.members[0]!.source = { kind: 'gst', description }
    expect(line(buildPipeline(job))).toStartWith(`${description} ! identity name=mon0`)
    expect(description).toContain('video/x-h264,stream-format=byte-stream,alignment=au')
    expect(simulatedSource('MJPG', 640, 480, { numerator: 1, denominator: 15 })).toEndWith('jpegenc ! image/jpeg,width=640,height=480,framerate=15/1')
  })

  test('a group: one chain per member, ports by the port rule, one clock-aligned RTP timeline', () => {
    const p = line(buildPipeline(v4l2Job('H264', 'UDP', 2)))
    expect(p).toContain('v4l2src name=cam0 device=/dev/video2')
    expect(p).toContain('v4l2src name=cam1 device=/dev/video4')
    expect(p).toContain('identity name=mon1')
    expect(p).toContain('progressreport name=alive1')
    expect(p).toContain('clients=127.0.0.1:5600,127.0.0.5:6000')
    expect(p).toContain('clients=127.0.0.1:5601,127.0.0.5:6001')
    expect(p.match(/timestamp-offset=0/g)?.length).toBe(2)
    expect(memberEndpoints([{ host: 'h', port: 5600 }], 3)).toEqual([{ host: 'h', port: 5603 }])
  })

  test('a group recording: every member into the one muxer', () => {
    const p = line(buildPipeline(v4l2Job('MJPG', 'RECORDING', 3), { recordingPath: '/rec/x.mkv' }))
    expect(p.match(/! queue ! mux\./g)?.length).toBe(3)
    expect(p.match(/matroskamux/g)?.length).toBe(1)
  })

  test('bare leaves out the monitors', () => {
    expect(line(buildPipeline(v4l2Job('H264', 'UDP'), { bare: true }))).not.toMatch(/identity|progressreport/)
  })

  test('shellCommand quotes what a shell would split', () => {
    expect(shellCommand(['filesink', 'location=/a b/c.mkv'])).toBe("gst-launch-1.0 filesink 'location=/a b/c.mkv'")
  })
})

describe('child output', () => {
  test('a progress report: the member is alive', () => {
    expect(parseChildLine('Got message #53 from element "alive1" (element): progress, current=(gint64)0, format=(GstFormat)time;')).toEqual({ kind: 'alive', member: 1 })
  })

  test('a gap in a member timeline', () => {
    const l =
      'Got message #62 from element "mon0" (element): imperfect-timestamp, delta=(gint64)33333334, prev-timestamp=(guint64)645949971, prev-duration=(guint64)33333333, prev-offset=(guint64)19, prev-offset-end=(guint64)20, cur-timestamp=(guint64)712616638, cur-duration=(guint64)33333333, cur-offset=(guint64)21, cur-offset-end=(guint64)22;'
    expect(parseChildLine(l)).toEqual({ kind: 'gap', member: 0, deltaNs: 33333334 })
  })

  test('other messages are not ours', () => {
    expect(parseChildLine('Got message #5 from element "pipeline0" (state-changed): GstMessageStateChanged, old-state=(GstState)GST_STATE_NULL;')).toBeNull()
    expect(parseChildLine('Setting pipeline to PLAYING ...')).toBeNull()
  })

  test('a v4l2src QoS message reports lost frames', () => {
    const l =
      'Got message #57 from element "cam0" (qos): GstMessageQOS, live=(boolean)true, running-time=(guint64)1000000000, stream-time=(guint64)1000000000, timestamp=(guint64)1000000000, duration=(guint64)100000000, jitter=(gint64)0, proportion=(double)1, quality=(int)1000000, format=(GstFormat)GST_FORMAT_UNDEFINED, processed=(guint64)18446744073709551615, dropped=(guint64)18446744073709551615;'
    const e = parseChildLine(l)
    expect(e).toEqual({ kind: 'lost', member: 0, durationNs: 100000000 })
    expect(lostFrames(100000000, 1e9 / 30)).toBe(3)
    expect(parseChildLine(l.replace('"cam0"', '"jpegdec0"'))).toBeNull()
  })

  test('a pipeline gst-launch cannot build (a plugin is missing)', () => {
    expect(parseChildLine('WARNING: erroneous pipeline: no element "x264enc"')).toEqual({ kind: 'error', text: 'erroneous pipeline: no element "x264enc"' })
  })

  test('an error line', () => {
    expect(parseChildLine('ERROR: from element /GstPipeline:pipeline0/GstV4l2Src:cam0: Could not read from resource.')).toEqual({
      kind: 'error',
      text: 'Could not read from resource.',
    })
  })
})

describe('out of step', () => {
  const frame = 1e9 / 30
  test('a gap of whole frames in one member leaves its partners unpaired', () => {
    expect(gapFrames(33333334, frame)).toBe(1)
    expect(gapFrames(100000000, frame)).toBe(3)
    expect(gapFrames(2000000, frame)).toBe(0) // timestamp jitter, not a lost frame
    expect(gapFrames(-5000000, frame)).toBe(0)
    expect(outOfStep(3, 2)).toBe(3)
    expect(outOfStep(2, 3)).toBe(4)
  })
  test('a lone camera is never out of step', () => {
    expect(outOfStep(5, 1)).toBe(0)
  })
})

test('frame-sync command: fps plus offset, duty 30; stop is 0,0', () => {
  const board = DWE.frameSync!
  expect(frameSyncCommand(board, 30, 0)).toBe('30,30\n')
  expect(frameSyncCommand(board, 30, 2)).toBe('32,30\n')
  expect(frameSyncCommand(board, 0, 2)).toBe('0,0\n')
})


describe('sdp', () => {
  const stream = v4l2Job('H264', 'UDP').stream
  test('H.264: payload 96, one m= line per camera on the port rule', () => {
    const text = sdp(stream, { host: '127.0.0.1', port: 5600 }, 2)
    expect(text).toContain('c=IN IP4 127.0.0.1\r\n')
    expect(text).toContain('m=video 5600 RTP/AVP 96\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1\r\na=framerate:30')
    expect(text).toContain('m=video 5601 RTP/AVP 96')
  })
  test('MJPG: the static JPEG payload 26; NONE and RECORDING have none', () => {
    expect(sdp({ ...stream, encode_type: 'MJPG' }, { host: '127.0.0.2', port: 6000 })).toContain('m=video 6000 RTP/AVP 26\r\na=rtpmap:26 JPEG/90000')
    expect(() => sdp({ ...stream, encode_type: 'NONE' }, { host: 'h', port: 1 })).toThrow()
    expect(() => sdp({ ...stream, stream_type: 'RECORDING' }, { host: 'h', port: 1 })).toThrow()
  })
})
