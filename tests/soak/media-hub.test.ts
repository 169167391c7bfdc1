// Soak (`npm run soak`, not in `npm test`): tests/integration/media-hub.test.ts with a stall of 250 s, long
// enough to show an unbounded queue in the service: the MJPEG client's bytes (~180 KB/s) fill its receive
// window in ~9 s and the service's send buffer (4 MiB at most) in ~23 s more, and only then would a queue in
// the service grow, past the memory bound (4 reader queues of 1.5 MiB and 32 MB) after ~213 s more.
import { mediaHubStall } from '../integration/media-hub.helpers'

mediaHubStall(250_000, 400_000)
