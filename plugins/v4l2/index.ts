// The V4L2 plugin: registers the kernel-backed camera backend and owns its lifecycle (hot-plug watching
// starts with the app, before the cameras plugin lists it). With no video node present it lists nothing
// and keeps watching, so a camera plugged in later appears without a restart.
import { Elysia } from 'elysia'
import { definePlugin, type PeriscopePlugin } from '../../core/plugin'
import { V4l2Backend, type V4l2Options } from '../../drivers/v4l2/backend'
import { nodeNames } from '../../drivers/v4l2/sysfs'

/**
 * The plugin over a backend with these options (the built-in one uses the defaults: /sys and /dev).
 * The kernel tier builds one over a stalling device to measure the whole service (tests/kernel/host).
 */
export function v4l2Plugin(options: Omit<V4l2Options, 'log'> = {}): PeriscopePlugin {
  return definePlugin({
    name: 'v4l2',
    setup({ registry, log, lifecycle }) {
      const backend = new V4l2Backend({ ...options, log })
      registry.addCameraBackend(backend, 'v4l2')
      lifecycle({
        start: () => backend.start(),
        stop: () => backend.stop(),
        health() {
          const stalled = backend.stalledDevices()
          const video_nodes = nodeNames(options.sysfsRoot).length
          return stalled.length ? { state: 'degraded', detail: `not answering within the deadline: ${stalled.join(', ')}`, video_nodes } : { state: 'ok', video_nodes }
        },
      })
      return new Elysia({ name: 'periscope:v4l2' })
    },
  })
}

export default v4l2Plugin()
