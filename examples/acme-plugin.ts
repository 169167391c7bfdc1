// A third-party plugin, to copy anywhere on disk: `npm start -- --simulate --plugins cameras,preferences,dwe,/path/to/acme-plugin.ts`
// (docs/plugins.md). It imports only 'periscope/plugin', which the service maps to its own files, so it
// needs no node_modules. It has the one shape of every Periscope plugin: a default export
// definePlugin({ name, setup }), where setup(ctx), run once per app instance, registers what the plugin
// provides, declares the lifecycle of what it made, and returns its routes as a named Elysia instance.
// All state lives in setup().
//
// A vendor is mostly data: USB ids → device type and group role, UVC extension-unit controls declared
// as unit, selector and value encoding (the core interprets them, simulated cameras simulate them), and
// the cameras --simulate adds. Vendor code only where the protocol is not an extension unit's: here a ring light.
import { defineVendor, definePlugin, Elysia, formatSizes, t, docs, type RawDevice } from 'periscope/plugin'

// Made up for this example, as Acme is: a real plugin declares the ids the USB-IF assigned its vendor.
const ACME_VID = 0xace0
const ACME_RING_CAM = 0x0001
const isRingCam = (d: RawDevice) => d.vid === ACME_VID && d.pid === ACME_RING_CAM

const ACME = defineVendor({
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
  // With --simulate: a RingCam with these ids (its lens heater answers as declared above), no hardware needed.
  simulated: [
    {
      name: 'Acme RingCam',
      vid: ACME_VID,
      pid: ACME_RING_CAM,
      serial: 'ACME0001',
      nodes: [{ MJPG: formatSizes([[1920, 1080], [1280, 720], [640, 480]], [30, 15]), YUYV: formatSizes([[640, 480]], [30]) }, null],
    },
  ],
})

export default definePlugin({
  name: 'acme',
  // Its own flag: `--acme-ring-max 60` or PERISCOPE_ACME_RING_MAX=60, listed by --help.
  flags: {
    'acme-ring-max': {
      help: 'brightest the Acme ring light may be set, 1-100',
      default: '100',
      parse: (raw) => {
        const n = Number(raw)
        if (!Number.isInteger(n) || n < 1 || n > 100) throw new Error(`must be an integer from 1 to 100, got '${raw}'`)
        return n
      },
    },
  },
  setup({ registry, lifecycle, flags }) {
    const max = flags['acme-ring-max'] as number
    // Stand-in for hardware that is no extension unit (a GPIO, a serial board): this app's state.
    const ringLight = new Map<string, number>() // bus_info → brightness, 0–max

    // 1. Register what the plugin provides: its vendor declaration, plus the one control that needs code
    //    (also possible: camera backends, a streamer…).
    registry.addVendor({
      ...ACME,
      controls: [
        {
          control_id: -100,
          name: 'Ring light',
          flags: { control_type: 'INTEGER', min_value: 0, max_value: max, step: 1, default_value: 0 },
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
