// The V4L2 plugin: registers the kernel-backed camera backend and owns its lifecycle (hot-plug watching
// starts with the app, before the cameras plugin lists it). With no video node present it lists nothing
// and keeps watching, so a camera plugged in later appears without a restart.
import { Elysia } from 'elysia'
import { definePlugin } from '../../core/plugin'
import { V4l2Backend } from '../../drivers/v4l2/backend'
import { nodeNames } from '../../drivers/v4l2/sysfs'

export default definePlugin({
  name: 'v4l2',
  setup({ registry, log, lifecycle }) {
    const backend = new V4l2Backend({ log })
    registry.addCameraBackend(backend, 'v4l2')
    lifecycle({
      start: () => backend.start(),
      stop: () => backend.stop(),
      health() {
        const stalled = backend.stalledDevices()
        return stalled.length
          ? { state: 'degraded', detail: `not answering within the deadline: ${stalled.join(', ')}`, video_nodes: nodeNames().length }
          : { state: 'ok', video_nodes: nodeNames().length }
      },
    })
    return new Elysia({ name: 'periscope:v4l2' })
  },
})
