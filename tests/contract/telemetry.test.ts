// The vehicle's telemetry in the core (core/telemetry.ts): the source's change announcements, the text a
// recording's subtitle track carries and its parser (the sidecars), and record-while-armed per camera:
// saved, shown on the device, and arming answered with a `record_while_armed` event even when it fails.
import { describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { AUTOPILOT_TIMEOUT_MS, formatTelemetryText, parseTelemetryText, TelemetrySource, type VehicleTelemetry } from '../../core/telemetry'
import { listenEvents, tempDir, until } from '../helpers'
import { device, EHD, startContractServer } from './setup'

const VEHICLE: VehicleTelemetry = {
  heartbeat_at: Date.now(), armed: true, mode: 'ALT_HOLD', depth_m: 12.345, heading_deg: 359.6, roll_deg: -0.04, pitch_deg: 7.25, lat: -33.8568, lon: 151.2153,
  battery_v: 15.804, battery_pct: 61.6, battery_a: 1.5, pressure_hpa: 2250, water_temp_c: 9.87,
}

describe('the text track line', () => {
  test('says every value a pilot reads, and parses back to them', () => {
    const text = formatTelemetryText({ vehicle: VEHICLE, stream: 'running', utc: new Date('2026-11-25T18:42:01.500Z') })
    expect(text).toBe('depth 12.35 m · heading 360° · roll 0.0° · pitch 7.3° · water 9.9 °C\nARMED · ALT_HOLD · position -33.8568000 151.2153000 · battery 15.80 V 62% · video running · 18:42:01 UTC')
    expect(parseTelemetryText(text)).toEqual({
      armed: true, mode: 'ALT_HOLD', depth_m: 12.35, heading_deg: 360, roll_deg: 0, pitch_deg: 7.3, water_temp_c: 9.9, lat: -33.8568, lon: 151.2153,
      battery_v: 15.8, battery_pct: 62, stream: 'running', utc: '18:42:01',
    })
  })

  test('leaves out what the autopilot did not report, and says so when it went silent', () => {
    const sparse = { ...VEHICLE, armed: false, mode: 'MODE 42', depth_m: null, lat: null, lon: null, battery_v: null, roll_deg: null, pitch_deg: null, heading_deg: null, water_temp_c: null }
    const text = formatTelemetryText({ vehicle: sparse, stream: 'stalled', utc: new Date(0) })
    expect(text).toBe('DISARMED · MODE 42 · video stalled · 00:00:00 UTC')
    expect(parseTelemetryText(text)).toMatchObject({ armed: false, mode: 'MODE 42', depth_m: null, lat: null, battery_v: null, stream: 'stalled' })
    const silent = formatTelemetryText({ vehicle: null, stream: 'running', utc: new Date(0) })
    expect(silent).toBe('no autopilot · video running · 00:00:00 UTC')
    expect(parseTelemetryText(silent)).toMatchObject({ armed: null, mode: null, stream: 'running' })
  })
})

describe('the telemetry source', () => {
  test('announces the autopilot, arming and mode changes, and forgets an autopilot gone silent', () => {
    const source = new TelemetrySource()
    const heard: string[] = []
    source.onChange((change, now) => heard.push(`${change}:${now?.armed ?? '-'}:${now?.mode ?? '-'}`))
    source.update({ depth_m: 3 }) // before any HEARTBEAT: kept, not announced
    expect(source.current()).toBeNull()
    source.heartbeat(false, 'MANUAL')
    expect(source.current()).toMatchObject({ armed: false, mode: 'MANUAL', depth_m: 3 })
    source.heartbeat(false, 'MANUAL') // nothing new
    source.heartbeat(false, 'STABILIZE')
    source.heartbeat(true, 'STABILIZE')
    source.update({ depth_m: 4 })
    source.heartbeat(false, 'STABILIZE')
    expect(heard).toEqual(['autopilot:false:MANUAL', 'mode:false:STABILIZE', 'armed:true:STABILIZE', 'values:true:STABILIZE', 'armed:false:STABILIZE'])
    expect(source.current(Date.now() + AUTOPILOT_TIMEOUT_MS + 1)).toBeNull()
    source.heartbeat(true, 'MANUAL')
    heard.length = 0
    source.clear()
    expect(heard).toEqual(['autopilot:-:-', 'armed:-:-'])
  })

  test('an autopilot heard again after a silence: a change of its armed state meanwhile is announced', () => {
    const source = new TelemetrySource()
    const heard: string[] = []
    source.onChange((change, now) => heard.push(`${change}:${now?.armed ?? '-'}`))
    source.heartbeat(true, 'MANUAL')
    const realNow = Date.now
    try {
      Date.now = () => realNow() + AUTOPILOT_TIMEOUT_MS + 1000 // its link was down for a while
      expect(source.current()).toBeNull()
      source.heartbeat(false, 'MANUAL') // back, disarmed meanwhile
    } finally {
      Date.now = realNow
    }
    expect(heard).toEqual(['autopilot:true', 'armed:true', 'autopilot:false', 'armed:false'])
  })
})

describe("the telemetry's recent past (a pre-recorded start shows its own seconds' values)", () => {
  test('at(): the state as it was then; changesSince(): when the armed state or the mode changed', () => {
    const source = new TelemetrySource()
    const realNow = Date.now
    let now = 1_000_000
    try {
      Date.now = () => now
      source.heartbeat(false, 'MANUAL')
      now += 100
      source.update({ depth_m: 2 })
      now += 400
      source.heartbeat(false, 'ALT_HOLD') // at 1_000_500
      now += 500
      source.heartbeat(true, 'ALT_HOLD') // at 1_001_000
      now += 200
      expect(source.at(999_999)).toBeNull() // before the autopilot was heard
      expect(source.at(1_000_050)).toMatchObject({ mode: 'MANUAL', depth_m: null })
      expect(source.at(1_000_499)).toMatchObject({ mode: 'MANUAL', depth_m: 2 })
      expect(source.at(1_000_500)).toMatchObject({ mode: 'ALT_HOLD', armed: false })
      expect(source.at(1_001_100)).toMatchObject({ mode: 'ALT_HOLD', armed: true })
      expect(source.changesSince(1_000_000)).toEqual([1_000_500, 1_001_000])
      expect(source.changesSince(1_000_500)).toEqual([1_001_000])
      // The autopilot silent past its timeout: none then.
      expect(source.at(1_001_000 + AUTOPILOT_TIMEOUT_MS + 1)).toBeNull()
      // Kept for 32 s (the longest pre-record buffer and a margin), no more.
      now += 40_000
      source.heartbeat(true, 'ALT_HOLD')
      expect(source.at(1_001_100)).toBeNull()
      expect(source.at(now)).toMatchObject({ armed: true })
    } finally {
      Date.now = realNow
    }
  })
})

describe('record while armed', () => {
  test('is saved per camera, shown on the device, and validated', async () => {
    const dataDir = tempDir()
    try {
      let s = await startContractServer({ dataDir })
      expect((await device(s, EHD)).record_while_armed).toBe(false)
      const set = await s.call('POST', '/api/devices/set_record_while_armed', { bus_info: EHD, enabled: true })
      expect(set.status).toBe(200)
      expect(set.body).toEqual({ success: true, record_while_armed: true })
      expect((await s.call('POST', '/api/devices/set_record_while_armed', { bus_info: 'usb-nope', enabled: true })).status).toBe(404)
      const missing = await s.call('POST', '/api/devices/set_record_while_armed', { bus_info: EHD })
      expect(missing.status).toBe(422)
      expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'enabled'] })
      await s.stop()
      s = await startContractServer({ dataDir })
      try {
        expect((await device(s, EHD)).record_while_armed).toBe(true)
      } finally {
        await s.stop()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  test('arming a camera that cannot record says why in a record_while_armed event', async () => {
    const s = await startContractServer()
    const events = listenEvents(`${s.url}/api/events`)
    try {
      await events.ready
      expect((await s.call('POST', '/api/devices/set_record_while_armed', { bus_info: EHD, enabled: true })).status).toBe(200)
      s.ctx.registry.telemetry.heartbeat(true, 'MANUAL') // the autopilot arms (no streamer in this tier)
      const failed = await until('the record_while_armed event', async () => events.events.find((e) => e.type === 'record_while_armed'), (e) => e !== undefined)
      expect(failed!.data).toMatchObject({ bus_info: EHD, armed: true, action: 'failed', file: null })
      expect(failed!.data.detail).toMatch(/armed, but the recording could not start: .*streamer/i)
    } finally {
      events.close()
      await s.stop()
    }
  })
})
