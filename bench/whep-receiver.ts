// One receiver of the WHEP benchmark (bench/whep.bench.ts), in a process of its own, so that what it
// timestamps is not held up by the benchmark's other receivers: a werift client decrypts its viewer's
// SRTP in JavaScript, and eight of them in one process would delay each other's arrivals on the shared
// event loop. Two kinds, timed the same way:
//  - `udp`: the plain RTP/UDP receiver of the stream (the baseline): binds a loopback port, which the
//    bench configures as one of the stream's endpoints;
//  - `whep <service url> <bus_info>`: one werift WHEP viewer of that camera;
//  - `peer`: one werift viewer whose offer and answer go through the bench (IPC) instead of a service:
//    the bench answers it with a WebRtcViewer of its own (the send path alone, media/webrtc/session.ts).
// Each notes, per frame, when its last packet (marker bit) arrived, on a clock every process shares
// (sharedNow in bench/lib.ts), keyed by the end of that packet's payload (the service rewrites RTP
// headers, never payloads), and sends the list to the bench when asked. The bench talks to it over
// Bun's IPC: `record` (start a fresh list), `report` (send it), `close` (DELETE the session and exit).
// Each also says which loopback port it receives on, so the bench can time the same packets in the
// kernel as well (bench/capture.ts), where no receiver's own work can delay them.
import { createSocket } from 'node:dgram'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { RTCPeerConnection } from 'werift'
import { payloadOffset } from '../media/rtp'
import { H264_CODEC } from '../media/webrtc/session'
import { sharedNow } from './lib'

/** Frames seen by one receiver while recording: the key of each frame's last packet and when it arrived. */
export interface Arrivals {
  /** Frames received while recording. */
  frames: number
  /** Seconds it recorded. */
  seconds: number
  keys: string[]
  at: number[]
}

type ToReceiver = 'record' | 'report' | 'close' | { answer: string }
type FromReceiver = { ready: true; port?: number } | { offer: string } | { arrivals: Arrivals } | { error: string }

/** A frame by the end of its last packet's payload: the service rewrites RTP headers, never payloads. */
const frameKey = (payload: Uint8Array) => Buffer.from(payload.subarray(Math.max(0, payload.length - 64))).toString('base64')

/** The bench's handle on a receiver process. */
export class Receiver {
  /**
   * Run receivers under SCHED_IDLE (`chrt --idle 0`): they get the CPU only when nothing else wants it,
   * so a packet that wakes one never preempts the service (real viewers are other machines).
   */
  static idle = false
  private waiting: ((message: FromReceiver) => void) | null = null
  private constructor(private readonly proc: Subprocess, readonly port: number | undefined) {}

  /**
   * Starts `bench/whep-receiver.ts <args>` and waits until it receives (a WHEP viewer: its first frames;
   * a peer: once `answer` answered its offer).
   */
  static async spawn(args: string[], answer?: (offer: string) => Promise<string>, timeoutMs = 60_000): Promise<Receiver> {
    let onMessage: (message: FromReceiver) => void = () => {}
    const proc = Bun.spawn([...(Receiver.idle ? ['chrt', '--idle', '0'] : []), process.execPath, join(import.meta.dir, 'whep-receiver.ts'), ...args], {
      stdout: 'inherit',
      stderr: 'inherit',
      ipc: (message) => onMessage(message as FromReceiver),
    })
    let answered: Promise<void> = Promise.resolve()
    if (answer) {
      const offered = await Promise.race([new Promise<FromReceiver>((resolve) => (onMessage = resolve)), Bun.sleep(timeoutMs).then(() => ({ error: 'no offer' }))])
      if (!('offer' in offered)) throw new Error(`receiver ${args.join(' ')}: ${'error' in offered ? offered.error : 'unexpected message'}`)
      answered = answer(offered.offer).then((sdp) => void proc.send({ answer: sdp } satisfies ToReceiver))
    }
    await answered
    const first = await Promise.race([
      new Promise<FromReceiver>((resolve) => (onMessage = resolve)),
      proc.exited.then((code) => ({ error: `exited with ${code}` })),
      Bun.sleep(timeoutMs).then(() => ({ error: `not ready within ${timeoutMs} ms` })),
    ])
    if (!('ready' in first)) {
      proc.kill()
      await proc.exited
      throw new Error(`receiver ${args.join(' ')}: ${'error' in first ? first.error : 'unexpected message'}`)
    }
    const receiver = new Receiver(proc, first.port)
    onMessage = (message) => receiver.waiting?.(message)
    return receiver
  }

  /** Forgets what arrived so far and notes from now on. */
  record(): void {
    this.proc.send('record' satisfies ToReceiver)
  }

  async report(): Promise<Arrivals> {
    const answer = new Promise<FromReceiver>((resolve) => (this.waiting = resolve))
    this.proc.send('report' satisfies ToReceiver)
    const message = await Promise.race([answer, Bun.sleep(30_000).then(() => ({ error: 'no report within 30 s' }))])
    this.waiting = null
    if (!('arrivals' in message)) throw new Error(`receiver: ${'error' in message ? message.error : 'unexpected message'}`)
    return message.arrivals
  }

  async close(): Promise<void> {
    try {
      this.proc.send('close' satisfies ToReceiver)
    } catch {} // already gone
    const exited = await Promise.race([this.proc.exited.then(() => true), Bun.sleep(10_000).then(() => false)])
    if (!exited) {
      this.proc.kill()
      await this.proc.exited
    }
  }
}

/** Runs in the receiver's process: notes frames, answers the bench. */
async function runReceiver(kind: string, rest: string[]): Promise<void> {
  const send = (message: FromReceiver) => process.send!(message)
  let recording = false
  let startedAt = 0
  let arrivals: Arrivals = { frames: 0, seconds: 0, keys: [], at: [] }
  /** A frame's last packet arrived at `at` (sharedNow, read first thing in the handler). */
  const onFrameEnd = (payload: Uint8Array, at: number) => {
    if (!recording) return
    arrivals.frames++
    arrivals.keys.push(frameKey(payload))
    arrivals.at.push(at)
  }
  let frames = 0
  let close: () => Promise<void> = async () => {}

  let port: number | undefined
  if (kind === 'udp') {
    const udp = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
    udp.on('message', (packet) => {
      const at = sharedNow()
      const offset = payloadOffset(packet)
      if (offset > 0 && (packet[1]! & 0x80) !== 0) {
        frames++
        onFrameEnd(packet.subarray(offset), at)
      }
    })
    await new Promise<void>((resolve) => udp.bind(0, '127.0.0.1', resolve))
    port = udp.address().port
    close = async () => void udp.close()
  } else if (kind === 'whep' || kind === 'peer') {
    const [url, busInfo] = rest
    if (kind === 'whep' && (!url || !busInfo)) throw new Error('usage: whep-receiver.ts whep <service url> <bus_info>')
    // Loopback only: its one candidate is 127.0.0.1, and the service (on 127.0.0.1) offers only its own.
    const pc = new RTCPeerConnection({
      codecs: { video: [H264_CODEC()], audio: [] },
      iceUseIpv4: false,
      iceUseIpv6: false,
      iceAdditionalHostAddresses: ['127.0.0.1'],
      iceInterfaceAddresses: { udp4: '127.0.0.1' },
      iceFilterCandidatePair: (pair) => pair.remoteCandidate.host.startsWith('127.'),
    })
    pc.onTrack.subscribe((track) =>
      track.onReceiveRtp.subscribe((packet) => {
        const at = sharedNow()
        if (!packet.header.marker) return
        frames++
        onFrameEnd(packet.payload, at)
      }),
    )
    pc.addTransceiver('video', { direction: 'recvonly' })
    await pc.setLocalDescription(await pc.createOffer())
    if (pc.iceGatheringState !== 'complete') {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 5_000)
        pc.iceGatheringStateChange.subscribe((state) => state === 'complete' && (clearTimeout(timer), resolve()))
      })
    }
    const offer = pc.localDescription!.sdp
    // Its one host candidate's port: where the service's SRTP arrives (the bench's packet capture).
    port = Number(/^a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 (\d+) typ host/m.exec(offer)?.[1]) || undefined
    if (kind === 'peer') {
      const answered = new Promise<string>((resolve) => {
        const onAnswer = (message: ToReceiver) => {
          if (typeof message === 'object' && 'answer' in message) {
            process.off('message', onAnswer)
            resolve(message.answer)
          }
        }
        process.on('message', onAnswer)
      })
      send({ offer })
      await pc.setRemoteDescription({ type: 'answer', sdp: await answered })
      close = () => pc.close()
    } else {
      const res = await fetch(`${url}/api/streams/${encodeURIComponent(busInfo!)}/whep`, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: offer })
      const answer = await res.text()
      if (res.status !== 201) throw new Error(`WHEP POST: ${res.status} ${answer}`)
      const location = url + res.headers.get('location')!
      await pc.setRemoteDescription({ type: 'answer', sdp: answer })
      close = async () => {
        await fetch(location, { method: 'DELETE' }).catch(() => {})
        await pc.close()
      }
      const started = performance.now()
      while (frames < 2) {
        if (performance.now() - started > 30_000) throw new Error('a werift viewer got no frame within 30 s')
        await Bun.sleep(50)
      }
    }
  } else throw new Error(`unknown receiver kind ${kind}: udp, whep or peer`)

  process.on('message', async (message: ToReceiver) => {
    if (message === 'record') {
      arrivals = { frames: 0, seconds: 0, keys: [], at: [] }
      startedAt = performance.now()
      recording = true
    } else if (message === 'report') {
      recording = false
      arrivals.seconds = (performance.now() - startedAt) / 1000
      send({ arrivals })
    } else if (message === 'close') {
      await close()
      process.exit(0)
    }
  })
  // The bench is gone (killed, crashed): so are we.
  process.on('disconnect', () => void close().finally(() => process.exit(0)))
  send({ ready: true, port })
}

if (import.meta.main) {
  runReceiver(process.argv[2] ?? '', process.argv.slice(3)).catch((err) => {
    process.send?.({ error: String(err?.message ?? err) } satisfies FromReceiver)
    process.exit(1)
  })
}
