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

/** NetworkManager's own words, when it gave any, as a clause to append; never the D-Bus error name. */
const said = (text: string) => {
  const words = text.trim().replace(/\.$/, '')
  return words ? ` NetworkManager said: ${words}.` : ''
}

// What a refusal by NetworkManager means, by the last part of its D-Bus error name.
const REFUSALS: Record<string, string> = {
  ConnectionNotAvailable: 'the profile cannot be used on that interface now (is its cable plugged in, and is the interface managed?)',
  IncompatibleConnection: 'the profile does not fit that interface',
  NotAllowed: 'NetworkManager does not allow it',
  NotActive: 'the profile is not active',
  DependencyFailed: 'something the profile depends on failed',
  ConnectionAlreadyActive: 'the profile is already active',
  NotSoftwareDevice: 'the interface is hardware and cannot be removed',
  Failed: 'NetworkManager could not do it',
}
const NOT_FOUND: Record<string, string> = {
  UnknownConnection: 'NetworkManager has no such connection profile (it may have been deleted)',
  UnknownDevice: 'NetworkManager has no such network interface',
  ObjectNotFound: 'NetworkManager has no such object (it may have been removed)',
}
const lastPart = (name: string) => name.slice(name.lastIndexOf('.') + 1)

/**
 * A D-Bus error reply from NetworkManager (or the bus) → NetworkError, whose message is a sentence a
 * person can act on: what failed, why in plain words, then NetworkManager's own text. The D-Bus error
 * name stays in `dbusName` (for logs and code), out of the sentence.
 */
export function fromDBusError(name: string, text: string, what: string): NetworkError {
  if (ABSENT.has(name) || name.startsWith('org.freedesktop.DBus.Error.Spawn'))
    return new NetworkError(
      'unavailable',
      'NetworkManager is not running: nobody owns org.freedesktop.NetworkManager on the system bus. Start it (systemctl start NetworkManager); Periscope picks it up by itself.',
      name,
    )
  if (STARTING.has(name)) return new NetworkError('unavailable', `NetworkManager is starting or restarting, so ${what} failed; try again in a moment.${said(text)}`, name)
  if (SILENT.has(name)) return new NetworkError('unavailable', `NetworkManager did not answer while ${what}; try again in a moment.${said(text)}`, name)
  if (name === 'org.freedesktop.DBus.Error.AccessDenied' || name.endsWith('.PermissionDenied') || name.endsWith('.NotAuthorized'))
    return new NetworkError(
      'forbidden',
      `NetworkManager refused ${what}: permission denied. Run Periscope as root, or allow its user ` +
        `org.freedesktop.NetworkManager.settings.modify.system and org.freedesktop.NetworkManager.network-control in polkit.${said(text)}`,
      name,
    )
  const last = lastPart(name)
  if (/^(InvalidProperty|InvalidSetting|MissingProperty|InvalidArguments)$/.test(last) || name === 'org.freedesktop.DBus.Error.InvalidArgs')
    return new NetworkError('invalid', `NetworkManager refused the settings while ${what}.${said(text)}`, name)
  if (NOT_FOUND[last]) return new NetworkError('not_found', `${capitalize(NOT_FOUND[last])}, so ${what} failed.${said(text)}`, name)
  if (REFUSALS[last] && name.startsWith('org.freedesktop.NetworkManager'))
    return new NetworkError('refused', `NetworkManager refused ${what}: ${REFUSALS[last]}.${said(text)}`, name)
  return new NetworkError('failed', `NetworkManager failed while ${what}.${said(text)}`, name)
}

const capitalize = (s: string) => s.charAt(0).toUpperCase() + s.slice(1)
