// Recordings from simulated cameras, read back by gst-discoverer-1.0: codec, size, duration; a kill -9
// keeps what was written; a full disk ends the recording cleanly and keeps the file.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, statSync } from 'node:fs'
import { basename, join } from 'node:path'
import type { EncodeType } from '../../core/types'
import { tmpfsCard, type Card } from '../cards'
import { discover, playableSeconds, requireGStreamer, simulatedJob, tempDir, testStreamer, waitFor } from './gstreamer.helpers'

const { streamer, events } = testStreamer()
const cards: Card[] = []

beforeAll(() => requireGStreamer())
afterAll(async () => {
  await streamer.stopAll()
  for (const card of cards) await card.remove()
})

const NAME = /^Sim-Cam_\d{4}-\d\d-\d\d_\d\d-\d\d-\d\d(_\d+)?_seg001\.mkv$/

const cases: { encode: EncodeType; codec: RegExp; width: number; height: number }[] = [
  { encode: 'H264', codec: /H\.264/, width: 640, height: 480 },
  { encode: 'MJPG', codec: /JPEG/, width: 320, height: 240 },
  { encode: 'SOFTWARE_H264', codec: /H\.264/, width: 320, height: 240 },
]

describe.each(cases)('RECORDING $encode', ({ encode, codec, width, height }) => {
  test('a 3.5 s recording stopped with EOS reads back with the right codec, size and duration', async () => {
    const job = simulatedJob({ encode_type: encode, stream_type: 'RECORDING', width, height })
    const t0 = Date.now()
    await streamer.start(job)
    await waitFor('running', () => streamer.status(job.bus_info).state === 'running', 15_000)
    const running = Date.now()
    const [file] = streamer.activeRecordings()
    expect(file).toBeDefined()
    expect(basename(file!)).toMatch(NAME)
    // A recording of a length is a wait of time: 3.5 s of it once the child runs (its start-up, slow on a
    // loaded machine, is not part of what is measured).
    await Bun.sleep(3500)
    await streamer.stop(job.bus_info)
    const stopped = Date.now()
    expect(streamer.activeRecordings()).toEqual([])
    const d = discover(file!)
    expect(d.codec).toMatch(codec)
    expect([d.width, d.height]).toEqual([width, height])
    // Everything from the first frame (before 'running') to the EOS: at least the time it ran, at most since
    // the start plus one frame (a file's duration counts its last frame whole: 116 frames at 30 fps is 3.867 s).
    expect(d.durationS).toBeGreaterThan((stopped - running) / 1000 - 0.5)
    expect(d.durationS).toBeLessThanOrEqual((stopped - t0) / 1000 + 1 / 30)
  }, 45_000)
})

test('kill -9 of a recording pipeline after 5 s leaves a playable file of at least 4 s', async () => {
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'RECORDING', width: 640, height: 480 })
  await streamer.start(job)
  await waitFor('running', () => streamer.status(job.bus_info).state === 'running', 15_000)
  const [file] = streamer.activeRecordings()
  // What is measured is what 5 s of recording leaves after a kill -9: a wait of time, once the child runs
  // (its start-up on a loaded machine is not recording time).
  await Bun.sleep(5000)
  process.kill(streamer.pid(job.bus_info)!, 'SIGKILL')
  await streamer.stop(job.bus_info)
  const d = discover(file!)
  expect(d.codec).toMatch(/H\.264/)
  expect([d.width, d.height]).toEqual([640, 480])
  // What a player gets: decode it to the end; the last frame's timestamp is the playable length.
  const played = playableSeconds(file!)
  console.log(`kill -9 after 5 s: ${played.toFixed(2)} s decodable (gst-discoverer estimates ${d.durationS.toFixed(2)} s)`)
  expect(played).toBeGreaterThanOrEqual(4)
}, 45_000)

test('a full disk ends the recording with a stream_error, no restart, and keeps the file', async () => {
  const card = tmpfsCard('400k')
  cards.push(card)
  const dir = card.dir
  const job = simulatedJob({ encode_type: 'MJPG', stream_type: 'RECORDING', width: 640, height: 480, dir })
  await streamer.start(job)
  await waitFor('the disk-full error', () => streamer.status(job.bus_info).state === 'error', 30_000)
  const status = streamer.status(job.bus_info)
  expect(status.error).toMatch(/disk full/)
  expect(status.restarts).toBe(0)
  expect(events.some((e) => e.type === 'stream_error' && e.data.bus_info === job.bus_info && /disk full/.test(e.data.error))).toBe(true)
  expect(streamer.activeRecordings()).toEqual([])
  const files = readdirSync(dir)
  expect(files).toHaveLength(1)
  expect(statSync(join(dir, files[0]!)).size).toBeGreaterThan(100_000)
  const d = discover(join(dir, files[0]!))
  expect(d.codec).toMatch(/JPEG/)
  expect(d.durationS).toBeGreaterThan(0)
  // An absence takes a wait of time: longer than the first backoff (1 s), no restart wrote a new file.
  await Bun.sleep(1500)
  expect(readdirSync(dir)).toHaveLength(1)
  await streamer.stop(job.bus_info)
  expect(existsSync(join(dir, files[0]!))).toBe(true)
}, 45_000)

test('two cameras with the same label starting in the same second get distinct files', async () => {
  const dir = tempDir()
  const jobs = [0, 1].map(() => simulatedJob({ encode_type: 'MJPG', stream_type: 'RECORDING', dir }))
  await Promise.all(jobs.map((j) => streamer.start(j)))
  const files = streamer.activeRecordings().filter((f) => f.startsWith(dir))
  expect(new Set(files).size).toBe(2)
  await waitFor('both running', () => jobs.every((j) => streamer.status(j.bus_info).state === 'running'), 15_000)
  await Promise.all(jobs.map((j) => streamer.stop(j.bus_info)))
  expect(readdirSync(dir).sort()).toEqual(files.map((f) => basename(f)).sort())
}, 30_000)
