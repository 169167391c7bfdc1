// Which RTSP paths exist for which running streams (plugins/rtsp/mounts.ts), and how names are spelled
// in them: the rules the README states, checked without a server.
import { expect, test } from 'bun:test'
import type { Device, StreamHub } from '../../core/types'
import { createLogger } from '../../core/log'
import { MediaHub } from '../../media/hub'
import { pathSegment, wantedMounts } from '../../plugins/rtsp/mounts'

test('a path segment keeps what RFC 3986 allows in a segment and percent-encodes the rest as UTF-8', () => {
  expect(pathSegment('usb-0000:00:14.0-1.2')).toBe('usb-0000:00:14.0-1.2')
  expect(pathSegment('Front Cam')).toBe('Front%20Cam')
  expect(pathSegment('a/b?c#d%')).toBe('a%2Fb%3Fc%23d%25')
  expect(pathSegment("bow-cam_2~!$&'()*+,;=:@")).toBe("bow-cam_2~!$&'()*+,;=:@")
  expect(pathSegment('Kamera ü')).toBe('Kamera%20%C3%BC')
})

/** A running job's hub as the streamer makes it (members only matter here; it never listens). */
const hubOf = (members: number): StreamHub =>
  new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 30, members: Array.from({ length: members }, (_, i) => `m${i}`), log: createLogger('error') })
const device = (bus_info: string, nickname = '') => ({ bus_info, nickname }) as Device

test('a leader serves every member of its job, a follower its own track; stopped cameras have no path', () => {
  const group = hubOf(2)
  const running: Record<string, { hub: StreamHub; member: number }> = { L: { hub: group, member: 0 }, F: { hub: group, member: 1 } }
  const wanted = wantedMounts([device('L'), device('F'), device('S')], (bus) => running[bus] ?? null)
  expect([...wanted.keys()]).toEqual(['/L', '/F'])
  expect(wanted.get('/L')).toMatchObject({ bus_info: 'L', members: [0, 1], hub: group })
  expect(wanted.get('/F')).toMatchObject({ bus_info: 'F', members: [1], hub: group })
})

test('a nickname is an alias only while it is unique and names no other camera\'s path', () => {
  const solo = hubOf(1)
  const live = () => ({ hub: solo, member: 0 })
  expect([...wantedMounts([device('A', 'Bow Cam'), device('B', 'Stern')], live).keys()]).toEqual(['/A', '/B', '/Bow%20Cam', '/Stern'])
  // Two cameras called Bow Cam: neither gets the name (even if only one of them streams).
  expect([...wantedMounts([device('A', 'Bow Cam'), device('B', 'Bow Cam')], (bus) => (bus === 'A' ? live() : null)).keys()]).toEqual(['/A'])
  // A nickname equal to another camera's bus_info: the bus_info path wins.
  expect(wantedMounts([device('A', 'B'), device('B')], live).get('/B')).toMatchObject({ bus_info: 'B' })
})
