// Every vendor definition the project ships (each built-in plugin's, and the example plugin's), checked
// one by one as zigbee-herdsman-converters checks each of its definitions: well-formed, no USB id or
// control id shared with another, each extension-unit control reads back its default and takes its
// limits through the one interpreter (core/xu.ts) on a simulated unit built from the declaration, and
// each declared simulated camera lists with its own ids. Then the checks themselves are shown to refuse.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { createApp, type PeriscopeApp } from '../../core/app'
import { DEFAULT_PLUGINS, loadConfig } from '../../core/config'
import { loadPlugin } from '../../core/loader'
import { createLogger } from '../../core/log'
import { Registry } from '../../core/plugin'
import type { VendorDefinition } from '../../core/types'
import { checkVendor, usbId } from '../../core/vendors'
import { xuControls } from '../../core/xu'
import { MockCameraBackend } from '../../drivers/mock/backend'
import { UVC_CONTROLS, vendorCameras } from '../../drivers/mock/cameras'
import { tempDir } from '../helpers'

const SHIPPED = [...DEFAULT_PLUGINS, 'mock', join(import.meta.dir, '..', '..', 'examples', 'acme-plugin.ts')]

// Discovered, not listed: every shipped plugin set up in one app, and what each registered.
let app: PeriscopeApp
const dataDir = tempDir()
beforeAll(async () => {
  const config = loadConfig([], {}, { host: '127.0.0.1', port: 0, dataDir, recordingsDir: join(dataDir, 'recordings'), simulate: 'default', logLevel: 'error', mavlink: null, rtspPort: 0 })
  app = await createApp(config, await Promise.all(SHIPPED.map(loadPlugin)), createLogger('error', {}, () => {}))
}, 30_000)
afterAll(async () => {
  await app.stop()
  rmSync(dataDir, { recursive: true, force: true })
})

const shipped = (): readonly VendorDefinition[] => app.ctx.registry.registeredVendors().map((v) => v.definition)

test('the shipped plugins register vendor definitions (DWE and the example Acme)', () => {
  expect(app.ctx.registry.registeredVendors().map((v) => [v.plugin, v.definition.vendor])).toEqual([['dwe', 'DeepWater Exploration'], ['acme', 'Acme Robotics']])
})

test('no two shipped definitions share a USB id or a control id', () => {
  const ids = shipped().flatMap((v) => v.models.flatMap((m) => m.pids.map((pid) => usbId(m.vid, pid))))
  expect(ids.length).toBe(new Set(ids).size)
  const controls = app.ctx.registry.vendors().flatMap((v) => (v.controls ?? []).map((c) => c.control_id))
  expect(controls.length).toBe(new Set(controls).size)
})

// One describe per definition; the names are known once the app is set up, so each is checked in a loop.
describe('each shipped definition', () => {
  test('is well-formed', () => {
    for (const v of shipped()) expect({ vendor: v.vendor, problems: checkVendor(v) }).toEqual({ vendor: v.vendor, problems: [] })
  })

  test('each extension-unit control reads its default after power-up and takes its minimum and maximum, on each model that has the unit', async () => {
    let checked = 0
    for (const v of shipped()) {
      for (const unit of v.extensionUnits ?? []) {
        for (const { vid, pids } of unit.models) {
          for (const pid of pids) {
            // A simulated camera with this model's ids and a node of the unit's format.
            const node = { [unit.nodeFormat]: [{ width: 640, height: 480, intervals: [{ numerator: 1, denominator: 30 }] }] }
            const model = { name: `${v.vendor} ${usbId(vid, pid)}`, manufacturer: v.vendor, vid, pid, nodes: [node], controls: UVC_CONTROLS }
            const backend = new MockCameraBackend([{ model, bus_info: 'usb-test-1', serial: '' }], (qv, qp) => (qv === vid && qp === pid ? [unit] : []))
            const [device] = await backend.list()
            for (const control of xuControls(unit)) {
              const where = `${v.vendor} ${usbId(vid, pid)} control ${control.control_id} '${control.name}'`
              expect({ where, applies: control.appliesTo(device!) }).toEqual({ where, applies: true })
              expect({ where, value: await control.get(device!, backend) }).toEqual({ where, value: control.flags.default_value })
              for (const value of [control.flags.min_value, control.flags.max_value]) {
                const allowed = control.flags.menu ? control.flags.menu.some((m) => m.index === value) : true
                if (!allowed) continue
                await control.set(device!, backend, value)
                expect({ where, value: await control.get(device!, backend) }).toEqual({ where, value })
              }
              checked++
            }
          }
        }
      }
    }
    expect(checked).toBeGreaterThan(0)
  })

  test('each declared simulated camera lists with its own ids, its formats and its vendor controls', async () => {
    const specs = vendorCameras(shipped(), 0)
    expect(specs.length).toBeGreaterThan(0)
    for (const spec of specs) {
      const vendor = shipped().find((v) => v.models.some((m) => m.vid === spec.model.vid && m.pids.includes(spec.model.pid)))!
      expect(vendor).toBeDefined()
      const backend = new MockCameraBackend([spec], () => vendor.extensionUnits ?? [])
      const [device] = await backend.list()
      expect(device).toMatchObject({ vid: spec.model.vid, pid: spec.model.pid, name: spec.model.name, manufacturer: vendor.vendor })
      expect(device!.cameras.length).toBeGreaterThan(0)
      for (const control of (vendor.extensionUnits ?? []).flatMap(xuControls).filter((c) => c.appliesTo(device!)))
        expect(await control.get(device!, backend)).toBe(control.flags.default_value)
    }
  })
})

describe('the checks refuse', () => {
  const base = (): VendorDefinition => ({
    vendor: 'Test',
    models: [{ vid: 0x1234, pids: [0x0001], device_type: 0, role: 'none', model: 'T1' }],
    extensionUnits: [
      {
        models: [{ vid: 0x1234, pids: [0x0001] }],
        nodeFormat: 'MJPG',
        unit: 3,
        size: 1,
        addressing: { kind: 'selector' },
        controls: [{ control_id: -900, name: 'Knob', register: 1, encoding: 'u8', flags: { control_type: 'INTEGER', min_value: 0, max_value: 10, step: 1, default_value: 5 } }],
      },
    ],
  })
  const cases: [string, (v: VendorDefinition) => void, string][] = [
    ['a USB id that is not 16-bit', (v) => (v.models[0]!.vid = 0x12345), 'vid must be a 16-bit USB vendor id'],
    ['a device type outside 0-4', (v) => (v.models[0]!.device_type = 7), 'device_type must be 0 to 4'],
    ['a default outside the range', (v) => (v.extensionUnits![0]!.controls[0]!.flags.default_value = 11), 'default_value 11 is outside 0..10'],
    ['a value wider than the transfer', (v) => (v.extensionUnits![0]!.controls[0]!.encoding = 'u16be'), 'a u16be value does not fit in 1 bytes'],
    ['a range the encoding cannot hold', (v) => (v.extensionUnits![0]!.controls[0]!.flags.max_value = 300), 'does not fit u8'],
    ['a non-negative control id', (v) => (v.extensionUnits![0]!.controls[0]!.control_id = 5), 'a vendor control id must be a negative integer'],
    ['a unit for another vendor’s model', (v) => (v.extensionUnits![0]!.models = [{ vid: 0x3961, pids: [0x2100] }]), "USB id 3961:2100 is not one of the vendor's models"],
    ['a simulated camera with foreign ids', (v) => (v.simulated = [{ name: 'S', vid: 0x1234, pid: 2, nodes: [{ MJPG: [] }] }]), "its USB id 1234:0002 is not one of the vendor's models"],
    ['a menu whose default is no index', (v) => (v.extensionUnits![0]!.controls[0]!.flags = { control_type: 'MENU', min_value: 0, max_value: 2, step: 1, default_value: 1, menu: [{ index: 0, name: 'a' }, { index: 2, name: 'b' }] }), 'default_value 1 is not one of its menu indexes 0, 2'],
  ]
  for (const [what, spoil, expected] of cases) {
    test(what, () => {
      expect(checkVendor(base())).toEqual([])
      const v = base()
      spoil(v)
      expect(checkVendor(v).join('; ')).toContain(expected)
      const registry = new Registry()
      expect(() => registry.addVendor(v, 'test')).toThrow(`vendor 'Test' (plugin test) is malformed: `)
      expect(registry.vendors()).toEqual([])
    })
  }
})
