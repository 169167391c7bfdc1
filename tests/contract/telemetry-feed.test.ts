// The recorder's telemetry cues (drivers/gstreamer/telemetry-feed.ts toRtp), as its child receives them:
// RTP on the file's video clock (90 kHz), the first cue at the file's first frame with that frame's
// timestamp and the telemetry of its time, then a cue every 250 ms and one at each change (which starts
// the beat again), as if live.
import { expect, test } from 'bun:test'
import { createSocket } from 'node:dgram'
import { createLogger } from '../../core/log'
import { TelemetrySource } from '../../core/telemetry'
import { TELEMETRY_PT } from '../../drivers/gstreamer/pipeline'
import { TEXT_INTERVAL_MS, TelemetryFeed } from '../../drivers/gstreamer/telemetry-feed'
import { until } from '../helpers'

/** A loopback socket standing for the recorder's child: each cue with its RTP timestamp, payload type, marker, text and when it came. */
async function childSocket() {
  const cues: { ts: number; pt: number; marker: boolean; text: string; at: number }[] = []
  const socket = createSocket('udp4')
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  socket.on('message', (m) => cues.push({ ts: m.readUInt32BE(4), pt: m[1]! & 0x7f, marker: (m[1]! & 0x80) !== 0, text: m.subarray(20).toString('utf8'), at: performance.now() }))
  return { socket, cues }
}

const feedOf = (source: TelemetrySource) => new TelemetryFeed({ source, streamState: () => 'running' }, createLogger('error'))

test('toRtp: the seconds before now at once, each cue on the clock of its moment with the telemetry of then; then live', async () => {
  const source = new TelemetrySource()
  const realNow = Date.now
  let shift = -1010 // the history is written just over a second ago
  Date.now = () => realNow() + shift
  const { socket, cues } = await childSocket()
  const feed = feedOf(source)
  try {
    source.heartbeat(false, 'MANUAL') // 1010 ms ago: before the first frame
    shift = -400
    source.heartbeat(false, 'ALT_HOLD') // 400 ms ago
    const changedAt = performance.now() - 400 // the change's moment on the clock toRtp works in
    shift = 0
    // The file's first frame came 1000 ms ago, stamped 4_294_000_000 (the clock wraps on the way).
    const firstTs = 4_294_000_000
    const firstAt = performance.now() - 1000
    feed.toRtp(socket.address().port, firstTs, firstAt)
    await until('the burst and a live cue', async () => cues.length, (n) => n >= 6, 5000)
    expect(cues.every((c) => c.pt === TELEMETRY_PT && c.marker)).toBe(true)
    const ticks = cues.map((c) => ((c.ts - firstTs) | 0) / 90) // ms since the first frame
    expect(ticks[0]).toBe(0)
    expect(cues[0]!.text).toContain('MANUAL')
    // Every 250 ms from the first frame; the mode change at its own moment (600 ms in), and the beat
    // again from there (each cue lasts 250 ms in the file: on the beat one ends where the next begins).
    expect(ticks.slice(0, 3)).toEqual([0, 250, 500])
    const change = cues.findIndex((c) => c.text.includes('ALT_HOLD'))
    expect(change).toBe(3)
    // 600 ms less the moments between the heartbeat and the call (a few ms, tens under emulation), as
    // measured; within the millisecond steps of Date.now() the change's moment passes through, and the read after it.
    expect(Math.abs(ticks[change]! - (changedAt - firstAt))).toBeLessThanOrEqual(5)
    expect(ticks[4]! - ticks[3]!).toBeCloseTo(TEXT_INTERVAL_MS, 1)
    expect(cues.slice(0, change).every((c) => c.text.includes('MANUAL'))).toBe(true)
    for (let i = 1; i < ticks.length; i++) expect(ticks[i]!).toBeGreaterThan(ticks[i - 1]!)
    // Then live, on the same beat (stamped on it, however late the timer fired).
    expect(ticks[5]! - ticks[4]!).toBeCloseTo(TEXT_INTERVAL_MS, 1)
  } finally {
    Date.now = realNow
    feed.close()
    socket.close()
  }
})

test('live: a change is sent at once and starts the beat again, so every cue after it is a whole beat from the one before', async () => {
  const source = new TelemetrySource()
  const { socket, cues } = await childSocket()
  const feed = feedOf(source)
  try {
    source.heartbeat(false, 'MANUAL')
    const firstTs = 1000
    feed.toRtp(socket.address().port, firstTs, performance.now())
    await until('the first beat', async () => cues.length, (n) => n >= 2, 5000)
    source.heartbeat(true, 'MANUAL') // armed: a cue at once
    await until('the change and two beats after it', async () => cues.length, (n) => n >= 5, 5000)
    const ticks = cues.map((c) => (c.ts - firstTs) / 90)
    const change = cues.findIndex((c) => /(^|\n)ARMED/.test(c.text))
    expect(change).toBeGreaterThanOrEqual(2)
    expect(ticks[1]! - ticks[0]!).toBeCloseTo(TEXT_INTERVAL_MS, 1)
    // The change at its own moment (between two beats), then the beat from it.
    expect(ticks[change]! - ticks[change - 1]!).toBeLessThanOrEqual(TEXT_INTERVAL_MS + 125)
    // On the beat, however late the timer fired (a loaded machine): the beats missed follow at once.
    for (const i of [change + 1, change + 2]) expect(ticks[i]! - ticks[i - 1]!).toBeCloseTo(TEXT_INTERVAL_MS, 1)
  } finally {
    feed.close()
    socket.close()
  }
})

test('a stalled event loop leaves no gap: the beats missed follow at once, each stamped on its beat', async () => {
  const source = new TelemetrySource()
  const { socket, cues } = await childSocket()
  const feed = feedOf(source)
  try {
    source.heartbeat(false, 'MANUAL')
    feed.toRtp(socket.address().port, 0, performance.now())
    Bun.sleepSync(3 * TEXT_INTERVAL_MS + 100) // the loop held: three beats missed
    await until('the missed beats and one more', async () => cues.length, (n) => n >= 6, 5000)
    const ticks = cues.map((c) => c.ts / 90)
    for (let i = 1; i < 6; i++) expect(ticks[i]! - ticks[i - 1]!).toBeCloseTo(TEXT_INTERVAL_MS, 1)
  } finally {
    feed.close()
    socket.close()
  }
})

test('closed while the event loop was held (a recording stopped on a loaded machine): the beats due by then go first, so the file\'s last frames have their cue', async () => {
  const source = new TelemetrySource()
  const { socket, cues } = await childSocket()
  const feed = feedOf(source)
  try {
    source.heartbeat(false, 'MANUAL')
    const firstAt = performance.now()
    feed.toRtp(socket.address().port, 0, firstAt)
    Bun.sleepSync(3 * TEXT_INTERVAL_MS + 100) // the loop held: three beats due, none sent
    const closedAt = performance.now()
    feed.close() // the recording stops now
    await until('the cues sent at the close', async () => cues.length, (n) => n >= 4, 5000)
    const ticks = cues.map((c) => c.ts / 90)
    for (let i = 1; i < ticks.length; i++) expect(ticks[i]! - ticks[i - 1]!).toBeCloseTo(TEXT_INTERVAL_MS, 1)
    // The last cue (250 ms long in the file) reaches past the moment of the close.
    expect(ticks.at(-1)! + TEXT_INTERVAL_MS).toBeGreaterThan(closedAt - firstAt)
  } finally {
    feed.close()
    socket.close()
  }
})
