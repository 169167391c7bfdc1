// Inside the VM: a control set answers the device's refreshed controls in one worker request and one
// open of the node, and menus (QUERYMENU) are read once per device node — again after a re-plug, even
// when no hot-plug rescan ran in between. Counted by the kernel (observe.ts), not by the backend.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { existsSync, writeFileSync } from 'node:fs'
import type { Control } from '../../../core/types'
import { V4l2Backend } from '../../../drivers/v4l2/backend'
import { nodeNames } from '../../../drivers/v4l2/sysfs'
import { IoctlTrace, NodeOpens } from './observe'
import { v4l2ctl } from './v4l2ctl'

const DRIVER = '/sys/bus/platform/drivers/vivid'
const BUS = 'platform:vivid-000'
const NODE = '/dev/video0'
const GAIN_AUTO = 0x00980912
const GAIN = 0x00980913
const MENU = 0x0098f904

const trace = new IoctlTrace(['VIDIOC_QUERYMENU', 'VIDIOC_S_EXT_CTRLS', 'VIDIOC_QUERY_EXT_CTRL', 'VIDIOC_QUERYCAP'])
const backends: V4l2Backend[] = []
const backend = () => {
  const b = new V4l2Backend()
  backends.push(b)
  return b
}

beforeAll(() => {
  if (!existsSync(`${DRIVER}/vivid.0`)) throw new Error('vivid is not loaded: this test runs inside the kernel-tier VM')
})
afterAll(async () => {
  trace.stop()
  if (!existsSync(`${DRIVER}/vivid.0`)) writeFileSync(`${DRIVER}/bind`, 'vivid.0') // leave vivid as we found it
  for (const b of backends) await b.stop()
})

/** The kernel's counts for `f`: opens of the control node and the traced ioctls. */
async function observed<T>(f: () => Promise<T>): Promise<{ result: T; opens: number; ioctls: Record<string, number> }> {
  const opens = new NodeOpens(NODE)
  trace.start()
  try {
    const result = await f()
    return { result, opens: opens.count(), ioctls: trace.counts() }
  } finally {
    trace.stop()
    opens.close()
  }
}

test('a set with its re-read is one open: one S_EXT_CTRLS, no QUERYMENU, and the dependent flag is current', async () => {
  const b = backend()
  await b.list() // the service has listed its devices before any set: menus are known
  const gainAuto = (await b.controls(BUS)).find((c) => c.control_id === GAIN_AUTO)!.value
  for (const [auto, inactive] of [[0, false], [1, true]] as const) {
    const { result, opens, ioctls } = await observed(() => b.setControlAndRead(BUS, GAIN_AUTO, auto))
    expect(result.value).toBe(auto)
    // Auto gain on makes gain inactive: the answer was read after the set.
    expect(result.controls.find((c) => c.control_id === GAIN)!.flags.inactive).toBe(inactive)
    expect(result.controls.find((c) => c.control_id === GAIN_AUTO)!.value).toBe(auto)
    expect({ opens, sets: ioctls.VIDIOC_S_EXT_CTRLS, menus: ioctls.VIDIOC_QUERYMENU }).toEqual({ opens: 1, sets: 1, menus: 0 })
    // Every control was queried in that one open (the driver's list, not a cached one).
    expect(ioctls.VIDIOC_QUERY_EXT_CTRL).toBeGreaterThan(result.controls.length)
  }
  // v4l2-ctl agrees with the flags answered.
  expect(v4l2ctl(['-d', NODE, '--list-ctrls'])).toMatch(/ gain 0x00980913 \(int\)\s+: .*flags=\S*inactive/m)
  await b.setControl(BUS, GAIN_AUTO, gainAuto)
})

test('setControl alone reads no other control', async () => {
  const b = backend()
  await b.list()
  const { result, opens, ioctls } = await observed(() => b.setControl(BUS, 0x00980900, 101))
  expect(result).toBe(101)
  expect({ opens, sets: ioctls.VIDIOC_S_EXT_CTRLS, queries: ioctls.VIDIOC_QUERY_EXT_CTRL, menus: ioctls.VIDIOC_QUERYMENU }).toEqual({ opens: 1, sets: 1, queries: 1, menus: 0 })
})

test('menus are read once per node: a second listing and controls() query none, a fresh listing re-reads them', async () => {
  const b = backend()
  const first = await observed(() => b.list())
  expect(first.ioctls.VIDIOC_QUERYMENU).toBeGreaterThan(0)
  const again = await observed(() => b.list())
  expect(again.ioctls.VIDIOC_QUERYMENU).toBe(0)
  expect(menus(again.result.flatMap((d) => d.controls))).toEqual(menus(first.result.flatMap((d) => d.controls)))
  const controls = await observed(() => b.controls(BUS))
  expect(controls.ioctls.VIDIOC_QUERYMENU).toBe(0)
  expect(menus(controls.result)).toEqual(menus(first.result.find((d) => d.bus_info === BUS)!.controls))
  expect(menus(controls.result).find(([id]) => id === MENU)![1]!.length).toBeGreaterThan(0)
  const fresh = await observed(() => b.list({ fresh: true }))
  expect(fresh.ioctls.VIDIOC_QUERYMENU).toBe(first.ioctls.VIDIOC_QUERYMENU)
})

test('a re-plug drops the menus of the old node even with no rescan between (a new node on the same path)', async () => {
  const b = backend() // never started: no hot-plug watcher, so no fresh enumeration after the re-plug
  const before = await b.controls(BUS) // lists first: the device is located and its menus read
  expect((await observed(() => b.controls(BUS))).ioctls.VIDIOC_QUERYMENU).toBe(0)
  const nodes = nodeNames().length
  writeFileSync(`${DRIVER}/unbind`, 'vivid.0')
  await until('the nodes gone', () => nodeNames().length === 0 && !existsSync(NODE))
  writeFileSync(`${DRIVER}/bind`, 'vivid.0')
  await until('the nodes back', () => nodeNames().length === nodes && existsSync(NODE))
  // Same path, same worker, a new device node: its menus are queried again, and are the driver's.
  const after = await observed(async () => {
    for (;;) {
      try {
        return await b.controls(BUS)
      } catch (e) {
        // devtmpfs creates the node a moment after sysfs shows it
        if (!['ENOENT', 'ENODEV', 'ENXIO'].includes((e as { code?: string }).code ?? '')) throw e
        await Bun.sleep(50)
      }
    }
  })
  expect(after.ioctls.VIDIOC_QUERYMENU).toBeGreaterThan(0)
  expect(menus(after.result)).toEqual(menus(before))
})

/** [control id, menu] of every menu control. */
const menus = (controls: Control[]) => controls.filter((c) => c.flags.menu).map((c) => [c.control_id, c.flags.menu] as const)

async function until(what: string, f: () => boolean, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs
  while (!f()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`)
    await Bun.sleep(20)
  }
}
