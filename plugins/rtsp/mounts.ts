// Which RTSP mounts should exist: one per camera whose stream runs, at /<bus_info>, plus /<nickname>
// when exactly one camera has that nickname. A job's own bus_info (a group's leader) serves every
// member of the job, one track each; a follower's serves its own track.
import type { Device, StreamHub } from '../../core/types'

export interface WantedMount {
  /** The URL path as clients send it (the RTSP server matches it literally). */
  path: string
  bus_info: string
  hub: StreamHub
  /** The hub's members fed to tracks 0, 1, … */
  members: number[]
  /** The stream's sound, as one more track after the video (the job's own mount only). */
  sound: boolean
}

/**
 * A name as an RTSP URL path segment: characters RFC 3986 allows in a segment stay as they are
 * (letters, digits, - . _ ~ ! $ & ' ( ) * + , ; = : @), anything else is percent-encoded as UTF-8.
 * The server matches the path byte for byte, so this is the one spelling that works.
 */
export function pathSegment(name: string): string {
  return encodeURIComponent(name).replace(/%(3A|40|24|26|2B|2C|3B|3D)/gi, (code) => decodeURIComponent(code))
}

/** A sound-only stream's path (plugins/audio/sound-only.ts): /sound/<source id>, its sound the one track. */
export const soundOnlyRtspPath = (source: string) => `/sound/${pathSegment(source)}`

/**
 * `soundExpected`: the stream has a sound source (plugins/audio), so its mount gets the sound's track from
 * the start, before the first packet of sound reaches the hub: a mount re-added when the sound comes would
 * drop every client once.
 */
export function wantedMounts(
  devices: Device[],
  live: (bus_info: string) => { hub: StreamHub; member: number } | null,
  soundExpected: (bus_info: string) => boolean = () => false,
): Map<string, WantedMount> {
  const wanted = new Map<string, WantedMount>()
  const running: { device: Device; mount: WantedMount }[] = []
  for (const device of devices) {
    const found = live(device.bus_info)
    if (!found) continue
    const members = found.member === 0 ? Array.from({ length: found.hub.members }, (_, i) => i) : [found.member]
    const mount = { path: '/' + pathSegment(device.bus_info), bus_info: device.bus_info, hub: found.hub, members, sound: found.member === 0 && (found.hub.hasSound || soundExpected(device.bus_info)) }
    wanted.set(mount.path, mount)
    running.push({ device, mount })
  }
  const byNickname = new Map<string, number>()
  for (const device of devices) if (device.nickname) byNickname.set(device.nickname, (byNickname.get(device.nickname) ?? 0) + 1)
  for (const { device, mount } of running) {
    if (!device.nickname || byNickname.get(device.nickname) !== 1) continue
    const path = '/' + pathSegment(device.nickname)
    if (!wanted.has(path)) wanted.set(path, { ...mount, path })
  }
  return wanted
}
