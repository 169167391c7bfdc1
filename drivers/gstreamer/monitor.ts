// Reading a gst-launch-1.0 child run with -m: bus messages, each naming the element that posted it,
// so they are attributed reliably even from many streaming threads (the -v property-notify lines are
// not: under load they repeat one element's value in place of another's). Pure, so it is unit-tested.
//   alive<i> (progressreport): posts once a second while member i's buffers flow — liveness, stalls.
//   mon<i> (identity check-imperfect-timestamp): posts when member i's timeline has a gap — frames missing.
//   cam<i> (v4l2src): QoS with duration = lost × frame duration — frames the camera lost.

export type ChildEvent =
  | { kind: 'alive'; member: number }
  | { kind: 'gap'; member: number; deltaNs: number }
  | { kind: 'lost'; member: number; durationNs: number }
  | { kind: 'error'; text: string }
  | { kind: 'segment'; path: string }

// `Got message #53 from element "alive0" (element): progress, current=(gint64)0, format=(GstFormat)time;`
const ALIVE = /^Got message #\d+ from element "alive(\d+)" \(element\): progress/
// `Got message #62 from element "mon0" (element): imperfect-timestamp, delta=(gint64)33333334, …`
const GAP = /^Got message #\d+ from element "mon(\d+)" \(element\): imperfect-timestamp, delta=\(gint64\)(-?\d+)/
// `Got message #57 from element "cam0" (qos): GstMessageQOS, live=(boolean)true, …, duration=(guint64)66666666, …`
const QOS = /^Got message #\d+ from element "cam(\d+)" \(qos\): .*?duration=\(guint64\)(\d+)/
// `Got message #89 from element "mux" (element): splitmuxsink-fragment-opened, location=(string)/r/cam_…_seg001.mkv, running-time=…`
// (a location with spaces or quotes comes quoted, backslash-escaped)
const SEGMENT = /^Got message #\d+ from element "mux" \(element\): splitmuxsink-fragment-opened, location=\(string\)("(?:[^"\\]|\\.)*"|[^,]*)/
// stderr: `ERROR: from element /GstPipeline:pipeline0/GstFileSink:filesink0: Could not write to resource.`
const ERROR = /^ERROR: (?:from element [^:]+(?::[^:]+)*?: )?(.*)$/
// stderr: `WARNING: erroneous pipeline: no element "x264enc"` (a plugin is not installed)
const ERRONEOUS = /^WARNING: (erroneous pipeline: .*)$/

export function parseChildLine(line: string): ChildEvent | null {
  if (line.startsWith('Got message')) {
    let m = ALIVE.exec(line)
    if (m) return { kind: 'alive', member: Number(m[1]) }
    if ((m = GAP.exec(line))) return { kind: 'gap', member: Number(m[1]), deltaNs: Number(m[2]) }
    if ((m = QOS.exec(line))) return { kind: 'lost', member: Number(m[1]), durationNs: Number(m[2]) }
    if ((m = SEGMENT.exec(line))) return { kind: 'segment', path: m[1]!.startsWith('"') ? m[1]!.slice(1, -1).replace(/\\(.)/g, '$1') : m[1]! }
    return null
  }
  if (line.startsWith('ERROR:')) {
    const m = ERROR.exec(line)
    return { kind: 'error', text: (m?.[1] ?? line).trim() }
  }
  const m = ERRONEOUS.exec(line)
  return m ? { kind: 'error', text: m[1]!.trim() } : null
}

/** Frames a v4l2src QoS message reports lost: its duration is lost × frame duration. */
export function lostFrames(durationNs: number, frameNs: number): number {
  return durationNs > 0 && frameNs > 0 ? Math.max(1, Math.round(durationNs / frameNs)) : 0
}

/** Whole frames missing in a gap (real cameras' timestamps jitter by far less than half a frame). */
export function gapFrames(deltaNs: number, frameNs: number): number {
  return deltaNs > 0 && frameNs > 0 ? Math.round(deltaNs / frameNs) : 0
}

/**
 * Frames of a group dropped for being out of step: a gap of `gapFrames` in one member's timeline leaves
 * the same instants of every other member without a partner. A lone camera is never out of step.
 */
export function outOfStep(gapFrames: number, members: number): number {
  return gapFrames > 0 ? gapFrames * (members - 1) : 0
}
