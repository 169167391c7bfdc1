// A power cut while recording (tests/integration/power-cut.helpers.ts says how it is done and judged):
// kill -9 of the service, every recorder child and the camera at a random moment, every file decodes to
// its end, at most MAX_LOST frames lost. 20 kills run in the soak (tests/soak/power-cut.test.ts).
import { afterAll, beforeAll, test } from 'bun:test'
import { requireGStreamer } from './gstreamer.helpers'
import { FPS, LONG_GOP, MAX_LOST, powerCuts } from './power-cut.helpers'
import type { Service } from './service.helpers'

// The scale: 4 kills are one of each kind (1 s or 3 s GOP, one file or 2 s segments, so one kill may land
// on a cut), each at a random moment; the 20 of the soak add more random moments, not another mechanism.
const RUNS = 4

beforeAll(() => requireGStreamer())
const services: Service[] = []
afterAll(async () => {
  for (const s of services) await s.kill()
})

test(`kill -9 of the service, the recorders and the camera, ${RUNS} times, key frames every 1 s and every ${LONG_GOP} s: every file plays, at most ${MAX_LOST} frames (${(MAX_LOST / FPS).toFixed(2)} s) lost`, async () => {
  await powerCuts(RUNS, services)
}, 240_000)
