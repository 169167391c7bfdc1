// Segment cuts of recordings made while streaming (drivers/gstreamer/recorder.ts cuts them; /metrics
// reads them here, as it reads media/memory.ts, without importing a driver).

/** Segment cuts of every recording since the service started, and the cost of the last one. */
export const segmentCuts = {
  total: 0,
  /** ms from starting the next segment's child to it listening (done ahead of the cut, while the old one records). */
  lastStartMs: 0,
  /** ms from the leader's cut to the old segment's file closed (EOS) and pushed to the disk. */
  lastCloseMs: 0,
}
