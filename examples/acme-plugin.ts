// A third-party vendor plugin, to copy: `npm start -- --plugins cameras,preferences,./examples/acme-plugin.ts`.
// A vendor device is mostly data (USB ids → device type and group role) plus, optionally, vendor controls
// with negative ids that set_uvc_control reaches like any other control.
import { definePlugin } from '../core/plugin'
import type { RawDevice, VendorDefinition } from '../core/types'

const ACME_VID = 0x046d
const ACME_RING_CAM = 0x0825

// Stand-in for the hardware: a real plugin would drive a GPIO, a serial board or a UVC extension unit
// (`backend.xuQuery(device_path, { unit, selector, query, data })`).
const ringLight = new Map<string, number>()

const acme: VendorDefinition = {
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
}

export default definePlugin({
  name: 'acme',
  setup({ registry }) {
    registry.addVendor(acme)
  },
})
