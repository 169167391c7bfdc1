// The hub of one running stream: the camera's child sends one more copy of each member's RTP to a
// loopback socket of the service (beside the configured endpoints), and the hub hands every packet to
// its readers — WHEP, RTSP, MJPEG/snapshots, the recorder, MAVLink's and the metrics' counters. Each
// reader has its own bounded queue (queue.ts), drained in its own turn of the event loop (setImmediate),
// so the socket is emptied at once, a slow or failing reader loses only its own packets, and no reader
// runs inside another's. The camera's child is never touched: readers come and go at no cost to the
// endpoints. The hub lives as long as the job (its ports survive child restarts); a restarted job gets
// a new hub and the old one says 'replaced', a stopped one says 'closed', so readers never poll.
// For H.264 it keeps each member's last group of pictures (GopCache), so a viewer or a snapshot that
// arrives between two key frames starts at once.
import { createSocket, type Socket } from 'node:dgram'
import type { Logger } from '../core/log'
import type { HubHealth, HubReader, MediaEncoding, ReaderEnd, Reading, StreamHub } from '../core/types'
import { readerLeft } from './memory'
import { ReaderQueue, type QueueLimits } from './queue'
import type { MediaEncoding as TrackEncoding } from './rtp'
import { CaptureClock } from './capture-clock'
import { GopCache } from './gop'
import { HEALTH_TICK_MS, healthChanged, MemberHealth, type FrameIntervals } from './health'
import { Relay } from './relay'
import { endsFrame, sequenceOf, ssrcOf, startsKeyFrame, timestampOf } from './rtp'

export { GopCache } from './gop'

/** Bigger than the kernel's default (208 KiB): a 1080p key frame arrives as a burst of ~200 packets. */
const RECEIVE_BUFFER = 4 << 20
/**
 * The most packets one reader handles in one turn of the event loop before it yields to the others and
 * to HTTP (a key frame's burst is ~200 packets; a backlog drains over a few turns).
 */
export const DRAIN_BUDGET = 256
/** The `member` of a reader of the stream's sound (readSound). */
const SOUND = -1

/**
 * The most a pre-record ring keeps per member, whatever --pre-record-seconds asks (1080p30 software H.264
 * is ~0.8 MB a second): it is sent to the recorder at once, and must fit its socket's 4 MiB buffer.
 */
export const PRE_RECORD_MAX_BYTES = 3 << 20

/**
 * The pre-record buffer: one member's last whole groups of pictures spanning at most `seconds` (RTP time,
 * 90 kHz) and `maxBytes`, with no gap, so a recording can start with what came just before the press.
 * The oldest group goes first; a lost packet or a new SSRC empties it until the next key frame.
 */
export class PreRecordRing {
  /** Whole groups of pictures, oldest first; the last one is still growing. */
  private gops: { packets: Uint8Array[]; bytes: number }[] = []
  private bytes = 0

  constructor(
    private readonly seconds: number,
    private readonly maxBytes = PRE_RECORD_MAX_BYTES,
  ) {}

  push(packet: Uint8Array): void {
    const last = this.gops.at(-1)?.packets.at(-1)
    if (startsKeyFrame(packet, 'H264')) {
      if (last && !this.follows(last, packet)) this.clear()
      this.gops.push({ packets: [], bytes: 0 })
    } else if (!last || !this.follows(last, packet)) {
      this.clear()
      return
    }
    const gop = this.gops.at(-1)!
    gop.packets.push(packet)
    gop.bytes += packet.length
    this.bytes += packet.length
    const span = (first: Uint8Array) => (timestampOf(packet) - timestampOf(first)) >>> 0
    while (this.gops.length > 1 && (span(this.gops[0]!.packets[0]!) > this.seconds * 90_000 || this.bytes > this.maxBytes)) this.bytes -= this.gops.shift()!.bytes
    if (this.bytes > this.maxBytes) this.clear() // one group alone past the cap
  }

  private follows(last: Uint8Array, packet: Uint8Array): boolean {
    return packet.length >= 12 && sequenceOf(packet) === ((sequenceOf(last) + 1) & 0xffff) && ssrcOf(packet) === ssrcOf(last)
  }

  private clear(): void {
    this.gops = []
    this.bytes = 0
  }

  /** The kept packets, from the oldest key frame to the newest packet (the packets themselves are shared). */
  get packets(): Uint8Array[] {
    return this.gops.flatMap((g) => g.packets)
  }
}

export interface HubOptions {
  encoding: MediaEncoding
  width: number
  height: number
  fps: number
  /** The cameras of the job, in member order (0 = leader). */
  members: string[]
  log: Logger
  /** Each reader's queue bounds (queue.ts has the defaults). */
  queue?: Partial<QueueLimits>
  /**
   * The child sends to the relay's thread (relay.ts), which forwards to this hub and to loopback
   * feeders off the main event loop; without it the child sends to the hub's own sockets.
   */
  relay?: boolean
  /** Seconds of each member's last groups of pictures kept for a recording's start (H.264; 0 = none): PreRecordRing. */
  preRecordSeconds?: number
  /**
   * The stream will carry sound (plugins/audio has a source for it): hasSound is true from the start,
   * before the sound's first packet, so a recording started in the stream's first instants has the track.
   */
  sound?: boolean
  /** A viewer's delay (ms) past which a member's health alert is raised (--delay-alert; none without). */
  delayAlertMs?: number
}

/** A loopback feeder served by the relay's thread: no queue here, the thread sends as packets come. */
class RelayedReading implements Reading {
  readonly dropped = 0
  private done = false
  constructor(
    private readonly hub: MediaHub,
    readonly member: number,
    readonly reader: Pick<HubReader, 'name' | 'ended'>,
    private readonly stop: () => void,
    /** The thread sends to `port` from the member's next key frame on (feeder.ts Feed.retarget). */
    readonly retarget: (port: number, switched?: (timestamp: number) => void) => void,
    /** The thread sends what it held, then every packet, to `port` (feeder.ts Feed.open). */
    readonly open: (port: number) => void,
  ) {}

  end(end: ReaderEnd): void {
    if (this.done) return
    this.close()
    try {
      this.reader.ended?.(end)
    } catch {}
  }

  close(): void {
    if (this.done) return
    this.done = true
    this.stop()
    this.hub.removeRelayed(this)
  }
}

/** One reader at the hub: its queue, and whether a drain is scheduled or a promise it returned is pending. */
class Slot implements Reading {
  readonly queue: ReaderQueue
  private scheduled = false
  private busy = false
  private done = false

  constructor(
    private readonly hub: MediaHub,
    readonly member: number,
    readonly reader: HubReader,
    limits: Partial<QueueLimits> | undefined,
    encoding: TrackEncoding = hub.encoding,
  ) {
    this.queue = new ReaderQueue(encoding, { fromKeyFrame: reader.from === 'key', limits })
  }

  get dropped(): number {
    return this.queue.dropped
  }

  get active(): boolean {
    return !this.done
  }

  offer(packet: Uint8Array): void {
    const before = this.queue.dropped
    this.queue.push(packet)
    if (this.queue.dropped !== before) this.hub.noteDropped(this.reader.name, this.queue.dropped - before)
    this.schedule()
  }

  private schedule(): void {
    if (this.scheduled || this.busy || this.done || this.queue.length === 0) return
    this.scheduled = true
    setImmediate(this.drain)
  }

  private readonly drain = (): void => {
    this.scheduled = false
    for (let n = 0; n < DRAIN_BUDGET && !this.done && !this.busy; n++) {
      const packet = this.queue.shift()
      if (!packet) break
      let result: void | Promise<unknown>
      try {
        result = this.reader.packet(packet)
      } catch (err) {
        this.fail(err)
        return
      }
      if (result && typeof (result as Promise<unknown>).then === 'function') {
        // The reader paces itself: its next packets wait (bounded) until this one is handled.
        this.busy = true
        ;(result as Promise<unknown>).then(
          () => {
            this.busy = false
            this.schedule()
          },
          (err) => this.fail(err),
        )
      }
    }
    this.schedule()
  }

  private fail(err: unknown): void {
    if (this.done) return
    const detail = err instanceof Error ? err.message : String(err)
    this.hub.noteFailed(this)
    this.hub.log.warn('a reader of the stream failed and was ended; the others read on', { reader: this.reader.name, member: this.member, error: detail })
    this.end({ reason: 'failed', detail })
  }

  /** Ends the reader from the hub's side, telling it why. */
  end(end: ReaderEnd): void {
    if (this.done) return
    this.close()
    try {
      this.reader.ended?.(end)
    } catch (err) {
      this.hub.log.warn('a reader failed while ending', { reader: this.reader.name, error: String(err) })
    }
  }

  close(): void {
    if (this.done) return
    this.done = true
    this.queue.clear()
    this.hub.remove(this)
  }
}

type Listeners = { replaced: Set<(next: StreamHub) => void>; closed: Set<(reason: string) => void> }

export class MediaHub implements StreamHub {
  readonly encoding: MediaEncoding
  readonly width: number
  readonly height: number
  readonly fps: number
  readonly log: Logger
  private readonly cameras: string[]
  private readonly slots: Set<Slot>[]
  private readonly counts: { bytes: number; frames: number }[]
  private readonly healths: MemberHealth[]
  private healthTimer: ReturnType<typeof setInterval> | null = null
  private readonly gops: GopCache[]
  private readonly rings: PreRecordRing[]
  private readonly sockets: Socket[] = []
  private readonly listeners: Listeners = { replaced: new Set(), closed: new Set() }
  private readonly limits: Partial<QueueLimits> | undefined
  private readonly droppedBy: Record<string, number> = {}
  private failures = 0
  private readonly relayed: Set<RelayedReading>[]
  private readonly useRelay: boolean
  private relay: Relay | null = null
  private relayIds: number[] = []
  closed = false
  private readonly soundSlots = new Set<Slot>()
  private soundOn: boolean
  private soundSent = { bytes: 0, packets: 0 }
  /** The sound of the pre-record buffer's seconds, with when each packet came (performance.now()); null without one. */
  private readonly soundRing: { at: number; packet: Uint8Array }[] | null
  private readonly preRecordSeconds: number
  /** The leader's last packet: its RTP timestamp and when it came (performance.now(); -1: none yet). */
  private lastLeaderTs = 0
  private lastLeaderAt = -1
  /** Per member, when its frames were made (capture-clock.ts). */
  private readonly captureClocks: CaptureClock[]
  /** When the sound's packets were made (its one timeline: plugins/audio restamps it). */
  private readonly soundClock = new CaptureClock(48_000)
  /** Per member, the loopback port the child sends to (after listen()). */
  ports: number[] = []

  constructor(options: HubOptions) {
    this.encoding = options.encoding
    this.width = options.width
    this.height = options.height
    this.fps = options.fps
    this.log = options.log
    this.limits = options.queue
    this.cameras = options.members.slice()
    this.slots = this.cameras.map(() => new Set())
    this.counts = this.cameras.map(() => ({ bytes: 0, frames: 0 }))
    this.healths = this.counts.map((counts) => new MemberHealth(this.fps, this.encoding, counts, options.delayAlertMs))
    this.captureClocks = this.cameras.map(() => new CaptureClock(90_000))
    this.gops = this.encoding === 'H264' ? this.cameras.map(() => new GopCache()) : []
    const pre = options.preRecordSeconds ?? 0
    this.rings = this.encoding === 'H264' && pre > 0 ? this.cameras.map(() => new PreRecordRing(pre)) : []
    this.preRecordSeconds = pre
    this.soundRing = this.rings.length ? [] : null
    this.relayed = this.cameras.map(() => new Set())
    this.useRelay = options.relay ?? false
    this.soundOn = options.sound ?? false
  }

  get members(): number {
    return this.cameras.length
  }

  memberOf(bus_info: string): number {
    return this.cameras.indexOf(bus_info)
  }

  /** Binds one loopback socket per member (and the relay's, with `relay`); the child sends member i's RTP to ports[i]. */
  async listen(): Promise<number[]> {
    try {
      await this.bind()
      if (this.useRelay) {
        const relay = (this.relay = Relay.shared(this.log))
        const own = this.ports
        this.ports = []
        for (const port of own) {
          const input = await relay.open(this.encoding, port)
          this.relayIds.push(input.id)
          this.ports.push(input.port)
        }
        if (this.closed) this.silence()
      }
    } catch (err) {
      this.close('the hub could not listen')
      throw err
    }
    return this.ports
  }

  private async bind(): Promise<void> {
    for (let member = 0; member < this.members; member++) {
      const socket = createSocket({ type: 'udp4', recvBufferSize: RECEIVE_BUFFER })
      this.sockets.push(socket)
      socket.on('message', (packet) => this.receive(member, packet))
      socket.on('error', (err) => this.log.warn('stream hub socket error', { member, error: err.message })) // loopback, ours: nothing to recover
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject)
        socket.bind(0, '127.0.0.1', () => {
          socket.off('error', reject)
          resolve()
        })
      })
      this.ports.push(socket.address().port)
    }
  }

  /**
   * A loopback feeder served by the relay's thread (feeder.ts), or null when this hub has no relay.
   * The thread sends member `member`'s packets to 127.0.0.1:`port` (null: held until the reading's
   * open) until the reading is closed; `began`, as feeder.ts FeedOptions.
   */
  relayTo(
    member: number,
    port: number | null,
    reader: Pick<HubReader, 'name' | 'from' | 'ended'> & { began?(timestamp: number): void },
    continuous = false,
    kept = false,
  ): RelayedReading | null {
    const relay = this.relay
    const id = this.relayIds[member]
    if (!relay || id === undefined) return null
    const set = this.relayed[member]
    if (!set) throw new RangeError(`member ${member} of ${this.members}`)
    if (this.closed) return null
    const target = relay.feed(id, port, kept ? 'kept' : reader.from === 'key' ? 'key' : 'now', continuous ? this.frameTicks : undefined, reader.began)
    const reading = new RelayedReading(
      this,
      member,
      reader,
      () => relay.unfeed(id, target),
      (to, switched) => relay.retarget(id, target, to, switched),
      (to) => relay.release(id, target, to),
    )
    set.add(reading)
    return reading
  }

  /** @internal (RelayedReading) */
  removeRelayed(reading: RelayedReading): void {
    this.relayed[reading.member]?.delete(reading)
    readerLeft()
  }

  /** One packet of member `member` (from its socket; tests call it directly). Only queues: readers run in their own turns. */
  receive(member: number, packet: Uint8Array): void {
    if (this.closed) return
    const counts = this.counts[member]
    if (!counts) return
    counts.bytes += packet.length
    if (endsFrame(packet)) counts.frames++
    this.healths[member]!.packet(packet)
    if (!this.healthTimer) this.startHealth()
    if (member === 0 && packet.length >= 12) {
      this.lastLeaderTs = timestampOf(packet)
      this.lastLeaderAt = performance.now()
    }
    if (packet.length >= 12) this.captureClocks[member]!.arrived(ssrcOf(packet), timestampOf(packet), performance.timeOrigin + performance.now())
    this.gops[member]?.push(packet)
    this.rings[member]?.push(packet)
    for (const slot of this.slots[member]!) slot.offer(packet)
  }

  read(member: number, reader: HubReader): Reading {
    const slots = this.slots[member]
    if (!slots) throw new RangeError(`member ${member} of ${this.members}`)
    const slot = new Slot(this, member, reader, this.limits)
    if (this.closed) {
      queueMicrotask(() => slot.end({ reason: 'closed', detail: 'the stream has stopped' }))
      return slot
    }
    slots.add(slot)
    return slot
  }

  get hasSound(): boolean {
    return this.soundOn && !this.closed
  }

  readSound(reader: HubReader): Reading {
    const slot = new Slot(this, SOUND, reader, this.limits, 'OPUS')
    if (this.closed) {
      queueMicrotask(() => slot.end({ reason: 'closed', detail: 'the stream has stopped' }))
      return slot
    }
    this.soundSlots.add(slot)
    return slot
  }

  sendSound(packet: Uint8Array | null): void {
    if (this.closed) return
    if (!packet) {
      this.soundOn = false
      return
    }
    this.soundOn = true
    this.soundSent.bytes += packet.length
    this.soundSent.packets++
    if (packet.length >= 12) this.soundClock.arrived(ssrcOf(packet), timestampOf(packet), performance.timeOrigin + performance.now())
    const ring = this.soundRing
    if (ring) {
      // As far back as the video's groups of pictures may reach, trimmed once a second.
      const at = performance.now()
      ring.push({ at, packet })
      const keep = at - (this.preRecordSeconds + 1) * 1000
      if (ring[0]!.at < keep - 1000) ring.splice(0, ring.findIndex((k) => k.at >= keep))
    }
    for (const slot of this.soundSlots) slot.offer(packet)
  }

  soundStats(): { bytes: number; packets: number } {
    return { ...this.soundSent }
  }

  sent(member: number): { bytes: number; frames: number } {
    const counts = this.counts[member]
    if (!counts) throw new RangeError(`member ${member} of ${this.members}`)
    return { ...counts }
  }

  /** One frame interval in RTP time (90 kHz). */
  get frameTicks(): number {
    return Math.round(90_000 / Math.max(1, this.fps))
  }

  /**
   * When (performance.now()) the leader's frame stamped `ts` (90 kHz) came: from the last packet's time
   * and the camera's clock. A file's other tracks start at its first frame's moment (recorder.ts).
   */
  arrivalOf(ts: number): number {
    const ago = ((this.lastLeaderTs - ts) | 0) / 90
    // Another timeline (the camera's child restarted since), or no packet yet: now. (A little ahead: the
    // relay's thread may send a key frame before this thread has seen it.)
    if (this.lastLeaderAt < 0 || !(ago > -1000 && ago < 60_000)) return performance.now()
    return this.lastLeaderAt - ago
  }

  capturedAt(member: number, ts: number): number | null {
    const clock = this.captureClocks[member]
    if (!clock) throw new RangeError(`member ${member} of ${this.members}`)
    return clock.capturedAt(ts)
  }

  /** capturedAt on performance.now()'s clock, the one the feeds and the recorder keep time in. */
  madeAt(member: number, ts: number): number | null {
    const at = this.capturedAt(member, ts)
    return at === null ? null : at - performance.timeOrigin
  }

  /** When (performance.now()) the sound's packet stamped `ts` was made; null before any. */
  soundMadeAt(ts: number): number | null {
    const at = this.soundClock.capturedAt(ts)
    return at === null ? null : at - performance.timeOrigin
  }

  /** Whether this hub keeps a pre-record buffer (--pre-record-seconds). */
  get preRecording(): boolean {
    return this.rings.length > 0
  }

  /** Member `member`'s pre-record packets (whole groups of pictures up to now); empty without a pre-record buffer. */
  preRecorded(member: number): Uint8Array[] {
    return this.rings[member]?.packets ?? []
  }

  /** The sound that came since `since` (performance.now()), from the pre-record buffer, with when each packet came. */
  preRecordedSound(since: number): { at: number; packet: Uint8Array }[] {
    return this.soundRing?.filter((k) => k.at >= since) ?? []
  }

  health(member: number): HubHealth | null {
    const health = this.healths[member]
    if (!health) throw new RangeError(`member ${member} of ${this.members}`)
    return health.figures()
  }

  viewerFigures(member: number, delayMs: number | null, loss: number | null): void {
    const health = this.healths[member]
    if (!health) throw new RangeError(`member ${member} of ${this.members}`)
    health.viewer(delayMs, loss)
  }

  viewerDelays(member: number): FrameIntervals {
    const health = this.healths[member]
    if (!health) throw new RangeError(`member ${member} of ${this.members}`)
    return health.viewerDelays()
  }

  frameIntervals(member: number): FrameIntervals {
    const health = this.healths[member]
    if (!health) throw new RangeError(`member ${member} of ${this.members}`)
    return health.intervals()
  }

  /** From the first packet on, the members' figures once a second; alerts raised or cleared go to watchHealth's listeners. */
  private startHealth(): void {
    this.healthTimer = setInterval(() => {
      const now = performance.now()
      this.healths.forEach((health, member) => {
        if (health.tick(now)) healthChanged({ hub: this, bus_info: this.cameras[member]!, member, health: health.figures()! })
      })
    }, HEALTH_TICK_MS)
    this.healthTimer.unref?.()
  }

  lastGop(member: number): readonly Uint8Array[] {
    return this.gops[member]?.gop ?? []
  }

  readerStats(): { readers: number; byName: Record<string, number>; dropped: Record<string, number>; failed: number } {
    const byName: Record<string, number> = {}
    for (const slots of [...this.slots, this.soundSlots]) for (const slot of slots) byName[slot.reader.name] = (byName[slot.reader.name] ?? 0) + 1
    for (const set of this.relayed) for (const r of set) byName[r.reader.name] = (byName[r.reader.name] ?? 0) + 1
    const readers = this.slots.reduce((n, s) => n + s.size, 0) + this.soundSlots.size + this.relayed.reduce((n, s) => n + s.size, 0)
    return { readers, byName, dropped: { ...this.droppedBy }, failed: this.failures }
  }

  on(event: 'replaced', listener: (next: StreamHub) => void): () => void
  on(event: 'closed', listener: (reason: string) => void): () => void
  on(event: 'replaced' | 'closed', listener: ((next: StreamHub) => void) | ((reason: string) => void)): () => void {
    const set = this.listeners[event] as Set<typeof listener>
    set.add(listener)
    return () => void set.delete(listener)
  }

  /** The job restarted as `next`: readers are ended with it (they follow it or leave), then 'replaced'. */
  replace(next: StreamHub): void {
    if (this.closed) return
    this.shut({ reason: 'replaced', detail: 'the stream restarted', next })
    for (const listener of [...this.listeners.replaced]) this.call(() => listener(next))
    this.forget()
  }

  /** The job stopped: readers are ended, then 'closed'. */
  close(reason = 'the stream has stopped'): void {
    if (this.closed) return
    this.shut({ reason: 'closed', detail: reason })
    for (const listener of [...this.listeners.closed]) this.call(() => listener(reason))
    this.forget()
  }

  /**
   * The camera went away (unplugged): the sockets close and its health ends, but its readers stay,
   * waiting; the camera's stream starting again says 'replaced' (a viewer whose own client cannot ask
   * again, as Cockpit's cannot, plays on), a stop says 'closed'.
   */
  away(): void {
    if (this.closed) return
    this.endHealth()
    this.silence()
  }

  /** Closes the sockets now, without telling anyone yet (a restart: the next hub says 'replaced' once it listens). */
  silence(): void {
    for (const id of this.relayIds.splice(0)) this.relay?.close(id)
    for (const socket of this.sockets.splice(0)) {
      try {
        socket.close()
      } catch {}
    }
  }

  private shut(end: ReaderEnd): void {
    this.closed = true
    this.endHealth()
    this.silence()
    for (const slots of [...this.slots, this.soundSlots]) for (const slot of [...slots]) slot.end(end)
    for (const set of this.relayed) for (const reading of [...set]) reading.end(end)
  }

  /** An alert raised goes with the stream (its next hub, if any, judges afresh). */
  private endHealth(): void {
    if (this.healthTimer) clearInterval(this.healthTimer)
    this.healthTimer = null
    this.healths.forEach((health, member) => {
      if (health.end()) healthChanged({ hub: this, bus_info: this.cameras[member]!, member, health: health.figures()!, ended: true })
    })
  }

  private forget(): void {
    this.listeners.replaced.clear()
    this.listeners.closed.clear()
  }

  private call(fn: () => void): void {
    try {
      fn()
    } catch (err) {
      this.log.warn('a stream hub listener failed', { error: String(err) })
    }
  }

  /** @internal (Slot) */
  remove(slot: Slot): void {
    if (slot.member === SOUND) this.soundSlots.delete(slot)
    else this.slots[slot.member]?.delete(slot)
    readerLeft()
  }

  /** @internal (Slot) */
  noteDropped(name: string, count: number): void {
    this.droppedBy[name] = (this.droppedBy[name] ?? 0) + count
  }

  /** @internal (Slot) */
  noteFailed(_slot: Slot): void {
    this.failures++
  }
}
