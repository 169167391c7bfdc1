// media/capture-clock.ts: when each frame was made, from its RTP timestamp, anchored on the quickest
// packets; and the console's delay (plugins/console/ui/delay.ts) built on it.
import { expect, test } from 'bun:test'
import { CaptureClock } from '../../media/capture-clock'
import { ViewerDelay } from '../../plugins/console/ui/delay'

test('a frame is made where its timestamp puts it on the quickest packets\' timeline; late packets never move it; a new timeline is anchored anew', () => {
  const clock = new CaptureClock(90_000)
  expect(clock.capturedAt(0)).toBeNull()
  const start = 1_764_000_000_000
  // 30 fps from a timestamp near the wrap: most frames 5 ms on their way, some 40 ms (a busy moment).
  const first = 0xffff_0000
  for (let i = 0; i < 90; i++) clock.arrived(7, (first + i * 3000) >>> 0, start + (i * 100) / 3 + (i % 10 === 3 ? 40 : 5))
  // On the quickest way's timeline (5 ms after each frame was made: a constant way is not seen), wrap
  // included, the late frames too.
  expect(clock.capturedAt(first)).toBeCloseTo(start + 5, 6)
  expect(clock.capturedAt((first + 89 * 3000) >>> 0)).toBeCloseTo(start + 5 + (89 * 100) / 3, 6)
  expect(clock.capturedAt((first + 3 * 3000) >>> 0)).toBeCloseTo(start + 5 + 100, 6)
  // A new timeline (the camera's child restarted) is anchored anew.
  clock.arrived(8, 1000, start + 10_000)
  expect(clock.capturedAt(1000 + 9000)).toBeCloseTo(start + 10_100, 6)
})

test('the quickest packets of the last seconds anchor it: a camera clock that drifts is followed', () => {
  const clock = new CaptureClock(90_000)
  const start = 1_764_000_000_000
  // The camera's clock runs 1 % fast against ours: its timestamps gain 30 ticks a frame.
  for (let i = 0; i < 30 * 20; i++) clock.arrived(1, i * 3030, start + (i * 100) / 3)
  const last = (30 * 20 - 1) * 3030
  // Anchored within the last two windows (2 s each): off by at most their drift, 1 % of 4 s.
  expect(Math.abs(clock.capturedAt(last)! - (start + ((30 * 20 - 1) * 100) / 3))).toBeLessThan(40)
})

test("the console's delay: each shown frame against when it was made, on the vehicle's clock from the quickest request; the median of the last second", () => {
  const delay = new ViewerDelay()
  expect(delay.figure(0)).toBeNull()
  const page = 1_000_000 // the page's clock; the vehicle's runs 500 ms ahead
  // A slow answer (200 ms round trip) and a quick one (2 ms): the quick one sets the clock.
  delay.answered({ rtp_timestamp: 9000, captured_at: page + 500 - 100, clock_rate: 90_000, server_time: page + 500 + 150 }, page, page + 200)
  delay.answered({ rtp_timestamp: 9000, captured_at: page + 500 - 100, clock_rate: 90_000, server_time: page + 1000 + 500 + 1 }, page + 1000, page + 1002)
  expect(delay.clock()).toEqual({ offset: 500, roundTrip: 2 })
  // Frame 9000 made at vehicle time page + 400, i.e. page time page − 100; frames 40 ms later each, shown 60 ms after they were made.
  for (let i = 0; i < 25; i++) delay.frame((9000 + i * 3600) >>> 0, page - 100 + i * 40 + 60 + (i === 7 ? 300 : 0))
  expect(delay.figure(page - 100 + 24 * 40 + 60)).toBe(60)
  // Nothing shown for a second: no figure.
  expect(delay.figure(page + 3000)).toBeNull()
})

test("the console's delay: one timing answer off by a frame (its pair of timestamp and time from two frames) is outvoted by the others", () => {
  const delay = new ViewerDelay()
  const page = 1_000_000
  // The vehicle's clock is the page's; frame 9000 made at page − 100; at 15 fps a frame is 6000 ticks (66.7 ms).
  for (let i = 0; i < 4; i++) delay.answered({ rtp_timestamp: 9000 + i * 6000, captured_at: page - 100 + (i * 1000) / 15, clock_rate: 90_000, server_time: page + i }, page + i - 1, page + i + 1)
  delay.answered({ rtp_timestamp: 9000 + 4 * 6000, captured_at: page - 100 + (3 * 1000) / 15, clock_rate: 90_000, server_time: page + 4 }, page + 3, page + 5)
  for (let i = 0; i < 15; i++) delay.frame((9000 + i * 6000) >>> 0, page - 100 + (i * 1000) / 15 + 20)
  expect(delay.figure(page - 100 + (14 * 1000) / 15 + 20)).toBeCloseTo(20, 6)
})

test("the console's delay: a quick clock reading outlasts a busy spell of slow ones (each request waited on the vehicle's thread, its answer did not)", () => {
  const delay = new ViewerDelay()
  const page = 1_000_000 // the vehicle's clock is the page's
  delay.answered({ rtp_timestamp: 9000, captured_at: page - 100, clock_rate: 90_000, server_time: page + 1 }, page, page + 2)
  // 20 s of answers whose requests waited 60 ms before the vehicle read its clock: each says it is 30 ms ahead.
  for (let i = 1; i <= 20; i++) delay.answered({ rtp_timestamp: 9000, captured_at: page - 100, clock_rate: 90_000, server_time: page + i * 1000 + 60 }, page + i * 1000, page + i * 1000 + 60)
  expect(delay.clock()).toEqual({ offset: 0, roundTrip: 2 })
})
