// Readers that stop reading (media/hub.ts): an RTSP client over TCP and an MJPEG client stall while the
// camera streams; the UDP endpoint and an RTSP client over UDP lose no packet, rtspsrc decodes at the rate,
// memory stays bounded (tests/integration/media-hub.helpers.ts says how). A stall of minutes runs in the
// soak (tests/soak/media-hub.test.ts).
import { mediaHubStall } from './media-hub.helpers'

// The scale: stalled until 50 kB wait unread in each stalled socket (~6 s: the RTSP/TCP client's ~21 kB/s
// after its first window), what the 20 s stall showed; the kernel still takes the servers' bytes for ~30 s
// more (measured: their send queues grow all along), so neither stall reached the service's own queueing,
// which is the soak's, along with the minutes an unbounded queue would take to pass the memory bound.
mediaHubStall(0, 120_000)
