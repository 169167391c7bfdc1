// The DWE vendor plugin: its models (and, with the V4L2 backend, its extension-unit controls).
import { definePlugin } from '../../core/plugin'
import { DWE_MODELS } from './models'

export default definePlugin({
  name: 'dwe',
  setup({ registry }) {
    registry.addVendor({ vendor: 'DeepWater Exploration', models: DWE_MODELS })
  },
})
