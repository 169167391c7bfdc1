// Soak (`npm run soak`, not in `npm test`): tests/integration/power-cut.test.ts at full scale, 20 power
// cuts (five of each kind) instead of 4: more random moments for the same bound, the figures of
// docs/recordings.md.
import { afterAll, beforeAll, test } from 'bun:test'
import { requireGStreamer } from '../integration/gstreamer.helpers'
import { FPS, LONG_GOP, MAX_LOST, powerCuts } from '../integration/power-cut.helpers'
import type { Service } from '../integration/service.helpers'

const RUNS = 20

beforeAll(() => requireGStreamer())
const services: Service[] = []
afterAll(async () => {
  for (const s of services) await s.kill()
})

test(`kill -9 of the service, the recorders and the camera, ${RUNS} times, key frames every 1 s and every ${LONG_GOP} s: every file plays, at most ${MAX_LOST} frames (${(MAX_LOST / FPS).toFixed(2)} s) lost`, async () => {
  await powerCuts(RUNS, services)
}, 900_000)
