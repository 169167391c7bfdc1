// Which automatic mode governs a control (greys it out while it is on): read from the controls' own
// names and V4L2 classes, since V4L2 reports only that a control is inactive now, not which control
// made it so. The console's lock reasons and the MAVLink camera definition's exclusions both use it.

/** The fields of a control this needs (the API's Control, and the console's copy of it). */
export interface NamedControl {
  control_id: number
  name: string
  flags: { control_type: string; menu?: { index: number; name: string }[] }
}

/** V4L2 control ids carry their class in the upper 16 bits (user 0x0098…, camera 0x009a…). */
const classOf = (id: number) => (id >>> 16) & 0xffff
const AUTO = /\bauto(matic)?\b/i
/** Words that say how a control is set, not what it sets: not what ties a control to its auto mode. */
const HOW = new Set(['auto', 'automatic', 'absolute', 'relative', 'continuous', 'mode', 'time', 'control', 'priority'])
const wordsOf = (name: string) => name.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w && !HOW.has(w))

/** An automatic mode, by its name ("Auto Exposure", "White Balance, Automatic"). */
export const isAuto = (c: Pick<NamedControl, 'name'>) => AUTO.test(c.name)

/** The auto control in the same class that shares most words with `c` ("Auto Exposure" for "Exposure Time, Absolute"). */
export function governingAuto<C extends NamedControl>(c: C, all: C[]): C | undefined {
  const mine = new Set(wordsOf(c.name))
  let best: { control: C; shared: number } | undefined
  for (const other of all) {
    if (other === c || !AUTO.test(other.name) || classOf(other.control_id) !== classOf(c.control_id)) continue
    const shared = wordsOf(other.name).filter((w) => mine.has(w)).length
    if (shared && (!best || shared > best.shared)) best = { control: other, shared }
  }
  return best?.control
}

/** The value of an auto control that hands its controls back to the pilot: its "Manual" entry, or off for a switch. */
export function manualValue(auto: NamedControl): number | undefined {
  if (auto.flags.control_type === 'BOOLEAN') return 0
  return auto.flags.menu?.find((m) => /manual/i.test(m.name))?.index
}
