// RTSP: rtsp://<host>:<rtsp-port>/<bus_info> (and /<nickname> when unique) for every camera whose
// stream runs, over UDP or TCP-interleaved, to any number of clients. GStreamer's own RTSP server does
// the protocol in a supervised helper (server.py, helper.ts); this plugin keeps its mounts in step with
// the running streams and, once a client came, feeds each mount from the stream's live tap (drivers/gstreamer/tap.ts)
// over loopback UDP. The camera's pipeline is never touched: clients come and go at no cost to it.
// At most --max-viewers clients per camera (its path and its alias together): the helper says 503 beyond.
import { Elysia, t } from 'elysia'
import { createSocket, type Socket } from 'node:dgram'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import type { Device } from '../../core/types'
import { RtspHelper, type HelperEvent } from './helper'
import { pathSegment, wantedMounts, type WantedMount } from './mounts'

/** A safety net beside the events: mounts follow the streams within this even if an event is missed. */
const RECONCILE_MS = 1000

interface Mount {
  wanted: WantedMount
  /** Per track, the helper's loopback port (null until the helper added the mount). */
  ports: number[] | null
  /** The helper's media runs (since a first client came): only then are packets forwarded. */
  running: boolean
  unsubscribe: (() => void)[]
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
  setup({ config, registry, events, log, lifecycle }) {
    const port = config.rtspPort
    const mounts = new Map<string, Mount>()
    /** RTSP clients per camera (bus_info), as the helper counts them. */
    const viewers = new Map<string, number>()
    // One socket sends every mount its packets (loopback, to our own helper: a lost packet is just lost).
    let forward: Socket | null = null
    let timer: ReturnType<typeof setInterval> | null = null
    let unsubscribeEvents: (() => void) | null = null
    let scheduled = false

    const helper = port === 0 ? null : new RtspHelper(port, config.host, config.maxViewers, { maxConnections: config.rtspMaxConnections, idleSeconds: config.rtspIdleTimeoutSeconds }, log, onHelper)

    function feed(mount: Mount): void {
      unfeed(mount)
      const ports = mount.ports
      if (!ports || !mount.running) return
      mount.unsubscribe = mount.wanted.members.map((member, track) =>
        mount.wanted.tap.subscribe(member, (packet) => forward?.send(packet, ports[track]!, '127.0.0.1')),
      )
    }

    function unfeed(mount: Mount): void {
      for (const stop of mount.unsubscribe.splice(0)) stop()
    }

    function add(mount: Mount): void {
      const { path, tap, members, bus_info } = mount.wanted
      helper?.send({ op: 'add', path, encoding: tap.encoding, tracks: members.length, camera: bus_info })
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
      const wanted = streamer ? wantedMounts(devices(), (bus_info) => streamer.live(bus_info)) : new Map<string, WantedMount>()
      for (const [path, mount] of mounts) {
        const next = wanted.get(path)
        const same = next && next.tap === mount.wanted.tap && next.members.join() === mount.wanted.members.join()
        if (same) {
          mount.wanted = next // the bus_info behind a nickname may change
          continue
        }
        unfeed(mount)
        mounts.delete(path)
        helper.send({ op: 'remove', path })
      }
      for (const [path, want] of wanted) {
        if (mounts.has(path)) continue
        const mount: Mount = { wanted: want, ports: null, running: false, unsubscribe: [] }
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
          mount.ports = null
          mount.running = false
          add(mount)
        }
        return
      }
      if (event.event !== 'added' && event.event !== 'running') return
      const mount = mounts.get(event.path)
      if (!mount) return
      if (event.event === 'added') mount.ports = event.ports
      else mount.running = event.on
      feed(mount)
    }

    lifecycle({
      start() {
        if (!helper) return
        forward = createSocket('udp4')
        forward.on('error', () => {})
        helper.start()
        unsubscribeEvents = events.subscribe((event) => {
          if (event.type === 'stream_error' || event.type.startsWith('device_')) schedule()
        })
        timer = setInterval(reconcile, RECONCILE_MS)
        schedule()
      },
      async stop() {
        unsubscribeEvents?.()
        if (timer) clearInterval(timer)
        timer = null
        for (const mount of mounts.values()) unfeed(mount)
        mounts.clear()
        viewers.clear()
        await helper?.stop()
        forward?.close()
        forward = null
      },
      health() {
        if (!helper) return { state: 'ok', detail: 'off (--rtsp-port 0)', enabled: false }
        const base = { enabled: true, port, max_viewers_per_camera: config.maxViewers, mounts: [...mounts.values()].filter((mount) => mount.ports).length, restarts: helper.restarts }
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
          mounts: [...mounts.values()].filter((mount) => mount.ports).map(({ wanted }) => ({
            path: wanted.path,
            url: `rtsp://${authority}:${port}${wanted.path}`,
            bus_info: wanted.bus_info,
            tracks: wanted.members.length,
            encoding: wanted.tap.encoding,
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
