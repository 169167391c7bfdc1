// Spec operations 1–6 and the camera extras on simulated cameras: bodies field by field, every error status.
import { Elysia } from 'elysia'
import { beforeEach, describe, expect, test } from 'bun:test'
import type { RequestValidationError } from '../../core/errors'
import { loadPlugin } from '../../core/loader'
import { definePlugin } from '../../core/plugin'
import type { CameraBackend, RawDevice } from '../../core/types'
import { checkStreamFormat, defaultStream, offeredEncodeTypes, sourcePixelFormat } from '../../plugins/cameras/formats'
import { startTestServer, type TestServer } from '../helpers'
import {
  AUTO_WB,
  BRIGHTNESS,
  controlOf,
  device,
  EHD,
  EXPOSURE_ABSOLUTE,
  EXPOSURE_AUTO,
  FOLLOWER,
  LEADER,
  POWER_LINE,
  PRIVACY,
  startContractServer,
  WB_TEMPERATURE,
  WEBCAM,
} from './setup'

// A fresh instance per test (each stops its own in `finally`): tests never see each other's settings.
let s: TestServer
beforeEach(async () => {
  s = await startContractServer()
})
const stop = () => s.stop()

const post = (path: string, body: unknown) => s.call('POST', path, body)

describe('GET /api/devices (spec §2.1)', () => {
  test('every field, typed and defaulted, sorted by device_type then bus_info', async () => {
    try {
      const { status, body } = await s.call('GET', '/api/devices')
      expect(status).toBe(200)
      expect(body.map((d: any) => [d.device_type, d.bus_info])).toEqual([
        [0, EHD],
        [0, WEBCAM],
        [1, LEADER],
        [2, FOLLOWER],
      ])
      const ehd = body[0]
      expect(Object.keys(ehd).sort()).toEqual(
        [
          'bus_info',
          'cameras',
          'controls',
          'device_info',
          'device_type',
          'followers',
          'frame_stats',
          'is_externally_managed',
          'is_managed',
          'manufacturer',
          'name',
          'nickname',
          'pid',
          'stream',
          'string3',
          'vid',
          'watch',
          'stream_status',
          'leader',
          'recording',
          'record_while_armed',
        ].sort(),
      )
      expect(ehd).toMatchObject({
        name: 'exploreHD USB Camera',
        vid: 0x3961,
        pid: 0x2100,
        manufacturer: 'DeepWater Exploration Inc.',
        nickname: '',
        followers: [],
        is_managed: false,
        frame_stats: { num_drops: 0 },
        is_externally_managed: false,
        string3: 'EHD0001',
        leader: null,
        stream_status: { state: 'stopped', error: null, restarts: 0 },
      })
      // Metadata nodes are device paths but not cameras.
      expect(ehd.device_info).toEqual({ device_name: 'exploreHD USB Camera', bus_info: EHD, device_paths: ['/dev/sim/video0', '/dev/sim/video1', '/dev/sim/video2', '/dev/sim/video3'], vid: 0x3961, pid: 0x2100 })
      expect(ehd.cameras.map((c: any) => [c.path, Object.keys(c.formats)])).toEqual([
        ['/dev/sim/video0', ['MJPG', 'YUYV']],
        ['/dev/sim/video2', ['H264']],
      ])
      expect(ehd.cameras[1].formats.H264[0]).toEqual({ width: 1920, height: 1080, intervals: [{ numerator: 1, denominator: 30 }, { numerator: 1, denominator: 25 }, { numerator: 1, denominator: 15 }] })
      for (const c of ehd.controls) {
        expect(typeof c.control_id).toBe('number')
        expect(typeof c.name).toBe('string')
        expect(['INTEGER', 'BOOLEAN', 'MENU', 'BUTTON', 'INTEGER64', 'CTRL_CLASS', 'STRING', 'BITMASK', 'INTEGER_MENU']).toContain(c.flags.control_type)
        for (const k of ['max_value', 'min_value', 'step']) expect(typeof c.flags[k]).toBe('number')
        expect(c.flags).toHaveProperty('default_value')
      }
      expect(controlOf(ehd, POWER_LINE).flags.menu).toEqual([
        { index: 0, name: 'Disabled' },
        { index: 1, name: '50 Hz' },
        { index: 2, name: '60 Hz' },
      ])
      // Under automatic exposure, exposure is inactive, as on the hardware.
      expect(controlOf(ehd, EXPOSURE_ABSOLUTE).flags.inactive).toBe(true)
      expect(body[1].string3).toBe('') // the webcam has no serial
    } finally {
      await stop()
    }
  })

  test('a first-seen device gets H264 1920x1080 at 30 fps, else the largest MJPG; each its own port', async () => {
    try {
      const ehd = await device(s, EHD)
      expect(ehd.stream).toEqual({
        device_path: '/dev/sim/video2',
        encode_type: 'H264',
        stream_type: 'UDP',
        endpoints: [{ host: '127.0.0.1', port: 5600 }], // simulated cameras stream to loopback by default
        width: 1920,
        height: 1080,
        interval: { numerator: 1, denominator: 30 },
        enabled: false,
      })
      const cam = await device(s, WEBCAM)
      expect(cam.stream).toMatchObject({ device_path: '/dev/sim/video12', encode_type: 'MJPG', width: 1280, height: 720, interval: { numerator: 1, denominator: 30 } })
      const { body } = await s.call('GET', '/api/devices')
      const ports = body.map((d: any) => d.stream.endpoints[0].port)
      expect(new Set(ports).size).toBe(ports.length)
    } finally {
      await stop()
    }
  })
})

describe('POST /api/devices/set_uvc_control', () => {
  test('sets, answers what the hardware holds, and shows it', async () => {
    try {
      expect(await post('/api/devices/set_uvc_control', { bus_info: EHD, control_id: BRIGHTNESS, value: -12 })).toMatchObject({ status: 200, body: { success: true, value: -12 } })
      expect(controlOf(await device(s, EHD), BRIGHTNESS).value).toBe(-12)
      // Turning auto white balance off makes the temperature active; the firmware rounds it to 10 K.
      expect((await post('/api/devices/set_uvc_control', { bus_info: EHD, control_id: WB_TEMPERATURE, value: 5000 })).status).toBe(409)
      expect((await post('/api/devices/set_uvc_control', { bus_info: EHD, control_id: AUTO_WB, value: 0 })).status).toBe(200)
      const wb = controlOf(await device(s, EHD), WB_TEMPERATURE)
      expect(wb.flags.inactive).toBeUndefined()
      expect(await post('/api/devices/set_uvc_control', { bus_info: EHD, control_id: WB_TEMPERATURE, value: 4604 })).toMatchObject({ status: 200, body: { value: 4600 } })
      expect(controlOf(await device(s, EHD), WB_TEMPERATURE).value).toBe(4600)
      // Manual exposure mode makes exposure settable.
      expect((await post('/api/devices/set_uvc_control', { bus_info: EHD, control_id: EXPOSURE_AUTO, value: 1 })).status).toBe(200)
      expect(await post('/api/devices/set_uvc_control', { bus_info: EHD, control_id: EXPOSURE_ABSOLUTE, value: 300 })).toMatchObject({ status: 200, body: { value: 300 } })
    } finally {
      await stop()
    }
  })

  test('refusals: range, type, menu, read-only, inactive, unknown ids', async () => {
    try {
      const set = (control_id: number, value: unknown, bus_info = EHD) => post('/api/devices/set_uvc_control', { bus_info, control_id, value })
      const range = await set(BRIGHTNESS, 65)
      expect(range.status).toBe(422)
      expect(range.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['body', 'value'], input: 65 })
      expect(range.body.detail[0].msg).toContain('from -64 to 64')
      expect((await set(BRIGHTNESS, 1.5)).status).toBe(422)
      expect((await set(AUTO_WB, 2)).status).toBe(422)
      const menu = await set(POWER_LINE, 7)
      expect(menu.status).toBe(422)
      expect(menu.body.detail[0].msg).toContain('0, 1, 2')
      expect(await set(PRIVACY, 1)).toMatchObject({ status: 409, body: { detail: expect.stringContaining('read-only') } })
      expect(await set(EXPOSURE_ABSOLUTE, 100)).toMatchObject({ status: 409, body: { detail: expect.stringContaining('inactive') } })
      expect(await set(12345, 1)).toMatchObject({ status: 404, body: { detail: expect.stringContaining('no control with id 12345') } })
      expect(await set(BRIGHTNESS, 1, 'usb-nowhere')).toMatchObject({ status: 404, body: { detail: expect.stringContaining("'usb-nowhere'") } })
      // Nothing refused reached the hardware or the store.
      expect(controlOf(await device(s, EHD), BRIGHTNESS).value).toBe(0)
    } finally {
      await stop()
    }
  })

  test('a value is a number on every camera: booleans are 0/1 in value, default_value and the answer; true/false are still taken', async () => {
    try {
      const { body } = await s.call('GET', '/api/devices')
      const controls = (body as any[]).flatMap((d) => d.controls)
      const booleans = controls.filter((c: any) => c.flags.control_type === 'BOOLEAN')
      expect(booleans.length).toBeGreaterThan(0)
      for (const c of controls) {
        if (c.flags.control_type !== 'STRING') expect(typeof c.value).toBe('number')
        expect(typeof c.flags.default_value).toBe('number')
      }
      for (const c of booleans) {
        expect([0, 1]).toContain(c.value)
        expect([0, 1]).toContain(c.flags.default_value)
      }
      // As the anchor's pydantic float takes them, true/false arrive as 1/0 and answer as numbers.
      expect(await post('/api/devices/set_uvc_control', { bus_info: EHD, control_id: AUTO_WB, value: false })).toMatchObject({ status: 200, body: { success: true, value: 0 } })
      expect(controlOf(await device(s, EHD), AUTO_WB).value).toBe(0)
      expect(await post('/api/devices/set_uvc_control', { bus_info: EHD, control_id: AUTO_WB, value: true })).toMatchObject({ status: 200, body: { success: true, value: 1 } })
      expect(controlOf(await device(s, EHD), AUTO_WB).value).toBe(1)
    } finally {
      await stop()
    }
  })

  test('the cameras plugin decides the type: a backend answering true/false (a plain-JS plugin) still shows 0/1', async () => {
    // A backend that answers booleans, as the V4L2 backend once did and an untyped plugin still could.
    const BUS = 'usb-bool-1'
    const AUTO = 0x0098090c
    let held: boolean | number = true
    const control = () => ({ control_id: AUTO, name: 'White Balance, Automatic', value: held, flags: { control_type: 'BOOLEAN', min_value: 0, max_value: 1, step: 1, default_value: true } })
    const backend = {
      name: 'booleans',
      list: async () => [{ bus_info: BUS, name: 'Boolean camera', vid: 1, pid: 2, manufacturer: null, serial: '', device_paths: ['/dev/b0'], cameras: [], controls: [control()] }],
      controls: async () => [control()],
      setControl: async (_bus: string, _id: number, value: unknown) => (held = Boolean(value)),
      videoSource: () => ({ kind: 'v4l2' as const, device: '/dev/b0' }),
      onChange: () => () => {},
    } as unknown as CameraBackend
    const plugin = definePlugin({ name: 'booleans', setup: ({ registry }) => (registry.addCameraBackend(backend, 'booleans'), new Elysia({ name: 'periscope:booleans' })) })
    const b = await startTestServer({ plugins: [plugin, await loadPlugin('cameras')] })
    try {
      const shown = async () => ((await b.call('GET', '/api/devices')).body as any[])[0].controls[0]
      expect(await shown()).toMatchObject({ value: 1, flags: { default_value: 1 } })
      expect(await b.call('POST', '/api/devices/set_uvc_control', { bus_info: BUS, control_id: AUTO, value: 0 })).toMatchObject({ status: 200, body: { success: true, value: 0 } })
      expect(held).toBe(false) // the backend did hold a boolean
      expect((await shown()).value).toBe(0)
    } finally {
      await b.stop()
      await stop() // the beforeEach's instance too (the leak check found it left listening)
    }
  })

  test('device failures map to 502 / 504 / 409 / 404 naming the errno, and the value is not saved', async () => {
    try {
      const fail = (errno: string) => post('/api/mock/fail', { bus_info: EHD, errno, count: 1 })
      const set = () => post('/api/devices/set_uvc_control', { bus_info: EHD, control_id: BRIGHTNESS, value: 10 })
      for (const [errno, status] of [
        ['EIO', 502],
        ['EPROTO', 502],
        ['ETIMEDOUT', 504],
        ['EBUSY', 409],
        ['ENODEV', 404],
      ] as const) {
        expect((await fail(errno)).status).toBe(200)
        const r = await set()
        expect(r.status).toBe(status)
        expect(r.body.detail).toContain(errno)
      }
      expect(controlOf(await device(s, EHD), BRIGHTNESS).value).toBe(0)
      expect((await set()).status).toBe(200)
    } finally {
      await stop()
    }
  })
})

describe('followers', () => {
  const add = (leader: string, follower: string, external = false) =>
    post(external ? '/api/devices/external/add_follower' : '/api/devices/add_follower', { leader_bus_info: leader, follower_bus_info: follower })
  const remove = (leader: string, follower: string) => post('/api/devices/remove_follower', { leader_bus_info: leader, follower_bus_info: follower })

  test('add and remove, with every refusal answered by a reason', async () => {
    try {
      expect((await add(EHD, FOLLOWER)).body.detail).toContain('cannot lead')
      expect((await add(LEADER, EHD)).body.detail).toContain('cannot follow')
      expect((await add(LEADER, LEADER)).body.detail).toContain('cannot follow itself')
      expect((await add(LEADER, 'usb-x')).status).toBe(404)
      expect((await add('usb-x', FOLLOWER)).status).toBe(404)
      expect(await add(LEADER, FOLLOWER)).toMatchObject({ status: 200, body: { success: true } })
      const leader = await device(s, LEADER)
      const follower = await device(s, FOLLOWER)
      expect(leader.followers).toEqual([FOLLOWER])
      expect(follower).toMatchObject({ is_managed: true, leader: LEADER })
      expect(follower.stream.enabled).toBe(false)
      expect(follower.stream.endpoints).toEqual([])
      expect(await add(LEADER, FOLLOWER)).toMatchObject({ status: 409, body: { detail: expect.stringContaining('already follows') } })
      // A managed follower streams with its leader: its own stream is not configurable.
      const conf = await post('/api/devices/configure_stream', {
        bus_info: FOLLOWER,
        stream_type: 'UDP',
        encode_type: 'H264',
        stream_format: { width: 1920, height: 1080, interval: { numerator: 1, denominator: 30 } },
        enabled: false,
        endpoints: [],
      })
      expect(conf.status).toBe(409)
      expect(await remove(LEADER, FOLLOWER)).toMatchObject({ status: 200, body: { success: true } })
      expect((await device(s, LEADER)).followers).toEqual([])
      expect((await device(s, FOLLOWER)).is_managed).toBe(false)
      // The anchor says success here; removing what is not there is a 409.
      expect(await remove(LEADER, FOLLOWER)).toMatchObject({ status: 409, body: { detail: expect.stringContaining('is not a follower') } })
      expect((await remove(LEADER, 'usb-x')).status).toBe(404)
    } finally {
      await stop()
    }
  })

  test('external/add_follower bypasses only the externally-managed check', async () => {
    try {
      expect((await post('/api/devices/external/notify_camera', { bus_info: FOLLOWER })).status).toBe(200)
      expect(await add(LEADER, FOLLOWER)).toMatchObject({ status: 409, body: { detail: expect.stringContaining('external') } })
      expect((await add(LEADER, FOLLOWER, true)).status).toBe(200)
      expect((await add(LEADER, FOLLOWER, true)).status).toBe(409)
    } finally {
      await stop()
    }
  })
})

describe('streams without a streamer', () => {
  const configure = (over: Record<string, unknown> = {}) =>
    post('/api/devices/configure_stream', {
      bus_info: EHD,
      stream_type: 'UDP',
      encode_type: 'H264',
      stream_format: { width: 1280, height: 720, interval: { numerator: 1, denominator: 25 } },
      enabled: false,
      endpoints: [{ host: '127.0.0.5', port: 5602 }],
      ...over,
    })

  test('configure checks the real formats and saves; starting is a 503 that keeps the configuration', async () => {
    try {
      expect(await configure()).toMatchObject({ status: 200, body: { success: true } })
      expect((await device(s, EHD)).stream).toEqual({
        device_path: '/dev/sim/video2',
        encode_type: 'H264',
        stream_type: 'UDP',
        endpoints: [{ host: '127.0.0.5', port: 5602 }],
        width: 1280,
        height: 720,
        interval: { numerator: 1, denominator: 25 },
        enabled: false,
      })
      const size = await configure({ stream_format: { width: 1024, height: 768, interval: { numerator: 1, denominator: 30 } } })
      expect(size.status).toBe(422)
      expect(size.body.detail[0].msg).toContain('1920x1080, 1280x720, 800x600, 640x480')
      const rate = await configure({ stream_format: { width: 1280, height: 720, interval: { numerator: 1, denominator: 60 } } })
      expect(rate.body.detail[0].msg).toContain('1/30, 1/25, 1/15')
      const h264 = await configure({ bus_info: WEBCAM })
      expect(h264.status).toBe(422)
      expect(h264.body.detail[0]).toMatchObject({ loc: ['body', 'encode_type'], msg: expect.stringContaining('MJPG, SOFTWARE_H264, NONE') })
      expect((await configure({ enabled: true, endpoints: [] })).status).toBe(422)
      const started = await configure({ enabled: true, encode_type: 'MJPG', stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } } })
      expect(started).toMatchObject({ status: 503, body: { detail: expect.stringContaining('saved') } })
      expect((await device(s, EHD)).stream).toMatchObject({ encode_type: 'MJPG', device_path: '/dev/sim/video0', width: 640, enabled: true })
      expect((await configure({ bus_info: 'usb-x' })).status).toBe(404)
    } finally {
      await stop()
    }
  })

  test('restart_stream: 503 naming the missing streamer, 404 unknown; unconfigure clears', async () => {
    try {
      expect(await post('/api/devices/restart_stream', { bus_info: EHD })).toMatchObject({ status: 503, body: { detail: expect.stringContaining('GStreamer') } })
      expect((await post('/api/devices/restart_stream', { bus_info: 'usb-x' })).status).toBe(404)
      expect(await post('/api/devices/unconfigure_stream', { bus_info: EHD })).toMatchObject({ status: 200 })
      expect((await device(s, EHD)).stream).toMatchObject({ enabled: false, endpoints: [] })
      expect((await post('/api/devices/unconfigure_stream', { bus_info: 'usb-x' })).status).toBe(404)
    } finally {
      await stop()
    }
  })
})

describe('the SOFTWARE_H264 source rule (plugins/cameras/formats.ts)', () => {
  const yuyvSizes = [{ width: 320, height: 240, intervals: [{ numerator: 1, denominator: 5 }] }]
  const rawOnly = (cameras: RawDevice['cameras']): RawDevice => ({ bus_info: 'platform:raw-0', name: 'raw camera', vid: 0, pid: 0, manufacturer: null, serial: '', device_paths: cameras.map((c) => c.path), cameras, controls: [] })

  test('a YUYV-only camera offers SOFTWARE_H264 (read as YUYV) and NONE', async () => {
    try {
      const raw = rawOnly([{ path: '/dev/video0', formats: { YUYV: yuyvSizes } }])
      expect(offeredEncodeTypes(raw)).toEqual(['SOFTWARE_H264', 'NONE'])
      expect(sourcePixelFormat(raw, 'SOFTWARE_H264')).toBe('YUYV')
      expect(checkStreamFormat(raw, 'SOFTWARE_H264', 320, 240, { numerator: 1, denominator: 5 })).toBe('/dev/video0')
      const refusal = (() => {
        try {
          checkStreamFormat(raw, 'MJPG', 320, 240, { numerator: 1, denominator: 5 })
        } catch (e) {
          return e as RequestValidationError
        }
      })()
      expect(refusal?.errors[0]).toMatchObject({ loc: ['body', 'encode_type'], msg: expect.stringContaining('it offers SOFTWARE_H264, NONE') })
      expect(defaultStream(raw, { host: '127.0.0.1', port: 5600 })).toMatchObject({ encode_type: 'SOFTWARE_H264', width: 320, height: 240 })
      // MJPG on any node is preferred over raw.
      const both = rawOnly([{ path: '/dev/video0', formats: { YUYV: yuyvSizes } }, { path: '/dev/video2', formats: { MJPG: yuyvSizes } }])
      expect(sourcePixelFormat(both, 'SOFTWARE_H264')).toBe('MJPG')
      expect(checkStreamFormat(both, 'SOFTWARE_H264', 320, 240, { numerator: 1, denominator: 5 })).toBe('/dev/video2')
    } finally {
      await stop()
    }
  })

  test('the simulated webcam (MJPG and YUYV) offers MJPG, SOFTWARE_H264, NONE and re-encodes its MJPG', async () => {
    try {
      const webcam = await device(s, WEBCAM)
      const raw = rawOnly(webcam.cameras)
      expect(offeredEncodeTypes(raw)).toEqual(['MJPG', 'SOFTWARE_H264', 'NONE'])
      expect(sourcePixelFormat(raw, 'SOFTWARE_H264')).toBe('MJPG')
      const configured = await post('/api/devices/configure_stream', {
        bus_info: WEBCAM,
        stream_type: 'UDP',
        encode_type: 'SOFTWARE_H264',
        stream_format: { width: 1280, height: 720, interval: { numerator: 1, denominator: 30 } },
        enabled: false,
        endpoints: [{ host: '127.0.0.5', port: 5602 }],
      })
      expect(configured.status).toBe(200)
      expect((await device(s, WEBCAM)).stream).toMatchObject({ encode_type: 'SOFTWARE_H264', width: 1280, height: 720 })
    } finally {
      await stop()
    }
  })
})

describe('notify_camera and nicknames', () => {
  test('DEVICE_MANAGED (also the default), DEVICE_UNMANAGED, STREAM_START', async () => {
    try {
      expect((await post('/api/devices/external/notify_camera', { bus_info: EHD })).status).toBe(200)
      expect((await device(s, EHD)).is_externally_managed).toBe(true)
      expect(await post('/api/devices/restart_stream', { bus_info: EHD })).toMatchObject({ status: 409, body: { detail: expect.stringContaining('external') } })
      expect((await post('/api/devices/external/notify_camera', { bus_info: EHD, event: 'DEVICE_UNMANAGED' })).status).toBe(200)
      expect((await device(s, EHD)).is_externally_managed).toBe(false)
      expect((await post('/api/devices/external/notify_camera', { bus_info: EHD, event: 'STREAM_START' })).status).toBe(200)
      expect((await device(s, EHD)).stream).toMatchObject({ device_path: '/dev/sim/video0', encode_type: 'MJPG', width: 1920, height: 1080 })
      expect((await post('/api/devices/external/notify_camera', { bus_info: 'usb-x' })).status).toBe(404)
      // A leader taken over by an external tool leaves its group.
      expect((await post('/api/devices/add_follower', { leader_bus_info: LEADER, follower_bus_info: FOLLOWER })).status).toBe(200)
      expect((await post('/api/devices/external/notify_camera', { bus_info: LEADER, event: 'DEVICE_MANAGED' })).status).toBe(200)
      expect((await device(s, LEADER)).followers).toEqual([])
      expect((await device(s, FOLLOWER)).is_managed).toBe(false)
    } finally {
      await stop()
    }
  })

  test('set_nickname', async () => {
    try {
      expect(await post('/api/devices/set_nickname', { bus_info: EHD, nickname: 'Port camera' })).toMatchObject({ status: 200, body: { success: true } })
      expect((await device(s, EHD)).nickname).toBe('Port camera')
      expect((await post('/api/devices/set_nickname', { bus_info: 'usb-x', nickname: 'a' })).status).toBe(404)
    } finally {
      await stop()
    }
  })
})

describe('vendor options (negative ids) over the exploreHD extension unit', () => {
  test('bitrate, GOP and mode: listed, set through the XU protocol, refused out of range, restored after a re-plug', async () => {
    try {
      const ehd = await device(s, EHD)
      // After power-up the simulated firmware holds the declared defaults (drivers/mock/xu.ts).
      expect(controlOf(ehd, -1)).toMatchObject({ name: 'H.264 Bitrate (bits/s)', value: 5_000_000, flags: { control_type: 'INTEGER', default_value: 5_000_000 } })
      expect(controlOf(ehd, -3).flags.menu).toEqual([
        { index: 1, name: 'CBR' },
        { index: 2, name: 'VBR' },
      ])
      expect(controlOf(await device(s, WEBCAM), -1)).toBeUndefined()
      const set = (control_id: number, value: number, bus_info = EHD) => post('/api/devices/set_uvc_control', { bus_info, control_id, value })
      expect(await set(-1, 2_500_000)).toMatchObject({ status: 200, body: { value: 2_500_000 } })
      expect(await set(-3, 1)).toMatchObject({ status: 200, body: { value: 1 } })
      expect((await set(-2, 30)).status).toBe(422)
      expect((await set(-3, 3)).status).toBe(422)
      expect((await set(-1, 1, WEBCAM)).status).toBe(404)
      await post('/api/mock/unplug', { bus_info: EHD })
      await post('/api/mock/plug', { bus_info: EHD })
      for (let i = 0; i < 100 && !(await device(s, EHD)); i++) await Bun.sleep(10)
      const back = await device(s, EHD)
      expect(controlOf(back, -1).value).toBe(2_500_000)
      expect(controlOf(back, -3).value).toBe(1)
    } finally {
      await stop()
    }
  })
})
