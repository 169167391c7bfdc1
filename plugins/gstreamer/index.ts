// Provides the 'streamer' backend: gst-launch-1.0 children per stream, and drives the frame-sync board a
// vendor declares for leader/follower groups. Without GStreamer installed it provides nothing and reports
// itself down, so the cameras plugin answers 503 when a stream must start. Each setup() is its own instance (tests
// run several services in one process).
import { Elysia } from 'elysia'
import { existsSync } from 'node:fs'
import { conflict, notFound, unavailable } from '../../core/errors'
import { docs } from '../../core/openapi'
import { definePlugin, type PluginHealth, type Registry } from '../../core/plugin'
import { readPreferences, type Preferences } from '../../core/preferences'
import { sdp } from '../../drivers/gstreamer/sdp'
import { FrameSync } from '../../drivers/gstreamer/framesync'
import { GstStreamer } from '../../drivers/gstreamer/streamer'
import { FAT_SEGMENT_BYTES } from '../../drivers/gstreamer/pipeline'
import { PRE_RECORD_MAX_BYTES } from '../../media/hub'

const INSTALL = 'gst-launch-1.0 not found: install gstreamer1.0-tools and gstreamer1.0-plugins-{base,good,bad,ugly} (scripts/setup/gstreamer.sh)'

const wholeNumber = (min: number, max: number) => (raw: string) => {
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`expected a whole number from ${min} to ${max}`)
  return n
}

export default definePlugin({
  name: 'gstreamer',
  flags: {
    'record-segment-seconds': {
      help: 'cut every recording into files (segments) of this many seconds, each starting on a key frame (0 = one file, cut only before 4 GiB); e.g. 600 for 10 minutes',
      default: 0,
      parse: wholeNumber(0, 86400),
    },
    'pre-record-seconds': {
      help: `a recording started while streaming begins this many seconds before the press (H.264; whole groups of pictures, at most ${PRE_RECORD_MAX_BYTES / 1048576} MiB per camera; 0 = off)`,
      default: 0,
      parse: wholeNumber(0, 30),
    },
    'record-segment-bytes': {
      help: `cut a recording before its file reaches this many bytes (default and most ${FAT_SEGMENT_BYTES}: below FAT's 4 GiB, with a margin); smaller values are for tests`,
      default: FAT_SEGMENT_BYTES,
      parse: wholeNumber(64 * 1024, FAT_SEGMENT_BYTES),
    },
  },
  setup({ registry, events, store, log, lifecycle, flags, config }) {
    const gstLaunch = Bun.which('gst-launch-1.0', { PATH: process.env.PATH ?? '' })
    if (!gstLaunch) {
      log.warn(INSTALL)
      lifecycle({ health: () => ({ state: 'down', detail: INSTALL }) })
      return sdpRoutes(null, registry)
    }
    const offset = () => readPreferences(store, registry).frequency_offset
    // PERISCOPE_FRAME_SYNC_PORT names the board's tty when it is not a USB serial adapter we recognise.
    const fixedPort = process.env.PERISCOPE_FRAME_SYNC_PORT
    const frameSync = new FrameSync({
      log: log.child({ part: 'frame-sync' }),
      // The board is a vendor's (plugins/dwe declares DWE's), registered whatever the plugin order.
      board: () => registry.vendors().find((vendor) => vendor.frameSync)?.frameSync,
      frequencyOffset: offset(),
      findPort: fixedPort ? () => (existsSync(fixedPort) ? fixedPort : null) : undefined,
    })
    const segments = { seconds: Number(flags['record-segment-seconds'] ?? 0), bytes: Number(flags['record-segment-bytes'] ?? FAT_SEGMENT_BYTES) }
    const preRecordSeconds = Number(flags['pre-record-seconds'] ?? 0)
    // A stream whose sound is attached says so from its hub's creation (a recording started at once gets the track).
    const soundExpected = (bus_info: string) => registry.get('audio')?.status(bus_info)?.source != null
    const streamer = new GstStreamer({ log, gstLaunch, frameSync, segments, preRecordSeconds, soundExpected, delayAlertMs: config.delayAlertMs, telemetry: registry.telemetry, emit: (type, data) => events.emit(type, data) })
    const unsubscribe = events.subscribe((event) => {
      if (event.type !== 'preferences_updated') return
      const next = (event.data as Partial<Preferences> | null)?.frequency_offset
      frameSync.setFrequencyOffset(typeof next === 'number' ? next : offset())
    })
    registry.provide('streamer', streamer, 'gstreamer')
    lifecycle({
      start: () => frameSync.start(),
      async stop() {
        unsubscribe()
        await streamer.stopAll()
        frameSync.stop()
      },
      health(): PluginHealth {
        // Degraded while a stream is failing: the cameras' stream_status says which and why.
        const streams = streamer.summary()
        const problems = streamer.problems()
        const detail = Object.entries(problems).map(([bus_info, error]) => `${bus_info}: ${error}`).join('; ')
        return { state: streams.backoff || streams.error ? 'degraded' : 'ok', ...(detail && { detail }), streams, recordings: streamer.recordingCount }
      },
    })
    return sdpRoutes(streamer, registry)
  },
})

/** Receivers that need an SDP description (VLC): `vlc http://rov:8080/api/streams/<bus_info>/sdp`. Without GStreamer: 503. */
function sdpRoutes(streamer: GstStreamer | null, registry: Registry) {
  return new Elysia({ name: 'periscope:gstreamer' }).get(
    '/api/streams/:bus_info/sdp',
    ({ params: { bus_info } }) => {
      if (!streamer) throw unavailable(INSTALL)
      const job = streamer.job(bus_info)
      if (!job) throw notFound(`No stream is running for '${bus_info}' (a follower streams in its leader's job)`)
      const { stream } = job
      if (stream.stream_type !== 'UDP' || stream.encode_type === 'NONE') throw conflict(`The stream of '${bus_info}' is ${stream.stream_type} ${stream.encode_type}, not RTP over UDP`)
      if (!stream.endpoints[0]) throw conflict(`The stream of '${bus_info}' has no endpoint`)
      // The sound's m= line while it runs (plugins/audio): a receiver that finds no packets on it waits in vain.
      const sound = registry.get('audio')?.status(bus_info)
      const first = stream.endpoints[0]
      const sent = sound && sound.state !== 'off' && sound.port_offset !== null && !sound.not_sent_to.includes(`${first.host}:${first.port + sound.port_offset}`)
      const audio = sent ? { portOffset: sound.port_offset!, channels: sound.channels } : undefined
      return new Response(sdp(stream, stream.endpoints[0], job.members.length, job.members[0]?.label, audio), { headers: { 'content-type': 'application/sdp' } })
    },
    {
      ...docs({
        tag: 'cameras',
        summary: "SDP description of a running UDP stream, for VLC: one m= video line per camera of the group and one m= audio line for its sound (Opus), for the first endpoint",
        ok: { content: { 'application/sdp': { schema: { type: 'string' } } } },
        errors: [404, 409, 503],
        pathParams: ['bus_info'],
      }),
    },
  )
}
