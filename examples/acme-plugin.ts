// A third-party plugin, to copy: `npm start -- --simulate acme --plugins cameras,preferences,./examples/acme-plugin.ts`
// (the `acme` preset adds a simulated Acme RingCam to the default cameras). It has the one shape of every
// Periscope plugin (core/plugin.ts): a default export definePlugin({ name, setup }), where setup(ctx), run
// once per app instance, registers what the plugin provides, declares the lifecycle of what it made, and
// returns its routes as a named Elysia instance. All state lives in setup().
//
// A vendor is mostly data: USB ids → device type and group role, and UVC extension-unit controls
// declared as unit, selector and value encoding, which the core interprets (core/xu.ts) and simulated
// cameras simulate. Vendor code only where the protocol is not an extension unit's: here a ring light.
import { Elysia, t } from 'elysia'
import { docs } from '../core/openapi'
import { definePlugin } from '../core/plugin'
import type { RawDevice, VendorDefinition } from '../core/types'

// Made up for this example, as Acme is: a real plugin declares the ids the USB-IF assigned its vendor.
const ACME_VID = 0xace0
const ACME_RING_CAM = 0x0001
const isRingCam = (d: RawDevice) => d.vid === ACME_VID && d.pid === ACME_RING_CAM

const ACME: VendorDefinition = {
  vendor: 'Acme Robotics',
  models: [{ vid: ACME_VID, pids: [ACME_RING_CAM], device_type: 1, role: 'leader', model: 'Acme RingCam' }],
  // A standard extension unit: each control its own selector, read with GET_CUR and written with SET_CUR.
  extensionUnits: [
    {
      models: [{ vid: ACME_VID, pids: [ACME_RING_CAM] }],
      nodeFormat: 'MJPG',
      unit: 0x06,
      size: 1,
      addressing: { kind: 'selector' },
      controls: [
        {
          control_id: -101, name: 'Lens heater', register: 0x01, encoding: 'u8',
          flags: { control_type: 'MENU', min_value: 0, max_value: 2, step: 1, default_value: 0, menu: [{ index: 0, name: 'Off' }, { index: 1, name: 'Low' }, { index: 2, name: 'High' }] },
        },
      ],
    },
  ],
}

export default definePlugin({
  name: 'acme',
  setup({ registry, lifecycle }) {
    // Stand-in for hardware that is no extension unit (a GPIO, a serial board): this app's state.
    const ringLight = new Map<string, number>() // bus_info → brightness, 0–100

    // 1. Register what the plugin provides: its vendor declaration, plus the one control that needs code
    //    (also possible: camera backends, a streamer…).
    registry.addVendor({
      ...ACME,
      controls: [
        {
          control_id: -100,
          name: 'Ring light',
          flags: { control_type: 'INTEGER', min_value: 0, max_value: 100, step: 1, default_value: 0 },
          appliesTo: isRingCam,
          get: async (d) => ringLight.get(d.bus_info) ?? 0,
          set: async (d, _backend, value) => {
            ringLight.set(d.bus_info, Number(value))
          },
        },
      ],
    })

    // 2. The lifecycle of what setup() made (all optional): start() when the app listens, stop() when it
    //    stops, health() for GET /api/health.
    lifecycle({
      stop: () => ringLight.clear(), // lights off when the service stops
      health: () => ({ state: 'ok', lights_on: [...ringLight.values()].filter((level) => level > 0).length }),
    })

    // 3. The routes: a named Elysia instance (an empty one when the plugin has none).
    return new Elysia({ name: 'periscope:acme' }).get('/api/acme/ring_light', () => Object.fromEntries(ringLight), {
      ...docs({ tag: 'cameras', summary: 'Ring light brightness of each Acme RingCam set so far, by bus_info', ok: t.Record(t.String(), t.Integer()) }),
    })
  },
})
