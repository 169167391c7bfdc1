// Soak (`npm run soak`, not in `npm test`): tests/integration/segments.test.ts's finite recording at full
// scale, 3.5 minutes of 30 fps in real time cut in 1 minute segments (1800/1800/1800/900 frames, as many
// as the same stream in one file) and by size at 1 MiB (about a dozen files): the long run of the same
// property that every run proves in seconds.
import { beforeAll, test } from 'bun:test'
import { requireGStreamer } from '../integration/gstreamer.helpers'
import { expectFiniteSegments } from '../integration/segments.helpers'

beforeAll(() => requireGStreamer())

const FRAMES = 6300
const SEGMENT_SECONDS = 60

test(`${FRAMES} frames (3.5 minutes) in one file, in 1 minute segments, and cut by size (1 MiB): every frame in exactly one file, each opens on a key frame and plays alone`, async () => {
  await expectFiniteSegments(FRAMES, SEGMENT_SECONDS, 1024 * 1024)
}, 400_000)
