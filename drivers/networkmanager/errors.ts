// What can go wrong talking to NetworkManager, in words the plugin maps to HTTP statuses.
export type NetworkErrorKind =
  | 'unavailable' // no system bus, NetworkManager absent, restarting or not answering
  | 'not_found' // unknown profile, device or interface
  | 'invalid' // NetworkManager refused the settings themselves (its sentence says why)
  | 'refused' // a rule refused the operation (profile not available on that device, …)
  | 'forbidden' // polkit / D-Bus policy refused us
  | 'failed' // anything else NetworkManager answered with an error

export class NetworkError extends Error {
  constructor(
    readonly kind: NetworkErrorKind,
    message: string,
    /** The D-Bus error name, when the error came from the bus. */
    readonly dbusName?: string,
  ) {
    super(message)
    this.name = 'NetworkError'
  }
}

// Nobody owns NetworkManager's name: it is not running.
const ABSENT = new Set(['org.freedesktop.DBus.Error.ServiceUnknown', 'org.freedesktop.DBus.Error.NameHasNoOwner'])
/** The error says NetworkManager is not on the bus at all. */
export const nmAbsent = (e: unknown): boolean => e instanceof NetworkError && !!e.dbusName && ABSENT.has(e.dbusName)

// It owns its name before it has exported every object: it is still starting.
const STARTING = new Set(['org.freedesktop.DBus.Error.UnknownObject', 'org.freedesktop.DBus.Error.UnknownMethod', 'org.freedesktop.DBus.Error.UnknownInterface'])
// It went away mid-call or does not answer.
const SILENT = new Set([
  'org.freedesktop.DBus.Error.NoReply',
  'org.freedesktop.DBus.Error.Disconnected',
  'org.freedesktop.DBus.Error.Timeout',
  'org.freedesktop.DBus.Error.TimedOut',
  'org.freedesktop.DBus.Error.NoServer',
])

/** A D-Bus error reply from NetworkManager (or the bus) → NetworkError. */
export function fromDBusError(name: string, text: string, what: string): NetworkError {
  if (ABSENT.has(name) || name.startsWith('org.freedesktop.DBus.Error.Spawn'))
    return new NetworkError(
      'unavailable',
      'NetworkManager is not running: nobody owns org.freedesktop.NetworkManager on the system bus. Start it (systemctl start NetworkManager); Periscope picks it up by itself',
      name,
    )
  if (STARTING.has(name)) return new NetworkError('unavailable', `NetworkManager is starting or restarting (${what}: ${text || name}); try again in a moment`, name)
  if (SILENT.has(name)) return new NetworkError('unavailable', `NetworkManager did not answer (${what}: ${text || name})`, name)
  if (name === 'org.freedesktop.DBus.Error.AccessDenied' || name.endsWith('.PermissionDenied') || name.endsWith('.NotAuthorized'))
    return new NetworkError(
      'forbidden',
      `NetworkManager refused ${what}: permission denied (${text || name}). Run Periscope as root, or allow its user ` +
        'org.freedesktop.NetworkManager.settings.modify.system and org.freedesktop.NetworkManager.network-control in polkit',
      name,
    )
  if (/\.(InvalidProperty|InvalidSetting|MissingProperty|InvalidArguments)$/.test(name) || name === 'org.freedesktop.DBus.Error.InvalidArgs')
    return new NetworkError('invalid', `NetworkManager refused the settings: ${text || name}`, name)
  if (/\.(UnknownConnection|UnknownDevice|ObjectNotFound)$/.test(name))
    return new NetworkError('not_found', `${what}: ${text || name}`, name)
  if (/\.(ConnectionNotAvailable|IncompatibleConnection|NotAllowed|NotActive|DependencyFailed|ConnectionAlreadyActive|NotSoftwareDevice|Failed)$/.test(name) && name.startsWith('org.freedesktop.NetworkManager'))
    return new NetworkError('refused', `NetworkManager refused ${what}: ${text || name}`, name)
  return new NetworkError('failed', `NetworkManager failed ${what}: ${text || name} (${name})`, name)
}
