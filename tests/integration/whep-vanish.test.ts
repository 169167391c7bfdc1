// A WebRTC viewer that vanishes (issue 19): webrtcbin watching an H.264 camera is frozen (SIGSTOP), then
// killed; a Chromium viewer of the same camera decodes at the rate, the UDP endpoint loses nothing, the
// service stays and its idle reaper ends the vanished session (tests/integration/whep-vanish.helpers.ts
// says how). The 20 s freeze runs in the soak (tests/soak/whep-vanish.test.ts).
import { whepVanish } from './whep-vanish.helpers'

// The scale: 7 s of freeze span one of werift's consent checks unanswered (one every 4–6 s) and the frozen
// peer's receive buffer full (208 KiB by default, a few seconds of this camera's ~32 packets a second), so
// the service sends into a silent, full port as it would for 20 s; the idle timeout, a flag, is lowered
// with it (12 s: 5 s past the freeze, as 25 s is past the soak's 20), so the reaping comes 5 s after the kill.
whepVanish(7_000, 12, 120_000)
