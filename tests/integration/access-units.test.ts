// One picture per access unit (H.264 7.4.1.2.3), for camera H.264 and software H.264, on every path: the
// UDP endpoint and the live tap (read by our own RTP checker, h264-au.helpers.ts), the UDP endpoint
// through its SDP description and RTSP over TCP and UDP (decoded by ffprobe, 90 frames: one picture
// per packet, DTS strictly increasing, no concealed picture), GStreamer still decoding, a RECORDING
// stream's file, and a recording made while streaming (ffprobe: one picture per frame sent; GStreamer's
// depayloader already hid the fault there, so that test guards rather than reproduces). SPS/PPS still
// come before every IDR, so a receiver joining late decodes.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readdirSync, writeFileSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { loadPlugin } from '../../core/loader'
import type { StreamJob } from '../../core/types'
import { startTestServer, until, type TestServer } from '../helpers'
import { freePort, freeTcpPort, Receiver, requireRtspClients, segmentFile, simulatedJob, tempDir, testStreamer, waitFor } from './gstreamer.helpers'
import { accessUnitProblems, decodeProblems, ffprobeDecode, lostPackets, NAL, RtpH264Reader, type AccessUnit, type Decoded } from './h264-au.helpers'

const EHD = 'usb-0000:00:14.0-1' // the simulated exploreHD: an H.264 node and MJPG
// 3 s at 30 fps, three key frames (one a second): the fault these decodes catch (parameter sets between the
// slices of a key frame: two pictures, one DTS twice) comes at every key frame, so three show it as ten did.
const FRAMES = 90
const ENCODINGS = ['H264', 'SOFTWARE_H264'] as const

const { streamer } = testStreamer()
let service: TestServer
let rtspPort = 0
const receivers: Receiver[] = []

beforeAll(async () => {
  requireRtspClients()
  rtspPort = freeTcpPort()
  const plugins = await Promise.all(['mock', 'cameras', 'dwe', 'gstreamer', 'rtsp'].map(loadPlugin))
  service = await startTestServer({ plugins, config: { simulate: 'default', rtspPort } })
  await until('the RTSP server ready', () => service.call('GET', '/api/health'), (r) => r.body?.plugins?.rtsp?.state === 'ok', 30_000)
}, 60_000)

afterAll(async () => {
  for (const r of receivers) await r.stop()
  await streamer.stopAll()
  await service?.stop()
})

/** Reads RTP H.264 from a loopback UDP port into access units. */
async function rtpReader(port: number): Promise<{ reader: RtpH264Reader; close(): void }> {
  const reader = new RtpH264Reader()
  const socket = await Bun.udpSocket({ hostname: '127.0.0.1', port, socket: { data: (_s, buf) => reader.packet(buf) } })
  return { reader, close: () => socket.close() }
}

/** The complete access units a reader saw (the first may have begun before it listened). */
const complete = (reader: RtpH264Reader) => reader.units.slice(1)

/** Every IDR access unit carries SPS and PPS before its first slice: a receiver joining there decodes. */
function idrsWithoutParameterSets(units: AccessUnit[]): number {
  return units.filter((u) => u.idr && !(u.types.includes(NAL.SPS) && u.types.includes(NAL.PPS))).length
}

/** The SDP an RTSP client gets (a raw DESCRIBE on loopback, no client library in between). */
function rtspDescribe(url: string, port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let got = ''
    const socket = connect(port, '127.0.0.1', () => socket.write(`DESCRIBE ${url} RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\n\r\n`))
    const timer = setTimeout(() => (socket.destroy(), reject(new Error(`no answer to DESCRIBE ${url}: ${JSON.stringify(got)}`))), 20_000)
    socket.setEncoding('latin1')
    socket.on('error', (e) => (clearTimeout(timer), reject(e)))
    socket.on('data', (chunk: string) => {
      got += chunk
      const end = got.indexOf('\r\n\r\n')
      const length = Number(/content-length:\s*(\d+)/i.exec(got)?.[1] ?? -1)
      if (end >= 0 && length >= 0 && got.length >= end + 4 + length) {
        clearTimeout(timer)
        socket.destroy()
        resolve(got.slice(end + 4, end + 4 + length))
      }
    })
  })
}

async function running(job: StreamJob): Promise<void> {
  await streamer.start(job)
  await waitFor('the stream running', () => streamer.status(job.bus_info).state === 'running', 30_000)
}

describe.each(ENCODINGS)('%s', (encode_type) => {
  test('the UDP endpoint and the live tap (UDP and RECORDING streams): one access unit per RTP timestamp, parameter sets only before the first slice of an IDR; the RECORDING file decodes clean', async () => {
    for (const stream_type of ['UDP', 'RECORDING'] as const) {
      const port = freePort()
      const endpoint = await rtpReader(port)
      const job = simulatedJob({ encode_type, stream_type, ports: [port], width: 640, height: 480, fps: 30 })
      const tapped = new RtpH264Reader()
      try {
        await running(job)
        const { hub } = streamer.live(job.bus_info)!
        const reading = hub.read(0, { name: 'test', packet: (packet) => tapped.packet(packet) })
        const unsubscribe = () => reading.close()
        // The hub of a RECORDING job reads its own payloader branch; a UDP job's is the endpoint's copy.
        const readers = stream_type === 'UDP' ? [endpoint.reader, tapped] : [tapped]
        await waitFor('three key frames and 90 access units', () => readers.every((r) => complete(r).filter((u) => u.idr).length >= 3 && complete(r).length >= 90), 30_000)
        unsubscribe()
        for (const reader of readers) {
          const units = complete(reader)
          expect({ stream_type, problems: accessUnitProblems(units) }).toEqual({ stream_type, problems: [] })
          expect(idrsWithoutParameterSets(units)).toBe(0)
          expect([reader.malformed, reader.fuBroken]).toEqual([0, 0])
        }
        // The kept group of pictures (what a WHEP viewer or a snapshot starts from) opens on a whole key frame.
        const gop = new RtpH264Reader()
        for (const packet of hub.lastGop(0)) gop.packet(packet)
        const units = [...gop.units, ...(gop.open ? [gop.open] : [])]
        expect(units[0]?.idr).toBe(true)
        expect(units[0]?.firstMbs[0]).toBe(0)
        expect(accessUnitProblems(units.slice(0, -1))).toEqual([])
      } finally {
        endpoint.close()
        await streamer.stop(job.bus_info)
      }
      if (stream_type === 'RECORDING') {
        // The RECORDING stream's own file (h264parse's output, parameter sets in-band too) decodes clean.
        const file = readdirSync(job.recordings_dir).find((f) => f.endsWith('.mkv'))!
        const decoded = await ffprobeDecode(['-i', join(job.recordings_dir, file)], 100_000, 60_000)
        expect(decoded.packets[0]?.key).toBe(true)
        expect(decodeProblems(decoded, 60)).toEqual([])
      }
    }
  }, 120_000)

  test(`ffprobe decodes ${FRAMES} frames, one picture per packet with strictly increasing DTS, from the UDP endpoint's SDP and over RTSP/TCP and RTSP/UDP; GStreamer decodes both`, async () => {
    const port = freePort()
    const configure = (enabled: boolean) =>
      service.call('POST', '/api/devices/configure_stream', {
        bus_info: EHD,
        stream_type: 'UDP',
        encode_type,
        stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 30 } },
        enabled,
        endpoints: [{ host: '127.0.0.1', port }],
      })
    expect((await configure(true)).status).toBe(200)
    try {
      await until('the RTSP mount', () => service.call('GET', '/api/rtsp'), (r) => r.body.mounts.some((m: any) => m.path === `/${EHD}`), 30_000)
      const sdp = await fetch(`${service.url}/api/streams/${EHD}/sdp`)
      expect(sdp.status).toBe(200)
      const file = join(tempDir(), 'stream.sdp')
      writeFileSync(file, await sdp.text())
      const rtsp = `rtsp://127.0.0.1:${rtspPort}/${EHD}`
      const inputs: Record<string, string[]> = {
        sdp: ['-protocol_whitelist', 'file,udp,rtp', '-buffer_size', '4194304', '-i', file],
        'rtsp/tcp': ['-rtsp_transport', 'tcp', '-i', rtsp],
        'rtsp/udp': ['-rtsp_transport', 'udp', '-buffer_size', '4194304', '-i', rtsp],
      }
      // Up to a second before the first key frame, then the frames checked.
      const decode = (name: string) => ffprobeDecode(inputs[name]!, FRAMES + 40, 90_000)
      // The SDP still carries the parameter sets (the payloader reads them from the stream): an SPS and a PPS.
      const sprop = /sprop-parameter-sets=([^;\s]+)/.exec(await rtspDescribe(rtsp, rtspPort))?.[1] ?? ''
      expect(sprop.split(',').map((b64) => Buffer.from(b64, 'base64')[0]! & 0x1f)).toEqual([NAL.SPS, NAL.PPS])
      const results: Record<string, Decoded> = {}
      await Promise.all(Object.keys(inputs).map(async (name) => (results[name] = await decode(name))))
      // A loaded machine may drop a datagram at ffprobe's socket (a gap in the sequence numbers, or a
      // frame ffmpeg had to conceal), and then a check says nothing: once more. A fault of ours repeats.
      for (const name of Object.keys(inputs)) if (lostPackets(results[name]!) || decodeProblems(results[name]!, FRAMES).length) results[name] = await decode(name)
      const verdict = (name: string) => ({ lost: lostPackets(results[name]!), problems: decodeProblems(results[name]!, FRAMES) })
      expect(Object.fromEntries(Object.keys(inputs).map((name) => [name, verdict(name)]))).toEqual(Object.fromEntries(Object.keys(inputs).map((name) => [name, { lost: false, problems: [] }])))

      // GStreamer still decodes: rtspsrc over both transports, and udpsrc at the endpoint (ffprobe left it).
      const t0 = Date.now()
      const clients = [Receiver.rtsp(rtsp, 'tcp'), Receiver.rtsp(rtsp, 'udp'), new Receiver(port, 'H264')]
      receivers.push(...clients)
      await waitFor('30 frames decoded by each GStreamer client', () => clients.every((c) => c.frames.filter((f) => f >= t0).length >= 30), 30_000)
      for (const c of clients) await c.stop()
    } finally {
      expect((await configure(false)).status).toBe(200)
    }
  }, 240_000)

  test('a recording made while streaming holds one picture per frame sent (ffprobe)', async () => {
    const port = freePort()
    const endpoint = await rtpReader(port)
    const job = simulatedJob({ encode_type, stream_type: 'UDP', ports: [port], width: 640, height: 480, fps: 30 })
    try {
      await running(job)
      const started = await streamer.startRecording(job.bus_info)
      const path = segmentFile(job.recordings_dir, started!.file!)
      const { hub } = streamer.live(job.bus_info)!
      const from = hub.sent(0).frames
      await waitFor('four seconds of frames through the hub', () => hub.sent(0).frames - from >= 120, 30_000)
      await streamer.stopRecording(job.bus_info)
      const decoded = await ffprobeDecode(['-i', path], 100_000, 60_000)
      expect(decoded.exitCode).toBe(0)
      // The file starts at a key frame and holds whole frames: from its first packet on, everything counts.
      expect(decoded.packets[0]?.key).toBe(true)
      expect(decodeProblems(decoded, 90)).toEqual([])
      // One stored frame per frame sent, none twice, none missing: the file's timestamps (ms) against the
      // RTP timestamps the endpoint got from the key frame the recording began at, both in frame intervals
      // (a loaded machine may make the camera itself skip a frame: then both skip it).
      const interval = 1000 / 30
      const stored = decoded.packets.map((p) => Math.round((p.pts! - decoded.packets[0]!.pts!) / interval))
      const units = complete(endpoint.reader)
      const sentFrom = (k: number) => units.slice(k, k + stored.length).map((u) => Math.round(((u.ts - units[k]!.ts) >>> 0) / 90 / interval))
      const start = units.findIndex((u, k) => u.idr && JSON.stringify(sentFrom(k)) === JSON.stringify(stored))
      expect({ stored: stored.length, matchesTheFramesSent: start >= 0 }).toEqual({ stored: stored.length, matchesTheFramesSent: true })
    } finally {
      endpoint.close()
      await streamer.stop(job.bus_info)
    }
  }, 120_000)
})
