// RTSP: rtsp://<host>:<rtsp-port>/<bus_info> (and /<nickname> when unique) for every camera whose
// stream runs, over UDP or TCP-interleaved, to any number of clients. GStreamer's own RTSP server does
// the protocol in a supervised helper (server.py, helper.ts); this plugin keeps its mounts in step with
// the running streams (a stream's start is an event, its restart or stop its hub's 'replaced'/'closed')
// and feeds each client's own media as a reader of the stream's hub (media/hub.ts), from its kept group
// of pictures on, through a loopback feeder (media/feeder.ts). The camera's pipeline is never touched: clients come and go at no cost to it.
// At most --max-viewers clients per camera (its path and its alias together): the helper says 503 beyond.
import { Elysia, t } from 'elysia'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import type { Device, Reading, ReaderEnd } from '../../core/types'
import { LoopbackFeeder } from '../../media/feeder'
import { RtspHelper, type HelperEvent } from './helper'
import { pathSegment, soundOnlyRtspPath, wantedMounts, type WantedMount } from './mounts'

interface Mount {
  wanted: WantedMount
  /** The helper serves the path (it said 'added'). */
  added: boolean
  /** Each client's own media in the helper (by its id): the readings that feed its tracks. */
  medias: Map<number, { ports: number[]; readings: Reading[] }>
  /** Stops listening to the hub's 'replaced'/'closed'. */
  unwatch: () => void
}

const MountModel = t.Object({
  path: t.String({ description: 'The URL path, exactly as a client must send it' }),
  url: t.String({ description: 'The URL, with the host this request was made to' }),
  bus_info: t.String({ description: 'The camera this mount serves (for a nickname alias, the camera with that nickname)' }),
  tracks: t.Integer({ description: 'Video tracks: one per camera of a group at its leader, else 1' }),
  encoding: t.Union([t.Literal('H264'), t.Literal('JPEG')]),
  viewers: t.Integer({ description: 'RTSP clients watching this camera now (at its bus_info path and its alias together)' }),
})
const RtspStatusModel = t.Object({
  enabled: t.Boolean({ description: 'false when --rtsp-port is 0' }),
  port: t.Integer(),
  max_viewers: t.Integer({ description: 'RTSP clients per camera at once (--max-viewers); one more is refused with 503 Service Unavailable' }),
  state: t.String({ description: 'the RTSP server: ready, starting, backoff (restarting after a failure), missing (its packages are not installed) or stopped' }),
  error: t.Union([t.String(), t.Null()]),
  mounts: t.Array(MountModel, { description: 'What the server serves now' }),
})

/** The host the client reached us by (an IPv6 one in brackets), so the URLs work from where it is. */
function requestHost(request: Request): string {
  const host = request.headers.get('host')
  try {
    if (host) return new URL(`http://${host}`).hostname
  } catch {
    // a malformed Host header: fall back to the URL the server saw
  }
  return new URL(request.url).hostname
}

export default definePlugin({
  name: 'rtsp',
  setup({ config, registry, events, log, lifecycle, refusals }) {
    const port = config.rtspPort
    const mounts = new Map<string, Mount>()
    /** RTSP clients per camera (bus_info), as the helper counts them. */
    const viewers = new Map<string, number>()
    // One socket sends every mount its packets (loopback, to our own helper: a lost packet is just lost).
    let feeder: LoopbackFeeder | null = null
    let unsubscribeEvents: (() => void) | null = null
    let scheduled = false

    // With --token-scope all, RTSP asks for the token too (Basic; user RTSP_USER).
    const helper =
      port === 0
        ? null
        : new RtspHelper(port, config.host, config.maxViewers, { maxConnections: config.rtspMaxConnections, idleSeconds: config.rtspIdleTimeoutSeconds, silentSeconds: config.rtspHelperTimeoutSeconds }, log, onHelper, config.tokenScope === 'all' ? config.token : null)

    /**
     * Feeds one client's media: each video track from the hub's kept group of pictures (its decoder opens
     * on a whole key frame at once, and no other client's stream waits for it), the sound from now.
     */
    function feed(mount: Mount, id: number, ports: number[]): void {
      if (!feeder) return
      const fed = feeder
      const options = {
        name: 'rtsp',
        keptGroup: true,
        ended: (end: ReaderEnd) => end.reason === 'failed' && log.warn('rtsp: a mount stopped being fed', { path: mount.wanted.path, error: end.detail }),
      }
      const readings = mount.wanted.members.map((member, track) => fed.feed(mount.wanted.hub, member, ports[track]!, options))
      // The sound's track comes after the video's (its port is the last).
      const soundPort = ports[mount.wanted.members.length]
      if (mount.wanted.sound && soundPort) readings.push(fed.feedSound(mount.wanted.hub, soundPort, options))
      mount.medias.set(id, { ports, readings })
    }

    function unfeed(mount: Mount, id?: number): void {
      for (const [key, media] of mount.medias) {
        if (id !== undefined && key !== id) continue
        for (const reading of media.readings) reading.close()
        mount.medias.delete(key)
      }
    }

    function add(mount: Mount): void {
      const { path, hub, members, bus_info } = mount.wanted
      helper?.send({ op: 'add', path, encoding: hub.encoding, tracks: members.length, camera: bus_info, sound: mount.wanted.sound })
    }

    function devices(): Device[] {
      try {
        return registry.deviceDirectory().devices()
      } catch {
        return [] // no cameras plugin: nothing to serve
      }
    }

    /** Mounts follow the streams: gone when a stream stops or changes (clients get BYE), added when one runs. */
    function reconcile(): void {
      scheduled = false
      if (!helper) return
      const streamer = registry.get('streamer')
      const audio = registry.get('audio')
      const soundExpected = (bus_info: string) => audio?.status(bus_info)?.source != null
      const wanted = streamer ? wantedMounts(devices(), (bus_info) => streamer.live(bus_info), soundExpected) : new Map<string, WantedMount>()
      // Sound-only streams (a hydrophone with no camera): /sound/<source>, the sound as the one track.
      for (const { source, hub } of audio?.soundOnly() ?? []) {
        const path = soundOnlyRtspPath(source)
        wanted.set(path, { path, bus_info: `sound:${source}`, hub, members: [], sound: true })
      }
      for (const [path, mount] of mounts) {
        const next = wanted.get(path)
        const same = next && next.hub === mount.wanted.hub && next.members.join() === mount.wanted.members.join() && next.sound === mount.wanted.sound
        if (same) {
          mount.wanted = next // the bus_info behind a nickname may change
          continue
        }
        unfeed(mount)
        mount.unwatch()
        mounts.delete(path)
        helper.send({ op: 'remove', path })
      }
      for (const [path, want] of wanted) {
        if (mounts.has(path)) continue
        // The stream's restart or stop changes the mounts at once (its clients get BYE).
        const stops = [want.hub.on('replaced', schedule), want.hub.on('closed', schedule)]
        const mount: Mount = { wanted: want, added: false, medias: new Map(), unwatch: () => stops.forEach((stop) => stop()) }
        mounts.set(path, mount)
        add(mount)
      }
    }

    function schedule(): void {
      if (scheduled) return
      scheduled = true
      queueMicrotask(reconcile)
    }

    function onHelper(event: HelperEvent): void {
      if (event.event === 'wrong_token') {
        refusals.wrongTokens++ // /metrics: periscope_http_wrong_tokens_total counts RTSP's too
        return
      }
      if (event.event === 'refused') return registry.limitHit(`rtsp_${event.why}`)
      if (event.event === 'viewers') {
        if (event.count > 0) viewers.set(event.camera, event.count)
        else viewers.delete(event.camera)
        return
      }
      if (event.event === 'ready') {
        // A (re)started helper has no mount and no client: give it all the mounts again.
        viewers.clear()
        for (const mount of mounts.values()) {
          unfeed(mount)
          mount.added = false
          add(mount)
        }
        return
      }
      if (event.event !== 'added' && event.event !== 'media' && event.event !== 'media_gone') return
      const mount = mounts.get(event.path)
      if (!mount) return
      if (event.event === 'added') mount.added = true
      else if (event.event === 'media') feed(mount, event.id, event.ports)
      else unfeed(mount, event.id)
    }

    lifecycle({
      start() {
        if (!helper) return
        feeder = new LoopbackFeeder(log)
        helper.start()
        unsubscribeEvents = events.subscribe((event) => {
          // audio_state: a stream's sound came or went (its mount gets or loses the sound's track).
          if (event.type === 'stream_error' || event.type === 'audio_state' || event.type.startsWith('device_')) schedule()
        })
        schedule()
      },
      async stop() {
        unsubscribeEvents?.()
        for (const mount of mounts.values()) {
          unfeed(mount)
          mount.unwatch()
        }
        mounts.clear()
        viewers.clear()
        await helper?.stop()
        feeder?.close()
        feeder = null
      },
      health() {
        if (!helper) return { state: 'ok', detail: 'off (--rtsp-port 0)', enabled: false }
        const base = { enabled: true, port, max_viewers_per_camera: config.maxViewers, mounts: [...mounts.values()].filter((mount) => mount.added).length, restarts: helper.restarts }
        if (helper.state === 'ready') return { state: 'ok', ...base }
        if (helper.state === 'missing') return { state: 'down', detail: helper.error ?? 'the RTSP server is not installed', ...base }
        return { state: 'degraded', detail: helper.error ?? `the RTSP server is ${helper.state}`, ...base }
      },
    })

    // A device's watch.rtsp: its path while its stream runs and the server is up (the mount follows within a moment).
    registry.addWatchLink(
      'rtsp',
      (bus_info, origin) => (helper?.state === 'ready' && registry.get('streamer')?.live(bus_info) ? `rtsp://${origin.hostname}:${port}/${pathSegment(bus_info)}` : null),
      'rtsp',
    )

    registry.addViewerCount('rtsp', (bus_info) => viewers.get(bus_info) ?? 0, 'rtsp')

    return new Elysia({ name: 'periscope:rtsp' }).get(
      '/api/rtsp',
      ({ request }) => {
        const authority = requestHost(request)
        return {
          enabled: helper !== null,
          port,
          max_viewers: config.maxViewers,
          state: helper?.state ?? 'stopped',
          error: helper?.error ?? null,
          // Only what the server serves now (added by the helper), so a listed URL answers.
          mounts: [...mounts.values()].filter((mount) => mount.added).map(({ wanted }) => ({
            path: wanted.path,
            url: `rtsp://${authority}:${port}${wanted.path}`,
            bus_info: wanted.bus_info,
            tracks: wanted.members.length,
            encoding: wanted.hub.encoding,
            viewers: viewers.get(wanted.bus_info) ?? 0,
          })),
        }
      },
      {
        ...docs({
          tag: 'cameras',
          summary: 'The RTSP server: its state and a mount per running stream (rtsp://<host>:<port>/<bus_info>, and /<nickname> when unique)',
          ok: RtspStatusModel,
        }),
      },
    )
  },
})
