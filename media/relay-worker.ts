// The relay's thread (relay.ts): receives a stream's packets from the camera's child and sends them on
// — to the hub's own socket on the main thread, and to every child fed over loopback (the RTSP server,
// the recorder, the MJPEG transcoder) — so UDP-to-UDP forwarding never waits behind HTTP work.
import { createSocket, type Socket } from 'node:dgram'
import { parentPort } from 'node:worker_threads'
import { RtpContinuity, startsKeyFrame, type MediaEncoding } from './rtp'

export type RelayCommand =
  | { op: 'open'; id: number; encoding: MediaEncoding; hubPort: number }
  | { op: 'close'; id: number }
  | { op: 'feed'; id: number; target: number; port: number; fromKey: boolean; frameTicks?: number }
  | { op: 'unfeed'; id: number; target: number }

interface Target {
  port: number
  waiting: boolean
  /** Continues the RTP timeline across a camera child restart (a target that stamps frames from RTP time alone). */
  continuity: RtpContinuity | null
}

interface Input {
  socket: Socket
  encoding: MediaEncoding
  hubPort: number
  targets: Map<number, Target>
}

const inputs = new Map<number, Input>()
const out = createSocket('udp4')
out.on('error', () => {}) // loopback to our own hub and children: a refused send is just lost

function open(command: Extract<RelayCommand, { op: 'open' }>): void {
  const socket = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
  const input: Input = { socket, encoding: command.encoding, hubPort: command.hubPort, targets: new Map() }
  socket.on('error', () => {})
  socket.on('message', (packet) => {
    out.send(packet, input.hubPort, '127.0.0.1')
    for (const target of input.targets.values()) {
      if (target.waiting) {
        if (!startsKeyFrame(packet, input.encoding)) continue
        target.waiting = false
      }
      out.send(target.continuity ? target.continuity.next(packet) : packet, target.port, '127.0.0.1')
    }
  })
  socket.bind(0, '127.0.0.1', () => {
    inputs.set(command.id, input)
    parentPort!.postMessage({ id: command.id, port: socket.address().port })
  })
}

parentPort!.on('message', (command: RelayCommand) => {
  if (command.op === 'open') return open(command)
  const input = inputs.get(command.id)
  if (!input) return
  if (command.op === 'close') {
    inputs.delete(command.id)
    input.socket.close()
  } else if (command.op === 'feed')
    input.targets.set(command.target, { port: command.port, waiting: command.fromKey, continuity: command.frameTicks ? new RtpContinuity(command.frameTicks) : null })
  else input.targets.delete(command.target)
})
