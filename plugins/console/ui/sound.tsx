// A stream's sound on its camera card: the sound card's own capture gain and switch where its ALSA mixer has them, the level the vehicle measures (audio_level events, twice a
// second) as a meter, and the stream's mute switch (POST /api/audio/set: saved on the vehicle; a muted
// stream sends silence to every receiver, the meter still shows what the microphone hears). Hearing it
// here is the preview's own "Listen" button (preview.tsx): browsers start media muted.
import { useEffect, useRef, useState } from 'preact/hooks'
import { ApiError, get, post } from './api'
import { on } from './events'
import { whepSession } from './whep'
import { Value, useValue } from './state'
import type { Device } from './types'

interface Sound {
  bus_info: string
  source: string | null
  state: 'off' | 'starting' | 'running' | 'gone' | 'backoff' | 'error'
  error: string | null
  muted: boolean
  gain_db: number
  level: { peak_db: number; rms_db: number } | null
}

/** Every camera's sound, by bus_info; empty when the service has no audio plugin. */
const sounds = new Value<ReadonlyMap<string, Sound>>(new Map())

async function load(): Promise<void> {
  try {
    const list = await get<Sound[]>('/api/audio/streams')
    sounds.set(new Map(list.map((s) => [s.bus_info, s])))
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    sounds.set(new Map()) // no audio plugin (404) or refused: no sound shown
  }
}

/** A sound card's own capture mixer (GET /api/audio/sources: mixer; null for a simulated source). */
interface Mixer {
  control: string | null
  volume: { value: number; min: number; max: number; db: number | null } | null
  capture: boolean | null
}
/** Each source's card mixer, by source id. */
const mixers = new Value<ReadonlyMap<string, Mixer | null>>(new Map())

async function loadMixers(): Promise<void> {
  try {
    const list = await get<{ id: string; mixer: Mixer | null }[]>('/api/audio/sources')
    mixers.set(new Map(list.map((s) => [s.id, s.mixer])))
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    mixers.set(new Map())
  }
}

/** The card's capture volume (a slider in its own steps) and switch, where the card has them (POST /api/audio/mixer, saved). */
function CardMixer({ source }: { source: string }) {
  const mixer = useValue(mixers).get(source)
  const [problem, setProblem] = useState<string | null>(null)
  if (!mixer || (mixer.volume === null && mixer.capture === null)) return null
  const set = async (change: { volume?: number; capture?: boolean }) => {
    setProblem(null)
    try {
      const next = await post<Mixer>('/api/audio/mixer', { source, ...change })
      mixers.set(new Map(mixers.get()).set(source, next))
    } catch (e) {
      setProblem(e instanceof ApiError ? e.detail : String(e))
    }
  }
  return (
    <span class="card-mixer" data-mixer={source}>
      {mixer.volume && (
        <label title={`The sound card's own capture volume (${mixer.control}), ${mixer.volume.min} … ${mixer.volume.max}${mixer.volume.db === null ? '' : `, now ${mixer.volume.db} dB`}`}>
          <span class="muted">Card gain</span>{' '}
          <input type="range" data-action="card-gain" min={mixer.volume.min} max={mixer.volume.max} value={mixer.volume.value} onChange={(e) => void set({ volume: Number((e.target as HTMLInputElement).value) })} />
        </label>
      )}
      {mixer.capture !== null && (
        <button type="button" class="small" role="switch" aria-checked={mixer.capture} data-action="card-capture" onClick={() => void set({ capture: !mixer.capture })} title="The sound card's own capture switch (its ALSA mixer; saved)">
          {mixer.capture ? 'Card on' : 'Card off'}
        </button>
      )}
      {problem && <span class="error-text">{problem}</span>}
    </span>
  )
}

function patch(bus_info: string, change: Partial<Sound>): void {
  const current = sounds.get().get(bus_info)
  if (!current) return
  sounds.set(new Map(sounds.get()).set(bus_info, { ...current, ...change }))
}

let started = false
function follow(): void {
  if (started) return
  started = true
  void load()
  void loadMixers()
  on('connected', () => (void load(), void loadMixers()))
  on('audio_state', () => void load())
  on('audio_sources', () => void loadMixers())
  on('audio_level', (data) => {
    if (data?.sound_only) patchSoundOnly(String(data.source), { level: { peak_db: data.peak_db, rms_db: data.rms_db } })
    else patch(String(data?.bus_info), { level: { peak_db: data.peak_db, rms_db: data.rms_db } })
  })
}

/** dBFS to the meter's width: -60 dB (or less) empty, 0 dB full. */
const width = (db: number) => `${Math.max(0, Math.min(100, ((db + 60) / 60) * 100)).toFixed(0)}%`

export function SoundBar({ d }: { d: Device }) {
  useEffect(follow, [])
  const sound = useValue(sounds).get(d.bus_info)
  const [busy, setBusy] = useState(false)
  const [problem, setProblem] = useState<string | null>(null)
  if (!sound?.source) return null
  const level = sound.state === 'running' ? sound.level : null
  const toggle = async () => {
    setBusy(true)
    setProblem(null)
    try {
      const next = await post<Sound>('/api/audio/set', { bus_info: d.bus_info, muted: !sound.muted })
      patch(d.bus_info, { muted: next.muted })
    } catch (e) {
      setProblem(e instanceof ApiError ? e.detail : String(e))
    } finally {
      setBusy(false)
    }
  }
  return (
    <div class="sound" data-sound={sound.state} data-muted={sound.muted}>
      <span class="muted">Sound</span>
      <span class="meter" role="meter" aria-label="sound level" aria-valuemin={-60} aria-valuemax={0} aria-valuenow={level?.peak_db ?? -60} title={level ? `peak ${level.peak_db} dBFS, RMS ${level.rms_db} dBFS` : sound.state}>
        <span class="rms" style={{ width: level ? width(level.rms_db) : '0%' }} />
        <span class="peak" style={{ left: level ? width(level.peak_db) : '0%' }} />
      </span>
      <button type="button" class="small" role="switch" aria-checked={sound.muted} data-action="mute" disabled={busy} onClick={toggle} title="Mute the stream's sound for every receiver (saved on the vehicle)">
        {sound.muted ? 'Muted' : 'Mute'}
      </button>
      <CardMixer source={sound.source} />
      {sound.state !== 'running' && sound.state !== 'off' && <span class="error-text">{sound.error ?? sound.state}</span>}
      {problem && <span class="error-text">{problem}</span>}
    </div>
  )
}

// Sound-only streams (a hydrophone with no camera: GET /api/audio/sound_only), each a card of its own below
// the cameras': its level meter, and a Listen button that opens a WebRTC session (WHEP, audio only) while pressed.
interface SoundOnly {
  source: string
  name: string | null
  state: Sound['state']
  error: string | null
  level: Sound['level']
  rtsp_path: string | null
  whep_path: string | null
}

const soundOnly = new Value<readonly SoundOnly[]>([])

async function loadSoundOnly(): Promise<void> {
  try {
    soundOnly.set(await get<SoundOnly[]>('/api/audio/sound_only'))
  } catch (e) {
    if (!(e instanceof ApiError)) throw e
    soundOnly.set([]) // no audio plugin: none shown
  }
}

function patchSoundOnly(source: string, change: Partial<SoundOnly>): void {
  soundOnly.set(soundOnly.get().map((s) => (s.source === source ? { ...s, ...change } : s)))
}

let followingSoundOnly = false
function followSoundOnly(): void {
  follow()
  if (followingSoundOnly) return
  followingSoundOnly = true
  void loadSoundOnly()
  on('connected', () => void loadSoundOnly())
  on('audio_state', (data) => data?.sound_only && void loadSoundOnly())
}

/** Plays a sound-only stream in this browser while mounted (a WHEP session with one recvonly audio section). */
function Listener({ url, onFail }: { url: string; onFail(why: string): void }) {
  const audio = useRef<HTMLAudioElement>(null)
  useEffect(() => {
    const pc = new RTCPeerConnection({ iceServers: [] })
    pc.addTransceiver('audio', { direction: 'recvonly' })
    pc.ontrack = (e) => {
      if (audio.current) audio.current.srcObject = new MediaStream([e.track])
    }
    return whepSession(pc, url, onFail)
  }, [url])
  // Pressing Listen is the gesture that lets the browser play it.
  return <audio ref={audio} autoplay />
}

function SoundOnlyCard({ s }: { s: SoundOnly }) {
  const [listening, setListening] = useState(false)
  const [problem, setProblem] = useState<string | null>(null)
  const level = s.state === 'running' ? s.level : null
  return (
    <article class="card" data-sound-only={s.source} aria-label={s.name ?? s.source}>
      <h2>{s.name ?? s.source}</h2>
      <p class="muted">Sound only · {s.source}{s.rtsp_path ? ` · RTSP ${s.rtsp_path}` : ''}</p>
      <div class="sound" data-sound={s.state}>
        <span class="muted">Sound</span>
        <span class="meter" role="meter" aria-label="sound level" aria-valuemin={-60} aria-valuemax={0} aria-valuenow={level?.peak_db ?? -60} title={level ? `peak ${level.peak_db} dBFS, RMS ${level.rms_db} dBFS` : s.state}>
          <span class="rms" style={{ width: level ? width(level.rms_db) : '0%' }} />
          <span class="peak" style={{ left: level ? width(level.peak_db) : '0%' }} />
        </span>
        {s.whep_path && (
          <button type="button" class="small listen" data-action="listen" aria-pressed={listening} onClick={() => (setProblem(null), setListening(!listening))} title="Hear it in this browser">
            {listening ? 'Sound on' : 'Listen'}
          </button>
        )}
        <CardMixer source={s.source} />
        {s.state !== 'running' && s.state !== 'off' && <span class="error-text">{s.error ?? s.state}</span>}
        {problem && <span class="error-text">{problem}</span>}
      </div>
      {listening && s.whep_path && <Listener url={s.whep_path} onFail={(why) => (setProblem(why), setListening(false))} />}
    </article>
  )
}

/** The sound-only streams' cards; nothing when there are none. */
export function SoundOnlyCards() {
  useEffect(followSoundOnly, [])
  const list = useValue(soundOnly)
  if (!list.length) return null
  return (
    <div class="cards" data-sound-only-cards>
      {list.map((s) => <SoundOnlyCard key={s.source} s={s} />)}
    </div>
  )
}
