// What Cockpit's Video page reads beside the signalling: mavlink-camera-manager's REST list of streams,
// `GET http://<vehicle>:6020/streams` (Cockpit's src/libs/blueos.ts getStreamInformationFromVehicle,
// with the port written in). A stream the signalling lists is "Available" there only when this list
// has an entry of the same `video_and_stream.name` whose `running` is true (or `state` is 'running' or
// 'idle'); otherwise "Offline". The page also shows the entry's source name (the first key of
// `video_source`, its `name`), size and frame rate (`frame_interval`: denominator / numerator).
//
// Served in mavlink-camera-manager's shape (its StreamStatus) for the signalling's streams, named as
// the signalling names them (./signalling.ts availableStreams: one home for which streams and what
// names), at /api/cockpit/streams on the HTTP port and at /streams on its own port (6020, where
// Cockpit looks), which hands each request to the app under the first path, so every rule of the
// HTTP port (Host, origin, token, request log) holds there too.
import type { Server } from 'bun'
import { t, type Static } from 'elysia'
import type { Device, StreamHub } from '../../core/types'
import { availableStreams, producerId } from './signalling'

/** The path on the HTTP port. */
export const STREAMS_PATH = '/api/cockpit/streams'
/** mavlink-camera-manager's REST port, where Cockpit's Video page reads the streams' status. */
export const DEFAULT_STREAMS_PORT = 6020

const u32 = () => t.Integer({ minimum: 0, maximum: 0xffffffff })

/** mavlink-camera-manager's StreamStatus (its src/lib/stream/types.rs), as serde writes it. */
export const StreamStatusModel = t.Object({
  id: t.String({ description: "The signalling's producer id of the stream (a UUID)" }),
  running: t.Boolean(),
  state: t.Union([t.Literal('running'), t.Literal('idle'), t.Literal('stopped')]),
  error: t.Union([t.String(), t.Null()]),
  video_and_stream: t.Object({
    name: t.String({ description: 'The name the signalling gives the stream (availableStreams), which Cockpit matches' }),
    stream_information: t.Object({
      endpoints: t.Array(t.String()),
      configuration: t.Object({ type: t.Literal('video'), encode: t.String(), height: u32(), width: u32(), frame_interval: t.Object({ numerator: u32(), denominator: u32() }) }),
      extended_configuration: t.Null(),
    }),
    // A local camera. No `source` URL: Cockpit would take the stream for an RTSP camera's.
    video_source: t.Object({ Local: t.Object({ name: t.String(), device_path: t.String(), type: t.Object({ Usb: t.String() }) }) }),
  }),
  mavlink: t.Null(),
})
export type StreamStatus = Static<typeof StreamStatusModel>

/** The signalling's streams, each as mavlink-camera-manager lists a running one. */
export function streamStatuses(devices: Device[], live: (bus_info: string) => { hub: StreamHub; member: number } | null): StreamStatus[] {
  const byId = new Map(devices.map((device) => [producerId(device.bus_info), device]))
  return availableStreams(devices, live).map((entry) => {
    const device = byId.get(entry.id)!
    const hub = live(device.bus_info)?.hub
    const interval = device.stream?.interval
    return {
      id: entry.id,
      running: true,
      state: 'running',
      error: null,
      video_and_stream: {
        name: entry.name,
        stream_information: {
          endpoints: [],
          configuration: {
            type: 'video',
            encode: 'H264',
            width: entry.width ?? 0,
            height: entry.height ?? 0,
            // Integers, as its u32s: the device's own interval, else the hub's rate over one second.
            frame_interval: interval?.numerator && interval.denominator ? { numerator: interval.numerator, denominator: interval.denominator } : { numerator: 1, denominator: Math.round(hub?.fps ?? 0) },
          },
          extended_configuration: null,
        },
        video_source: { Local: { name: device.name || entry.name, device_path: entry.source ?? device.bus_info, type: { Usb: device.bus_info } } },
      },
      mavlink: null,
    }
  })
}

const json = (status: number, detail: string, headers: Record<string, string> = {}) => new Response(JSON.stringify({ detail }), { status, headers: { 'content-type': 'application/json', ...headers } })

/**
 * Listens on `port` for Cockpit's `GET /streams`: handed to `handle` (the app) as STREAMS_PATH, with
 * its headers and query, so it gets what the HTTP port answers there. Anything else is 404 (405 for
 * another method on /streams). Throws when the port is taken.
 */
export function serveStreamsPort(hostname: string, port: number, handle: (request: Request) => Promise<Response>): Server<undefined> {
  return Bun.serve({
    hostname,
    port,
    async fetch(request) {
      const url = new URL(request.url)
      if (url.pathname !== '/streams' && url.pathname !== '/streams/') {
        return json(404, `This port serves only GET /streams (mavlink-camera-manager's list, which Cockpit's Video page reads); the rest of the API is on the HTTP port`)
      }
      if (request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'OPTIONS') return json(405, 'Only GET /streams is served here', { allow: 'GET, HEAD, OPTIONS' })
      const head = request.method === 'HEAD'
      const answer = await handle(new Request(`http://localhost${STREAMS_PATH}${url.search}`, { method: head ? 'GET' : request.method, headers: request.headers }))
      return head ? new Response(null, { status: answer.status, headers: answer.headers }) : answer
    },
    error: () => json(500, 'Internal error of the streams port (a bug): GET /api/cockpit/streams on the HTTP port answers the same list'),
  })
}
