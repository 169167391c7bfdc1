// The sound-only streams' routes (/api/audio/sound_only…): a plugin of its own, used by the audio plugin,
// over the streams themselves (sound-only.ts) and what it knows of the sources and the cameras' sound.
import { Elysia, t } from 'elysia'
import { conflict, notFound, unavailable } from '../../core/errors'
import { safeLabel } from '../../core/naming'
import { docs } from '../../core/openapi'
import { StreamEndpointModel } from '../../core/schemas'
import type { AudioSource } from '../../core/types'
import { typed } from '../../core/validation'
import { sdpSoundOnly } from '../../drivers/gstreamer/sdp'
import { soundOnlyRtspPath } from '../rtsp/mounts'
import { GAIN_MAX_DB, GAIN_MIN_DB, Level, SoundState, channelsOf, rateOf } from './model'
import { MAX_SOUND_ONLY, type SoundOnlySettings, type SoundOnlyStreams, type SoundRun } from './sound-only'

const SoundOnlyRequest = t.Object({
  source: t.String({ description: 'The source (GET /api/audio/sources): one that no camera\'s stream carries' }),
  endpoints: t.Array(StreamEndpointModel, { maxItems: 16, description: 'Where the Opus RTP goes: each endpoint\'s own port (payload type 111)' }),
  enabled: t.Optional(t.Boolean({ description: 'Runs while true (default true)' })),
  rate: t.Optional(t.Union([t.Integer({ minimum: 8000, maximum: 192000 }), t.Null()], { description: 'Capture rate in Hz; absent or null: 48000 when the source offers it, else its highest' })),
  gain_db: t.Optional(t.Number({ minimum: GAIN_MIN_DB, maximum: GAIN_MAX_DB, description: 'Gain in dB (software, in the encoder)' })),
  muted: t.Optional(t.Boolean()),
})
const SoundOnlySourceRequest = t.Object({ source: t.String({ description: 'The sound-only stream\'s source id' }) })
const SoundOnlyRecordingModel = t.Union([
  t.Object({
    active: t.Boolean(),
    file: t.Union([t.String(), t.Null()], { description: 'The recording as GET /api/recordings lists it' }),
    started: t.Union([t.String(), t.Null()]),
    bytes: t.Integer(),
    error: t.Union([t.String(), t.Null()]),
  }),
  t.Null(),
])
const SoundOnlyModel = t.Object({
  source: t.String(),
  name: t.Union([t.String(), t.Null()], { description: "The source's name; null while it is unplugged" }),
  enabled: t.Boolean(),
  endpoints: t.Array(StreamEndpointModel),
  state: SoundState,
  error: t.Union([t.String(), t.Null()]),
  rate: t.Integer(),
  channels: t.Integer(),
  gain_db: t.Number(),
  muted: t.Boolean(),
  level: Level,
  rtsp_path: t.Union([t.String(), t.Null()], { description: 'The RTSP path while it runs (rtsp://<host>:<rtsp port><rtsp_path>)' }),
  whep_path: t.Union([t.String(), t.Null()], { description: 'Where a browser hears it over WebRTC while it runs (WHEP; an offer with an audio section)' }),
  recording: SoundOnlyRecordingModel,
})

export interface SoundOnlyApiDeps<R extends SoundRun> {
  soundOnly: SoundOnlyStreams<R>
  gstLaunch: string | null
  sources(): AudioSource[]
  /** A plugged-in source, or 404 naming where they are listed. */
  sourceOr404(id: string): AudioSource
  /** The camera whose stream carries (or is set to carry) this source, or undefined. */
  cameraCarrying(source: string): string | undefined
  /** host:port of every camera stream's video. */
  videoPorts(): Set<string>
  limitHit(limit: string): void
}

export function soundOnlyApi<R extends SoundRun>({ soundOnly, gstLaunch, sources, sourceOr404, cameraCarrying, videoPorts, limitHit }: SoundOnlyApiDeps<R>) {
  const tag = 'audio'
  const settingsOr404 = (source: string): SoundOnlySettings => {
    const settings = soundOnly.settings(source)
    if (!settings) throw notFound(`No sound-only stream of '${source}' (GET /api/audio/sound_only lists them)`)
    return settings
  }
  const status = (source: string, settings: SoundOnlySettings) => {
    const found = sources().find((s) => s.id === source)
    const run = soundOnly.run(source)
    return {
      source,
      name: found?.name ?? null,
      enabled: settings.enabled,
      endpoints: settings.endpoints,
      state: run?.runner.state ?? 'off',
      error: run?.runner.error ?? (settings.enabled && !gstLaunch ? 'GStreamer (gst-launch-1.0) is not installed' : null),
      rate: rateOf(found, settings),
      channels: channelsOf(found),
      gain_db: settings.gain_db,
      muted: settings.muted,
      level: run?.runner.state === 'running' ? run.level : null,
      rtsp_path: soundOnly.hub(source) ? soundOnlyRtspPath(source) : null,
      whep_path: soundOnly.hub(source) ? `/api/streams/${encodeURIComponent(`sound:${source}`)}/whep` : null,
      recording: soundOnly.recording(source),
    }
  }

  return new Elysia()
    .get('/api/audio/sound_only', () => soundOnly.all().map(({ key, value }) => status(key, value)), {
      ...docs({ tag, summary: 'Sound-only streams (a hydrophone with no camera): each one\'s endpoints, state, level, RTSP path and recording', ok: t.Array(SoundOnlyModel) }),
    })
    .post(
      '/api/audio/sound_only/configure',
      typed({ body: SoundOnlyRequest }, async ({ body }) => {
        const source = sourceOr404(body.source)
        const camera = cameraCarrying(source.id)
        if (camera) throw conflict(`The sound source '${source.id}' is in use by the stream of ${camera}; attach another source there first (POST /api/audio/attach with null)`)
        const before = soundOnly.settings(source.id)
        if (!before && soundOnly.all().length >= MAX_SOUND_ONLY) {
          limitHit('sound_only_streams')
          throw unavailable(`There are ${MAX_SOUND_ONLY} sound-only streams already, the most there may be; remove one first (POST /api/audio/sound_only/remove)`)
        }
        if (body.rate && source.rates && !source.rates.includes(body.rate))
          throw conflict(`The sound source '${source.id}' (${source.name}) captures at ${source.rates.join(', ')} Hz, not ${body.rate} Hz`)
        const taken = videoPorts()
        const clash = body.endpoints.find((e) => taken.has(`${e.host}:${e.port}`))
        if (clash) throw conflict(`A camera's video goes to ${clash.host}:${clash.port}; give the sound-only stream another port`)
        const next: SoundOnlySettings = {
          endpoints: body.endpoints.map((e) => ({ host: e.host, port: e.port })),
          enabled: body.enabled ?? true,
          rate: body.rate ?? null,
          gain_db: body.gain_db ?? before?.gain_db ?? 0,
          muted: body.muted ?? before?.muted ?? false,
        }
        soundOnly.save(source.id, next)
        await soundOnly.schedule(source.id)
        return status(source.id, next)
      }),
      {
        ...docs({
          tag,
          summary: 'Stream a sound source on its own (saved): Opus RTP to each endpoint, an RTSP mount, recordable, heard in the console',
          description: "One per source. A source a camera's stream carries is refused (409), as is a port where a camera's video goes. docs/sound.md.",
          body: SoundOnlyRequest,
          ok: SoundOnlyModel,
          errors: [404, 409, 503, 507],
        }),
      },
    )
    .post(
      '/api/audio/sound_only/remove',
      typed({ body: SoundOnlySourceRequest }, async ({ body }) => {
        settingsOr404(body.source)
        soundOnly.save(body.source, null)
        await soundOnly.schedule(body.source)
        return { success: true }
      }),
      { ...docs({ tag, summary: 'Stop and forget a sound-only stream (its recording, if any, is closed and kept)', body: SoundOnlySourceRequest, ok: t.Object({ success: t.Boolean() }), errors: [404, 507] }) },
    )
    .post(
      '/api/audio/sound_only/start_recording',
      typed({ body: SoundOnlySourceRequest }, async ({ body }) => {
        settingsOr404(body.source)
        const state = await soundOnly.startRecording(body.source, safeLabel(body.source))
        if (!state) throw conflict(`The sound-only stream of '${body.source}' is not running: enable it first (POST /api/audio/sound_only/configure)`)
        return state
      }),
      {
        ...docs({
          tag,
          summary: 'Record a sound-only stream: a Matroska file with its Opus track, listed by GET /api/recordings',
          body: SoundOnlySourceRequest,
          ok: SoundOnlyRecordingModel,
          errors: [404, 409, 507],
        }),
      },
    )
    .post(
      '/api/audio/sound_only/stop_recording',
      typed({ body: SoundOnlySourceRequest }, async ({ body }) => {
        settingsOr404(body.source)
        return (await soundOnly.stopRecording(body.source)) ?? soundOnly.recording(body.source)
      }),
      { ...docs({ tag, summary: "Stop a sound-only stream's recording (the file is closed and kept)", body: SoundOnlySourceRequest, ok: SoundOnlyRecordingModel, errors: [404] }) },
    )
    .get(
      '/api/audio/sound_only/sdp',
      typed({ query: SoundOnlySourceRequest }, ({ query }) => {
        const settings = settingsOr404(query.source)
        const endpoint = settings.endpoints[0]
        if (!endpoint) throw conflict(`The sound-only stream of '${query.source}' has no endpoint`)
        const found = sources().find((s) => s.id === query.source)
        return new Response(sdpSoundOnly(endpoint, channelsOf(found), query.source), { headers: { 'content-type': 'application/sdp' } })
      }),
      {
        ...docs({
          tag,
          summary: 'SDP description of a sound-only stream (its first endpoint), for VLC or GStreamer',
          query: SoundOnlySourceRequest,
          ok: { content: { 'application/sdp': { schema: { type: 'string' } } } },
          errors: [404, 409],
        }),
      },
    )
}
