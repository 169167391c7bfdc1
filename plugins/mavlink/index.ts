// MAVLink camera protocol (QGroundControl finds the cameras and their streams): loaded by default like
// every viewer plugin, and inert until `--mavlink <endpoint>` says where the link is. Only then is
// node-mavlink loaded (its message tables cost ~8 MB of the service's RSS and ~90 ms), so a vehicle that does
// not use MAVLink pays nothing, and /api/health always says whether the link is on and how it is.
import { Elysia } from 'elysia'
import { notFound } from '../../core/errors'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { cameraDefinition, cameraNames } from './camdef'
import type { MavlinkService } from './service'

export default definePlugin({
  name: 'mavlink',
  setup({ config, registry, events, log, lifecycle, refusals, store }) {
    let service: MavlinkService | null = null
    lifecycle({
      async start() {
        if (!config.mavlink) return
        const { MavlinkService } = await import('./service')
        service = new MavlinkService({ config, registry, events, log, refusals, store })
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
    // The camera definition is served with or without --mavlink: it is what CAMERA_INFORMATION points
    // at, and a plain file anyone may read.
    return new Elysia({ name: 'periscope:mavlink' }).get(
      '/api/streams/:bus_info/camera.xml',
      ({ params }) => {
        const bus_info = (params as { bus_info: string }).bus_info
        let device
        try {
          device = registry.deviceDirectory().device(bus_info)
        } catch {
          device = undefined // no cameras plugin: no camera
        }
        if (!device) throw notFound(`No device with bus_info '${bus_info}' is connected`)
        const { xml, version } = cameraDefinition(device, cameraNames(registry, device))
        return new Response(xml, { headers: { 'content-type': 'application/xml; charset=utf-8', 'cache-control': 'no-cache', etag: `"${version}"` } })
      },
      {
        ...docs({
          tag: 'cameras',
          summary: "The camera's MAVLink camera definition (QGroundControl's camera settings)",
          description:
            "Generated from the camera's controls: one parameter per settable control (id from its control_id, its name as the description), ranges, steps, menus, defaults, and the auto modes that grey out the controls they govern. " +
            "CAMERA_INFORMATION's cam_definition_uri points here, and its cam_definition_version (also the definition's version) changes when the controls' shape does. " +
            'PARAM_EXT on the MAVLink link reads and sets these parameters (docs/mavlink.md).',
          ok: { content: { 'application/xml': { schema: { type: 'string' } } }, description: 'The camera definition (MAVLink camera definition format)' },
          errors: [404],
          pathParams: ['bus_info'],
        }),
      },
    )
  },
})
