// A full card (the recordings filled it, the settings database lives on it too): a real small tmpfs as
// the data dir. The service keeps working, starts on it, refuses to pretend a setting was saved (507 with
// what to do), shows only what survives a restart, and saves again once a recording is deleted. The same
// card remounted read-only: the service starts with the saved settings and says why nothing can change.
// Needs root (mount); the integration tier runs as root.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadPlugin } from '../../core/loader'
import { tmpfsCard, type Card } from '../cards'
import { BRIGHTNESS, controlOf, device, WEBCAM } from '../contract/setup'
import { freeUdpPortPair, startTestServer, until, type TestServer } from '../helpers'
let disk: Card
let card: string

beforeAll(() => {
  disk = tmpfsCard('4m', 'periscope-full-')
  card = disk.dir
  mkdirSync(join(card, 'recordings'))
})
afterAll(() => disk?.remove())

const start = async () =>
  startTestServer({
    plugins: await Promise.all(['mock', 'cameras', 'preferences', 'recordings'].map(loadPlugin)),
    dataDir: card,
    config: { simulate: 'default' },
  })
/** An empty card (no settings database, no recordings): each test starts from it, whatever the last one left. */
function freshCard(): void {
  for (const name of readdirSync(card)) rmSync(join(card, name), { recursive: true, force: true })
  mkdirSync(join(card, 'recordings'))
}
/** Fills the card with a "recording" until ENOSPC. */
const fill = () => Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(card, 'recordings', 'dive.mkv')}`, 'bs=4k'])
const prefs = (host: string) => ({ default_stream: { host, port: 5600 }, suggest_host: false, frequency_offset: 0 })
const webcam = (s: TestServer) => device(s, WEBCAM)
const brightness = (dev: any) => controlOf(dev, BRIGHTNESS).value

/** The pilot deletes the recording filling the card; a save that was refused now works and survives a restart. */
async function roomAgainThenRestart(s: TestServer, host: string): Promise<void> {
  try {
    expect((await s.call('POST', '/api/preferences/save_preferences', prefs(host))).status).toBe(507)
    expect((await s.call('DELETE', '/api/recordings/dive.mkv')).status).toBe(200)
    expect((await s.call('POST', '/api/preferences/save_preferences', prefs(host))).status).toBe(200)
  } finally {
    await s.stop()
  }
  const again = await start()
  try {
    expect((await again.call('GET', '/api/preferences')).body.default_stream.host).toBe(host)
  } finally {
    await again.stop()
  }
}

describe('on a full card', () => {
  test('running: writes are 507 saying what to do, the API shows only what is saved, and deleting a recording makes room', async () => {
    freshCard()
    const s = await start()
    try {
      expect((await s.call('POST', '/api/preferences/save_preferences', prefs('127.0.0.10'))).status).toBe(200)
      fill()
      expect((await s.call('GET', '/api/recordings/disk')).body.free).toBeLessThan(8192)

      const saved = await s.call('POST', '/api/preferences/save_preferences', prefs('127.0.0.99'))
      expect(saved.status).toBe(507)
      expect(saved.body.detail).toContain('is full')
      expect(saved.body.detail).toContain('delete recordings')
      expect((await s.call('GET', '/api/preferences')).body.default_stream.host).toBe('127.0.0.10')

      const named = await s.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'bow' })
      expect(named.status).toBe(507)
      expect((await webcam(s)).nickname).not.toBe('bow') // not shown as if saved

      const before = brightness(await webcam(s))
      const set = await s.call('POST', '/api/devices/set_uvc_control', { bus_info: WEBCAM, control_id: BRIGHTNESS, value: before + 10 })
      expect(set.status).toBe(507)
      expect(set.body.detail).toContain('camera holds the new value')
      expect(brightness(await webcam(s))).toBe(before + 10) // true: the camera has it

      const health = (await s.call('GET', '/api/health')).body
      expect(health.status).toBe('degraded')
      expect(health.settings).toMatchObject({ state: 'degraded', detail: expect.stringContaining('is full') })
      expect(s.logs.some((l) => l.status === 507)).toBe(true)

      // The pilot deletes a recording: room again, and saving works.
      const deleted = await s.call('DELETE', '/api/recordings/dive.mkv')
      expect(deleted.status).toBe(200)
      // Health looks at the card again at most once a second: wait for it to see the room (before any save).
      await until('health to see room on the card', () => s.call('GET', '/api/health'), (r) => r.body.settings?.state === 'ok', 10_000)
      expect((await s.call('POST', '/api/preferences/save_preferences', prefs('127.0.0.11'))).status).toBe(200)
      expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'bow' })).status).toBe(200)
      expect((await s.call('GET', '/api/health')).body.settings).toEqual({ state: 'ok' })
    } finally {
      await s.stop()
    }
  })

  test('restarting: the service starts, reads the saved settings, lists its cameras, and saves once there is room', async () => {
    freshCard()
    const before = await start()
    try {
      expect((await before.call('POST', '/api/preferences/save_preferences', prefs('127.0.0.11'))).status).toBe(200)
      expect((await before.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'bow' })).status).toBe(200)
    } finally {
      await before.stop()
    }
    fill()
    const s = await start()
    try {
      expect((await s.call('GET', '/api/preferences')).body.default_stream.host).toBe('127.0.0.11')
      expect((await webcam(s)).nickname).toBe('bow')
      expect(((await s.call('GET', '/api/devices')).body as any[]).length).toBeGreaterThan(1)
      expect((await s.call('GET', '/api/recordings')).body.map((r: any) => r.name)).toEqual(['dive'])
    } catch (e) {
      await s.stop()
      throw e
    }
    await roomAgainThenRestart(s, '127.0.0.12')
  })

  test('a first start on a full card (no settings database yet): it runs on defaults and saves once there is room', async () => {
    freshCard()
    fill()
    const s = await start()
    try {
      expect((await s.call('GET', '/api/preferences')).body.default_stream.host).toBe('127.0.0.1') // the default
      expect(((await s.call('GET', '/api/devices')).body as any[]).length).toBeGreaterThan(1)
      expect((await s.call('GET', '/api/health')).body.settings.state).toBe('degraded')
      // Cameras seen for the first time run on unsaved defaults; a refused change leaves them as they were.
      expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'aft' })).status).toBe(507)
      expect((await s.call('GET', '/api/devices')).status).toBe(200)
      expect((await webcam(s)).nickname).toBe('')
    } catch (e) {
      await s.stop()
      throw e
    }
    await roomAgainThenRestart(s, '127.0.0.13')
  })

  test('a card remounted read-only: the service starts with the saved settings and says why nothing can be saved', async () => {
    freshCard()
    const s = await start()
    try {
      expect((await s.call('POST', '/api/preferences/save_preferences', prefs('127.0.0.20'))).status).toBe(200)
      expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'stern' })).status).toBe(200)
      writeFileSync(join(card, 'recordings', 'keep.mkv'), Buffer.alloc(1000))
    } finally {
      await s.stop()
    }
    disk.remount('ro')
    try {
      const ro = await start()
      try {
        expect((await ro.call('GET', '/api/preferences')).body.default_stream.host).toBe('127.0.0.20')
        expect((await webcam(ro)).nickname).toBe('stern')
        expect((await ro.call('GET', '/api/health')).body.settings).toMatchObject({ state: 'degraded', detail: expect.stringContaining('read-only') })
        const refused = await ro.call('POST', '/api/preferences/save_preferences', prefs('127.0.0.21'))
        expect(refused.status).toBe(507)
        expect(refused.body.detail).toContain('read-only')
        expect((await ro.call('GET', '/api/preferences')).body.default_stream.host).toBe('127.0.0.20')
        const del = await ro.call('DELETE', '/api/recordings/keep.mkv')
        expect(del).toMatchObject({ status: 502, body: { detail: expect.stringContaining('EROFS') } })
        const ren = await ro.call('PATCH', '/api/recordings/keep.mkv/other.mkv')
        expect(ren).toMatchObject({ status: 502, body: { detail: expect.stringContaining('EROFS') } })
        expect(existsSync(join(card, 'recordings', 'keep.mkv'))).toBe(true)
      } finally {
        await ro.stop()
      }
    } finally {
      disk.remount('rw')
    }
  })
})

describe('recording while streaming on a full card', () => {
  test('start_recording is 507 with what to do and writes nothing; with room again it records', async () => {
    freshCard()
    const gst = Bun.which('gst-launch-1.0')
    if (!gst) throw new Error('needs GStreamer (scripts/setup/gstreamer.sh)')
    const s = await startTestServer({
      plugins: await Promise.all(['mock', 'cameras', 'preferences', 'recordings', 'gstreamer'].map(loadPlugin)),
      dataDir: card,
      // The card is 4 MB: ask for 1 MiB free to start a recording (the default is 64 MiB).
      config: { simulate: 'default', minFreeToRecordMiB: 1 },
    })
    try {
      const configured = await s.call('POST', '/api/devices/configure_stream', {
        bus_info: WEBCAM,
        stream_type: 'UDP',
        encode_type: 'MJPG',
        stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
        enabled: true,
        endpoints: [{ host: '127.0.0.1', port: freeUdpPortPair() }],
      })
      expect(configured.status).toBe(200)
      await until('the stream running', () => webcam(s), (d) => d.stream_status?.state === 'running', 20_000)
      fill()
      const files = () => readdirSync(join(card, 'recordings')).sort()
      expect(files()).toEqual(['dive.mkv'])

      const refused = await s.call('POST', '/api/devices/start_recording', { bus_info: WEBCAM })
      expect(refused.status).toBe(507)
      expect(refused.body.detail).toMatch(/^The recordings disk has \d+(\.\d+)? MB free; a recording needs at least 1 MB to start \(--min-free-to-record\)\. Delete recordings \(DELETE \/api\/recordings\/\{name\}\), then start it again$/)
      expect(files()).toEqual(['dive.mkv']) // nothing half-written
      expect((await webcam(s)).recording).toMatchObject({ active: false })

      expect((await s.call('DELETE', '/api/recordings/dive.mkv')).status).toBe(200)
      const started = await s.call('POST', '/api/devices/start_recording', { bus_info: WEBCAM })
      expect(started.status, JSON.stringify(started.body)).toBe(200)
      expect(started.body).toMatchObject({ active: true })
      expect((await s.call('POST', '/api/devices/stop_recording', { bus_info: WEBCAM })).status).toBe(200)
    } finally {
      await s.stop()
    }
  }, 90_000)
})

