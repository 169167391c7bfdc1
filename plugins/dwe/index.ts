// The DWE vendor plugin: its models, and exploreHD's H.264 encoder options over the UVC extension unit.
import { Elysia } from 'elysia'
import { definePlugin } from '../../core/plugin'
import { DWE_MODELS } from './models'
import { EXPLOREHD_CONTROLS } from './xu'

export default definePlugin({
  name: 'dwe',
  setup({ registry }) {
    registry.addVendor({ vendor: 'DeepWater Exploration', models: DWE_MODELS, controls: EXPLOREHD_CONTROLS })
    return new Elysia({ name: 'periscope:dwe' })
  },
})
