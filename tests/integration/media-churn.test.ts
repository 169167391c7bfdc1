// Viewer churn on the media plane: MJPEG, RTSP, snapshot and recording viewers come and go against a whole
// service; the endpoint loses nothing, no reader stays, fds, threads, children and memory come back within
// 5 % (tests/integration/media-churn.helpers.ts says how). 20 rounds run in the soak (tests/soak/media-churn.test.ts).
import { mediaChurn } from './media-churn.helpers'

// The scale: 5 rounds with a recording in each are 5 of every kind of viewer, so a viewer that leaves
// anything behind leaves it 5 times, past the margins (2 more fds of ~32, 1 more thread of ~12, no more
// child; RSS: ~8 MB of ~82, 1.6 MB a viewer); the soak's 20 rounds (a recording every 5th) repeat the same viewers, they add no mechanism.
mediaChurn(5, 1, 120_000)
