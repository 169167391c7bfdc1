// werift 0.25.2 stamps its RTCP sender reports with a broken NTP time: its ntpTime() writes the decimal
// digits of the second's fraction as the 32-bit fraction (0.734 s becomes 734 / 2^32 s), so every report
// says "this RTP time was sent at a whole second". A player maps each track to one clock by these reports
// (lip sync): the sound and the video came out up to a second apart, jumping at every report (measured
// with GStreamer's webrtcbin: bench/sound.bench.ts). The sender keeps the time of its last packet in its
// own `ntpTimestamp` field, set when it sends and read when it reports: this sender's field is made to hold
// the true NTP time of that moment, whatever werift assigns. Beside it werift keeps the RTP timestamp of
// that packet as it rewrote it (`rtpTimestamp`), which a viewer's timing reads (sentTimestamp).
// tests/contract/webrtc-sender-clock.test.ts fails if werift stops keeping either field there.
import type { RTCRtpSender } from 'werift'

/** Seconds from 1900 (NTP's epoch) to 1970 (Unix's). */
const NTP_UNIX_OFFSET_S = 2_208_988_800

/** Now as a 64-bit NTP timestamp (32 bits of seconds since 1900, 32 of fraction). */
export function ntpNow(ms = performance.timeOrigin + performance.now()): bigint {
  const seconds = Math.floor(ms / 1000)
  const fraction = Math.floor(((ms - seconds * 1000) / 1000) * 2 ** 32)
  return (BigInt(seconds + NTP_UNIX_OFFSET_S) << 32n) | BigInt(fraction)
}

/** Makes `sender`'s sender reports carry the true NTP time of its last packet. */
export function trueSenderClock(sender: RTCRtpSender): void {
  let value = 0n
  Object.defineProperty(sender, 'ntpTimestamp', {
    configurable: true,
    enumerable: true,
    get: () => value,
    // werift assigns its own (broken) time as it sends a packet: that moment is the one to keep.
    set: () => {
      value = ntpNow()
    },
  })
}

/** The RTP timestamp of the last packet `sender` sent, as its viewer gets it (werift's own rewrite of it). */
export function sentTimestamp(sender: RTCRtpSender): number {
  return (sender as unknown as { rtpTimestamp: number }).rtpTimestamp
}
