// Viewer churn (issue 19): Chromium's WebRTC sessions of two H.264 cameras come and go, ended by DELETE
// and by the idle reaper; the service stays, and its RSS, fds, threads and children come back within 5 %
// (tests/integration/whep-churn.helpers.ts says how). 20 rounds run in the soak (tests/soak/whep-churn.test.ts).
import { whepChurn } from './whep-churn.helpers'

// The scale: 5 rounds are 20 sessions, 5 of each camera and each ending, so a session that leaves anything
// behind leaves it at least 5 times, past the margins (1 more fd of ~37, 1 more thread of ~13, no more child;
// RSS: ~7 MB of ~140, 1.4 MB a session); the soak's 20 rounds repeat the same sessions, they add no mechanism.
whepChurn(5, 300_000)
