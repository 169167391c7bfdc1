// The DWE vendor plugin: DeepWater Exploration's declaration (./vendor.ts), registered. It has no code
// of its own: the core interprets the extension unit, the GStreamer plugin drives the frame-sync board.
import { Elysia } from 'elysia'
import { definePlugin } from '../../core/plugin'
import { DWE } from './vendor'

export default definePlugin({
  name: 'dwe',
  setup({ registry }) {
    registry.addVendor(DWE)
    return new Elysia({ name: 'periscope:dwe' })
  },
})
