// A sound card's own capture gain and capture switch (its ALSA mixer), read and written with Debian's
// alsa-utils `amixer` (scripts/setup/gstreamer.sh installs it): `amixer -c <card> scontents` lists the
// simple controls, `amixer -c <card> -- sset '<name>',<index> <value> cap|nocap` sets one. Run as a child
// process, never on the HTTP event loop's time. Many USB microphones have a 'Mic' capture volume and
// switch; some cards have a switch only (snd-dummy), some nothing (snd-aloop): then the gain is the encoder's.

export interface CaptureMixer {
  /** The simple control used for the capture volume (and switch when it has one): `'Mic',0`. */
  control: string | null
  /** The capture volume in the card's own steps (the first channel's), with its range and, when the driver says, dB. */
  volume: { value: number; min: number; max: number; db: number | null } | null
  /** The control whose capture switch turns capture on and off (the same as `control` when it has one). */
  switchControl: string | null
  /** Capture on (true) or off (false); null: no capture switch. */
  capture: boolean | null
}

interface SimpleControl {
  name: string
  index: number
  caps: string[]
  min: number | null
  max: number | null
  value: number | null
  db: number | null
  on: boolean | null
}

/** Parses `amixer scontents`: every simple control with its capture side. */
export function parseScontents(text: string): SimpleControl[] {
  const controls: SimpleControl[] = []
  let current: SimpleControl | null = null
  for (const line of text.split('\n')) {
    const head = /^Simple mixer control '(.*)',(\d+)$/.exec(line)
    if (head) {
      current = { name: head[1]!, index: Number(head[2]), caps: [], min: null, max: null, value: null, db: null, on: null }
      controls.push(current)
      continue
    }
    if (!current) continue
    const caps = /^\s+Capabilities: (.*)$/.exec(line)
    if (caps) {
      current.caps = caps[1]!.trim().split(/\s+/)
      continue
    }
    const limits = /Capture (-?\d+) - (-?\d+)/.exec(line)
    if (/^\s+Limits:/.test(line)) {
      if (limits) [current.min, current.max] = [Number(limits[1]), Number(limits[2])]
      continue
    }
    // A channel's line ("  Mono: Capture 12 [75%] [21.00dB] [on]", "  Front Left: Playback 80 [..] Capture [on]"): the first one counts.
    const channel = /^\s+[^:]+: .*?Capture(?: (-?\d+) \[\d+%\](?: \[(-?[\d.]+)dB\])?)?(?: \[(on|off)\])?/.exec(line)
    if (channel && !/^\s+(Capture channels|Playback channels|Mono:$)/.test(line) && current.value === null && current.on === null) {
      if (channel[1] !== undefined) current.value = Number(channel[1])
      if (channel[2] !== undefined) current.db = Number(channel[2])
      if (channel[3] !== undefined) current.on = channel[3] === 'on'
    }
  }
  return controls
}

/** Names a capture control is likeliest to have, best first. */
const PREFERRED = ['Mic', 'Capture', 'Line', 'Master']
const rank = (c: SimpleControl) => {
  const i = PREFERRED.indexOf(c.name)
  return i < 0 ? PREFERRED.length : i
}
const id = (c: SimpleControl) => `'${c.name}',${c.index}`

/** The capture volume and switch to use among a card's controls. */
export function captureMixerOf(controls: SimpleControl[]): CaptureMixer {
  const byRank = [...controls].sort((a, b) => rank(a) - rank(b))
  const volume = byRank.find((c) => c.caps.some((x) => x.startsWith('cvolume')) && c.min !== null && c.max !== null && c.value !== null)
  const switched = volume?.caps.some((x) => x.startsWith('cswitch')) ? volume : byRank.find((c) => c.caps.some((x) => x.startsWith('cswitch')) && c.on !== null)
  return {
    control: volume ? id(volume) : null,
    volume: volume ? { value: volume.value!, min: volume.min!, max: volume.max!, db: volume.db } : null,
    switchControl: switched ? id(switched) : null,
    capture: switched?.on ?? null,
  }
}

export class MixerError extends Error {
  constructor(
    message: string,
    /** 'missing': amixer is not installed; 'failed': the card refused or is gone. */
    readonly kind: 'missing' | 'failed',
  ) {
    super(message)
  }
}

/** How long amixer may take (a USB control transfer can take a second; a hung one is killed). */
const AMIXER_TIMEOUT_MS = 5000

async function amixer(args: string[]): Promise<string> {
  const tool = Bun.which('amixer', { PATH: process.env.PATH ?? '' })
  if (!tool) throw new MixerError('amixer is not installed (Debian package alsa-utils): the card\'s mixer cannot be read or set', 'missing')
  const child = Bun.spawn([tool, ...args], { stdout: 'pipe', stderr: 'pipe', stdin: 'ignore', timeout: AMIXER_TIMEOUT_MS })
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited])
  if (code !== 0) throw new MixerError(`amixer ${args.join(' ')} failed: ${err.trim() || `exit ${child.signalCode ?? code}`}`, 'failed')
  return out
}

/**
 * How long a card's mixer, once read, answers again without a new amixer (GET /api/audio/sources reads every
 * card's: many requests at once share one child per card instead of spawning one each).
 */
export const MIXER_READ_CACHE_MS = 1000
const reads = new Map<number, { at: number; mixer: Promise<CaptureMixer> }>()

/** The card's capture mixer (read at most once per MIXER_READ_CACHE_MS; a set reads it afresh). */
export function readCaptureMixer(card: number): Promise<CaptureMixer> {
  const cached = reads.get(card)
  if (cached && performance.now() - cached.at < MIXER_READ_CACHE_MS) return cached.mixer
  const mixer = amixer(['-c', String(card), 'scontents']).then((out) => captureMixerOf(parseScontents(out)))
  reads.set(card, { at: performance.now(), mixer })
  mixer.catch(() => reads.get(card)?.mixer === mixer && reads.delete(card))
  return mixer
}

/** Sets the capture volume (the card's steps) and/or the capture switch; resolves with the mixer after. */
export async function setCaptureMixer(card: number, mixer: CaptureMixer, change: { volume?: number; capture?: boolean }): Promise<CaptureMixer> {
  if (change.volume !== undefined && mixer.control) await amixer(['-c', String(card), '--', 'sset', mixer.control, String(change.volume)])
  if (change.capture !== undefined && mixer.switchControl) await amixer(['-c', String(card), '--', 'sset', mixer.switchControl, change.capture ? 'cap' : 'nocap'])
  reads.delete(card)
  return readCaptureMixer(card)
}
