// Simulated sound sources (--simulate): audiotestsrc stands in for a sound card, so the contract tier
// and demos have sound without hardware. One is the first simulated camera's own microphone (same USB
// port), one a hydrophone on a port of its own. They can be unplugged and plugged back like cameras.
import type { AudioBackend, AudioSource } from '../../core/types'
import { port } from './cameras'

export interface SimulatedSound extends AudioSource {
  /** audiotestsrc's wave: 'sine', 'pink-noise', … */
  wave: string
  freq: number
}

/** The simulated sources of every preset: a 440 Hz tone in camera 1's microphone, pink noise in a hydrophone. */
export function simulatedSounds(): SimulatedSound[] {
  return [
    { id: 'sim:mic1', name: 'Simulated camera microphone (440 Hz tone)', kind: 'simulated', usb_port: port(1), channels: 1, rates: [16000, 48000], wave: 'sine', freq: 440 },
    { id: 'sim:hydrophone', name: 'Simulated hydrophone (pink noise)', kind: 'simulated', usb_port: port(9), channels: 2, rates: [44100, 48000], wave: 'pink-noise', freq: 440 },
  ]
}

export class MockAudioBackend implements AudioBackend {
  readonly name = 'mock-audio'
  private unplugged = new Set<string>()
  private listeners = new Set<() => void>()

  constructor(private readonly sounds: SimulatedSound[] = simulatedSounds()) {}

  list(): AudioSource[] {
    return this.sounds.filter((s) => !this.unplugged.has(s.id)).map(({ wave: _w, freq: _f, ...source }) => source)
  }

  sourceTokens(id: string, rate: number, channels: number): string[] | null {
    const sound = this.sounds.find((s) => s.id === id)
    if (!sound || this.unplugged.has(id)) return null
    return ['audiotestsrc', 'name=asrc', 'is-live=true', `wave=${sound.wave}`, `freq=${sound.freq}`, 'volume=0.5', '!', `audio/x-raw,rate=${rate},channels=${channels}`]
  }

  /** false: no such source, or already in that state. */
  setPlugged(id: string, plugged: boolean): boolean {
    if (!this.sounds.some((s) => s.id === id)) return false
    if (plugged !== this.unplugged.has(id)) return false
    if (plugged) this.unplugged.delete(id)
    else this.unplugged.add(id)
    for (const listener of this.listeners) listener()
    return true
  }

  describe(): { id: string; plugged: boolean }[] {
    return this.sounds.map((s) => ({ id: s.id, plugged: !this.unplugged.has(s.id) }))
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}
