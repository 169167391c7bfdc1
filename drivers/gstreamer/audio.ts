// The sound of a stream: one gst-launch-1.0 child per stream that has a sound source attached, beside the
// camera's child rather than inside it. gst-launch ends the whole pipeline on any element's error, so a
// sound card unplugged from the camera's pipeline would stop the video too; in a child of its own it ends
// only the sound, the video's frame count runs on, and the sound comes back when the card does.
// Encoded once as Opus (RTP payload type 111), sent to every UDP endpoint at port + offset and to a
// loopback tap for the service's own readers. The child is watched like the video's (`-m` bus messages).
import type { Subprocess } from 'bun'
import { LateTicks } from '../../core/late-ticks'
import type { Endpoint } from '../../core/types'
import { children, endChild, pumpLines, spawnChild } from '../../media/children'
import { describeHolders, holdersOf } from './holders'

/** The RTP payload type of the sound (dynamic; WebRTC's usual one for Opus). */
export const AUDIO_PT = 111
/** Opus at 64 kbit/s: transparent for speech and a hydrophone's band, small beside the video. */
export const OPUS_BITRATE = 64000
/** How often the level is measured and announced (ns for GStreamer's level element). */
export const LEVEL_INTERVAL_MS = 500

/**
 * The port rule of the sound: each UDP endpoint's port + max(2, members). A lone camera's sound goes to
 * port + 2 (port + 1 is RTCP's by RTP's convention); a group's members use port + 0 … port + n-1 for their
 * video (pipeline.ts memberEndpoints), so its sound goes to the first port after them.
 */
export function audioPortOffset(members: number): number {
  return Math.max(2, members)
}

export interface AudioPipeline {
  /** Raw audio of the source, named `asrc` (AudioBackend.sourceTokens). */
  source: string[]
  gainDb: number
  muted: boolean
  /** Where the RTP goes: the UDP endpoints' sound ports and the loopback tap. */
  clients: Endpoint[]
}

/** gst-launch tokens: source → gain → level meter → mute → Opus → RTP to every client. */
export function buildAudioPipeline(p: AudioPipeline): string[] {
  const gain = Math.pow(10, p.gainDb / 20)
  const sink = p.clients.length
    ? ['multiudpsink', `clients=${p.clients.map((c) => `${c.host}:${c.port}`).join(',')}`, 'sync=false', 'async=false']
    : ['fakesink', 'sync=false', 'async=false']
  return [
    ...p.source,
    '!', 'audioconvert', '!', 'audioresample',
    '!', 'volume', 'name=gain', `volume=${Number(gain.toFixed(4))}`,
    // The meter reads after the gain and before the mute: a muted hydrophone still shows it hears.
    '!', 'level', 'name=meter', `interval=${LEVEL_INTERVAL_MS * 1_000_000}`, 'post-messages=true',
    '!', 'volume', 'name=mute', `mute=${p.muted}`,
    '!', 'audioconvert', '!', 'audioresample', '!', 'audio/x-raw,rate=48000',
    '!', 'opusenc', `bitrate=${OPUS_BITRATE}`, 'frame-size=20',
    '!', 'rtpopuspay', `pt=${AUDIO_PT}`,
    '!', ...sink,
  ]
}

/** The loudest channel of a `level` message: {peak_db, rms_db}, or null for another line. */
export function parseLevel(line: string): { peak_db: number; rms_db: number } | null {
  if (!line.includes('from element "meter" (element): level')) return null
  const values = (name: string) => {
    const m = new RegExp(`${name}=\\([^)]*\\)[<{]([^>}]*)[>}]`).exec(line)
    return m ? m[1]!.split(',').map((v) => Number(v.trim())).filter((v) => !Number.isNaN(v)) : []
  }
  const rms = values('rms')
  const peak = values('peak')
  if (!rms.length || !peak.length) return null
  // -inf (digital silence) is shown as -200 dB: JSON has no infinity.
  const db = (v: number) => (Number.isFinite(v) ? Math.round(v * 10) / 10 : -200)
  return { peak_db: db(Math.max(...peak)), rms_db: db(Math.max(...rms)) }
}

export type AudioState = 'starting' | 'running' | 'gone' | 'backoff' | 'error' | 'off'

export interface AudioRunnerHooks {
  onState(state: AudioState, error: string | null): void
  onLevel(level: { peak_db: number; rms_db: number }): void
}

export interface AudioRunnerOptions {
  gstLaunch: string
  prefix: string[]
  /** The pipeline now, or null when the source is gone (looked up at every launch: a re-plug changes it). */
  pipeline(): AudioPipeline | null
  /** The device node the source opens (/dev/snd/pcmC1D0c), to say who holds it when it is busy. */
  node: string | null
  maxBackoffMs?: number
  /** No level message for this long while running: a stall (a card that stops delivering without an error). */
  stallMs?: number
}

/** One stream's sound child: restarted with backoff after a failure, parked while its source is gone. */
export class AudioRunner {
  state: AudioState = 'off'
  error: string | null = null
  restarts = 0
  private child: Subprocess | null = null
  private generation = 0
  private wanted = false
  private failures = 0
  private timer: Timer | null = null
  private watchdog: Timer | null = null
  /** The watchdog's ticks, once a second: one 2 s after the last came late. */
  private readonly ticks = new LateTicks(2000)
  private lastError: string | null = null
  private heardAt = 0
  private runningSince = 0

  constructor(private readonly options: AudioRunnerOptions, private readonly hooks: AudioRunnerHooks) {}

  get pid(): number | null {
    return this.child?.pid ?? null
  }

  start(): void {
    this.wanted = true
    this.launch()
    this.watchdog ??= setInterval(() => this.tick(), 1000)
  }

  /** The source came back (or another changed): a parked runner launches now. */
  sourcesChanged(): void {
    if (!this.wanted) return
    if (this.state === 'gone') {
      if (this.timer) clearTimeout(this.timer)
      this.launch()
    } else if (this.child && !this.options.pipeline()) {
      // Unplugged while running: ALSA's read error may take a moment; end it now.
      this.child.kill('SIGKILL')
    }
  }

  async stop(): Promise<void> {
    this.wanted = false
    if (this.timer) clearTimeout(this.timer)
    if (this.watchdog) clearInterval(this.watchdog)
    this.timer = this.watchdog = null
    const child = this.child
    this.generation++
    this.child = null
    if (child) await endChild(child, 'SIGTERM', 3000)
    this.setState('off', null)
  }

  private launch(): void {
    this.timer = null
    if (!this.wanted) return
    const pipeline = this.options.pipeline()
    if (!pipeline) return this.setState('gone', 'the sound source is unplugged; the sound resumes when it returns (the video runs on)')
    const generation = ++this.generation
    this.lastError = null
    this.heardAt = Date.now()
    let child: Subprocess<'ignore', 'pipe', 'pipe'>
    try {
      child = spawnChild([this.options.gstLaunch, '-m', ...buildAudioPipeline(pipeline)], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' }, this.options.prefix)
    } catch (err) {
      return this.failure(`cannot run ${this.options.gstLaunch}: ${(err as Error).message}`)
    }
    this.child = child
    this.setState('starting', null)
    const onLine = (line: string) => {
      if (generation !== this.generation) return
      const level = parseLevel(line)
      if (level) {
        this.heardAt = Date.now()
        if (this.state !== 'running') {
          this.runningSince = Date.now()
          this.setState('running', null)
        }
        return this.hooks.onLevel(level)
      }
      const error = /^ERROR: from element [^:]*: (.*)$/.exec(line)?.[1]
      if (error) this.lastError ??= error
      if (/busy/i.test(line) && this.options.node) {
        const holders = holdersOf(this.options.node, children)
        if (holders.length) this.lastError = `the sound card ${this.options.node} is in use by ${describeHolders(holders)}`
      }
    }
    void pumpLines(child.stdout, onLine)
    void pumpLines(child.stderr, onLine)
    void child.exited.then((code) => {
      if (generation !== this.generation) return
      this.child = null
      if (!this.wanted) return
      if (!this.options.pipeline()) return this.launch() // unplugged: park
      this.failure(this.lastError ?? `gst-launch-1.0 exited unexpectedly (${child.signalCode ?? `code ${code}`})`)
    })
  }

  private tick(): void {
    const stallMs = this.options.stallMs ?? 5000
    // A late tick (the service was busy or stopped) has not read the level messages that wait: no verdict.
    if (this.ticks.late(Date.now())) return
    if (this.child && Date.now() - this.heardAt > stallMs) {
      this.lastError = `stalled: no sound for ${Math.round(stallMs / 1000)} s`
      this.child.kill('SIGKILL')
    }
    if (this.state === 'running' && this.failures && Date.now() - this.runningSince > 60_000) this.failures = 0
  }

  private failure(reason: string): void {
    if (!this.wanted) return
    this.failures++
    this.restarts++
    const delay = Math.min(this.options.maxBackoffMs ?? 30_000, 1000 * 2 ** (this.failures - 1))
    this.setState('backoff', `${reason}; restarting in ${delay / 1000} s`)
    this.timer = setTimeout(() => this.launch(), delay)
  }

  private setState(state: AudioState, error: string | null): void {
    if (state === this.state && error === this.error) return
    this.state = state
    this.error = error
    this.hooks.onState(state, error)
  }
}
