// Reading a gst-launch-1.0 child (run with -m -v): which member just passed a buffer and at what PTS,
// which camera lost frames (v4l2src QoS), what failed. Pure, so the parsing is unit-tested.

export type ChildEvent =
  | { kind: 'buffer'; member: number; ptsNs: number }
  | { kind: 'lost'; member: number; durationNs: number }
  | { kind: 'error'; text: string }

// `/GstPipeline:pipeline0/GstIdentity:mon0: last-message = chain   ******* (mon0:sink) (614400 bytes, dts: none, pts: 0:00:00.001759628, …`
const BUFFER = /GstIdentity:mon(\d+): last-message = chain .*?pts: (\d+):(\d\d):(\d\d)\.(\d{9})/
// `Got message #57 from element "cam0" (qos): GstMessageQOS, live=(boolean)true, …, duration=(guint64)66666666, …`
const QOS = /^Got message #\d+ from element "cam(\d+)" \(qos\): .*?duration=\(guint64\)(\d+)/
// stderr: `ERROR: from element /GstPipeline:pipeline0/GstFileSink:filesink0: Could not write to resource.`
const ERROR = /^ERROR: (?:from element [^:]+(?::[^:]+)*?: )?(.*)$/

export function parseChildLine(line: string): ChildEvent | null {
  if (line.startsWith('/GstPipeline')) {
    const m = BUFFER.exec(line)
    if (!m) return null
    const ptsNs = ((Number(m[2]) * 60 + Number(m[3])) * 60 + Number(m[4])) * 1e9 + Number(m[5])
    return { kind: 'buffer', member: Number(m[1]), ptsNs }
  }
  if (line.startsWith('Got message')) {
    const m = QOS.exec(line)
    return m ? { kind: 'lost', member: Number(m[1]), durationNs: Number(m[2]) } : null
  }
  if (line.startsWith('ERROR:')) {
    const m = ERROR.exec(line)
    return { kind: 'error', text: (m?.[1] ?? line).trim() }
  }
  return null
}

/** Frames a v4l2src QoS message reports lost: its duration is lost × frame duration. */
export function lostFrames(durationNs: number, frameNs: number): number {
  return durationNs > 0 && frameNs > 0 ? Math.max(1, Math.round(durationNs / frameNs)) : 0
}

/**
 * Counts group frames that are out of step: every frame falls in a slot of one frame interval on the
 * group's clock; once a slot is a second old, the frames in a slot that not every member filled have
 * no partner and count as dropped (a lone camera is never out of step).
 */
export class StepCounter {
  private slots = new Map<number, Set<number>>()
  private newest = -Infinity
  dropped = 0

  constructor(private readonly members: number, private readonly frameNs: number, private readonly settleSlots = Math.max(2, Math.round(1e9 / frameNs))) {}

  private started = new Set<number>()
  private firstSlot = Infinity

  add(member: number, ptsNs: number): void {
    if (this.members < 2) return
    const slot = Math.round(ptsNs / this.frameNs)
    // Members start a few frames apart: count from the slot after every one of them has delivered.
    if (this.started.size < this.members) {
      this.started.add(member)
      if (this.started.size === this.members) this.firstSlot = slot + 1
      return
    }
    if (slot < this.firstSlot) return
    let set = this.slots.get(slot)
    if (!set) this.slots.set(slot, (set = new Set()))
    set.add(member)
    if (slot > this.newest) {
      this.newest = slot
      this.settle(slot - this.settleSlots)
    }
  }

  private settle(upTo: number): void {
    for (const [slot, set] of this.slots) {
      if (slot > upTo) continue
      if (set.size < this.members) this.dropped += set.size
      this.slots.delete(slot)
    }
  }
}
