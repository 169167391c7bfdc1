// A third-party plugin, to copy: `npm start -- --plugins cameras,preferences,./examples/acme-plugin.ts`.
// It has the one shape of every Periscope plugin (core/plugin.ts): a default export definePlugin({ name,
// setup }), where setup(ctx), run once per app instance, registers what the plugin provides, declares the
// lifecycle of what it made, and returns its routes as a named Elysia instance. All state lives in setup().
//
// A vendor device is mostly data (USB ids → device type and group role) plus, optionally, vendor controls
// with negative ids that set_uvc_control reaches like any other control.
import { Elysia, t } from 'elysia'
import { docs } from '../core/openapi'
import { definePlugin } from '../core/plugin'
import type { RawDevice } from '../core/types'

const ACME_VID = 0x046d
const ACME_RING_CAM = 0x0825

export default definePlugin({
  name: 'acme',
  setup({ registry, lifecycle }) {
    // Stand-in for the hardware: a real plugin would drive a GPIO, a serial board or a UVC extension unit
    // (`backend.xuQuery(device_path, { unit, selector, query, data })`).
    const ringLight = new Map<string, number>() // bus_info → brightness, 0–100

    // 1. Register what the plugin provides: here a vendor definition (also: camera backends, a streamer…).
    registry.addVendor({
      vendor: 'Acme Robotics',
      models: [{ vid: ACME_VID, pids: [ACME_RING_CAM], device_type: 1, role: 'leader', model: 'Acme RingCam' }],
      controls: [
        {
          control_id: -100,
          name: 'Ring light',
          flags: { control_type: 'INTEGER', min_value: 0, max_value: 100, step: 1, default_value: 0 },
          appliesTo: (d: RawDevice) => d.vid === ACME_VID && d.pid === ACME_RING_CAM,
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
