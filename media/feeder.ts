// The one way a child process that needs a stream's packets gets them: a reader of the hub that sends
// each packet to the child's loopback UDP port (a udpsrc). The recorder, the MJPEG transcoder and the
// RTSP server are fed this way. The hub's relay thread (relay.ts) sends them when the hub has one, off
// the main event loop; otherwise a feeder is a reader like any other, with its own bounded queue. Either
// way the stream's end or restart reaches it as an event.
import { createSocket, type Socket } from 'node:dgram'
import type { Logger } from '../core/log'
import type { ReaderEnd, Reading, StreamHub } from '../core/types'
import { MediaHub } from './hub'
import { HOLD_BYTES } from './queue'
import { compressedGroup, RtpContinuity, startsKeyFrame, timestampOf, type MediaEncoding as TrackEncoding } from './rtp'
import { SoundBehindVideo, SoundTimeline } from './sound'

export interface FeedOptions {
  /** The reader's name (log, metrics): 'recorder', 'rtsp', 'mjpeg'. */
  name: string
  /** 'key': start at the next key frame (a file or a decoder that starts mid-GOP opens on grey smears). */
  from?: 'now' | 'key'
  /**
   * Begin with the hub's pre-record buffer (MediaHub.preRecorded: whole groups of pictures of the last
   * seconds), then every packet after it; without one, as `from`.
   */
  preRecorded?: boolean
  /**
   * Begin with the hub's kept group of pictures (its last key frame on, rtp.ts compressedGroup), then every
   * packet after it; with none kept, from the next key frame. A viewer's decoder so opens on a whole
   * picture, at once (the RTSP server's clients).
   */
  keptGroup?: boolean
  /**
   * One RTP timeline for the child, whatever happens upstream: a camera child restart (new SSRC, sequence
   * numbers, timestamps) is rewritten to follow on (rtp.ts RtpContinuity). For a child that stamps frames
   * from RTP timestamps alone (the recorder). For the sound (feedSound): it never stops, silence fills in.
   */
  continuous?: boolean
  /**
   * feedSound, continuous: begin with the sound that came since then (performance.now(); the hub's
   * pre-record buffer), each packet at its own time, silence where there was none.
   */
  soundSince?: number
  /**
   * feedSound, continuous, a hub with video: the sound goes no further than the leader's video has come
   * (sound.ts SoundBehindVideo), and a cut moves it at the key frame's moment (SoundFeed.cutAt): a file's
   * sound then ends with its video, and sits beside its picture, however late the camera's encoder is.
   */
  behindVideo?: boolean
  /**
   * Called once with the RTP timestamp (as the hub received it) of the first packet the feed takes, held
   * or sent: a file's other tracks start at its first frame (the recorder).
   */
  began?(timestamp: number): void
  ended?(end: ReaderEnd): void
}

/**
 * A feed whose destination can move: the recorder's segments (drivers/gstreamer/recorder.ts) retarget
 * each member's feed to the next segment's child at a key frame, so every packet goes to exactly one file.
 */
export interface Feed extends Reading {
  /**
   * A feed made with no port yet (the child not listening) holds what it takes, up to HOLD_BYTES; from now
   * on it sends to 127.0.0.1:`port`, what it held first, at once. So a recording begins at the first key
   * frame after it was asked for, however long its child takes to start.
   */
  open(port: number): void
  /**
   * From the member's next key frame on (that packet included), packets go to 127.0.0.1:`port` instead;
   * `switched` is called once, after that key frame was sent (for the relay's thread: when it says so),
   * with its RTP timestamp as the hub received it. A later call replaces a retarget not yet done.
   */
  retarget(port: number, switched?: (timestamp: number) => void): void
}

/** A file's sound feed (feedSound with behindVideo): moved at the video's cut rather than at once. */
export interface SoundFeed extends Feed {
  /** The leader's feed was asked to move: the sound made after the video's newest frame waits for the cut. */
  cutAsked(): void
  /** The leader moved at its key frame stamped `timestamp`: the sound made before that frame goes where it went, the rest to `port`. */
  cutAt(port: number, timestamp: number): void
  /** The cut asked for is not made. */
  cutDropped(): void
}

/**
 * Where a main-thread feed's packets go: a port, moved at a key frame (Feed.retarget), or held until the
 * child listens (Feed.open).
 */
class Destination {
  private next: { port: number; switched?: (timestamp: number) => void } | null = null
  private held: Uint8Array[] = []
  private heldBytes = 0

  constructor(
    private port: number | null,
    private readonly encoding: TrackEncoding,
    private readonly out: (packet: Uint8Array, port: number) => void,
    private began?: (timestamp: number) => void,
  ) {}

  retarget(port: number, switched?: (timestamp: number) => void): void {
    this.next = { port, switched }
  }

  open(port: number): void {
    this.port = port
    for (const packet of this.held.splice(0)) this.out(packet, port)
    this.heldBytes = 0
  }

  /** Sends `sent` (`packet`, or its rewrite: RtpContinuity) where `packet` goes. */
  send(packet: Uint8Array, sent = packet): void {
    if (this.began && packet.length >= 12) {
      const began = this.began
      this.began = undefined
      const timestamp = timestampOf(packet)
      queueMicrotask(() => began(timestamp))
    }
    if (this.next && startsKeyFrame(packet, this.encoding)) {
      const { port, switched } = this.next
      this.next = null
      this.port = port
      const timestamp = timestampOf(packet)
      if (switched) queueMicrotask(() => switched(timestamp)) // after this packet is sent
    }
    if (this.port !== null) return this.out(sent, this.port)
    if (this.heldBytes + sent.length > HOLD_BYTES) return
    this.held.push(sent)
    this.heldBytes += sent.length
  }
}

/** One socket that sends to any number of loopback ports (our own children: a lost packet is just lost). */
export class LoopbackFeeder {
  private socket: Socket | null

  constructor(private readonly log: Logger) {
    const socket = (this.socket = createSocket('udp4'))
    // Loopback to a child of ours: ECONNREFUSED while it starts or after it died is expected, logged once.
    let warned = false
    socket.on('error', (err) => {
      if (!warned) this.log.debug('loopback feeder: a send failed (the child is not listening)', { error: err.message })
      warned = true
    })
  }

  /**
   * Sends member `member`'s packets of `hub` to 127.0.0.1:`port` until the returned reading is closed;
   * with `port` null, holds them until the feed is opened (Feed.open).
   */
  feed(hub: StreamHub, member: number, port: number | null, options: FeedOptions): Feed {
    const out = (packet: Uint8Array, to: number) => void this.socket?.send(packet, to, '127.0.0.1')
    const destination = new Destination(port, hub.encoding, out, options.began)
    const mainThread = (reading: Reading): Feed =>
      Object.assign(reading, {
        retarget: (to: number, switched?: (timestamp: number) => void) => destination.retarget(to, switched),
        open: (to: number) => destination.open(to),
      })
    const continuity = options.continuous && hub instanceof MediaHub ? new RtpContinuity(hub.frameTicks) : null
    const send = (packet: Uint8Array) => destination.send(packet, continuity ? continuity.next(packet) : packet)
    if (options.preRecorded && hub instanceof MediaHub && hub.preRecording) {
      // Sent now and the reader added in this same turn: the next packet the hub receives follows the
      // last one sent, none lost or sent twice. (So this reading is the main thread's, not the relay's.)
      const earlier = hub.preRecorded(member)
      for (const packet of earlier) send(packet)
      return mainThread(hub.read(member, { name: options.name, from: earlier.length ? 'now' : options.from, packet: send, ended: options.ended }))
    }
    // A hub with a relay sends from the relay's thread, off the main event loop (the kept group too: the thread keeps its own).
    const relayed = hub instanceof MediaHub ? hub.relayTo(member, port, options, options.continuous, options.keptGroup) : null
    if (relayed) return relayed
    if (options.keptGroup) {
      // As preRecorded: the group sent and the reader added in this same turn, none lost or sent twice.
      const kept = compressedGroup(hub.lastGop(member))
      for (const packet of kept) send(packet)
      return mainThread(hub.read(member, { name: options.name, from: kept.length ? 'now' : 'key', packet: send, ended: options.ended }))
    }
    return mainThread(hub.read(member, { name: options.name, from: options.from, packet: send, ended: options.ended }))
  }

  /**
   * Sends the hub's sound (its Opus RTP) to 127.0.0.1:`port` (null: held until Feed.open) until the
   * returned reading is closed. Every Opus packet stands alone: a retarget moves the very next one.
   * `continuous` (a file's muxer, which stamps the sound from RTP timestamps as the video, and waits for
   * every track): one RTP timeline whatever happens upstream, and it never stops while the reading lasts:
   * when the hub's sound does (its source detached, its child gone) silence fills in (sound.ts SoundTimeline).
   */
  feedSound(hub: StreamHub, port: number | null, options: FeedOptions): SoundFeed {
    const destination = new Destination(port, 'OPUS', (packet, to) => void this.socket?.send(packet, to, '127.0.0.1'))
    const moves = {
      retarget: (to: number, switched?: (timestamp: number) => void) => destination.retarget(to, switched),
      open: (to: number) => destination.open(to),
    }
    const send = (packet: Uint8Array) => destination.send(packet)
    const atOnce = { cutAsked() {}, cutAt: (to: number) => destination.retarget(to), cutDropped() {} }
    if (!options.continuous) return Object.assign(hub.readSound({ name: options.name, packet: send, ended: options.ended }), moves, atOnce)
    const video = options.behindVideo && hub instanceof MediaHub && hub.members > 0 ? hub : null
    const hold = video ? new SoundBehindVideo(send) : null
    const timeline = new SoundTimeline(hold ? (packet, at) => hold.packet(packet, at) : send)
    timeline.start()
    // Sent now and the reader added in this same turn: none lost or sent twice where they meet.
    if (options.soundSince !== undefined && hub instanceof MediaHub) timeline.replay(options.soundSince, hub.preRecordedSound(options.soundSince))
    const ended = (end: ReaderEnd) => {
      timeline.stop()
      options.ended?.(end)
    }
    const reading = hub.readSound({
      name: options.name,
      packet: (packet) => timeline.packet(packet, (video && packet.length >= 12 ? video.soundMadeAt(timestampOf(packet)) : null) ?? undefined),
      ended,
    })
    // The leader's frames, as they come: how far the sound may go.
    const frames = video?.read(0, {
      name: `${options.name}-sound-clock`,
      from: 'now',
      packet: (packet) => {
        const at = packet.length >= 12 ? video.madeAt(0, timestampOf(packet)) : null
        if (at !== null) hold!.video(at)
      },
    })
    return {
      get dropped() {
        return reading.dropped
      },
      close() {
        timeline.stop()
        reading.close()
        frames?.close()
      },
      ...moves,
      cutAsked: () => hold?.cutAsked(),
      cutAt: (to: number, timestamp: number) => {
        const at = video?.madeAt(0, timestamp) ?? null
        if (hold && at !== null) hold.cutAt(at, () => destination.retarget(to))
        else destination.retarget(to)
      },
      cutDropped: () => hold?.cutDropped(),
    }
  }

  close(): void {
    try {
      this.socket?.close()
    } catch {}
    this.socket = null
  }
}

/** Ports free on loopback now (bound, noted, released): the child binds them a moment later. */
export async function freeLoopbackPorts(count: number): Promise<number[]> {
  const sockets = await Promise.all(
    Array.from({ length: count }, () => new Promise<Socket>((resolve, reject) => {
      const socket = createSocket('udp4')
      socket.once('error', reject)
      socket.bind(0, '127.0.0.1', () => resolve(socket))
    })),
  )
  const ports = sockets.map((s) => s.address().port)
  await Promise.all(sockets.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))))
  return ports
}
