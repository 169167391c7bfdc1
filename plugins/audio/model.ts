// What a camera's sound and a sound-only stream share: gain limits, the level's shape, the rate and
// channels asked of a source.
import { t } from 'elysia'
import type { AudioSource } from '../../core/types'

/** Gain limits (dB): enough to lift a quiet hydrophone, not enough to make noise of nothing. */
export const GAIN_MIN_DB = -40
export const GAIN_MAX_DB = 40
/** The rate asked of a source when none is chosen: Opus's own. */
const PREFERRED_RATE = 48000

export const Level = t.Union([t.Object({ peak_db: t.Number(), rms_db: t.Number() }), t.Null()])
export const SoundState = t.Union(['off', 'starting', 'running', 'gone', 'backoff', 'error'].map((s) => t.Literal(s)))

export function rateOf(source: AudioSource | undefined, settings: { rate: number | null }): number {
  if (settings.rate) return settings.rate
  if (!source?.rates || source.rates.includes(PREFERRED_RATE)) return PREFERRED_RATE
  return source.rates.at(-1)!
}

export const channelsOf = (source: AudioSource | undefined) => Math.min(2, source?.channels ?? 1)
