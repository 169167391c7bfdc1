// NetworkManager's D-Bus errors become sentences a person can act on (drivers/networkmanager/errors.ts):
// what failed, why in plain words, then NetworkManager's own text; never the D-Bus error name, which is
// what the console's Network page used to show.
import { describe, expect, test } from 'bun:test'
import { fromDBusError, type NetworkErrorKind } from '../../drivers/networkmanager/errors'

const NM = 'org.freedesktop.NetworkManager'
const CASES: [name: string, text: string, kind: NetworkErrorKind][] = [
  ['org.freedesktop.DBus.Error.ServiceUnknown', 'The name org.freedesktop.NetworkManager was not provided by any .service files', 'unavailable'],
  ['org.freedesktop.DBus.Error.UnknownMethod', 'No such method “Update2”', 'unavailable'],
  ['org.freedesktop.DBus.Error.NoReply', '', 'unavailable'],
  ['org.freedesktop.DBus.Error.AccessDenied', 'Rejected send message', 'forbidden'],
  [`${NM}.Settings.Connection.PermissionDenied`, 'Insufficient privileges', 'forbidden'],
  [`${NM}.Settings.Connection.InvalidProperty`, 'ipv4.addresses: this property cannot be empty for method=manual', 'invalid'],
  ['org.freedesktop.DBus.Error.InvalidArgs', 'Invalid arguments', 'invalid'],
  [`${NM}.Settings.UnknownConnection`, 'Connection does not exist', 'not_found'],
  [`${NM}.Manager.UnknownDevice`, 'No device found for the requested iface', 'not_found'],
  [`${NM}.Manager.ConnectionNotAvailable`, "Connection 'tether' is not available on device eth0 because device is strictly unmanaged", 'refused'],
  [`${NM}.Manager.ConnectionAlreadyActive`, '', 'refused'],
  [`${NM}.Settings.Connection.Failed`, 'failed to update connection: Permission denied', 'refused'],
  [`${NM}.Device.VersionIdMismatch`, 'The version id mismatches', 'failed'],
  ['com.example.Unheard.Of', 'something odd', 'failed'],
]

describe('every D-Bus error from NetworkManager is a sentence', () => {
  for (const [name, text, kind] of CASES) {
    test(`${name.slice(name.lastIndexOf('.') + 1)} → ${kind}`, () => {
      const e = fromDBusError(name, text, 'updating profile /org/freedesktop/NetworkManager/Settings/3')
      expect(e.kind).toBe(kind)
      expect(e.dbusName).toBe(name)
      expect(e.message).not.toContain(name)
      expect(e.message).toMatch(/^[A-Z]/)
      expect(e.message).toMatch(/[.!?]$/)
      if (text && !name.includes('ServiceUnknown')) expect(e.message).toContain(text.replace(/\.$/, ''))
    })
  }

  test('the words the plugin and the integration tests look for stay', () => {
    expect(fromDBusError(`${NM}.Settings.Connection.InvalidProperty`, 'bad', 'updating profile x').message).toContain('NetworkManager refused the settings')
    expect(fromDBusError('org.freedesktop.DBus.Error.AccessDenied', '', 'updating profile x').message).toContain('permission denied')
  })
})
