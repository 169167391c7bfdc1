// media/webrtc/sender-clock.ts reaches into werift: its senders keep the NTP time of their last packet in
// an own `ntpTimestamp` field, assigned as they send and read for each RTCP sender report, and beside it the
// `rtpTimestamp` of that packet as they rewrote it (a viewer's timing reads it). These fail when
// werift changes that, so the fix is looked at again (the end-to-end proof, a player's lip sync by the
// reports, is tests/integration/whep-lip-sync.test.ts).
import { expect, test } from 'bun:test'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { RTCPeerConnection } from 'werift'
import { ntpNow, trueSenderClock } from '../../media/webrtc/sender-clock'

const NTP_UNIX_OFFSET_S = 2_208_988_800

test('ntpNow: seconds since 1900 and the fraction of the second in 1/2^32', () => {
  const ntp = ntpNow(Date.UTC(2026, 10, 25, 12, 0, 0, 750))
  expect(Number(ntp >> 32n)).toBe(Date.UTC(2026, 10, 25, 12, 0, 0) / 1000 + NTP_UNIX_OFFSET_S)
  expect(Number(ntp & 0xffff_ffffn) / 2 ** 32).toBeCloseTo(0.75, 6)
})

test("werift's sender keeps ntpTimestamp as its own field; made true, it holds the time of the last send", async () => {
  const pc = new RTCPeerConnection()
  try {
    const { sender } = pc.addTransceiver('video', { direction: 'sendonly' })
    const field = Object.getOwnPropertyDescriptor(sender, 'ntpTimestamp')
    expect(field).toBeDefined()
    expect(field!.configurable).toBe(true)
    trueSenderClock(sender)
    ;(sender as any).ntpTimestamp = 734n // what werift's broken clock would give
    const got = (sender as any).ntpTimestamp as bigint
    const now = ntpNow()
    expect(Number(now - got) / 2 ** 32).toBeGreaterThanOrEqual(0)
    expect(Number(now - got) / 2 ** 32).toBeLessThan(0.05)
  } finally {
    await pc.close()
  }
})

test("werift's bundle still sets the field as it sends and reads it for its sender reports", () => {
  const bundle = readFileSync(join(import.meta.dir, '../../node_modules/werift/lib/index.mjs'), 'utf8')
  expect(bundle).toContain('this.ntpTimestamp = ntpTimestamp;')
  expect(bundle).toContain('ntpTimestamp: this.ntpTimestamp,')
})

test("werift's bundle keeps rtpTimestamp as the last sent packet's timestamp after its own rewrite (a viewer's timing reads it: sentTimestamp)", () => {
  const bundle = readFileSync(join(import.meta.dir, '../../node_modules/werift/lib/index.mjs'), 'utf8')
  const rewrite = bundle.indexOf('header.timestamp = uint32Add(header.timestamp, this.timestampOffset);')
  const kept = bundle.indexOf('this.rtpTimestamp = header.timestamp;', rewrite)
  expect(rewrite).toBeGreaterThan(0)
  // Kept in the same send, after the rewrite: no other assignment of the timestamp between them.
  expect(kept).toBeGreaterThan(rewrite)
  expect(bundle.slice(rewrite + 1, kept)).not.toContain('header.timestamp =')
})
