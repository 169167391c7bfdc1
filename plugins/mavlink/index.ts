// MAVLink camera protocol (QGroundControl finds the cameras and their streams): loaded by default like
// every viewer plugin, and inert until `--mavlink <endpoint>` says where the link is. Only then is
// node-mavlink loaded (its message tables cost ~8 MB of the service's RSS and ~90 ms), so a vehicle that does
// not use MAVLink pays nothing, and /api/health always says whether the link is on and how it is.
import { Elysia } from 'elysia'
import { definePlugin } from '../../core/plugin'
import type { MavlinkService } from './service'

export default definePlugin({
  name: 'mavlink',
  setup({ config, registry, events, log, lifecycle }) {
    let service: MavlinkService | null = null
    lifecycle({
      async start() {
        if (!config.mavlink) return
        const { MavlinkService } = await import('./service')
        service = new MavlinkService({ config, registry, events, log })
        service.start()
      },
      stop() {
        service?.stop()
        service = null
      },
      health() {
        if (service) return service.health()
        if (config.mavlink) return { state: 'down', detail: 'the MAVLink link has not started', enabled: true }
        return { state: 'ok', detail: 'off (no --mavlink)', enabled: false }
      },
    })
    return new Elysia({ name: 'periscope:mavlink' })
  },
})
