// The V4L2 plugin: registers the kernel-backed camera backend. With no video node present it lists
// nothing and keeps watching, so a camera plugged in later appears without a restart.
import { definePlugin } from '../../core/plugin'
import { V4l2Backend } from '../../drivers/v4l2/backend'
import { nodeNames } from '../../drivers/v4l2/sysfs'

let backend: V4l2Backend | null = null

export default definePlugin({
  name: 'v4l2',
  setup({ registry, log }) {
    backend = new V4l2Backend({ log: log.child({ plugin: 'v4l2' }) })
    registry.addCameraBackend(backend, 'v4l2')
  },
  async start() {
    await backend?.start()
  },
  async stop() {
    await backend?.stop()
  },
  health() {
    const stalled = backend?.stalledDevices() ?? []
    return stalled.length
      ? { state: 'degraded', detail: `not answering within the deadline: ${stalled.join(', ')}`, video_nodes: nodeNames().length }
      : { state: 'ok', video_nodes: nodeNames().length }
  },
})
