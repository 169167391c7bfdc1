// The relay's thread (relay.ts): receives a stream's packets from the camera's child and sends them on
// — to the hub's own socket on the main thread, and to every child fed over loopback (the RTSP server,
// the recorder, the MJPEG transcoder) — so UDP-to-UDP forwarding never waits behind HTTP work.
import { createSocket, type Socket } from 'node:dgram'
import { parentPort } from 'node:worker_threads'
import { GopCache } from './gop'
import { compressedGroup, RtpContinuity, startsKeyFrame, timestampOf, type MediaEncoding } from './rtp'
import { HOLD_BYTES } from './queue'

export type RelayCommand =
  | { op: 'open'; id: number; encoding: MediaEncoding; hubPort: number }
  | { op: 'close'; id: number }
  /** port -1: held (up to HOLD_BYTES) until 'release'; `began`: answer { began: target, timestamp } at its first packet. */
  | { op: 'feed'; id: number; target: number; port: number; from: 'now' | 'key' | 'kept'; frameTicks?: number; began?: boolean }
  | { op: 'release'; id: number; target: number; port: number }
  | { op: 'unfeed'; id: number; target: number }
  /** From the input's next key frame on, target `target` sends to `port`; the thread answers { switched: target, timestamp } (the key frame's RTP timestamp). */
  | { op: 'retarget'; id: number; target: number; port: number }
  /** Answered { settled: n } once every command posted before it is carried out. */
  | { op: 'settle'; n: number }
  /** A full collection of this thread's heap (media/memory.ts: viewers stopped leaving). */
  | { op: 'collect' }

interface Target {
  /** -1: not listening yet, packets go to `held`. */
  port: number
  held: Uint8Array[]
  heldBytes: number
  /** Tell the main thread the first packet's timestamp. */
  began: boolean
  /** Where it goes from the next key frame on (a recording's next segment). */
  next: number | null
  waiting: boolean
  /** Continues the RTP timeline across a camera child restart (a target that stamps frames from RTP time alone). */
  continuity: RtpContinuity | null
}

interface Input {
  socket: Socket
  encoding: MediaEncoding
  hubPort: number
  targets: Map<number, Target>
  /** H.264: the last group of pictures, for a target fed from it (the RTSP server's clients). */
  gop: GopCache | null
}

const inputs = new Map<number, Input>()
const out = createSocket('udp4')
out.on('error', () => {}) // loopback to our own hub and children: a refused send is just lost

function open(command: Extract<RelayCommand, { op: 'open' }>): void {
  const socket = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
  const input: Input = { socket, encoding: command.encoding, hubPort: command.hubPort, targets: new Map(), gop: command.encoding === 'H264' ? new GopCache() : null }
  socket.on('error', () => {})
  socket.on('message', (packet) => {
    out.send(packet, input.hubPort, '127.0.0.1')
    input.gop?.push(packet)
    for (const [id, target] of input.targets) {
      const key = (target.waiting || target.next !== null) && startsKeyFrame(packet, input.encoding)
      if (target.waiting) {
        if (!key) continue
        target.waiting = false
      }
      let switched = false
      if (target.next !== null && key) {
        target.port = target.next
        target.next = null
        switched = true
      }
      send(id, target, packet)
      if (switched) parentPort!.postMessage({ switched: id, timestamp: timestampOf(packet) })
    }
  })
  socket.bind(0, '127.0.0.1', () => {
    inputs.set(command.id, input)
    parentPort!.postMessage({ id: command.id, port: socket.address().port })
  })
}

/** One packet to a target: sent, or held while it has no port yet. */
function send(id: number, target: Target, packet: Uint8Array): void {
  if (target.began) {
    target.began = false
    parentPort!.postMessage({ began: id, timestamp: timestampOf(packet) })
  }
  const sent = target.continuity ? target.continuity.next(packet) : packet
  if (target.port >= 0) return void out.send(sent, target.port, '127.0.0.1')
  if (target.heldBytes + sent.length > HOLD_BYTES) return
  // A copy: the socket's buffer is not ours to keep.
  target.held.push(Uint8Array.from(sent))
  target.heldBytes += sent.length
}

parentPort!.on('message', (command: RelayCommand) => {
  if (command.op === 'open') return open(command)
  if (command.op === 'collect') return void Bun.gc(true)
  if (command.op === 'settle') return parentPort!.postMessage({ settled: command.n })
  const input = inputs.get(command.id)
  if (!input) return
  if (command.op === 'close') {
    inputs.delete(command.id)
    input.socket.close()
  } else if (command.op === 'feed') {
    const target: Target = {
      port: command.port,
      held: [],
      heldBytes: 0,
      began: command.began ?? false,
      next: null,
      waiting: command.from !== 'now',
      continuity: command.frameTicks ? new RtpContinuity(command.frameTicks) : null,
    }
    // From the kept group: sent now, on this thread, so the live packets follow it with none lost or twice.
    const kept = command.from === 'kept' && input.gop ? compressedGroup(input.gop.gop) : []
    for (const packet of kept) send(command.target, target, packet)
    if (kept.length) target.waiting = false
    input.targets.set(command.target, target)
  } else if (command.op === 'release') {
    const target = input.targets.get(command.target)
    if (!target) return
    target.port = command.port
    for (const packet of target.held.splice(0)) out.send(packet, target.port, '127.0.0.1')
    target.heldBytes = 0
  }
  else if (command.op === 'retarget') {
    const target = input.targets.get(command.target)
    if (target) target.next = command.port
  } else input.targets.delete(command.target)
})
