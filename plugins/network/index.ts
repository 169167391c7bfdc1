// The network plugin: spec operations 7–9 (wired devices, connection profiles, update a profile's ipv4),
// activate_profile, and the rollback status, over NetworkManager on the system D-Bus. A missing
// NetworkManager makes these routes answer 503 and nothing else in the service notices.
import { Elysia, t } from 'elysia'
import { conflict, HttpError, notFound, unavailable, valueError } from '../../core/errors'
import { docs } from '../../core/openapi'
import { definePlugin, type PeriscopePlugin } from '../../core/plugin'
import { ConnectionProfileModel, IpConfiguration, RollbackStatus, WiredDeviceModel } from '../../core/schemas'
import { NetworkManagerBackend } from '../../drivers/networkmanager/backend'
import { NetworkError } from '../../drivers/networkmanager/errors'
import { typed } from '../../core/validation'
import { ipConfiguration } from './validate'

const ProfileQuery = t.Object({ path: t.String({ description: 'the profile\'s NetworkManager settings object path, as in connection_profiles' }) })
const ActivateRequest = t.Object({
  interface: t.String({ description: 'a wired interface, as in wired/devices' }),
  path: t.String({ description: 'a connection profile\'s settings object path' }),
})
const ChangeAnswer = t.Object({
  status: t.Boolean(),
  rollback_seconds: t.Union([t.Integer(), t.Null()], {
    description: 'when the change altered an active address: seconds within which an API client must be heard from, or the previous configuration comes back',
  }),
})

/** NetworkError → the service's error model. */
function httpError(e: unknown, input?: unknown): unknown {
  if (!(e instanceof NetworkError)) return e
  switch (e.kind) {
    case 'unavailable':
      return unavailable(e.message)
    case 'not_found':
      return notFound(e.message)
    case 'invalid':
      return valueError(['body'], e.message, input)
    case 'refused':
      return conflict(e.message)
    default:
      return new HttpError(502, e.message)
  }
}

const mapped = async <T>(work: () => Promise<T>, input?: unknown): Promise<T> => {
  try {
    return await work()
  } catch (e) {
    throw httpError(e, input)
  }
}

export interface NetworkPluginOptions {
  /** D-Bus address of the system bus; default DBUS_SYSTEM_BUS_ADDRESS, else the standard socket. */
  busAddress?: string
}

export function createNetworkPlugin(options: NetworkPluginOptions = {}): PeriscopePlugin {
  return definePlugin({
    name: 'network',
    setup({ config, registry, events, log, activity, lifecycle }) {
      const backend = new NetworkManagerBackend({
        address: options.busAddress,
        rollbackSeconds: config.networkRollbackSeconds,
        lastActivity: () => activity.lastRequestAt,
        onChange: (change) => events.emit('network_changed', change),
        log,
      })
      registry.provide('network', backend, 'network')
      const tag = 'network'
      const rollbackSeconds = () => (backend.rollback.pending() ? config.networkRollbackSeconds : null)

      lifecycle({ start: () => backend.start(), stop: () => backend.stop(), health: () => backend.health() })
      return new Elysia({ name: 'periscope:network' })
        .get('/api/network/wired/devices', () => mapped(() => backend.wiredDevices()), {
          ...docs({
            tag,
            summary: 'Wired network devices',
            description: "NetworkManager's ethernet devices: state (NM's integer), profiles available on each, the active profile and the IPv4 configuration in use.",
            ok: t.Array(WiredDeviceModel),
            errors: [503],
          }),
        })
        .get('/api/network/connection_profiles', () => mapped(() => backend.profiles()), {
          ...docs({ tag, summary: 'Ethernet connection profiles with their IPv4 settings', ok: t.Array(ConnectionProfileModel), errors: [503] }),
        })
        .post(
          '/api/network/update_connection_profile',
          typed({ body: IpConfiguration, query: ProfileQuery }, async ({ body, query }) => {
            const ipv4 = ipConfiguration(body)
            await mapped(() => backend.updateProfile(query.path, ipv4), body)
            return { status: true, rollback_seconds: rollbackSeconds() }
          }),
          {
            ...docs({
              tag,
              summary: "Update a profile's IPv4 configuration",
              description:
                'Only the ipv4 setting changes; every other setting of the profile is kept. An active profile is re-applied at once; ' +
                'if no API client is heard from within `rollback_seconds` afterwards, the previous configuration is restored (a wrong address must not strand a tethered vehicle).',
              body: IpConfiguration,
              query: ProfileQuery,
              ok: ChangeAnswer,
              errors: [404, 409, 502, 503],
            }),
          },
        )
        .post(
          '/api/network/wired/activate_profile',
          typed({ body: ActivateRequest }, async ({ body }) => {
            await mapped(() => backend.activateProfile(body.interface, body.path), body)
            return { status: true, rollback_seconds: rollbackSeconds() }
          }),
          {
            ...docs({
              tag,
              summary: 'Activate a connection profile on a wired interface',
              description: 'Watched by the rollback: without an API client heard from within `rollback_seconds`, the previous profile is re-activated (or the interface is disconnected if it had none).',
              body: ActivateRequest,
              ok: ChangeAnswer,
              errors: [404, 409, 502, 503],
            }),
          },
        )
        .get('/api/network/rollback', () => ({ pending: backend.rollback.pending(), rollback_seconds: config.networkRollbackSeconds }), {
          ...docs({ tag, summary: 'The network change waiting for a client to confirm it, if any', ok: RollbackStatus }),
        })
    },
  })
}

export default createNetworkPlugin()
