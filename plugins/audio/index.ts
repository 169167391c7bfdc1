// Sound: the sources (ALSA capture devices, and the simulated ones the mock plugin registers), which one
// each camera's stream carries (its own microphone by default, any other by choice; saved), and one Opus
// child per stream that has one (drivers/gstreamer/audio.ts), started and stopped with the stream's job.
// Gain and mute are applied in that child (software); the level is measured there too, announced as
// `audio_level` events and read by /metrics.
import { Elysia, t } from 'elysia'
import { createSocket, type Socket } from 'node:dgram'
import { HttpError, conflict, notFound, unavailable } from '../../core/errors'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { KeyedSerial } from '../../core/serial'
import { typed } from '../../core/validation'
import type { AudioService, AudioSource, AudioStreamStatus, Endpoint, StreamJob } from '../../core/types'
import { AlsaBackend } from '../../drivers/alsa/backend'
import { MixerError, readCaptureMixer, setCaptureMixer, type CaptureMixer } from '../../drivers/alsa/mixer'
import { AudioRunner, audioPortOffset, type AudioPipeline } from '../../drivers/gstreamer/audio'
import { parentDeathPrefix } from '../../media/children'
import { SoundTimeline } from '../../media/sound'
import { Level, SoundState, GAIN_MAX_DB, GAIN_MIN_DB, channelsOf, rateOf } from './model'
import { SoundOnlyStreams } from './sound-only'
import { soundOnlyApi } from './sound-only-api'

const NS = 'audio'

/** What is saved per camera (by bus_info: the sound follows the port, as a sound card has no serial we read). */
interface AudioSettings {
  /** 'auto': the camera's own microphone (a source on its USB port) when it has one; null: no sound. */
  source: string | null
  rate: number | null
  gain_db: number
  muted: boolean
}

const DEFAULTS: AudioSettings = { source: 'auto', rate: null, gain_db: 0, muted: false }

const AttachRequest = t.Object({
  bus_info: t.String({ description: "The camera whose stream carries the sound (a group's leader: one sound per group)" }),
  source: t.Union([t.String(), t.Null()], { description: "A source's id (GET /api/audio/sources), 'auto' for the camera's own microphone, or null for no sound" }),
  rate: t.Optional(t.Union([t.Integer({ minimum: 8000, maximum: 192000 }), t.Null()], { description: 'Capture rate in Hz; absent or null: 48000 when the source offers it, else its highest' })),
})
const SetAudioRequest = t.Object({
  bus_info: t.String(),
  gain_db: t.Optional(t.Number({ minimum: GAIN_MIN_DB, maximum: GAIN_MAX_DB, description: 'Gain in dB, applied before the level meter' })),
  muted: t.Optional(t.Boolean({ description: 'Muted: silence is sent, the meter still shows what the source hears' })),
})

const MIXER_NS = 'audio.mixer'
/** What is saved per ALSA source: its card's capture volume (the card's steps) and switch, set again when it is plugged in. */
interface MixerSettings {
  volume?: number
  capture?: boolean
}
const MixerModel = t.Union(
  [
    t.Object({
      control: t.Union([t.String(), t.Null()], { description: "The card's simple control used for the capture volume ('Mic',0), or null: none" }),
      volume: t.Union([t.Object({ value: t.Integer(), min: t.Integer(), max: t.Integer(), db: t.Union([t.Number(), t.Null()]) }), t.Null()], {
        description: "The capture volume in the card's own steps, its range, and its dB when the driver says; null: the card has none (use gain_db)",
      }),
      capture: t.Union([t.Boolean(), t.Null()], { description: "The card's capture switch (false: the card captures silence); null: it has none (use muted)" }),
    }),
    t.Null(),
  ],
  { description: "The sound card's own capture mixer (ALSA, read with amixer); null for a simulated source or when it cannot be read" },
)
const MixerRequest = t.Object({
  source: t.String({ description: 'An ALSA source (GET /api/audio/sources)' }),
  volume: t.Optional(t.Integer({ description: "The card's capture volume, in its own steps (mixer.volume.min … max)" })),
  capture: t.Optional(t.Boolean({ description: "The card's capture switch" })),
})

const AudioSourceModel = t.Object({
  id: t.String(),
  name: t.String(),
  kind: t.Union([t.Literal('alsa'), t.Literal('simulated')]),
  usb_port: t.Union([t.String(), t.Null()]),
  channels: t.Integer(),
  rates: t.Union([t.Array(t.Integer()), t.Null()]),
  camera: t.Union([t.String(), t.Null()], { description: 'The camera on the same USB port (its own microphone), or null' }),
  used_by: t.Array(t.String(), { description: 'Streams (bus_info) that carry this source' }),
  mixer: MixerModel,
})
const AudioStreamModel = t.Object({
  bus_info: t.String(),
  source: t.Union([t.String(), t.Null()]),
  state: SoundState,
  error: t.Union([t.String(), t.Null()]),
  rate: t.Integer(),
  channels: t.Integer(),
  gain_db: t.Number(),
  muted: t.Boolean(),
  level: Level,
  port_offset: t.Union([t.Integer(), t.Null()]),
  tap_port: t.Union([t.Integer(), t.Null()]),
  not_sent_to: t.Array(t.String(), { description: "Endpoints (host:port) the sound is not sent to: another stream's video goes there" }),
})


/** A running sound child with its loopback tap (the service's own copy of the RTP). */
interface Running {
  runner: AudioRunner
  /** The sound as the stream's hub gets it: one timeline, silence while the child has none. */
  timeline: SoundTimeline
  tap: Socket
  tapPort: number
  /** What it was started with: a change restarts it. */
  key: string
  level: { peak_db: number; rms_db: number } | null
  packets: number
  /** Sound endpoints left out: another stream's video goes there. */
  skipped: string[]
}

export default definePlugin({
  name: 'audio',
  setup({ registry, events, store, log, lifecycle, config }) {
    const alsa = new AlsaBackend()
    registry.addAudioBackend(alsa, 'audio')
    const running = new Map<string, Running>()
    const gstLaunch = Bun.which('gst-launch-1.0', { PATH: process.env.PATH ?? '' })
    const prefix = parentDeathPrefix()

    const sources = (): AudioSource[] => registry.audioBackends().flatMap((b) => b.list())
    const backendOf = (id: string) => registry.audioBackends().find((b) => b.list().some((s) => s.id === id))
    /** A plugged-in sound source, or 404 naming where they are listed. */
    const sourceOr404 = (id: string): AudioSource => {
      const source = sources().find((s) => s.id === id)
      if (!source) throw notFound(`No sound source '${id}' is plugged in (GET /api/audio/sources lists them)`)
      return source
    }
    const settingsOf = (bus_info: string): AudioSettings => ({ ...DEFAULTS, ...(store.get<Partial<AudioSettings>>(NS, bus_info) ?? {}) })
    /** The source a camera's stream carries: its choice, or its own microphone. */
    // The camera's own microphone, once seen: while it is unplugged the stream's sound waits for it ('gone').
    const ownMicrophone = new Map<string, string>()
    const sourceIdOf = (bus_info: string, settings = settingsOf(bus_info)): string | null => {
      if (settings.source !== 'auto') return settings.source
      const own = sources().find((s) => s.usb_port === bus_info && !soundOnly.settings(s.id)?.enabled)?.id
      if (own) ownMicrophone.set(bus_info, own)
      return own ?? ownMicrophone.get(bus_info) ?? null
    }
    const jobOf = (bus_info: string): StreamJob | undefined => {
      const streamer = registry.get('streamer')
      if (!streamer?.job) return undefined
      const job = streamer.job(bus_info)
      return job && streamer.status(bus_info).state !== 'stopped' ? job : undefined
    }
    /** host:port of every other stream's video (a group's: port … port + n − 1). */
    const otherVideoPorts = (bus_info: string): Set<string> => {
      const taken = new Set<string>()
      let devices: { bus_info: string; leader?: unknown; followers: unknown[]; stream: StreamJob['stream'] }[] = []
      try {
        devices = registry.deviceDirectory().devices()
      } catch {}
      for (const d of devices) {
        if (d.bus_info === bus_info || d.leader || d.stream.stream_type !== 'UDP' || d.stream.encode_type === 'NONE' || !d.stream.enabled) continue
        for (const e of d.stream.endpoints) for (let i = 0; i <= d.followers.length; i++) taken.add(`${e.host}:${e.port + i}`)
      }
      return taken
    }
    /**
     * Where the sound goes beside the video: each endpoint's port + offset, except where another stream's
     * video goes (BlueOS gives cameras 5600, 5601, 5602 …: a lone camera's sound at 5602 would land in the
     * third camera's video). Those are left out, and the sound's status says so.
     */
    const soundEndpoints = (job: StreamJob): { endpoints: Endpoint[]; skipped: string[] } | null => {
      if (job.stream.stream_type !== 'UDP') return null
      const offset = audioPortOffset(job.members.length)
      const taken = otherVideoPorts(job.bus_info)
      const all = job.stream.endpoints.map((e) => ({ host: e.host, port: e.port + offset }))
      return { endpoints: all.filter((e) => !taken.has(`${e.host}:${e.port}`)), skipped: all.filter((e) => taken.has(`${e.host}:${e.port}`)).map((e) => `${e.host}:${e.port}`) }
    }

    function status(bus_info: string): AudioStreamStatus {
      const settings = settingsOf(bus_info)
      const id = sourceIdOf(bus_info, settings)
      const source = id ? sources().find((s) => s.id === id) : undefined
      const run = running.get(bus_info)
      const job = jobOf(bus_info)
      return {
        bus_info,
        source: id,
        state: run?.runner.state ?? 'off',
        error: run?.runner.error ?? (run?.skipped.length ? `the sound is not sent to ${run.skipped.join(', ')}: another stream's video goes there (choose other ports: docs/sound.md)` : null),
        rate: rateOf(source, settings),
        channels: channelsOf(source),
        gain_db: settings.gain_db,
        muted: settings.muted,
        level: run?.runner.state === 'running' ? run.level : null,
        port_offset: job && job.stream.stream_type === 'UDP' ? audioPortOffset(job.members.length) : null,
        tap_port: run?.tapPort ?? null,
        not_sent_to: run?.skipped ?? [],
      }
    }

    /** Starts, restarts or stops the sound of one job so that it matches its stream and its settings. */
    async function reconcile(bus_info: string): Promise<void> {
      const job = jobOf(bus_info)
      const settings = settingsOf(bus_info)
      const id = job ? sourceIdOf(bus_info, settings) : null
      const run = running.get(bus_info)
      if (!job || !id || !gstLaunch) {
        if (run) await stopRun(bus_info, run)
        return
      }
      const key = JSON.stringify({ id, settings, endpoints: soundEndpoints(job), members: job.members.length })
      if (run?.key === key) return
      if (run) await stopRun(bus_info, run)
      if (running.has(bus_info)) return // another reconcile won meanwhile
      const skipped = soundEndpoints(job)?.skipped ?? []
      if (skipped.length) log.warn("a stream's sound is not sent where another stream's video goes", { bus_info, skipped })
      // The hub of the job now (a restarted job has a new one; the sound follows it).
      const entry = await startSound({
        id,
        settings,
        key,
        skipped,
        about: { bus_info },
        endpoints: () => soundEndpoints(job)?.endpoints ?? [],
        send: (packet) => registry.get('streamer')?.live(bus_info)?.hub.sendSound(packet),
      })
      running.set(bus_info, entry)
      entry.runner.start()
      entry.timeline.start()
    }

    /**
     * A sound child (not started yet) with its loopback tap and its timeline: the sound of a camera's stream
     * or of a sound-only one (sound-only.ts). `about` names it in events: {bus_info} or {source}.
     */
    async function startSound(spec: {
      id: string
      settings: Pick<AudioSettings, 'rate' | 'gain_db' | 'muted'>
      key: string
      skipped: string[]
      about: Record<string, string | boolean>
      endpoints: () => Endpoint[]
      send: (packet: Uint8Array) => void
    }): Promise<Running> {
      const { id, settings, about } = spec
      const tap = createSocket('udp4')
      tap.on('error', (err) => log.warn('audio tap socket failed', { ...about, err }))
      const tapPort = await new Promise<number>((resolve) => tap.bind(0, '127.0.0.1', () => resolve(tap.address().port)))
      const timeline = new SoundTimeline(spec.send)
      const entry: Running = { runner: null as unknown as AudioRunner, timeline, tap, tapPort, key: spec.key, level: null, packets: 0, skipped: spec.skipped }
      tap.on('message', (packet) => {
        entry.packets++
        timeline.packet(packet)
      })
      const pipeline = (): AudioPipeline | null => {
        const source = sources().find((s) => s.id === id)
        const tokens = source && backendOf(id)?.sourceTokens(id, rateOf(source, settings), channelsOf(source))
        if (!tokens) return null
        return { source: tokens, gainDb: settings.gain_db, muted: settings.muted, clients: [...spec.endpoints(), { host: '127.0.0.1', port: tapPort }] }
      }
      const alsaSource = alsa.list().find((s) => s.id === id)
      entry.runner = new AudioRunner(
        { gstLaunch: gstLaunch!, prefix, pipeline, node: alsaSource ? `/dev/snd/pcmC${alsaSource.card}D${alsaSource.device}c` : null },
        {
          onState: (state, error) => {
            if (state !== 'running') entry.level = null
            events.emit('audio_state', { ...about, source: id, state, error })
          },
          onLevel: (level) => {
            entry.level = level
            events.emit('audio_level', { ...about, ...level })
          },
        },
      )
      return entry
    }

    async function stopRun(bus_info: string, run: Running): Promise<void> {
      if (running.get(bus_info) === run) running.delete(bus_info)
      // The hub hears first, so readers that follow 'audio_state' (RTSP's mounts) see the sound gone.
      await stopSound(run, () => registry.get('streamer')?.live(bus_info)?.hub.sendSound(null))
    }

    async function stopSound(run: Running, beforeStop: () => void = () => {}): Promise<void> {
      run.timeline.stop()
      // The child's packets still on their way (it stops below) would tell the hub the sound is back.
      run.tap.removeAllListeners('message')
      beforeStop()
      await run.runner.stop()
      run.tap.close()
    }

    /** The card's capture mixer of an ALSA source; null for a simulated one. Throws MixerError. */
    const mixerOf = async (source: string): Promise<CaptureMixer | null> => {
      const card = alsa.list().find((s) => s.id === source)?.card
      return card === undefined ? null : readCaptureMixer(card)
    }
    const publicMixer = (m: CaptureMixer | null) => (m ? { control: m.control, volume: m.volume, capture: m.capture } : null)
    /** Sets the saved mixer of the ALSA sources just plugged in (a card forgets its mixer when unplugged). */
    const mixerApplied = new Set<string>()
    const applySavedMixers = async () => {
      const present = new Set(alsa.list().map((s) => s.id))
      for (const id of [...mixerApplied]) if (!present.has(id)) mixerApplied.delete(id)
      for (const id of present) {
        if (mixerApplied.has(id)) continue
        mixerApplied.add(id)
        const saved = store.get<MixerSettings>(MIXER_NS, id)
        if (!saved) continue
        try {
          const mixer = await mixerOf(id)
          if (mixer) await setCaptureMixer(alsa.list().find((s) => s.id === id)!.card, mixer, saved)
        } catch (err) {
          log.warn("a sound card's saved capture mixer could not be set again", { source: id, error: (err as Error).message })
        }
      }
    }

    const soundOnly = new SoundOnlyStreams<Running>({
      log,
      store,
      recordingsDir: () => config.recordingsDir,
      gstLaunch,
      prefix,
      startSound,
      stopSound: (run) => stopSound(run),
      emit: (type, data) => events.emit(type, data),
    })
    /** The camera whose stream carries (or is set to carry) this source, or undefined. */
    const cameraCarrying = (source: string, except?: string) =>
      [...keys()].find((b) => b !== except && sourceIdOf(b) === source && (running.has(b) || settingsOf(b).source === source))

    /** Every job that runs or ran: the devices' and the sound children's. */
    const keys = () => {
      const devices = (() => {
        try {
          return registry.deviceDirectory().devices().map((d) => d.bus_info)
        } catch {
          return []
        }
      })()
      return new Set([...devices, ...running.keys()])
    }
    // One reconcile at a time per job: events come in bursts (a restart is stopped, starting, running).
    const reconciles = new KeyedSerial()
    const schedule = (bus_info: string) => reconciles.run(bus_info, () => reconcile(bus_info)).catch((err) => log.warn('audio reconcile failed', { bus_info, err }))
    const reconcileAll = () => Promise.all([...keys()].map(schedule))

    const onSources = () => {
      events.emit('audio_sources', { sources: sources().map((s) => s.id) })
      for (const run of [...running.values(), ...soundOnly.runsNow()]) run.runner.sourcesChanged()
      void applySavedMixers()
      void reconcileAll()
    }
    let unsubscribers: (() => void)[] = []
    let sweeper: Timer | null = null

    const service: AudioService = {
      streams: () => [...keys()].map(status),
      status: (bus_info) => status(bus_info),
      soundOnly: () => soundOnly.live(),
      activeRecordings: () => soundOnly.activeRecordings(),
    }
    registry.provide('audio', service, 'audio')

    lifecycle({
      start() {
        alsa.start()
        unsubscribers = [
          ...registry.audioBackends().map((b) => b.onChange(onSources)),
          events.subscribe((event) => {
            if (event.type === 'stream_error') void schedule((event.data as { bus_info: string }).bus_info)
          }),
        ]
        // Events are the fast path; this catches anything they missed (a job stopped without a state change).
        sweeper = setInterval(() => void reconcileAll(), 2000)
        sweeper.unref?.()
        void reconcileAll()
        for (const { key } of soundOnly.all()) void soundOnly.schedule(key)
        void applySavedMixers()
      },
      async stop() {
        if (sweeper) clearInterval(sweeper)
        for (const off of unsubscribers) off()
        alsa.stop()
        await Promise.all([...running].map(([bus_info, run]) => stopRun(bus_info, run)))
        await soundOnly.stopAll()
      },
      health() {
        const failing = [...running].filter(([, r]) => r.runner.state === 'backoff' || r.runner.state === 'gone')
        const detail = failing.map(([bus_info, r]) => `${bus_info}: ${r.runner.error}`).join('; ')
        return { state: failing.length ? 'degraded' : 'ok', ...(detail && { detail }), sources: sources().length, streams: running.size }
      },
    })

    const device = (bus_info: string) => {
      const found = registry.deviceDirectory().device(bus_info)
      if (!found) throw notFound(`No device with bus_info '${bus_info}'`)
      return found
    }
    const tag = 'audio'
    return new Elysia({ name: 'periscope:audio' })
      .get(
        '/api/audio/sources',
        async () => {
          const all = sources()
          const users = new Map<string, string[]>()
          for (const bus_info of keys()) {
            const id = sourceIdOf(bus_info)
            if (id && (running.has(bus_info) || settingsOf(bus_info).source !== 'auto')) users.set(id, [...(users.get(id) ?? []), bus_info])
          }
          let cameras: string[] = []
          try {
            cameras = registry.deviceDirectory().devices().map((d) => d.bus_info)
          } catch {}
          const mixers = await Promise.all(all.map((s) => mixerOf(s.id).catch(() => null)))
          return all.map((s, i) => ({ id: s.id, name: s.name, kind: s.kind, usb_port: s.usb_port, channels: s.channels, rates: s.rates, camera: s.usb_port && cameras.includes(s.usb_port) ? s.usb_port : null, used_by: users.get(s.id) ?? [], mixer: publicMixer(mixers[i] ?? null) }))
        },
        { ...docs({ tag, summary: 'Sound sources: ALSA capture devices and simulated ones, with the camera each belongs to', ok: t.Array(AudioSourceModel) }) },
      )
      .get('/api/audio/streams', () => [...keys()].map(status), {
        ...docs({ tag, summary: "Each camera's sound: its source, state, gain, mute and last level", ok: t.Array(AudioStreamModel) }),
      })
      .post(
        '/api/audio/attach',
        typed({ body: AttachRequest }, async ({ body }) => {
          device(body.bus_info)
          const settings = settingsOf(body.bus_info)
          const next: AudioSettings = { ...settings, source: body.source, rate: body.rate ?? null }
          const id = sourceIdOf(body.bus_info, next)
          if (body.source !== null && body.source !== 'auto') {
            const source = sourceOr404(body.source)
            const other = cameraCarrying(source.id, body.bus_info)
            if (other) throw conflict(`The sound source '${source.id}' is in use by the stream of ${other}; attach another source there first (or null)`)
            if (soundOnly.settings(source.id)?.enabled) throw conflict(`The sound source '${source.id}' is streamed on its own (GET /api/audio/sound_only); disable that first`)
          }
          const source = id ? sources().find((s) => s.id === id) : undefined
          if (body.rate && source?.rates && !source.rates.includes(body.rate))
            throw conflict(`The sound source '${source.id}' (${source.name}) captures at ${source.rates.join(', ')} Hz, not ${body.rate} Hz`)
          store.set(NS, body.bus_info, next)
          await schedule(body.bus_info)
          return status(body.bus_info)
        }),
        {
          ...docs({
            tag,
            summary: "Choose the sound a camera's stream carries (saved)",
            description: "'auto' is the camera's own microphone (a sound card on its USB port). The sound runs while the stream runs.",
            body: AttachRequest,
            ok: AudioStreamModel,
            errors: [404, 409, 507],
          }),
        },
      )
      .post(
        '/api/audio/mixer',
        typed({ body: MixerRequest }, async ({ body }) => {
          const source = sourceOr404(body.source)
          const card = alsa.list().find((s) => s.id === source.id)?.card
          if (card === undefined) throw conflict(`The sound source '${source.id}' is not an ALSA sound card and has no mixer: use gain_db and muted (POST /api/audio/set), applied in the encoder`)
          try {
            const mixer = await readCaptureMixer(card)
            if (body.volume !== undefined) {
              if (!mixer.volume) throw conflict(`The sound card of '${source.id}' (${source.name}) has no capture volume in its mixer: use gain_db (POST /api/audio/set), applied in the encoder`)
              if (body.volume < mixer.volume.min || body.volume > mixer.volume.max)
                throw conflict(`The capture volume of '${source.id}' (${mixer.control}) goes from ${mixer.volume.min} to ${mixer.volume.max}, not ${body.volume}`)
            }
            if (body.capture !== undefined && mixer.capture === null)
              throw conflict(`The sound card of '${source.id}' (${source.name}) has no capture switch in its mixer: use muted (POST /api/audio/set), applied in the encoder`)
            const after = await setCaptureMixer(card, mixer, body)
            const saved = store.get<MixerSettings>(MIXER_NS, source.id) ?? {}
            store.set(MIXER_NS, source.id, { ...saved, ...(body.volume !== undefined && { volume: body.volume }), ...(body.capture !== undefined && { capture: body.capture }) })
            return publicMixer(after)!
          } catch (err) {
            if (!(err instanceof MixerError)) throw err
            throw err.kind === 'missing' ? unavailable(err.message) : new HttpError(502, err.message)
          }
        }),
        {
          ...docs({
            tag,
            summary: "Set a sound card's own capture volume and switch (its ALSA mixer; saved, set again when the card is plugged in)",
            description: "Where the card has them (GET /api/audio/sources: mixer). A simulated source or a card without the control: 409, with what to use instead (gain_db, muted: the encoder's).",
            body: MixerRequest,
            ok: MixerModel,
            errors: [404, 409, 502, 503, 507],
          }),
        },
      )
      .use(
        soundOnlyApi({
          soundOnly,
          gstLaunch,
          sources,
          sourceOr404,
          cameraCarrying: (source) => cameraCarrying(source),
          videoPorts: () => otherVideoPorts(''),
          limitHit: (limit) => registry.limitHit(limit),
        }),
      )
      .post(
        '/api/audio/set',
        typed({ body: SetAudioRequest }, async ({ body }) => {
          device(body.bus_info)
          const settings = settingsOf(body.bus_info)
          store.set(NS, body.bus_info, { ...settings, ...(body.gain_db !== undefined && { gain_db: body.gain_db }), ...(body.muted !== undefined && { muted: body.muted }) })
          await schedule(body.bus_info)
          return status(body.bus_info)
        }),
        {
          ...docs({
            tag,
            summary: "Set a stream's sound gain and mute (saved; applied in the encoder, a short gap in the sound)",
            body: SetAudioRequest,
            ok: AudioStreamModel,
            errors: [404, 507],
          }),
        },
      )
  },
})

