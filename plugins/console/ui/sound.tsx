// A stream's sound on its camera card: the level the vehicle measures (audio_level events, twice a
// second) as a meter, and the stream's mute switch (POST /api/audio/set: saved on the vehicle; a muted
// stream sends silence to every receiver, the meter still shows what the microphone hears). Hearing it
// here is the preview's own "Listen" button (preview.tsx): browsers start media muted.
import { useEffect, useState } from 'preact/hooks'
import { ApiError, get, post } from './api'
import { on } from './events'
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
  on('connected', () => void load())
  on('audio_state', () => void load())
  on('audio_level', (data) => patch(String(data?.bus_info), { level: { peak_db: data.peak_db, rms_db: data.rms_db } }))
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
      {sound.state !== 'running' && sound.state !== 'off' && <span class="error-text">{sound.error ?? sound.state}</span>}
      {problem && <span class="error-text">{problem}</span>}
    </div>
  )
}
