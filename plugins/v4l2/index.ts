// The V4L2 plugin: registers the kernel-backed camera backend. With no video node present it lists
// nothing and keeps watching, so a camera plugged in later appears without a restart.
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
    setup({ registry, log }) {
      const backend = new V4l2Backend({ ...options, log: log.child({ plugin: 'v4l2' }) })
      registry.addCameraBackend(backend, 'v4l2')
      return {
        start: () => backend.start(),
        stop: () => backend.stop(),
        health() {
          const stalled = backend.stalledDevices()
          const video_nodes = nodeNames(options.sysfsRoot).length
          return stalled.length ? { state: 'degraded', detail: `not answering within the deadline: ${stalled.join(', ')}`, video_nodes } : { state: 'ok', video_nodes }
        },
      }
    },
  })
}

export default v4l2Plugin()
