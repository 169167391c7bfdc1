// The RTSP helper (plugins/rtsp/server.py) on its own: over TCP-interleaved, each packet leaves as it
// arrives, whatever its timestamp says. Its timestamps follow the camera's RTP clock, anchored at the
// first packet's arrival, so they can run ahead of real time (by up to a frame after the kept group of
// pictures); a TCP sink that synced on them held every packet that long (13-15 ms p50 at 30 fps,
// bench/rtsp.bench.ts). The library's PLAY turns its rate control, the TCP sink's sync, back on.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { createSocket } from 'node:dgram'
import type { Subprocess } from 'bun'
import { join } from 'node:path'
import { SYSTEM_PYTHON } from '../../plugins/rtsp/helper'
import { freeTcpPort, requireRtspClients, waitFor } from './gstreamer.helpers'
import { RawRtsp, teardown } from './rtsp-client.helpers'

const SERVER = join(import.meta.dir, '../../plugins/rtsp/server.py')
let helper: Subprocess<'pipe', 'pipe', 'inherit'>
const events: any[] = []
let port = 0

beforeAll(async () => {
  requireRtspClients()
  port = freeTcpPort()
  helper = Bun.spawn([SYSTEM_PYTHON, SERVER, String(port), '127.0.0.1', '8', '64', '10'], { stdin: 'pipe', stdout: 'pipe', stderr: 'inherit' })
  void (async () => {
    let rest = ''
    for await (const chunk of helper.stdout) {
      rest += new TextDecoder().decode(chunk)
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
        events.push(JSON.parse(rest.slice(0, nl)))
        rest = rest.slice(nl + 1)
      }
    }
  })()
  await waitFor('the helper ready', () => events.some((e) => e.event === 'ready'), 15_000)
  helper.stdin.write(JSON.stringify({ op: 'add', path: '/cam', encoding: 'JPEG', tracks: 1, camera: 'cam' }) + '\n')
  helper.stdin.flush()
  await waitFor('the mount added', () => events.some((e) => e.event === 'added'), 15_000)
}, 30_000)

afterAll(async () => {
  helper?.stdin.end() // stdin closing ends the helper
  await helper?.exited
  expect(helper.exitCode).not.toBeNull()
})

/** One whole RTP/JPEG picture (16x16, baseline quantisation Q 50) in one packet, at RTP timestamp `ts`. */
function jpegPacket(sequence: number, ts: number): Buffer {
  const packet = Buffer.alloc(12 + 8 + 64) // the scan's bytes: zeros (no marker inside)
  packet[0] = 0x80
  packet[1] = 0x80 | 26 // marker: the picture's last packet
  packet.writeUInt16BE(sequence, 2)
  packet.writeUInt32BE(ts >>> 0, 4)
  packet.writeUInt32BE(0x1234, 8)
  packet.set([0, 0, 0, 0, 1, 50, 16 / 8, 16 / 8], 12) // fragment offset 0, type 1, Q 50, width/8, height/8
  return packet
}

test('over TCP-interleaved, a packet stamped 0.8 s ahead of its arrival leaves at once', async () => {
  const client = await RawRtsp.open(port)
  const url = `rtsp://127.0.0.1:${port}/cam`
  const feed = createSocket('udp4')
  feed.on('error', () => {})
  try {
    const describing = client.request('DESCRIBE', url, { Accept: 'application/sdp' })
    const media = await waitFor('its media', () => events.find((e) => e.event === 'media'), 15_000)
    const send = (packet: Buffer) => new Promise<void>((resolve) => feed.send(packet, media.ports[0], '127.0.0.1', () => resolve()))
    // The first picture (as the service feeds the kept group at once): the media knows its caps and
    // answers DESCRIBE, and the timeline is anchored at its arrival.
    const first = performance.now()
    await send(jpegPacket(1, 90_000))
    const described = await describing
    expect(described.status).toBe('RTSP/1.0 200 OK')
    const control = /a=control:(\S+)/.exec(described.body.split(/m=video/)[1] ?? '')?.[1] ?? ''
    const base = described.headers['content-base'] ?? `${url}/`
    const setup = await client.request('SETUP', control.startsWith('rtsp:') ? control : base + control, { Transport: 'RTP/AVP/TCP;unicast;interleaved=0-1' })
    expect(setup.status).toBe('RTSP/1.0 200 OK')
    client.session = setup.headers.session!.split(';')[0]!
    // Interleaved packets may follow PLAY's answer in the same read: counted from before it is asked.
    const arrivals: number[] = []
    let pending = Buffer.alloc(0)
    client.socket.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk])
      for (;;) {
        if (pending[0] === 0x24) {
          if (pending.length < 4 || pending.length < 4 + pending.readUInt16BE(2)) return
          if (pending[1] === 0) arrivals.push(performance.now())
          pending = pending.subarray(4 + pending.readUInt16BE(2))
        } else {
          const end = pending.indexOf('\r\n\r\n') // an answer (PLAY's has no body)
          if (end < 0) return
          pending = pending.subarray(end + 4)
        }
      }
    })
    expect((await client.request('PLAY', url, { Range: 'npt=0-' })).status).toBe('RTSP/1.0 200 OK')
    await waitFor('the first picture over TCP', () => arrivals.length >= 1, 15_000)
    // The next picture's timestamp: 0.8 s later than real time since the first (less than the 1 s past
    // which the helper anchors the timeline again).
    const sent = performance.now()
    await send(jpegPacket(2, 90_000 + Math.round(((sent - first) / 1000 + 0.8) * 90_000)))
    await waitFor('the second picture over TCP', () => arrivals.length >= 2, 5_000)
    // On a loaded machine the helper's way is a few ms; held against its timestamp, ~800 ms.
    expect(arrivals[1]! - sent).toBeLessThan(400)
  } finally {
    feed.close()
    await teardown(client, url)
  }
}, 60_000)
