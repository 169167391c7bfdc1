// Simulated cameras (--simulate [preset]): a camera backend for demos and contract tests, plus routes
// that let a black-box test or a demo plug, unplug and break them.
import { Elysia, t } from 'elysia'
import { conflict, notFound } from '../../core/errors'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { Enum } from '../../core/schemas'
import { typed } from '../../core/validation'
import { unitsFor } from '../../core/xu'
import { MockAudioBackend } from '../../drivers/mock/audio'
import { MockCameraBackend } from '../../drivers/mock/backend'
import { PRESETS, vendorCameras } from '../../drivers/mock/cameras'

const PlugRequest = t.Object({ bus_info: t.String(), new_bus_info: t.Optional(t.String({ description: 'plug into another port' })) })
const UnplugRequest = t.Object({ bus_info: t.String() })
const SoundRequest = t.Object({ id: t.String({ description: "a simulated sound source's id ('sim:mic1', 'sim:hydrophone')" }) })
const ERRNOS = ['EIO', 'EPROTO', 'ETIMEDOUT', 'EBUSY', 'EACCES', 'EINVAL', 'ENODEV'] as const
const FailRequest = t.Object({
  bus_info: t.String(),
  errno: Enum(ERRNOS),
  count: t.Integer({ minimum: 1, default: 1 }),
  control_id: t.Optional(t.Integer()),
})

export default definePlugin({
  name: 'mock',
  setup({ config, registry, lifecycle }) {
    const preset = config.simulate ?? 'default'
    const specs = PRESETS[preset]
    if (!specs) throw new Error(`unknown --simulate preset '${preset}': choose one of ${Object.keys(PRESETS).join(', ')}`)
    // Extension units answer as the registered vendors declare them: the simulation has no vendor protocol of its own.
    const backend = new MockCameraBackend(specs, (vid, pid) => unitsFor(registry.vendors(), vid, pid))
    registry.addCameraBackend(backend, 'mock')
    // Simulated sound: camera 1's microphone and a hydrophone (drivers/mock/audio.ts).
    const sound = new MockAudioBackend()
    registry.addAudioBackend(sound, 'mock')
    // Vendor plugins set up after this one: their declared cameras join once every plugin is set up,
    // before the cameras plugin lists them (a backend's plugin starts first).
    lifecycle({ start: () => backend.add(vendorCameras(registry.vendors(), specs.length)) })
    const tag = 'simulation'
    return new Elysia({ name: 'periscope:mock' })
      .get('/api/mock/devices', () => backend.describe(), { ...docs({ tag, summary: 'Simulated devices, plugged or not' }) })
      .post(
        '/api/mock/unplug',
        typed({ body: UnplugRequest }, ({ body }) => {
          if (!backend.unplug(body.bus_info)) throw notFound(`No plugged simulated device at '${body.bus_info}'`)
          return { success: true }
        }),
        { ...docs({ tag, summary: 'Unplug a simulated camera', body: UnplugRequest, errors: [404] }) },
      )
      .post(
        '/api/mock/plug',
        typed({ body: PlugRequest }, ({ body: b }) => {
          const outcome = backend.plug(b.bus_info, b.new_bus_info)
          if (outcome === 'unknown') throw notFound(`No simulated device was ever at '${b.bus_info}'`)
          if (outcome === 'already') throw conflict(`The simulated device at '${b.bus_info}' is already plugged`)
          if (outcome === 'port_taken') throw conflict(`Port '${b.new_bus_info}' is taken by another simulated device`)
          return { success: true }
        }),
        { ...docs({ tag, summary: 'Plug a simulated camera back in, optionally on another port', body: PlugRequest, errors: [404, 409] }) },
      )
      .get('/api/mock/audio', () => sound.describe(), { ...docs({ tag, summary: 'Simulated sound sources, plugged or not' }) })
      .post(
        '/api/mock/audio/unplug',
        typed({ body: SoundRequest }, ({ body }) => {
          if (!sound.setPlugged(body.id, false)) throw notFound(`No plugged simulated sound source '${body.id}'`)
          return { success: true }
        }),
        { ...docs({ tag, summary: 'Unplug a simulated sound source', body: SoundRequest, errors: [404] }) },
      )
      .post(
        '/api/mock/audio/plug',
        typed({ body: SoundRequest }, ({ body }) => {
          if (!sound.setPlugged(body.id, true)) throw notFound(`No unplugged simulated sound source '${body.id}'`)
          return { success: true }
        }),
        { ...docs({ tag, summary: 'Plug a simulated sound source back in', body: SoundRequest, errors: [404] }) },
      )
      .post(
        '/api/mock/fail',
        typed({ body: FailRequest }, ({ body: b }) => {
          if (!backend.injectFailure(b.bus_info, b.errno, b.count, b.control_id)) throw notFound(`No plugged simulated device at '${b.bus_info}'`)
          return { success: true }
        }),
        { ...docs({ tag, summary: 'Make the next control transfers of a simulated camera fail with an errno', body: FailRequest, errors: [404] }) },
      )
  },
})
