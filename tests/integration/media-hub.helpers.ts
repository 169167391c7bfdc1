// Readers that stop reading, with real clients against a whole service (media/hub.ts;
// tests/integration/media-hub.test.ts in every run, tests/soak/media-hub.test.ts at full scale, `npm run
// soak`): an RTSP client over TCP and an MJPEG client stop reading their sockets while the camera streams,
// until the servers' bytes wait unread in both (50 kB each) and for at least `minStallMs`.
// The UDP endpoint and an RTSP client over UDP lose no packet, GStreamer's rtspsrc over UDP decodes at the
// stream's rate, and the service's memory stays within its bound (a reader's queue is at most
// READER_QUEUE_PACKETS packets or READER_QUEUE_BYTES bytes; the stalled clients' bytes wait in the kernel
// and in the RTSP helper, not in the hub; an MJPEG response holds two parts at most).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { readFileSync } from 'node:fs'
import { loadPlugin } from '../../core/loader'
import { READER_QUEUE_BYTES } from '../../media/queue'
import { freeTcpPort, freeUdpPortPair, parseMetrics, startTestServer, until, type TestServer } from '../helpers'
import { freePort, Receiver, requireRtspClients, RtpCounter, udpReceiveDrops, waitFor } from './gstreamer.helpers'
import { RawRtsp } from './rtsp-client.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264
const FPS = 30

let server: TestServer
let rtspPort = 0

/** Bytes waiting unread in the kernel's receive queue of our TCP connection from local port `port` (/proc/net/tcp). */
function unreadBytes(port: number): number {
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/)
    if (f.length < 5 || parseInt(f[1]!.split(':')[1]!, 16) !== port) continue
    return parseInt(f[4]!.split(':')[1]!, 16)
  }
  return 0
}

/** Resident memory of a process, in bytes. */
function rss(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]
  return Number(kb) * 1024
}

/** The stall test: the clients stalled until 50 kB wait unread in each, and for at least `minStallMs`. */
export function mediaHubStall(minStallMs: number, timeoutMs: number): void {
  beforeAll(async () => {
    requireRtspClients()
    rtspPort = freeTcpPort()
    const plugins = await Promise.all(['mock', 'cameras', 'dwe', 'gstreamer', 'rtsp', 'jpeg', 'metrics'].map(loadPlugin))
    server = await startTestServer({ plugins, config: { simulate: 'default', rtspPort } })
    await until('the RTSP server ready', () => server.call('GET', '/api/health'), (r) => r.body?.plugins?.rtsp?.state === 'ok', 20_000)
  }, 40_000)

  afterAll(async () => {
    await server?.stop()
  })

  test(`an RTSP client over TCP and an MJPEG client stop reading ${minStallMs ? `for ${minStallMs / 1000} s` : 'until 50 kB wait unread in each'}: the UDP endpoint and an RTSP client over UDP lose no packet, rtspsrc decodes at the rate, memory stays bounded`, async () => {
    const port = freePort()
    const endpoint = await RtpCounter.open(port)
    const stalled: Socket[] = []
    let healthy: Receiver | null = null
    let udpClient: RtpCounter | null = null
    try {
      const configured = await server.call('POST', '/api/devices/configure_stream', {
        bus_info: EHD,
        stream_type: 'UDP',
        stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: FPS } },
        encode_type: 'H264',
        enabled: true,
        endpoints: [{ host: '127.0.0.1', port }],
      })
      expect(configured.status).toBe(200)
      await until('the mount', () => server.call('GET', '/api/rtsp'), (r) => r.body.mounts.some((m: any) => m.bus_info === EHD), 15_000)
      await waitFor('packets at the UDP endpoint', () => endpoint.packets > 30, 15_000)
      const url = `rtsp://127.0.0.1:${rtspPort}/${EHD}`

      // The readers that stop reading: RTSP interleaved over TCP, and MJPEG over HTTP.
      const tcp = await RawRtsp.open(rtspPort)
      stalled.push(tcp.socket)
      await tcp.play(url, 'RTP/AVP/TCP;unicast;interleaved=0-1')
      const mjpeg = connect(Number(new URL(server.url).port), '127.0.0.1')
      stalled.push(mjpeg)
      mjpeg.on('error', () => {})
      let mjpegBytes = 0
      mjpeg.on('data', (c: Buffer) => void (mjpegBytes += c.length))
      await new Promise((resolve) => mjpeg.once('connect', resolve))
      mjpeg.write(`GET /api/streams/${EHD}/mjpeg HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`)
      await waitFor('the MJPEG client got frames', () => mjpegBytes > 20_000, 20_000)

      // The viewers that read: an RTSP client over UDP whose RTP we count, and GStreamer's rtspsrc decoding.
      const clientPort = freeUdpPortPair()
      udpClient = await RtpCounter.open(clientPort)
      const udp = await RawRtsp.open(rtspPort)
      stalled.push(udp.socket) // closed at the end with the others; it reads its RTSP answers only
      await udp.play(url, `RTP/AVP;unicast;client_port=${clientPort}-${clientPort + 1}`)
      healthy = Receiver.rtsp(url, 'udp')
      await waitFor('rtspsrc decoding', () => healthy!.frames.length > 10, 20_000)
      await waitFor('RTP at the RTSP/UDP client', () => udpClient!.packets > 30, 15_000)

      // Both stop reading now; the kernel's buffers fill, then whatever queues for them.
      tcp.socket.pause()
      mjpeg.pause()
      const serviceBefore = rss(process.pid)
      const [endpointMissing, clientMissing, endpointPackets, clientPackets] = [endpoint.skipped(), udpClient.skipped(), endpoint.packets, udpClient.packets]
      const from = Date.now()
      // Stalled until the servers' bytes wait unread in both sockets (50 kB each), and for at least minStallMs.
      await waitFor('bytes waiting unread for both stalled clients', () => unreadBytes(tcp.socket.localPort!) > 50_000 && unreadBytes(mjpeg.localPort!) > 50_000 && Date.now() - from >= minStallMs, minStallMs + 60_000, 200)
      const to = Date.now()
      const serviceAfter = rss(process.pid)
      // They really stopped reading: the servers kept sending, and it waits unread in their sockets.
      expect(unreadBytes(tcp.socket.localPort!)).toBeGreaterThan(50_000)
      expect(unreadBytes(mjpeg.localPort!)).toBeGreaterThan(50_000)

      const seconds = (to - from) / 1000
      // The endpoint and the RTSP/UDP client: every packet, none skipped (drops by this test's own slow reading excluded).
      expect(endpoint.packets - endpointPackets).toBeGreaterThan(FPS * seconds * 0.9)
      expect(endpoint.skipped() - endpointMissing).toBe(0)
      expect(udpClient.packets - clientPackets).toBeGreaterThan(FPS * seconds * 0.9)
      expect(udpClient.skipped() - clientMissing).toBe(0)
      // rtspsrc over UDP decodes at the stream's rate all along.
      expect(healthy.framesBetween(from, to)).toBeGreaterThan(FPS * seconds * 0.85)
      // No reader of the hub fell behind: the stalled clients are queued for by the RTSP helper and the
      // MJPEG response (two parts at most), not by the hub.
      const metrics = parseMetrics((await server.call('GET', '/metrics')).body as string)
      const lost = metrics.matching('periscope_reader_dropped_packets_total', { bus_info: EHD }).reduce((n, m) => n + m.value, 0)
      expect(lost).toBe(0)
      // The service's memory: bounded by its readers' queues (each at most READER_QUEUE_BYTES), not by how long a client stalls.
      const growth = serviceAfter - serviceBefore
      console.log(`service RSS ${Math.round(serviceBefore / 1e6)} → ${Math.round(serviceAfter / 1e6)} MB over ${seconds.toFixed(1)} s of two stalled readers; endpoint ${endpoint.packets - endpointPackets} packets, RTSP/UDP client ${udpClient.packets - clientPackets}, rtspsrc ${healthy.framesBetween(from, to)} frames; kernel drops at the test's sockets ${udpReceiveDrops(port)}/${udpReceiveDrops(clientPort)}`)
      expect(growth).toBeLessThan(4 * READER_QUEUE_BYTES + 32e6)
    } finally {
      for (const socket of stalled) socket.destroy()
      await healthy?.stop()
      udpClient?.close()
      endpoint.close()
      await server.call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD })
    }
  }, timeoutMs)
}
