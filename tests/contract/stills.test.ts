// Stills (plugins/mavlink/capture.ts), over HTTP (POST /api/devices/capture_still) and MAVLink
// (IMAGE_START_CAPTURE): bounded per client and per peer (429, DENIED), refused below the free-space floor
// (507, DENIED) with nothing written, each under a name of its own (50 at once: 50 whole files), and
// listed as stills, apart from a recording made in the same second. The snapshot service is a stand-in
// on loopback that answers a fixed JPEG, so no GStreamer is needed.
import { afterEach, expect, test } from 'bun:test'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import type { Config } from '../../core/config'
import { createLogger } from '../../core/log'
import type { Streamer } from '../../core/types'
import { MediaHub } from '../../media/hub'
import { freeBytes } from '../../core/disk'
import { CLIENT_LIMITS } from '../../core/http/client-limits'
import { loadPlugin } from '../../core/loader'
import { segmentedRecordingStem, segmentFileName } from '../../core/naming'
import { definePlugin } from '../../core/plugin'
import { startTestServer, until, type TestServer } from '../helpers'
import { GroundStation, MAV, type Message } from '../mavlink-gcs'
import { EHD } from './setup'

/** A small JPEG: SOI, some bytes, EOI. */
const JPEG = new Uint8Array([0xff, 0xd8, ...Array.from({ length: 2000 }, (_, i) => i & 0x7f), 0xff, 0xd9])

let cleanups: (() => Promise<void> | void)[] = []
afterEach(async () => {
  for (const c of cleanups.reverse()) await c()
  cleanups = []
})

/**
 * The service with a stand-in snapshot service: every camera's `watch.snapshot` is a loopback server
 * answering JPEG; `hold` keeps its answers back until released, so stills are truly in flight together.
 */
async function start(config: Partial<Config> = {}, options: { mavlink?: boolean } = {}) {
  let release: () => void = () => {}
  let held: Promise<void> | null = null
  let served = 0
  const snapshots = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    async fetch() {
      served++
      if (held) await held
      return new Response(JPEG, { headers: { 'content-type': 'image/jpeg' } })
    },
  })
  const standIn = definePlugin({
    name: 'snapshot-stand-in',
    setup({ registry }) {
      registry.addWatchLink('snapshot', (bus_info) => `http://127.0.0.1:${snapshots.port}/${encodeURIComponent(bus_info)}.jpg`, 'snapshot-stand-in')
      return new Elysia({ name: 'periscope:snapshot-stand-in' })
    },
  })
  // MAVLink puts a camera on the link while its stream runs: a stand-in streamer says EHD's does (a real hub, no GStreamer).
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 15, members: [EHD], log: createLogger('error') })
  const streamer = {
    name: 'stand-in',
    activeRecordings: () => [],
    live: (bus_info: string) => (bus_info === EHD ? { hub, member: 0 } : null),
    recording: () => ({ active: false, file: null, started: null, bytes: 0, error: null }),
    status: () => ({ state: 'running', error: null, restarts: 0 }),
    frameDrops: () => 0,
    stopAll: async () => {},
  } as unknown as Streamer
  const streaming = definePlugin({
    name: 'stand-in-streamer',
    setup({ registry }) {
      registry.provide('streamer', streamer, 'stand-in-streamer')
      return new Elysia({ name: 'periscope:stand-in-streamer' })
    },
  })
  const names = ['mock', 'cameras', 'preferences', 'recordings', 'cockpit', ...(options.mavlink ? ['mavlink'] : [])]
  const plugins = [...(await Promise.all(names.map(loadPlugin))), standIn, ...(options.mavlink ? [streaming] : [])]
  const s = await startTestServer({ plugins, config: { simulate: 'default', ...config } })
  cleanups.push(async () => {
    release()
    await s.stop()
    hub.close()
    snapshots.stop(true)
  })
  return {
    s,
    dir: s.ctx.config.recordingsDir,
    served: () => served,
    hold() {
      held = new Promise<void>((resolve) => (release = resolve))
    },
    release() {
      held = null
      release()
    },
  }
}

const still = (s: TestServer, bus_info = EHD) => s.call('POST', '/api/devices/capture_still', { bus_info })
const files = (dir: string) => {
  try {
    return readdirSync(dir).sort()
  } catch {
    return []
  }
}

test('HTTP: a client past its rate gets 429 with Retry-After and a sentence; only the stills answered 200 are written', async () => {
  const { s, dir } = await start()
  const { burst } = CLIENT_LIMITS.still
  const answers = await Promise.all(Array.from({ length: burst + 5 }, () => still(s)))
  const ok = answers.filter((a) => a.status === 200)
  const limited = answers.filter((a) => a.status === 429)
  expect(ok.length + limited.length).toBe(answers.length)
  expect(ok.length).toBeGreaterThanOrEqual(burst)
  expect(limited.length).toBeGreaterThan(0)
  expect(limited[0]!.body).toEqual({ detail: expect.stringMatching(/^Too many stills taken from this client: 10 at once, then one every 1 s; try again in \d+ s$/) })
  expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
  expect(files(dir)).toEqual(ok.map((a) => a.body.file).sort())
})

test('HTTP: below the free-space floor (--min-free-to-record) a still is 507 with what to do, and nothing is written', async () => {
  const { s, dir, served } = await start()
  mkdirSync(dir, { recursive: true })
  // The floor just above what this disk has free: the disk is "full" for a still, whatever its size.
  s.ctx.config.minFreeToRecordMiB = Math.ceil(freeBytes(dir)! / 2 ** 20) + 1024
  const refused = await still(s)
  expect(refused.status).toBe(507)
  expect(refused.body.detail).toMatch(/^The recordings disk has \d+ MB free; a still needs at least \d+ MB to start \(--min-free-to-record\)\. Delete recordings \(DELETE \/api\/recordings\/\{name\}\), then take it again$/)
  expect(files(dir)).toEqual([])
  expect(served()).toBe(0) // not even taken
  s.ctx.config.minFreeToRecordMiB = 0
  expect((await still(s)).status).toBe(200)
})

test('50 stills at the same moment: 50 names, 50 whole files, nothing left half-written', async () => {
  const { s, dir, hold, release, served } = await start({ clientLimits: false })
  hold()
  const pending = Array.from({ length: 50 }, () => still(s))
  // Every one of them is in flight (its snapshot asked for) before any is answered.
  await until('50 snapshots asked for', async () => served(), (n) => n === 50)
  release()
  const answers = await Promise.all(pending)
  expect(answers.map((a) => a.status)).toEqual(Array(50).fill(200))
  const names = answers.map((a) => a.body.file as string)
  expect(new Set(names).size).toBe(50)
  expect(files(dir)).toEqual([...names].sort())
  for (const name of names) expect(new Uint8Array(readFileSync(join(dir, name)))).toEqual(JPEG)
  const listed = (await s.call('GET', '/api/recordings')).body as any[]
  expect(listed).toHaveLength(50)
  expect(new Set(listed.map((r) => r.name)).size).toBe(50)
  expect(listed.every((r) => r.kind === 'still' && r.format === 'jpg')).toBe(true)
})

test('a still and a recording of the same camera in the same second: two names, two kinds, the spec\'s fields intact', async () => {
  const { s, dir } = await start()
  const taken = await still(s)
  expect(taken.status).toBe(200)
  const file = taken.body.file as string
  const device = (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD)
  const label = device.nickname || device.name
  // The still's moment, to the second, as its name says it: a recording started then gets the stem the recorder gives it.
  const m = /_(\d{4})-(\d\d)-(\d\d)_(\d\d)-(\d\d)-(\d\d)-(\d{3})\.jpg$/.exec(file)!
  expect(m).not.toBeNull()
  const when = new Date(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!, +m[7]!)
  const stem = segmentedRecordingStem(dir, label, 'mkv', when)
  writeFileSync(join(dir, segmentFileName(stem, 1, 'mkv')), 'video')
  const listed = (await s.call('GET', '/api/recordings')).body as any[]
  expect(listed).toHaveLength(2)
  const byKind = Object.fromEntries(listed.map((r) => [r.kind, r]))
  expect(byKind.still).toMatchObject({ name: file.slice(0, -4), format: 'jpg', kind: 'still' })
  expect(byKind.recording).toMatchObject({ name: stem, format: 'mkv', kind: 'recording' })
  expect(byKind.still.name).not.toBe(byKind.recording.name)
  for (const r of listed) for (const field of ['path', 'name', 'format', 'duration', 'size', 'created']) expect(typeof r[field]).toBe('string')
})

/** A ground station on the service's udpout, and the component id of one camera. */
async function mavlinkService(config: Partial<Config> = {}) {
  const gcs = await GroundStation.udp()
  cleanups.push(() => gcs.close())
  const started = await start({ mavlink: { kind: 'udpout', host: '127.0.0.1', port: gcs.port }, ...config }, { mavlink: true })
  await until('a camera heartbeat', async () => gcs.cameraHeartbeats().size, (n) => n > 0, 20_000)
  const compid = [...gcs.cameraHeartbeats().keys()].sort()[0]!
  return { ...started, gcs, compid }
}

/** IMAGE_START_CAPTURE (one image) from a ground station of `from`'s ids; its COMMAND_ACK's result. */
async function shoot(gcs: GroundStation, compid: number, from: { sysid: number; compid: number }): Promise<number> {
  const since = gcs.messages.length
  gcs.send('COMMAND_LONG', { target_system: 1, target_component: compid, command: MAV.CMD_IMAGE_START_CAPTURE, confirmation: 0, param1: 0, param2: 0, param3: 1, param4: 0 }, from)
  const ack: Message = await gcs.next(
    'the COMMAND_ACK of IMAGE_START_CAPTURE',
    (m) => m.name === 'COMMAND_ACK' && m.compid === compid && m.fields.command === MAV.CMD_IMAGE_START_CAPTURE && m.fields.target_system === from.sysid && m.fields.target_component === from.compid,
    10_000,
    since,
  )
  return ack.fields.result as number
}

test('MAVLink: a peer past its rate is DENIED, another peer is not; ACCEPTED only for stills that are written', async () => {
  const { gcs, compid, dir } = await mavlinkService()
  const qgc = { sysid: 255, compid: 190 }
  const results: number[] = []
  // Until the first refusal (at most 40: the rate is 10 at once, then one a second).
  while (results.length < 40 && !results.includes(MAV.RESULT_DENIED)) results.push(await shoot(gcs, compid, qgc))
  expect(results.at(-1)).toBe(MAV.RESULT_DENIED)
  const accepted = results.filter((r) => r === MAV.RESULT_ACCEPTED).length
  expect(accepted).toBeGreaterThanOrEqual(CLIENT_LIMITS.still.burst)
  expect(accepted).toBe(results.length - 1)
  // Another ground station on the link has its own rate.
  expect(await shoot(gcs, compid, { sysid: 254, compid: 190 })).toBe(MAV.RESULT_ACCEPTED)
  const captured = () => gcs.messages.filter((m) => m.name === 'CAMERA_IMAGE_CAPTURED' && m.compid === compid)
  await until('a CAMERA_IMAGE_CAPTURED per accepted still', async () => captured().length, (n) => n === accepted + 1)
  expect(captured().every((m) => m.fields.capture_result === 1)).toBe(true)
  expect(files(dir)).toHaveLength(accepted + 1)
}, 60_000)

test('MAVLink: senders with forged ids, each new, still share the link\'s rate: DENIED past it', async () => {
  const { gcs, compid } = await mavlinkService()
  const { burst } = CLIENT_LIMITS.still_mavlink
  const results: number[] = []
  // A new system id each time, so no sender's own rate is ever reached (at most 60: 20 at once, then two a second).
  for (let sysid = 2; results.length < 60 && !results.includes(MAV.RESULT_DENIED); sysid++) results.push(await shoot(gcs, compid, { sysid, compid: 190 }))
  expect(results.at(-1)).toBe(MAV.RESULT_DENIED)
  expect(results.filter((r) => r === MAV.RESULT_ACCEPTED).length).toBeGreaterThanOrEqual(burst)
}, 60_000)

test('MAVLink: below the free-space floor a still is DENIED and nothing is written', async () => {
  const { s, gcs, compid, dir, served } = await mavlinkService()
  mkdirSync(dir, { recursive: true })
  s.ctx.config.minFreeToRecordMiB = Math.ceil(freeBytes(dir)! / 2 ** 20) + 1024
  expect(await shoot(gcs, compid, { sysid: 255, compid: 190 })).toBe(MAV.RESULT_DENIED)
  expect(served()).toBe(0)
  expect(files(dir)).toEqual([])
  expect(gcs.messages.some((m) => m.name === 'CAMERA_IMAGE_CAPTURED')).toBe(false)
}, 60_000)
