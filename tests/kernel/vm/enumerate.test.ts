// Inside the VM (vivid n_devs=2): what the backend enumerates equals what v4l2-ctl reports, node by node.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import type { Control, RawDevice } from '../../../core/types'
import { V4l2Backend } from '../../../drivers/v4l2/backend'
import { enumControls } from '../../../drivers/v4l2/device'
import { closeDevice, openDevice } from '../../../drivers/v4l2/libc'
import { nodeNames } from '../../../drivers/v4l2/sysfs'
import { fmtInterval, name2var, parseControls, parseDeviceList, parseFormats, THEIR_TYPES, v4l2ctl, type TheirControl } from './v4l2ctl'

const backend = new V4l2Backend()
let devices: RawDevice[] = []

beforeAll(async () => {
  if (!existsSync('/sys/class/video4linux') || nodeNames().length === 0)
    throw new Error('no V4L2 nodes: this test runs inside the kernel-tier VM with vivid loaded (npm run test:kernel)')
  devices = await backend.list()
})
afterAll(() => backend.stop())

test('every node is listed, grouped by bus_info as v4l2-ctl --list-devices groups them', () => {
  const theirs = parseDeviceList(v4l2ctl(['--list-devices']))
  const ours = Object.fromEntries(devices.map((d) => [d.bus_info, [...d.device_paths].sort()]))
  for (const k of Object.keys(theirs)) theirs[k]!.sort()
  expect(ours).toEqual(theirs)
  expect(devices.map((d) => d.bus_info)).toEqual(['platform:vivid-000', 'platform:vivid-001'])
  for (const d of devices) {
    expect(d.name).toBe('vivid')
    expect([d.vid, d.pid, d.manufacturer, d.serial]).toEqual([0, 0, null, '']) // a platform device has no USB ids
  }
})

test('formats, sizes and intervals equal v4l2-ctl --list-formats-ext for every node', () => {
  const problems: string[] = []
  let compared = 0
  for (const name of nodeNames()) {
    const path = `/dev/${name}`
    const theirs = parseFormats(v4l2ctl(['-d', path, '--list-formats-ext']))
    const camera = devices.flatMap((d) => d.cameras).find((c) => c.path === path)
    const ours = camera?.formats ?? {}
    if (Object.keys(ours).join() !== Object.keys(theirs).join()) problems.push(`${path}: formats ${Object.keys(ours)} vs ${Object.keys(theirs)}`)
    for (const [fcc, sizes] of Object.entries(theirs)) {
      const mine = ours[fcc] ?? []
      const discrete = sizes.filter((s) => s.kind === 'Discrete')
      if (discrete.length) {
        const a = mine.map((s) => `${s.width}x${s.height}: ${s.intervals.map(fmtInterval).join(', ')}`)
        const b = discrete.map((s) => `${s.size}: ${s.intervals.join(', ')}`)
        if (a.join('\n') !== b.join('\n')) problems.push(`${path} ${fcc}:\n ours   ${a.join('\n        ')}\n theirs ${b.join('\n        ')}`)
        compared += a.length
      }
      for (const r of sizes.filter((s) => s.kind !== 'Discrete')) {
        // A range is reduced to a list (drivers/v4l2/ranges.ts): every listed size must lie on the range's grid.
        for (const s of mine) {
          const ok = s.width >= r.min![0] && s.width <= r.max![0] && (s.width - r.min![0]) % r.step![0] === 0
            && s.height >= r.min![1] && s.height <= r.max![1] && (s.height - r.min![1]) % r.step![1] === 0
          if (!ok) problems.push(`${path} ${fcc}: ${s.width}x${s.height} is outside ${JSON.stringify(r)}`)
        }
        compared += mine.length
      }
    }
  }
  expect(problems).toEqual([])
  expect(compared).toBeGreaterThan(20)
})

function compareControl(ours: Control, t: TheirControl): string[] {
  const out: string[] = []
  const where = `${t.name} (0x${t.id.toString(16)})`
  const eq = (what: string, a: unknown, b: unknown) => {
    if (a !== b) out.push(`${where} ${what}: ours ${JSON.stringify(a)} theirs ${JSON.stringify(b)}`)
  }
  const num = (s: string) => (s.startsWith('0x') ? parseInt(s, 16) : Number(s))
  eq('id', ours.control_id, t.id)
  eq('name', name2var(ours.name), t.name)
  eq('type', ours.flags.control_type, THEIR_TYPES[t.type])
  if (t.min !== undefined) eq('min', ours.flags.min_value, num(t.min))
  if (t.max !== undefined) eq('max', ours.flags.max_value, num(t.max))
  if (t.step !== undefined) eq('step', ours.flags.step, num(t.step))
  if (t.default !== undefined) eq('default', Number(ours.flags.default_value), num(t.default))
  eq('read-only', ours.flags.read_only, t.flags.includes('read-only'))
  eq('inactive', ours.flags.inactive, t.flags.includes('inactive'))
  // Volatile values change between two reads; write-only ones have none.
  if (t.value !== undefined && !t.flags.includes('volatile') && !t.flags.includes('write-only')) {
    const v = ours.value
    if (t.type === 'str') eq('value', v, t.value)
    else if (t.type === 'bitmask') eq('value', (v as number) | 0, num(t.value)) // v4l2-ctl prints the bitmask value signed
    else eq('value', Number(v), num(t.value))
  }
  if (t.menu.length || ours.flags.menu) eq('menu', JSON.stringify(ours.flags.menu ?? []), JSON.stringify(t.menu))
  return out
}

function compareNode(path: string, ours: Control[]): { problems: string[]; count: number } {
  const { controls, classes } = parseControls(v4l2ctl(['-d', path, '--list-ctrls-menus']))
  // The wire model has no arrays or compound payloads (area, codec state): those are left out on purpose.
  const theirs = controls.filter((c) => THEIR_TYPES[c.type] && !c.dims)
  const scalar = ours.filter((c) => c.flags.control_type !== 'CTRL_CLASS')
  const problems: string[] = []
  const a = scalar.map((c) => c.control_id.toString(16))
  const b = theirs.map((c) => c.id.toString(16))
  if (a.join() !== b.join()) problems.push(`${path}: control ids differ\n ours   ${a}\n theirs ${b}`)
  for (const t of theirs) {
    const o = scalar.find((c) => c.control_id === t.id)
    if (o) problems.push(...compareControl(o, t).map((p) => `${path} ${p}`))
  }
  const ourClasses = ours.filter((c) => c.flags.control_type === 'CTRL_CLASS').map((c) => c.name)
  if (ourClasses.join() !== classes.join()) problems.push(`${path}: classes ${ourClasses} vs ${classes}`)
  return { problems, count: theirs.length }
}

test('every control of every node equals v4l2-ctl --list-ctrls-menus (id, type, range, default, menu, value)', () => {
  const problems: string[] = []
  let count = 0
  for (const name of nodeNames()) {
    const path = `/dev/${name}`
    const fd = openDevice(path)
    let ours: Control[]
    try {
      ours = enumControls(fd)
    } finally {
      closeDevice(fd)
    }
    const r = compareNode(path, ours)
    problems.push(...r.problems)
    count += r.count
  }
  expect(problems).toEqual([])
  expect(count).toBeGreaterThan(200)
})

test("a device's controls (the worker's enumeration) are its first camera node's", () => {
  for (const d of devices) {
    const node = d.cameras[0]!.path
    expect(node).toMatch(/^\/dev\/video\d+$/) // video nodes before vivid's touch node
    const r = compareNode(node, d.controls)
    expect(r.problems).toEqual([])
    expect(d.controls.map((c) => c.flags.control_type)).toContain('INTEGER64')
    expect(d.controls.map((c) => c.flags.control_type)).toContain('STRING')
  }
})

test('a node that fails (here /dev/null: ENOTTY) is skipped and reported; the device still shows', async () => {
  const { mkdtempSync, mkdirSync, symlinkSync, rmSync, realpathSync } = await import('node:fs')
  const { createLogger } = await import('../../../core/log')
  const sys = mkdtempSync('/tmp/sysfs-')
  try {
    const parent = realpathSync('/sys/class/video4linux/video0/device')
    for (const name of ['null', 'video0']) {
      mkdirSync(`${sys}/class/video4linux/${name}`, { recursive: true })
      symlinkSync(parent, `${sys}/class/video4linux/${name}/device`)
    }
    const lines: string[] = []
    const b = new V4l2Backend({ sysfsRoot: `${sys}/class/video4linux`, log: createLogger('warn', {}, (l) => lines.push(l) > 0) })
    try {
      const list = await b.list()
      expect(list.map((d) => [d.bus_info, d.device_paths])).toEqual([['platform:vivid-000', ['/dev/video0']]])
      expect(lines.join('\n')).toContain('"path":"/dev/null","code":"ENOTTY"')
    } finally {
      await b.stop()
    }
  } finally {
    rmSync(sys, { recursive: true, force: true })
  }
})
