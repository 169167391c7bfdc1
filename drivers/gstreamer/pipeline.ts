// The pipeline builder: a pure function from a StreamJob to gst-launch-1.0 arguments. Everything the
// supervisor watches is named here (see monitor.ts): `cam<i>` (member i's v4l2src: QoS = lost frames),
// `mon<i>` (an identity after the source: gaps in the timeline) and `alive<i>` (a progressreport: a bus
// message every second while buffers flow, so the service sees a stall rather than guessing one).
import type { Endpoint, StreamJob, StreamMember } from '../../core/types'
import { framerate } from './simulated'

/** Every encode type records into Matroska: it stays playable after kill -9 and holds several video tracks. */
export const RECORDING_EXT = 'mkv'

/**
 * Port rule for groups: member i (0 = leader) sends to every endpoint's port + i, one RTP stream per
 * camera; all payloaders of a group share timestamp-offset 0, so equal RTP timestamps mean the same
 * capture instant on the group's one pipeline clock.
 */
export function memberEndpoints(endpoints: Endpoint[], index: number): Endpoint[] {
  return endpoints.map((e) => ({ host: e.host, port: e.port + index }))
}

export function fps(job: Pick<StreamJob, 'stream'>): number {
  return job.stream.interval.denominator / job.stream.interval.numerator
}

/** Software H.264 bitrate (kbit/s): ~0.1 bit per pixel per frame, 500..20000; 1080p30 ≈ 6200. */
export function softwareBitrateKbps(width: number, height: number, framesPerSecond: number): number {
  return Math.min(20000, Math.max(500, Math.round((width * height * framesPerSecond * 0.1) / 1000)))
}

export interface PipelineOptions {
  /** Base path of the recording's files, without `_seg<NNN>.mkv` (RECORDING jobs only). */
  recordingPath?: string
  /** Where a RECORDING job's file is cut (default: only before 4 GiB). */
  segments?: SegmentLimits
  /** Overrides softwareBitrateKbps for SOFTWARE_H264. */
  bitrateKbps?: number
  /** Leave out the monitoring identities (the benchmark's bare baseline). */
  bare?: boolean
  /** Per member, the loopback port of the service's live tap (tap.ts): one more copy of its RTP. */
  tapPorts?: number[]
  /** RECORDING jobs: the loopback port of the file's telemetry text pad (telemetryTextTokens); absent: no text track. */
  textPort?: number
  /** RECORDING jobs: the loopback port of the file's sound pad (the stream's Opus RTP); absent: no sound track. */
  soundPort?: number
}

/** gst-launch-1.0 pipeline tokens (one argv element each), or null when the job streams nothing. */
export function buildPipeline(job: StreamJob, options: PipelineOptions = {}): string[] | null {
  const { stream, members } = job
  if (stream.encode_type === 'NONE' || members.length === 0) return null
  if (stream.stream_type === 'UDP' && stream.endpoints.length === 0) throw new Error('a UDP stream needs at least one endpoint')
  if (stream.stream_type === 'RECORDING' && !options.recordingPath) throw new Error('a recording needs a file path')

  const group = members.length > 1
  const tokens: string[] = []
  if (stream.stream_type === 'RECORDING') tokens.push(...matroskaFileTokens(options.recordingPath!, options.segments))
  members.forEach((member, i) => {
    tokens.push(...sourceTokens(job, member, i))
    if (!options.bare) tokens.push('!', ...monitorTokens(i))
    tokens.push(...encodeTokens(job, member, options))
    const tap = options.tapPorts?.[i]
    if (stream.stream_type === 'UDP') {
      tokens.push('!', ...payloaderTokens(job, group))
      const clients = [...memberEndpoints(stream.endpoints, i), ...(tap ? [{ host: '127.0.0.1', port: tap }] : [])].map((e) => `${e.host}:${e.port}`).join(',')
      tokens.push('!', 'multiudpsink', `clients=${clients}`, 'sync=false', 'async=false')
    } else if (tap) {
      // The file gets the frames; the tap a copy as RTP. A leaky queue: a tap that lags never holds the file back.
      tokens.push('!', 'tee', `name=tee${i}`, '!', 'queue', '!', videoPad(i))
      tokens.push(`tee${i}.`, '!', 'queue', 'leaky=downstream', 'max-size-buffers=200', '!', ...payloaderTokens(job, group), '!', 'udpsink', 'host=127.0.0.1', `port=${tap}`, 'sync=false', 'async=false')
    } else {
      tokens.push('!', 'queue', '!', videoPad(i))
    }
  })
  if (stream.stream_type === 'RECORDING' && options.textPort !== undefined) tokens.push(...telemetryTextTokens(options.textPort, 'mux.subtitle_%u'))
  // The sound comes from its own child (plugins/audio) through the hub, stamped on arrival with this
  // pipeline's clock, the one the camera's frames are stamped with.
  if (stream.stream_type === 'RECORDING' && options.soundPort !== undefined) {
    tokens.push('udpsrc', 'name=sound', 'address=127.0.0.1', `port=${options.soundPort}`, `caps=${OPUS_RTP_CAPS}`)
    tokens.push('!', 'rtpjitterbuffer', `latency=${RECORDER_JITTER_MS}`, '!', 'rtpopusdepay', '!', 'opusparse', '!', 'queue', '!', 'mux.audio_%u')
  }
  return tokens
}

/** How recordings are cut into segments (files): every `seconds` (0 = never by time), and always before `bytes`. */
export interface SegmentLimits {
  seconds: number
  bytes: number
}

/** A FAT card takes files up to 4 GiB − 1 byte; the margin covers the muxer's index and its size estimate. */
export const FAT_SEGMENT_BYTES = 4 * 1024 ** 3 - 64 * 1024 ** 2

export const DEFAULT_SEGMENTS: SegmentLimits = { seconds: 0, bytes: FAT_SEGMENT_BYTES }

/**
 * The crash-safe file end of a RECORDING stream (the recorder of a running stream cuts its own segments:
 * matroskaSegmentTokens, recorder.ts), `mux.video` taking the leader's track and `mux.video_aux_<i>`
 * each follower's (videoPad). splitmuxsink cuts a new file `<base>_seg<NNN>.mkv` (child.ts segmentPath) on
 * the leader's key frame after `seconds`, or before the next GOP would pass `bytes`: every frame in exactly
 * one file, each file opening on a key frame. Each file is Matroska with short clusters and unbuffered
 * writes; splitmuxsink holds back the GOP it is collecting (it must know its size before it picks the
 * file), so a kill -9 or power cut loses that GOP at most (measured: docs/recordings.md).
 */
export function matroskaFileTokens(base: string, limits: SegmentLimits = DEFAULT_SEGMENTS): string[] {
  // The location is a printf format: a '%' of the directory's own must not become one.
  const location = `${base.replace(/%/g, '%%')}_seg%03d.${RECORDING_EXT}`
  return [
    'splitmuxsink', 'name=mux', 'async-finalize=true', 'start-index=1', `location=${location}`,
    `max-size-time=${Math.round(limits.seconds * 1e9)}`, `max-size-bytes=${limits.bytes}`,
    'muxer-factory=matroskamux', 'muxer-properties=properties,min-cluster-duration=(guint64)250000000,max-cluster-duration=(guint64)250000000,offset-to-zero=true',
    // buffer-mode 2 = unbuffered (the enum's name is unknown before filesink's plugin is loaded).
    'sink-factory=filesink', 'sink-properties=properties,buffer-mode=(int)2,sync=false,async=false',
  ]
}

/** The muxer pad for member `i`: the leader's track decides where files are cut, followers ride along. */
export const videoPad = (i: number) => (i === 0 ? 'mux.video' : `mux.video_aux_${i}`)

/** The RTP a live tap carries (tap.ts): its caps for a udpsrc. */
export function rtpCaps(encoding: 'H264' | 'JPEG'): string {
  return encoding === 'JPEG'
    ? 'application/x-rtp,media=video,encoding-name=JPEG,clock-rate=90000,payload=26'
    : 'application/x-rtp,media=video,encoding-name=H264,clock-rate=90000,payload=96'
}

/**
 * One segment file of a recording made while streaming (recorder.ts cuts the segments itself): a plain
 * matroskamux with short clusters, offset to zero, into an unbuffered filesink, so nothing is held back
 * and a kill -9 or power cut loses only the last cluster (250 ms) and what is in flight.
 */
export function matroskaSegmentTokens(path: string): string[] {
  return [
    'matroskamux', 'name=mux', 'min-cluster-duration=250000000', 'max-cluster-duration=250000000', 'offset-to-zero=true',
    '!', 'filesink', `location=${path}`, 'buffer-mode=unbuffered', 'sync=false', 'async=false',
  ]
}

/**
 * A recording made while streaming (recorder.ts), one segment file `path`: the live tap's RTP of each
 * member, forwarded to the loopback `ports`, depayloaded into a crash-safe Matroska file
 * (matroskaSegmentTokens). The encoded frames go to the file as they are: no decoder, no encoder.
 * `textPort`: the vehicle's telemetry as a subtitle track; `soundPort`: the stream's sound as an Opus track.
 */
export function buildRecorderPipeline(encoding: 'H264' | 'JPEG', ports: number[], path: string, options: RecorderPipelineOptions = {}): string[] {
  const { textPort, soundPort } = options
  const tokens = matroskaSegmentTokens(path)
  const depay = encoding === 'JPEG' ? ['rtpjpegdepay', '!', 'jpegparse'] : ['rtph264depay', '!', 'h264parse']
  ports.forEach((port, i) => {
    tokens.push('udpsrc', `name=rtp${i}`, 'address=127.0.0.1', `port=${port}`, `caps=${rtpCaps(encoding)}`, 'buffer-size=4194304')
    // Loopback: nothing to reorder or wait for, and every millisecond held here is lost in a power cut.
    // mode=none: frames stamped from their RTP timestamps alone, not from when they came (a busy machine
    // delivers in bursts, and the pre-record buffer's seconds come in one): the file's timestamps are the
    // camera's. The feeder keeps one RTP timeline across a camera child restart (media/rtp.ts RtpContinuity).
    // The leader's track first: players take the first video track as the main one.
    tokens.push('!', 'rtpjitterbuffer', `latency=${RECORDER_JITTER_MS}`, 'mode=none', '!', ...depay, '!', 'queue', '!', 'mux.video_%u')
  })
  // The text, stamped as the video is: from its RTP timestamps, on the video's clock (telemetry-feed.ts).
  if (textPort !== undefined) {
    tokens.push('udpsrc', 'name=telemetry', 'address=127.0.0.1', `port=${textPort}`, `caps=${TELEMETRY_RTP_CAPS}`)
    tokens.push('!', 'rtpjitterbuffer', `latency=${RECORDER_JITTER_MS}`, 'mode=none', '!', 'rtpgstdepay', '!', ...cueDurationTokens(), '!', 'queue', '!', 'mux.subtitle_%u')
  }
  // The sound (the hub's Opus track, silence while its card is out: a muxer waits for every track) as it
  // is, after the video tracks, stamped as the video is: from its RTP timestamps (mode=none), so both
  // start together whenever the child began listening (stamped on arrival, the sound came 0.4 s late in
  // the first segment and ~3 s in a next one, started ahead of its cut). It starts with the video's first
  // key frame and moves with it at a cut (recorder.ts); the feeder keeps one RTP timeline across a sound
  // child's restart (a restarted one's new timeline came out silent in a slow VM).
  if (soundPort) {
    tokens.push('udpsrc', 'name=sound', 'address=127.0.0.1', `port=${soundPort}`, `caps=${OPUS_RTP_CAPS}`)
    tokens.push('!', 'rtpjitterbuffer', 'latency=100', 'mode=none', '!', 'rtpopusdepay', '!', 'opusparse', '!', 'queue', '!', 'mux.audio_%u')
  }
  return tokens
}

/** The recorder's jitter buffer (ms): its packets come over loopback, in order (was 100: 3 frames more lost in a power cut). */
export const RECORDER_JITTER_MS = 10

export interface RecorderPipelineOptions {
  /** The vehicle's telemetry as a subtitle track (TELEMETRY_RTP_CAPS). */
  textPort?: number
  /** The stream's sound as an Opus track. */
  soundPort?: number
}

/**
 * A RECORDING stream's telemetry as a subtitle track (S_TEXT/UTF8): each UTF-8 datagram the service
 * sends to the loopback `port` is one cue, stamped on arrival with the pipeline's running time, the
 * clock the camera's frames are stamped with too. `into` is the muxer's subtitle request pad,
 * `mux.subtitle_%u` (splitmuxsink passes it to each segment's matroskamux). matroskamux waits for a
 * buffer on every pad before it writes the earlier ones, a subtitle pad included: the service keeps
 * this pad fed (TEXT_INTERVAL_MS, telemetry-feed.ts). (The recorder's text is RTP: buildRecorderPipeline.)
 */
export function telemetryTextTokens(port: number, into: string): string[] {
  return ['udpsrc', 'name=telemetry', 'address=127.0.0.1', `port=${port}`, 'caps=text/x-raw,format=utf8', '!', ...cueDurationTokens(), '!', 'queue', '!', into]
}

/**
 * How often the service sends a telemetry cue (telemetry-feed.ts), and how long each one lasts in the
 * file: the next one begins as it ends (a change of the armed state or the mode comes at once, and
 * restarts the beat).
 */
export const TEXT_CUE_MS = 250

/**
 * Gives each cue its duration, TEXT_CUE_MS, which matroskamux writes as the block's BlockDuration. A cue
 * without one lasts no time for ffmpeg: its `subtitles` filter burnt in nothing and an SRT export had only
 * empty cues. No 1.22 element sets a buffer's duration, and an RTP cue carries none, so the cue goes
 * through SubRip and back: srtenc writes it with its own timestamp and this duration (used when the buffer
 * has none), subparse reads that back into a UTF-8 buffer with both, in the same segment.
 */
export function cueDurationTokens(): string[] {
  return ['srtenc', `duration=${TEXT_CUE_MS * 1_000_000}`, '!', 'subparse']
}

/**
 * The recorder's telemetry cues (telemetry-feed.ts toRtp): GStreamer's own RTP payload for any buffer
 * (rtpgstpay/rtpgstdepay), the buffers' caps given here (base64, as rtpgstpay announces them) and not in
 * each packet: UTF-8 text, as the subtitle pad takes it.
 */
export const TELEMETRY_PT = 96
export const TELEMETRY_RTP_CAPS = `application/x-rtp,media=application,clock-rate=90000,encoding-name=X-GST,payload=${TELEMETRY_PT},capsversion=(string)0,caps=(string)"${Buffer.from('text/x-raw, format=(string)utf8').toString('base64')}"`

/** The RTP of a stream's sound (drivers/gstreamer/audio.ts), for a udpsrc. */
export const OPUS_RTP_CAPS = 'application/x-rtp,media=audio,encoding-name=OPUS,clock-rate=48000,payload=111'

export function monitorTokens(i: number): string[] {
  return ['identity', `name=mon${i}`, 'check-imperfect-timestamp=true', '!', 'progressreport', `name=alive${i}`, 'update-freq=1', 'silent=true', 'do-query=false']
}

function sourceTokens(job: StreamJob, member: StreamMember, index: number): string[] {
  return sourceDescription(member, job, index)
}

/** GStreamer's name for each raw V4L2 pixel format a stream may read (plugins/cameras/formats.ts SOURCE_FORMAT). */
const RAW_FORMATS: Record<string, string> = { YUYV: 'YUY2' }

/** The GStreamer raw format the member's camera is read in, or null when it is read compressed (MJPG, H264). */
function rawFormat(member: StreamMember): string | null {
  if (!member.pixel_format || member.pixel_format === 'MJPG' || member.pixel_format === 'H264') return null
  const raw = RAW_FORMATS[member.pixel_format]
  if (!raw) throw new Error(`cannot read pixel format ${member.pixel_format} (known raw formats: ${Object.keys(RAW_FORMATS).join(', ')})`)
  return raw
}

/** The member's source up to the camera's native caps (also what a still capture reads: plugins/jpeg). */
export function sourceDescription(member: StreamMember, job: Pick<StreamJob, 'stream'>, index: number): string[] {
  const { source } = member
  if (source.kind === 'gst') return source.description.trim().split(/\s+/)
  const { encode_type, width, height, interval } = job.stream
  const raw = rawFormat(member)
  const media = raw ? `video/x-raw,format=${raw}` : encode_type === 'H264' ? 'video/x-h264' : 'image/jpeg'
  return ['v4l2src', `name=cam${index}`, `device=${source.device}`, '!', `${media},width=${width},height=${height},framerate=${framerate(interval)}`]
}

/** From the camera's output to the stream's codec: H.264 parsed, MJPG as is, SOFTWARE_H264 re-encoded (from MJPG or raw). */
function encodeTokens(job: StreamJob, member: StreamMember, options: PipelineOptions): string[] {
  const { encode_type, width, height } = job.stream
  if (encode_type === 'MJPG') return []
  const parse = ['!', ...H264_PARSE]
  if (encode_type === 'H264') return parse
  const rate = fps(job)
  const bitrate = options.bitrateKbps ?? softwareBitrateKbps(width, height, rate)
  return [
    ...(rawFormat(member) ? [] : ['!', 'jpegdec']),
    // 4:2:2 input (most UVC JPEG, YUYV) would otherwise become High 4:2:2 H.264, which few decoders play.
    '!', 'videoconvert', '!', 'video/x-raw,format=I420',
    '!', 'x264enc', 'tune=zerolatency', 'speed-preset=ultrafast', `bitrate=${bitrate}`, `key-int-max=${Math.max(1, Math.round(rate))}`,
    ...parse,
  ]
}

/**
 * H.264 on its way to a payloader or a file: SPS/PPS in-band before every IDR (config-interval=-1, as
 * mavlink-camera-manager does: a receiver joining late decodes from the next key frame), inserted once per
 * access unit, before its first slice. Whole access units (alignment=au) are what the camera and x264enc
 * give anyway, so this holds nothing back. The payloader must not insert them again: rtph264pay's own
 * config-interval=-1 puts SPS/PPS before every IDR *slice*, and x264enc (sliced threads, tune=zerolatency)
 * or a camera cuts a key frame into several: a parameter set after a slice starts a new access unit
 * (H.264 7.4.1.2.3), and ffmpeg decoded every key frame as two pictures with one timestamp.
 */
export const H264_PARSE = ['h264parse', 'config-interval=-1', '!', 'video/x-h264,alignment=au']

function payloaderTokens(job: StreamJob, group: boolean): string[] {
  const sync = group ? ['timestamp-offset=0'] : []
  if (job.stream.encode_type === 'MJPG') return ['rtpjpegpay', 'pt=26', ...sync]
  // Parameter sets come from H264_PARSE, in the access unit; the payloader sends them as they come.
  return ['rtph264pay', 'aggregate-mode=zero-latency', 'pt=96', ...sync]
}

/** The command line, quoted for a shell: for logs and for running a pipeline by hand. */
export function shellCommand(tokens: string[]): string {
  const quote = (t: string) => (/^[\w@%+=:,./!-]+$/.test(t) ? t : `'${t.replace(/'/g, `'\\''`)}'`)
  return ['gst-launch-1.0', ...tokens.map(quote)].join(' ')
}
