// Which sound capture devices exist, from /proc/asound (the ALSA driver's own text) and /sys/class/sound
// (where each card sits on the USB bus). Both live in memory, so these reads never wait on hardware.
import { existsSync, readFileSync, realpathSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import type { AudioSource } from '../../core/types'

export interface AlsaRoots {
  /** /proc/asound */
  proc: string
  /** /sys/class/sound */
  sys: string
}

export const ALSA_ROOTS: AlsaRoots = { proc: '/proc/asound', sys: '/sys/class/sound' }

/** A capture PCM as alsasrc opens it. */
export interface AlsaCapture extends AudioSource {
  card: number
  /** The card's ALSA id ('Device', 'Loopback'): stable across re-plugs, unlike its number. */
  cardId: string
  device: number
}

/** Channels a card captures when its driver does not say (not USB): stereo, what most cards and snd-aloop open. */
export const DEFAULT_CHANNELS = 2

const read = (path: string): string | null => {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return null
  }
}

/**
 * The USB port of a card, in the form V4L2's bus_info uses (usb_make_path: `usb-<host controller>-<port
 * path>`), so a camera's own microphone is matched to the camera by where both are plugged: the sound
 * card's sysfs device is a USB interface `1-3.2:1.0` under the USB device `1-3.2`, under `usb1`, under
 * the host controller `0000:00:14.0`.
 */
export function usbPort(cardDevice: string): string | null {
  let d = cardDevice
  while (d !== dirname(d) && !/^\d+-[\d.]+$/.test(basename(d))) d = dirname(d)
  const port = /^\d+-([\d.]+)$/.exec(basename(d))?.[1]
  if (!port) return null
  while (d !== dirname(d) && !/^usb\d+$/.test(basename(d))) d = dirname(d)
  if (d === dirname(d)) return null
  return `usb-${basename(dirname(d))}-${port}`
}

/** The rates a continuous range (`Rates: 8000 - 48000 (continuous)`) is listed as. */
const STANDARD_RATES = [8000, 11025, 16000, 22050, 32000, 44100, 48000, 88200, 96000, 176400, 192000]

/**
 * Channels and rates of a USB card's capture endpoint (its `stream0`: `Channels: 1`, `Rates: 16000, 48000`
 * or `Rates: 8000 - 48000 (continuous)`), or null when it has no capture section.
 */
export function usbCapture(stream0: string): { channels: number; rates: number[] } | null {
  const at = stream0.search(/(^|\n)\s*Capture:/)
  if (at < 0) return null
  const capture = stream0.slice(at).split(/\n\s*Playback:/)[0]!
  let channels = 0
  const rates = new Set<number>()
  for (const m of capture.matchAll(/Channels:\s*(\d+)/g)) channels = Math.max(channels, Number(m[1]))
  for (const m of capture.matchAll(/Rates:\s*([^\n]+)/g)) {
    const text = m[1]!
    const range = /(\d+)\s*-\s*(\d+)/.exec(text)
    if (range) STANDARD_RATES.filter((r) => r >= Number(range[1]) && r <= Number(range[2])).forEach((r) => rates.add(r))
    else for (const r of text.split(',')) if (Number(r.trim()) > 0) rates.add(Number(r.trim()))
  }
  if (!channels) return null
  return { channels, rates: [...rates].sort((a, b) => a - b) }
}

/**
 * Every capture PCM of every card. `/proc/asound/pcm` lists `CC-DD: id : name : playback n : capture n`;
 * the card's name is the second field of `/proc/asound/cards`, its id `/proc/asound/cardN/id`.
 */
export function listCaptures(roots: AlsaRoots = ALSA_ROOTS): AlsaCapture[] {
  const pcm = read(join(roots.proc, 'pcm'))
  if (!pcm) return []
  // ` 1 [Device         ]: USB-Audio - USB Audio Device` then the long name on the next line, which for a
  // USB card ends `at usb-0000:00:14.0-2, full speed`: the port again, should sysfs not say it.
  const names = new Map<number, string>()
  const longNames = new Map<number, string>()
  for (const m of (read(join(roots.proc, 'cards')) ?? '').matchAll(/^\s*(\d+)\s+\[[^\]]*\]:\s*\S+\s+-\s+(.+)\n\s*(.*)$/gm)) {
    names.set(Number(m[1]), m[2]!.trim())
    longNames.set(Number(m[1]), m[3]!.trim())
  }
  const out: AlsaCapture[] = []
  for (const line of pcm.split('\n')) {
    const m = /^(\d+)-(\d+):\s*([^:]*):/.exec(line)
    if (!m || !/capture\s+\d+/.test(line)) continue
    const card = Number(m[1])
    const device = Number(m[2])
    const cardId = read(join(roots.proc, `card${card}`, 'id'))?.trim() || `card${card}`
    const stream0 = read(join(roots.proc, `card${card}`, 'stream0'))
    const usb = stream0 ? usbCapture(stream0) : null
    const devicePath = join(roots.sys, `card${card}`, 'device')
    let port: string | null = null
    if (existsSync(devicePath)) {
      try {
        port = usbPort(realpathSync(devicePath))
      } catch {
        port = null
      }
    }
    port ??= / at (usb-[^,\s]+)/.exec(longNames.get(card) ?? '')?.[1] ?? null
    out.push({
      id: `alsa:${cardId},${device}`,
      name: names.get(card) ?? m[3]!.trim(),
      kind: 'alsa',
      usb_port: port,
      channels: usb?.channels ?? DEFAULT_CHANNELS,
      rates: usb?.rates ?? null,
      card,
      cardId,
      device,
    })
  }
  return out
}
