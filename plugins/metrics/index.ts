// Prometheus metrics at GET /metrics (text exposition format 0.0.4), through prom-client. Camera values
// are read when Prometheus scrapes, from what GET /api/devices shows (stream state, restarts, drops,
// recording), the streams' hubs (frames and bytes sent, what readers lost, the health figures and frame intervals) and the viewer plugins' counts (registry):
// nothing polls. Requests are counted and timed by route template where core/http/request-log.ts
// measures them, so a bus_info or a recording name never becomes a label value.
import { Elysia } from 'elysia'
import { existsSync } from 'node:fs'
import { dirname } from 'node:path'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry as Metrics } from 'prom-client'
import { LOG_LEVELS } from '../../core/log'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { STREAM_STATES } from '../../core/schemas'
import type { Device } from '../../core/types'
import { VERSION } from '../../core/version'
import { diskUsage } from '../../core/disk'
import { collectionPending, memoryCollections } from '../../media/memory'
import { segmentCuts } from '../../media/segment-cuts'

/**
 * prom-client's default metrics that hold under Bun (each checked: a 300 ms block of the event loop
 * shows in the lag gauges, RSS and CPU match /proc). Left out: nodejs_active_{handles,requests,resources}
 * (Bun reports none), nodejs_gc_duration_seconds (Bun has no `gc` performance entries), the V8 heap
 * spaces (JavaScriptCore has none of them: zeros), process_heap_bytes (VmData: Bun's reserved address
 * space, not a heap) and nodejs_version_info (the Node version Bun imitates; periscope_build_info says which Bun).
 */
const PROCESS_METRICS = [
  'process_cpu_user_seconds_total',
  'process_cpu_system_seconds_total',
  'process_cpu_seconds_total',
  'process_start_time_seconds',
  'process_resident_memory_bytes',
  'process_virtual_memory_bytes',
  'process_open_fds',
  'process_max_fds',
  'nodejs_eventloop_lag_seconds',
  'nodejs_eventloop_lag_min_seconds',
  'nodejs_eventloop_lag_max_seconds',
  'nodejs_eventloop_lag_mean_seconds',
  'nodejs_eventloop_lag_stddev_seconds',
  'nodejs_eventloop_lag_p50_seconds',
  'nodejs_eventloop_lag_p90_seconds',
  'nodejs_eventloop_lag_p99_seconds',
  'nodejs_heap_size_total_bytes',
  'nodejs_heap_size_used_bytes',
  'nodejs_external_memory_bytes',
]

/** Label values for methods: anything else a client invents is `other` (no label from raw input). */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])
/** The API answers in well under a millisecond to a few seconds (a capture, a zip prepare). */
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

const hex4 = (n: number) => n.toString(16).padStart(4, '0')

/** The nearest existing directory of `path`: the file system its recordings go to once it is made. */
function nearestExisting(path: string): string {
  while (!existsSync(path) && dirname(path) !== path) path = dirname(path)
  return path
}

/**
 * A histogram family whose buckets a stream's hub keeps itself (media/health.ts: counted where they happen,
 * at no cost to a scrape), written from them at scrape time: prom-client's Histogram is fed one
 * observation at a time. The cameras' loop adds each camera's (add); each scrape starts empty (reset).
 */
function hubHistogram(name: string, help: string) {
  let values: { metricName: string; labels: Record<string, string | number>; value: number }[] = []
  return {
    name,
    help,
    type: 'histogram',
    aggregator: 'sum',
    get: async () => ({ name, help, type: 'histogram', aggregator: 'sum', values }),
    reset: () => void (values = []),
    add(bus_info: string, h: { bounds: readonly number[]; counts: number[]; sum: number; count: number }) {
      h.bounds.forEach((le, i) => values.push({ metricName: `${name}_bucket`, labels: { bus_info, le }, value: h.counts[i]! }))
      values.push({ metricName: `${name}_bucket`, labels: { bus_info, le: '+Inf' }, value: h.count })
      values.push({ metricName: `${name}_sum`, labels: { bus_info }, value: h.sum }, { metricName: `${name}_count`, labels: { bus_info }, value: h.count })
    },
  }
}

export default definePlugin({
  name: 'metrics',
  // A scraper polls: it does not show that a pilot's client is there (the network rollback).
  backgroundPaths: ['/metrics'],
  setup({ registry, config, requests, log, events, lifecycle, refusals }) {
    const metrics = new Metrics()
    const registers = [metrics]

    const defaults = new Metrics()
    collectDefaultMetrics({ register: defaults })
    for (const name of PROCESS_METRICS) {
      const metric = defaults.getSingleMetric(name)
      if (metric) metrics.registerMetric(metric)
    }
    let collectionsSeen = 0
    new Counter({
      name: 'periscope_memory_collections_total',
      help: 'Full garbage collections run once viewers stopped leaving (media/memory.ts), to give their memory back',
      registers,
      collect() {
        const now = memoryCollections()
        this.inc(now - collectionsSeen)
        collectionsSeen = now
      },
    })
    new Gauge({
      name: 'periscope_memory_collection_pending',
      help: '1 while such a collection waits for readers to stop leaving',
      registers,
      collect() {
        this.set(collectionPending() ? 1 : 0)
      },
    })
    // ---- segments of recordings made while streaming (drivers/gstreamer/recorder.ts cuts them) ----
    let cutsSeen = 0
    new Counter({
      name: 'periscope_recording_segment_cuts_total',
      help: 'Segment cuts of recordings made while streaming (--record-segment-seconds, --record-segment-bytes), every camera together, since the start',
      registers,
      collect() {
        this.inc(segmentCuts.total - cutsSeen)
        cutsSeen = segmentCuts.total
      },
    })
    new Gauge({
      name: 'periscope_recording_segment_switch_seconds',
      help: "The last segment cut's cost, by phase: start (the next segment's child started until it listens, ahead of the cut, while the old one records) and close (from the cut at the key frame to the old file closed and pushed to the disk); no frame is lost or repeated either way",
      labelNames: ['phase'],
      registers,
      collect() {
        this.set({ phase: 'start' }, segmentCuts.lastStartMs / 1000)
        this.set({ phase: 'close' }, segmentCuts.lastCloseMs / 1000)
      },
    })
    new Gauge({ name: 'periscope_build_info', help: 'Always 1: the version of Periscope and of the Bun that runs it', labelNames: ['version', 'bun'], registers }).set({ version: VERSION, bun: Bun.version }, 1)

    // ---- requests, by route template ----
    const requestCount = new Counter({ name: 'periscope_http_requests_total', help: 'HTTP requests answered, by method, route template (unmatched: no route, as for 404, 405, a preflight, a missing token) and status', labelNames: ['method', 'route', 'status'], registers })
    const requestSeconds = new Histogram({
      name: 'periscope_http_request_duration_seconds',
      help: 'Seconds from a request\'s arrival to its answer (for a stream, its head), by method and route template',
      labelNames: ['method', 'route'],
      buckets: LATENCY_BUCKETS,
      registers,
    })
    const unwatchRequests = requests.watch(({ method, route, status, seconds }) => {
      const labels = { method: METHODS.has(method) ? method : 'other', route: route ?? 'unmatched' }
      requestCount.inc({ ...labels, status: String(status) })
      requestSeconds.observe(labels, seconds)
    })

    // ---- what the front refused (core/http/refusals.ts), read at scrape time ----
    const wrongTokens = new Counter({ name: 'periscope_http_wrong_tokens_total', help: 'Requests that carried a token other than --token: the Authorization header, the console\'s cookie, or RTSP credentials', registers })
    const refusedOrigins = new Counter({ name: 'periscope_http_refused_origins_total', help: 'Requests from a browser page on an origin that is not allowed (403; docs/security.md)', registers })
    const refusedHosts = new Counter({ name: 'periscope_http_refused_hosts_total', help: 'Requests whose Host is not served (421), is no host name or came twice (400)', registers })
    const limited = new Counter({ name: 'periscope_http_limited_total', help: 'Expensive operations refused with 429 past their per-client limit, by kind (docs/security.md)', labelNames: ['kind'], registers })
    const refusedNow = () => {
      for (const metric of [wrongTokens, refusedOrigins, refusedHosts, limited]) metric.reset()
      wrongTokens.inc(refusals.wrongTokens)
      refusedOrigins.inc(refusals.origins)
      refusedHosts.inc(refusals.hosts)
      for (const [kind, count] of Object.entries(refusals.limits.refused)) limited.inc({ kind }, count)
    }

    // ---- log entries written, by level ----
    const logEntries = new Counter({ name: 'periscope_log_entries_total', help: 'Log entries written (what --log-level lets through), by level: GET /api/logs shows the recent ones', labelNames: ['level'], registers })
    for (const level of LOG_LEVELS) logEntries.inc({ level }, 0)
    const unwatchLog = log.subscribe((record) => logEntries.inc({ level: record.level }))

    // ---- recordings deleted, by reason (the retention policy's max_age/min_free, or manual) ----
    const deletions = new Counter({ name: 'periscope_recordings_deleted_total', help: 'Recordings deleted, by reason: max_age and min_free (the retention policy), manual (DELETE /api/recordings)', labelNames: ['reason'], registers })
    for (const reason of ['max_age', 'min_free', 'manual']) deletions.inc({ reason }, 0)
    const unwatchDeletions = events.subscribe((e) => {
      if (e.type === 'recording_deleted') deletions.inc({ reason: String((e.data as { reason?: unknown }).reason) })
    })

    // ---- cameras: read at scrape time ----
    const camera = (name: string, help: string, extra: string[] = []) => ({ name, help, labelNames: ['bus_info', ...extra], registers })
    const info = new Gauge(camera('periscope_camera_info', 'Always 1 per connected camera: its name, nickname and USB ids (join on bus_info; the other metrics carry only bus_info, so a new nickname starts no new series)', ['name', 'nickname', 'vid', 'pid']))
    const state = new Gauge(camera('periscope_stream_state', "1 for the camera's stream state now, 0 for the others (a follower: its group's)", ['state']))
    const restarts = new Counter(camera('periscope_stream_restarts_total', 'Restarts of the stream after a failure or a stall since it was last started (restart_stream, configure_stream and a replug start it anew; a follower: its group\'s)'))
    const drops = new Counter(camera('periscope_stream_dropped_frames_total', "Frames lost since the stream was last started: the camera's (v4l2src QoS) and, in a group, frames out of step (a follower: its group's)"))
    const frames = new Counter(camera('periscope_stream_frames_total', "Frames the camera's pipeline sent since the stream was last started (RTP packets with the marker bit, counted at the stream's hub)"))
    const sentBytes = new Counter(camera('periscope_stream_sent_bytes_total', "RTP bytes the camera's pipeline sent since the stream was last started, one copy (each UDP endpoint receives as many): rate() is the stream's bitrate"))
    const readerDrops = new Counter(camera('periscope_reader_dropped_packets_total', "RTP packets readers of the stream's hub lost to their queue's bound (a reader fell behind and skipped to the next key frame) since the stream was last started, by reader (whep, rtsp, mjpeg, recorder); on a group's leader for the whole group", ['reader']))
    const readerFailures = new Counter(camera('periscope_reader_failures_total', "Readers of the stream's hub ended by an error of their own (the others read on) since the stream was last started; on a group's leader for the whole group"))
    const viewers = new Gauge(camera('periscope_viewers', 'Viewers watching the camera now, by protocol (rtsp, whep, mjpeg; only those whose plugin is loaded)', ['protocol']))
    const recording = new Gauge(camera('periscope_recording_active', '1 while a recording made while streaming (start_recording) runs for the camera (a group: on each of its cameras)'))
    const recordingBytes = new Gauge(camera('periscope_recording_bytes', 'Size on disk of the recording being made while streaming, as the scrape finds it; 0 when none runs'))
    const diskFree = new Gauge({ name: 'periscope_recordings_disk_free_bytes', help: 'Bytes free to the service on the file system holding the recordings directory', registers })
    const diskSize = new Gauge({ name: 'periscope_recordings_disk_size_bytes', help: 'Size in bytes of the file system holding the recordings directory', registers })
    const refused = new Counter({ name: 'periscope_refusals_total', help: "Requests a limit refused since the start, by what was refused and why (what=whep_offer: WHEP offers too large, with too many media sections, without a fingerprint or ICE credentials…)", labelNames: ['what', 'reason'], registers })
    const limitHits = new Counter({ name: 'periscope_limit_hits_total', help: 'Times a limit refused or cut off something, by limit (docs/limits.md lists them): a client too far behind, a cap on children, a frame refused', labelNames: ['limit'], registers })
    const AUDIO_STATES = ['off', 'starting', 'running', 'gone', 'backoff', 'error']
    const audioState = new Gauge(camera('periscope_audio_state', "1 for the state of the camera's stream sound now (plugins/audio), 0 for the others; gone: its sound card is unplugged", ['state']))
    const audioLevel = new Gauge(camera('periscope_audio_level_dbfs', "The stream sound's last level in dBFS (after the gain, before the mute), measure peak or rms; absent while it does not run", ['measure']))
    // The stream's health at its hub (media/health.ts), measured once a second; absent while it does not run.
    const deliveredFps = new Gauge(camera('periscope_stream_fps', "Frames per second the camera's pipeline delivered over the last second (stream_status.health.fps)"))
    const configuredFps = new Gauge(camera('periscope_stream_configured_fps', 'The frame rate the stream is configured for'))
    const bitrate = new Gauge(camera('periscope_stream_bytes_per_second', "Bytes per second of the stream's RTP over the last second, one copy (stream_status.health.bitrate / 8; promtool wants bytes, not bits)"))
    const keyInterval = new Gauge(camera('periscope_stream_keyframe_interval_seconds', 'Seconds between the last two key frames'))
    const lostPackets = new Counter(camera('periscope_stream_lost_packets_total', "RTP packets missing from the stream's sequence at its hub since the stream was last started"))
    const stalls = new Counter(camera('periscope_stream_stalls_total', 'Times no frame came for more than a second since the stream was last started'))
    const stalled = new Gauge(camera('periscope_stream_stalled', '1 while no frame has come for more than a second'))
    const healthAlert = new Gauge(
      camera('periscope_stream_health_alert', "1 while, for 2 s, the delivered rate has been below 90 % of the configured rate, a viewer's delay past --delay-alert or a viewer losing over 5 % (until all is back for 2 s): the stream_health event"),
    )
    const viewerDelay = new Gauge(camera('periscope_stream_viewer_delay_seconds', "The worst camera-to-screen delay the stream's viewers measured in the last 2 s (the console's WebRTC views say theirs)"))
    const viewerLoss = new Gauge(camera('periscope_stream_viewer_loss_ratio', "The worst share of the video's packets the stream's viewers lost in the last 2 s, as they measured it"))
    const intervalHistogram = hubHistogram('periscope_stream_frame_interval_seconds', "Seconds between consecutive frames as they reach the stream's hub, since the stream was last started (a stall shows past 1 s)")
    const delayHistogram = hubHistogram('periscope_viewer_delay_seconds', "Camera-to-screen delays the stream's viewers measured, one each time a viewer said it (the console's WebRTC views, each second), since the stream was last started")
    for (const family of [intervalHistogram, delayHistogram]) metrics.registerMetric(family as never)
    const perCamera = [intervalHistogram, delayHistogram, info, state, restarts, drops, frames, sentBytes, readerDrops, readerFailures, viewers, recording, recordingBytes, audioState, audioLevel, deliveredFps, configuredFps, bitrate, keyInterval, lostPackets, stalls, stalled, healthAlert, viewerDelay, viewerLoss]

    const devices = (): Device[] => {
      try {
        return registry.deviceDirectory().devices()
      } catch {
        return [] // no cameras plugin: no camera to describe
      }
    }

    /** Every camera value as it is now; a camera gone since the last scrape leaves no series behind. */
    const refresh = () => {
      for (const metric of perCamera) metric.reset()
      refused.reset()
      for (const { what, reason, count } of registry.refusals()) refused.inc({ what, reason }, count)
      const streamer = registry.get('streamer')
      for (const device of devices()) {
        const bus_info = device.bus_info
        const status = device.stream_status ?? { state: 'stopped', restarts: 0 }
        const made = device.recording ?? { active: false, bytes: 0 }
        info.set({ bus_info, name: device.name ?? '', nickname: device.nickname, vid: hex4(device.vid), pid: hex4(device.pid) }, 1)
        for (const s of STREAM_STATES) state.set({ bus_info, state: s }, status.state === s ? 1 : 0)
        restarts.inc({ bus_info }, status.restarts)
        drops.inc({ bus_info }, device.frame_stats.num_drops)
        const live = streamer?.live(bus_info)
        const sent = live ? live.hub.sent(live.member) : { bytes: 0, frames: 0 }
        if (live?.member === 0) {
          const stats = live.hub.readerStats()
          for (const [reader, count] of Object.entries(stats.dropped)) readerDrops.inc({ bus_info, reader }, count)
          readerFailures.inc({ bus_info }, stats.failed)
        }
        frames.inc({ bus_info }, sent.frames)
        const health = live && !live.hub.closed ? live.hub.health(live.member) : null
        if (health) {
          configuredFps.set({ bus_info }, health.configured_fps)
          if (health.fps !== null) deliveredFps.set({ bus_info }, health.fps)
          if (health.bitrate !== null) bitrate.set({ bus_info }, health.bitrate / 8)
          if (health.keyframe_interval !== null) keyInterval.set({ bus_info }, health.keyframe_interval)
          lostPackets.inc({ bus_info }, health.lost_packets)
          stalls.inc({ bus_info }, health.stalls)
          stalled.set({ bus_info }, health.stalled ? 1 : 0)
          healthAlert.set({ bus_info }, health.alert ? 1 : 0)
          if (health.viewer_delay_ms !== null) viewerDelay.set({ bus_info }, health.viewer_delay_ms / 1000)
          if (health.viewer_loss !== null) viewerLoss.set({ bus_info }, health.viewer_loss)
          intervalHistogram.add(bus_info, live!.hub.frameIntervals(live!.member))
          delayHistogram.add(bus_info, live!.hub.viewerDelays(live!.member))
        }
        sentBytes.inc({ bus_info }, sent.bytes)
        for (const [protocol, count] of Object.entries(registry.viewers(bus_info))) viewers.set({ bus_info, protocol }, count)
        recording.set({ bus_info }, made.active ? 1 : 0)
        recordingBytes.set({ bus_info }, made.active ? made.bytes : 0)
      }
      for (const sound of registry.get('audio')?.streams() ?? []) {
        if (!sound.source) continue
        for (const s of AUDIO_STATES) audioState.set({ bus_info: sound.bus_info, state: s }, sound.state === s ? 1 : 0)
        if (sound.level) {
          audioLevel.set({ bus_info: sound.bus_info, measure: 'peak' }, sound.level.peak_db)
          audioLevel.set({ bus_info: sound.bus_info, measure: 'rms' }, sound.level.rms_db)
        }
      }
      limitHits.reset()
      for (const [limit, count] of registry.limitHits()) limitHits.inc({ limit }, count)
      try {
        const disk = diskUsage(nearestExisting(config.recordingsDir))
        diskFree.set(disk.free)
        diskSize.set(disk.total)
        diskProblem = null
      } catch (e) {
        // The last values stay; said once, not at every scrape.
        if (diskProblem !== (e as Error).message) log.warn('metrics: the recordings file system cannot be read', { dir: config.recordingsDir, err: e })
        diskProblem = (e as Error).message
      }
    }
    let diskProblem: string | null = null

    lifecycle({
      stop() {
        unwatchRequests()
        unwatchLog()
        unwatchDeletions()
      },
    })

    return new Elysia({ name: 'periscope:metrics' }).get(
      '/metrics',
      async () => {
        refresh()
        refusedNow()
        return new Response(await metrics.metrics(), { headers: { 'content-type': metrics.contentType } })
      },
      {
        ...docs({
          tag: 'system',
          summary: 'Prometheus metrics (text exposition format)',
          description:
            'Per camera (label bus_info; periscope_camera_info carries the name and nickname): stream state, restarts, dropped frames, frames and RTP bytes sent, the stream\'s health (frame rate delivered and configured, bitrate, key-frame interval, a histogram of frame intervals, lost packets, stalls, the rate alert), viewers by protocol, the recording made while streaming (and its segment cuts), the sound\'s state and level. ' +
            'Per route template: requests by status, and latency. The recordings disk, log entries by level, and the process: CPU, RSS, event-loop lag. Counters of a stream count since it was last started. ' +
            'Not under /api: open like every read, and a scrape does not count as a client for the network rollback.',
          ok: { content: { 'text/plain': { schema: { type: 'string' }, example: 'periscope_stream_frames_total{bus_info="usb-0000:00:14.0-1"} 1800' } }, description: 'text/plain; version=0.0.4' },
        }),
      },
    )
  },
})
