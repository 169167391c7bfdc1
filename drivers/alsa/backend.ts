// The ALSA sound backend: capture devices from /proc/asound and /sys (cards.ts), looked at again every
// second (a USB sound card comes and goes like a camera; /proc has no inotify), read by alsasrc.
import type { AudioBackend } from '../../core/types'
import { ALSA_ROOTS, listCaptures, type AlsaCapture, type AlsaRoots } from './cards'

export interface AlsaOptions {
  roots?: AlsaRoots
  pollMs?: number
}

export class AlsaBackend implements AudioBackend {
  readonly name = 'alsa'
  private sources: AlsaCapture[] = []
  private listeners = new Set<() => void>()
  private poller: Timer | null = null
  private readonly roots: AlsaRoots
  private readonly pollMs: number

  constructor(options: AlsaOptions = {}) {
    this.roots = options.roots ?? ALSA_ROOTS
    this.pollMs = options.pollMs ?? 1000
    this.sources = listCaptures(this.roots)
  }

  start(): void {
    if (this.poller) return
    this.poller = setInterval(() => this.rescan(), this.pollMs)
    this.poller.unref?.()
  }

  stop(): void {
    if (this.poller) clearInterval(this.poller)
    this.poller = null
  }

  list(): AlsaCapture[] {
    return this.sources
  }

  /** Reads the cards again; listeners hear of it when the set of sources changed. */
  rescan(): void {
    const next = listCaptures(this.roots)
    const key = (list: AlsaCapture[]) => list.map((s) => `${s.id}@${s.card}`).join('|')
    const changed = key(next) !== key(this.sources)
    this.sources = next
    if (changed) for (const listener of this.listeners) listener()
  }

  sourceTokens(id: string, rate: number, channels: number): string[] | null {
    const source = this.sources.find((s) => s.id === id)
    if (!source) return null
    // By the card's id, not its number: the number changes when cards are plugged in another order.
    return ['alsasrc', 'name=asrc', `device=hw:CARD=${source.cardId},DEV=${source.device}`, '!', `audio/x-raw,rate=${rate},channels=${channels}`]
  }

  onChange(listener: () => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }
}
