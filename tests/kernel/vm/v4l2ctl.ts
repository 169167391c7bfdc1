// v4l2-ctl (v4l-utils 1.22) as the independent second opinion: runs it and parses its text output.
import { spawnSync } from 'node:child_process'

export function v4l2ctl(args: string[]): string {
  const r = spawnSync('v4l2-ctl', args, { encoding: 'utf8', timeout: 30_000 })
  if (r.error) throw new Error(`v4l2-ctl is missing (v4l-utils): ${r.error.message}`)
  if (r.status !== 0) throw new Error(`v4l2-ctl ${args.join(' ')} failed (${r.status}): ${r.stderr}`)
  return r.stdout
}

export interface TheirSize {
  kind: 'Discrete' | 'Stepwise' | 'Continuous'
  /** Discrete: "WxH"; ranges: min/max/step. */
  size?: string
  min?: [number, number]
  max?: [number, number]
  step?: [number, number]
  /** As v4l2-ctl prints them: "0.040s (25.000 fps)". */
  intervals: string[]
}

/** `--list-formats-ext` → fourcc → sizes. */
export function parseFormats(text: string): Record<string, TheirSize[]> {
  const out: Record<string, TheirSize[]> = {}
  let sizes: TheirSize[] | null = null
  for (const line of text.split('\n')) {
    let m: RegExpMatchArray | null
    if ((m = line.match(/^\t\[\d+\]: '([^']*)'/))) out[m[1]!.replace(/ +(-BE)?$/, '$1')] = sizes = [] // 'Y16 -BE' → 'Y16-BE'
    else if ((m = line.match(/^\t\tSize: Discrete (\d+x\d+)/))) sizes!.push({ kind: 'Discrete', size: m[1], intervals: [] })
    else if ((m = line.match(/^\t\tSize: (Stepwise|Continuous) (\d+)x(\d+) - (\d+)x(\d+)(?: with step (\d+)\/(\d+))?/)))
      sizes!.push({
        kind: m[1] as 'Stepwise',
        min: [+m[2]!, +m[3]!],
        max: [+m[4]!, +m[5]!],
        step: [+(m[6] ?? 1), +(m[7] ?? 1)],
        intervals: [],
      })
    else if ((m = line.match(/^\t\t\tInterval: Discrete (.*)$/))) sizes!.at(-1)!.intervals.push(m[1]!.trim())
    else if ((m = line.match(/^\t\t\tInterval: (Stepwise|Continuous) (.*)$/))) sizes!.at(-1)!.intervals.push(`${m[1]} ${m[2]!.trim()}`)
  }
  return out
}

export interface TheirControl {
  name: string
  id: number
  type: string
  min?: string
  max?: string
  step?: string
  default?: string
  value?: string
  flags: string[]
  dims: boolean
  menu: { index: number; name: string }[]
}

/** `--list-ctrls-menus` → controls in order, plus the class headings. */
export function parseControls(text: string): { controls: TheirControl[]; classes: string[] } {
  const controls: TheirControl[] = []
  const classes: string[] = []
  let inControls = true
  for (const line of text.split('\n')) {
    if (line.startsWith('ioctl:')) inControls = false
    if (!inControls) continue
    let m: RegExpMatchArray | null
    if ((m = line.match(/^\s*(\S+) (0x[0-9a-f]{8}) \((\w+)\)\s*: ?(.*)$/))) {
      const rest = m[4]!
      const c: TheirControl = { name: m[1]!, id: parseInt(m[2]!, 16), type: m[3]!, flags: [], dims: /dims=/.test(rest), menu: [] }
      const str = rest.match(/value='(.*)'(?: flags=|$)/)
      if (str) c.value = str[1]
      const flags = rest.match(/flags=(.*)$/)
      if (flags) c.flags = flags[1]!.split(', ')
      for (const k of ['min', 'max', 'step', 'default', 'value'] as const) {
        if (k === 'value' && str) continue
        const v = rest.match(new RegExp(`(?:^| )${k}=(\\S+)`))
        if (v) c[k] = v[1]
      }
      controls.push(c)
    } else if ((m = line.match(/^\t\t\t\t(\d+): (.*)$/))) {
      const name = controls.at(-1)!.type === 'intmenu' ? m[2]!.replace(/ \(0x[0-9a-f]+\)$/, '') : m[2]!
      controls.at(-1)!.menu.push({ index: +m[1]!, name })
    } else if (/^\S/.test(line)) classes.push(line.trim())
  }
  return { controls, classes }
}

/** v4l2-ctl's variable name for a control name ("Gain, Automatic" → gain_automatic). */
export const name2var = (name: string) => name.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '')

/** An interval as v4l2-ctl prints it: seconds and fps with three decimals. */
export const fmtInterval = (i: { numerator: number; denominator: number }) =>
  `${(i.numerator / i.denominator).toFixed(3)}s (${(i.denominator / i.numerator).toFixed(3)} fps)`

export const THEIR_TYPES: Record<string, string> = {
  int: 'INTEGER', bool: 'BOOLEAN', menu: 'MENU', button: 'BUTTON', int64: 'INTEGER64', str: 'STRING', bitmask: 'BITMASK', intmenu: 'INTEGER_MENU',
}

/** `--list-devices` → bus_info → /dev paths (media nodes left out: they are not video nodes). */
export function parseDeviceList(text: string): Record<string, string[]> {
  const out: Record<string, string[]> = {}
  let cur: string[] | null = null
  for (const line of text.split('\n')) {
    const head = line.match(/^\S.*\((.*)\):$/)
    if (head) out[head[1]!] = cur = []
    else if (line.startsWith('\t/dev/') && !line.includes('/dev/media')) cur!.push(line.trim())
  }
  return out
}
