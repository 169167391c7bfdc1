// NetworkBackend over NetworkManager's D-Bus API: wired devices, ethernet profiles, ipv4 updates and
// activations guarded by the rollback, and change notifications from NetworkManager's signals.
// Every read asks NetworkManager live (a handful of calls on a local socket): no cache to go stale.
import type { ConnectionProfile, IpConfiguration, NetworkBackend, WiredDevice } from '../../core/types'
import { BusLink, NM, unwrap, type BusLinkOptions, type Message } from './bus'
import { NetworkError, nmAbsent } from './errors'
import { ipv4FromSettings, ipv4Section } from './ipv4'
import { RollbackGuard, type RollbackEvent } from './rollback'

const MANAGER = '/org/freedesktop/NetworkManager'
const SETTINGS = '/org/freedesktop/NetworkManager/Settings'
const I = {
  manager: NM,
  device: `${NM}.Device`,
  active: `${NM}.Connection.Active`,
  ip4: `${NM}.IP4Config`,
  settings: `${NM}.Settings`,
  connection: `${NM}.Settings.Connection`,
  props: 'org.freedesktop.DBus.Properties',
}
const DEVICE_TYPE_ETHERNET = 1
const DEVICE_TYPE_VETH = 20
const STATE_UNMANAGED = 10
const STATE_ACTIVATED = 100
const ETHERNET = '802-3-ethernet'
// Settings.Connection.Update2 flags.
const TO_DISK = 0x1
const IN_MEMORY = 0x2

type Raw = Record<string, Record<string, unknown>> // a{sa{sv}} with its variants, as GetSettings returns it
interface DeviceRecord {
  path: string
  props: Record<string, any>
}

export interface NetworkChange {
  /** What changed: device_state, ip_config, devices, profiles, active_connection, networkmanager_started, networkmanager_stopped, rollback. */
  reasons: string[]
  rollback?: RollbackEvent
}

export interface NetworkManagerBackendOptions extends Pick<BusLinkOptions, 'address' | 'callTimeoutMs'> {
  rollbackSeconds: number
  /** When an API client was last heard from (ms since epoch). */
  lastActivity: () => number
  onChange?: (change: NetworkChange) => void
  log?: { info(msg: string, data?: unknown): void; warn(msg: string, data?: unknown): void }
  /** Coalescing window for signal bursts (one activation emits dozens). */
  debounceMs?: number
}

/** Only the settings object paths NetworkManager hands out are accepted as profile ids. */
const PROFILE_PATH = /^\/org\/freedesktop\/NetworkManager\/Settings\/\d+$/
const pathIndex = (p: string) => Number(p.slice(p.lastIndexOf('/') + 1)) || 0
const isGone = (e: unknown) =>
  e instanceof NetworkError && (e.dbusName === 'org.freedesktop.DBus.Error.UnknownObject' || e.dbusName === 'org.freedesktop.DBus.Error.UnknownMethod')

export class NetworkManagerBackend implements NetworkBackend {
  readonly name = 'networkmanager'
  readonly bus: BusLink
  readonly rollback: RollbackGuard
  private nmPresent: boolean | null = null
  private lastError: string | null = null
  private pendingReasons = new Set<string>()
  private debounce: ReturnType<typeof setTimeout> | null = null
  private reconnect: ReturnType<typeof setInterval> | null = null
  private stopped = false

  constructor(private options: NetworkManagerBackendOptions) {
    this.bus = new BusLink({
      address: options.address,
      callTimeoutMs: options.callTimeoutMs,
      onSignal: (msg) => this.signal(msg),
      onConnection: (up) => {
        this.nmPresent = null
        if (up) void this.bus.nmPresent().then((present) => (this.nmPresent ??= present), () => {})
        else this.keepReconnecting()
      },
    })
    this.rollback = new RollbackGuard({
      seconds: options.rollbackSeconds,
      lastActivity: options.lastActivity,
      onEvent: (event) => {
        const log = event.outcome === 'confirmed' ? this.options.log?.info : this.options.log?.warn
        log?.call(this.options.log, `network: ${event.detail}`)
        this.options.onChange?.({ reasons: ['rollback'], rollback: event })
      },
    })
  }

  // ---- lifecycle ----

  /** Connects and subscribes; never throws: without a bus or NetworkManager the routes answer 503. */
  async start(): Promise<void> {
    this.stopped = false
    try {
      await this.bus.connect()
      this.nmPresent = await this.bus.nmPresent()
      if (!this.nmPresent) this.options.log?.warn('network: NetworkManager is not running on the system bus; the network routes answer 503 until it starts')
    } catch (e) {
      this.lastError = (e as Error).message
      this.options.log?.warn(`network: ${this.lastError}; retrying every 5 s`)
      this.keepReconnecting()
    }
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.rollback.stop()
    if (this.reconnect) clearInterval(this.reconnect)
    if (this.debounce) clearTimeout(this.debounce)
    this.reconnect = this.debounce = null
    this.bus.close()
  }

  health(): { state: 'ok' | 'degraded'; detail?: string; bus: string; rollback: ReturnType<RollbackGuard['pending']> } {
    const base = { bus: this.bus.address, rollback: this.rollback.pending() }
    if (!this.bus.connected) return { state: 'degraded', detail: this.lastError ?? 'Not connected to the system D-Bus yet; Periscope tries again every 5 s.', ...base }
    if (this.nmPresent === false) return { state: 'degraded', detail: 'NetworkManager is not running on the system bus: the network routes answer 503 until it starts (systemctl start NetworkManager).', ...base }
    return { state: 'ok', ...base }
  }

  /** The bus went away: signals only flow on a live connection, so reconnect without waiting for a request. */
  private keepReconnecting(): void {
    if (this.reconnect || this.stopped) return
    this.reconnect = setInterval(async () => {
      try {
        await this.bus.connect()
        this.nmPresent = await this.bus.nmPresent()
        if (this.reconnect) clearInterval(this.reconnect)
        this.reconnect = null
        this.options.log?.info('network: system D-Bus connection is back')
      } catch (e) {
        this.lastError = (e as Error).message
      }
    }, 5000)
    this.reconnect.unref?.()
  }

  // ---- signals → network_changed ----

  private signal(msg: Message): void {
    const reason = classify(msg)
    if (!reason) return
    if (reason === 'networkmanager_started' || reason === 'networkmanager_stopped') {
      this.nmPresent = reason === 'networkmanager_started'
      this.options.log?.[this.nmPresent ? 'info' : 'warn'](`network: NetworkManager ${this.nmPresent ? 'is back on' : 'left'} the system bus`)
    }
    this.pendingReasons.add(reason)
    this.debounce ??= setTimeout(() => {
      this.debounce = null
      const reasons = [...this.pendingReasons].sort()
      this.pendingReasons.clear()
      this.options.onChange?.({ reasons })
    }, this.options.debounceMs ?? 200)
  }

  // ---- reads ----

  private async call(...args: Parameters<BusLink['nm']>): Promise<any[]> {
    try {
      const out = await this.bus.nm(...args)
      this.nmPresent = true
      return out
    } catch (e) {
      if (e instanceof NetworkError && e.kind === 'unavailable') {
        this.lastError = e.message
        if (nmAbsent(e)) this.nmPresent = false
      }
      throw e
    }
  }

  private async prop(path: string, iface: string, name: string): Promise<any> {
    const [value] = await this.call(path, I.props, 'Get', 'ss', [iface, name], `reading ${iface}.${name} of ${path}`)
    return unwrap(value)
  }

  private async devices(): Promise<DeviceRecord[]> {
    const [paths] = (await this.call(MANAGER, I.manager, 'GetDevices', '', [], 'listing devices')) as [string[]]
    const records = await Promise.all(
      paths.map((path) =>
        this.bus.getAll(path, I.device).then(
          (props) => ({ path, props }),
          (e) => {
            if (isGone(e)) return null // removed while we listed
            throw e
          },
        ),
      ),
    )
    return records.filter((r): r is DeviceRecord => r !== null)
  }

  /** Ethernet devices; veth pairs only when NetworkManager manages them (container veths are unmanaged noise). */
  private async wiredRecords(): Promise<DeviceRecord[]> {
    return (await this.devices()).filter(
      ({ props }) => props.DeviceType === DEVICE_TYPE_ETHERNET || (props.DeviceType === DEVICE_TYPE_VETH && props.State !== STATE_UNMANAGED),
    )
  }

  private async rawSettings(path: string): Promise<Raw> {
    const [settings] = await this.call(path, I.connection, 'GetSettings', '', [], `reading profile ${path}`)
    return settings as Raw
  }

  /** Every profile's settings (unwrapped) by path; profiles removed meanwhile are left out. */
  private async allProfiles(): Promise<Map<string, Record<string, Record<string, any>>>> {
    const [paths] = (await this.call(SETTINGS, I.settings, 'ListConnections', '', [], 'listing profiles')) as [string[]]
    const out = new Map<string, Record<string, Record<string, any>>>()
    const settings = await Promise.all(paths.map((p) => this.rawSettings(p).then(unwrap, (e) => (isGone(e) ? null : Promise.reject(e)))))
    paths.forEach((p, i) => settings[i] && out.set(p, settings[i] as Record<string, Record<string, any>>))
    return out
  }

  async wiredDevices(): Promise<WiredDevice[]> {
    const [wired, profiles] = await Promise.all([this.wiredRecords(), this.allProfiles()])
    const described = await Promise.all(wired.map((d) => this.describe(d, profiles).catch((e) => (isGone(e) ? null : Promise.reject(e)))))
    return described.filter((d): d is WiredDevice => d !== null)
  }

  private async describe(d: DeviceRecord, profiles: Map<string, Record<string, Record<string, any>>>): Promise<WiredDevice> {
    const { props } = d
    const activePath = props.ActiveConnection as string
    const active = activePath && activePath !== '/'
    const activeProfile = active ? ((await this.prop(activePath, I.active, 'Connection')) as string) : ''
    const available = (props.AvailableConnections as string[])
      .filter((p) => profiles.get(p)?.connection?.type === ETHERNET)
      // Most recently used first, then newest.
      .sort((a, b) => Number(profiles.get(b)!.connection!.timestamp ?? 0) - Number(profiles.get(a)!.connection!.timestamp ?? 0) || pathIndex(b) - pathIndex(a))
    return {
      interface: props.Interface,
      state: props.State,
      is_active: props.State === STATE_ACTIVATED,
      available_profiles: available,
      active_profile_id: activeProfile === '/' ? '' : activeProfile,
      active_ip_configuration: active && props.Ip4Config !== '/' ? await this.ipConfiguration(d, profiles.get(activeProfile)) : null,
    }
  }

  /** Addresses, gateway and DNS as the device has them now; method and never-default as applied. */
  private async ipConfiguration(d: DeviceRecord, profile: Record<string, Record<string, any>> | undefined): Promise<IpConfiguration> {
    const [ip4, applied] = await Promise.all([
      this.bus.getAll(d.props.Ip4Config, I.ip4),
      this.call(d.path, I.device, 'GetAppliedConnection', 'u', [0], `reading the applied connection of ${d.props.Interface}`).then(
        ([settings]) => unwrap(settings) as Record<string, Record<string, any>>,
        () => profile, // not allowed or not there (deactivating): the profile is the next best answer
      ),
    ])
    const nameservers: string[] = ip4.NameserverData
      ? (ip4.NameserverData as { address: string }[]).map((n) => n.address)
      : ipv4FromSettings({ dns: ip4.Nameservers ?? [] }).dns
    return {
      ip_addresses: ((ip4.AddressData ?? []) as { address: string; prefix: number }[]).map((a) => ({ address: a.address, prefix: Number(a.prefix) })),
      gateway: ip4.Gateway ?? '',
      method: applied?.ipv4?.method ?? 'auto',
      dns: nameservers,
      never_default: applied?.ipv4?.['never-default'] ?? false,
    }
  }

  async profiles(): Promise<ConnectionProfile[]> {
    const out: ConnectionProfile[] = []
    for (const [path, s] of await this.allProfiles()) {
      if (s.connection?.type !== ETHERNET) continue
      out.push({ id: s.connection.id, path, ipv4_settings: ipv4FromSettings(s.ipv4) })
    }
    return out
  }

  // ---- changes ----

  private async requireProfile(path: string): Promise<void> {
    const unknown = new NetworkError('not_found', `No connection profile at '${path}' (GET /api/network/connection_profiles lists them).`)
    if (!PROFILE_PATH.test(path)) throw unknown
    const [paths] = (await this.call(SETTINGS, I.settings, 'ListConnections', '', [], 'listing profiles')) as [string[]]
    if (!paths.includes(path)) throw unknown
  }

  /** GetSettings leaves secrets out and Update would drop them: 802.1X credentials are read back in. */
  private async withSecrets(path: string, raw: Raw): Promise<Raw> {
    const out: Raw = { ...raw }
    for (const setting of ['802-1x']) {
      if (!out[setting]) continue
      try {
        const [secrets] = (await this.call(path, I.connection, 'GetSecrets', 's', [setting], `reading the secrets of ${path}`)) as [Raw]
        out[setting] = { ...out[setting], ...(secrets[setting] ?? {}) }
      } catch {
        // No secrets stored (or an agent owns them): nothing to keep.
      }
    }
    return out
  }

  private async write(path: string, settings: Raw, flags: number): Promise<void> {
    await this.call(path, I.connection, 'Update2', 'a{sa{sv}}ua{sv}', [settings, flags, {}], `updating profile ${path}`)
  }

  /** Interfaces whose active connection uses this profile. */
  private async interfacesUsing(path: string): Promise<string[]> {
    const out: string[] = []
    for (const d of await this.wiredRecords()) {
      const ac = d.props.ActiveConnection as string
      if (ac && ac !== '/' && (await this.prop(ac, I.active, 'Connection').catch(() => null)) === path) out.push(d.props.Interface)
    }
    return out
  }

  private async deviceByInterface(iface: string): Promise<DeviceRecord> {
    const device = (await this.wiredRecords()).find((d) => d.props.Interface === iface)
    if (!device) throw new NetworkError('not_found', `No wired network device named '${iface}' (GET /api/network/wired/devices lists them).`)
    return device
  }

  private async activate(path: string, iface: string): Promise<void> {
    const device = await this.deviceByInterface(iface)
    await this.call(MANAGER, I.manager, 'ActivateConnection', 'ooo', [path, device.path, '/'], `activating ${path} on ${iface}`)
  }

  /** Applies the profile's current settings to the devices using it; re-activates where reapply cannot. */
  private async reapply(path: string, interfaces: string[]): Promise<void> {
    for (const iface of interfaces) {
      const device = await this.deviceByInterface(iface)
      try {
        await this.call(device.path, I.device, 'Reapply', 'a{sa{sv}}tu', [{}, 0n, 0], `reapplying ${path} on ${iface}`)
      } catch (e) {
        if (!(e instanceof NetworkError) || e.kind === 'unavailable') throw e
        await this.activate(path, iface)
      }
    }
  }

  /**
   * Replaces the profile's ipv4 setting, keeping everything else. On an active profile the change is made
   * in memory, applied at once, and written to disk only when a client is heard from afterwards; otherwise
   * the rollback puts the old settings back (and a reboot would too).
   */
  async updateProfile(path: string, ipv4: IpConfiguration): Promise<void> {
    await this.requireProfile(path)
    const interfaces = await this.interfacesUsing(path)
    if (interfaces.length) await this.rollback.ready()
    const old = await this.withSecrets(path, await this.rawSettings(path))
    const next: Raw = { ...old, ipv4: ipv4Section(old.ipv4, ipv4) }
    if (!interfaces.length) {
      await this.write(path, next, TO_DISK)
      return
    }
    const id = String(unwrap(old.connection?.id) ?? path)
    const restore = async () => {
      await this.requireProfile(path)
      await this.write(path, old, TO_DISK)
      await this.reapply(path, interfaces)
    }
    await this.write(path, next, IN_MEMORY)
    try {
      await this.reapply(path, interfaces)
    } catch (e) {
      await restore().catch(() => {})
      throw e
    }
    this.rollback.arm({
      description: `updating profile '${id}' on ${interfaces.join(', ')}`,
      interfaces,
      restore,
      confirm: async () => this.write(path, await this.withSecrets(path, await this.rawSettings(path)), TO_DISK),
    })
  }

  /** Activates a profile on an interface, watched by the rollback (back to the previous profile, or down). */
  async activateProfile(iface: string, path: string): Promise<void> {
    const device = await this.deviceByInterface(iface)
    await this.requireProfile(path)
    await this.rollback.ready()
    const ac = device.props.ActiveConnection as string
    const previous = ac && ac !== '/' ? ((await this.prop(ac, I.active, 'Connection')) as string) : null
    const settings = unwrap(await this.rawSettings(path)) as Record<string, Record<string, any>>
    await this.activate(path, iface)
    this.rollback.arm({
      description: `activating profile '${settings.connection?.id ?? path}' on ${iface}`,
      interfaces: [iface],
      restore: async () => {
        if (previous && previous !== '/') return this.activate(previous, iface)
        const d = await this.deviceByInterface(iface)
        await this.call(d.path, I.device, 'Disconnect', '', [], `disconnecting ${iface}`)
      },
      confirm: async () => {},
    })
  }
}

/** Which kind of change a NetworkManager signal announces, or null for noise (statistics, IPv6, …). */
export function classify(msg: Message): string | null {
  if (msg.member === 'NameOwnerChanged' && msg.body?.[0] === NM) return msg.body[2] ? 'networkmanager_started' : 'networkmanager_stopped'
  const path = msg.path ?? ''
  if (msg.interface === I.manager && (msg.member === 'DeviceAdded' || msg.member === 'DeviceRemoved')) return 'devices'
  if (msg.interface === I.settings && (msg.member === 'NewConnection' || msg.member === 'ConnectionRemoved')) return 'profiles'
  if (msg.interface === I.connection && (msg.member === 'Updated' || msg.member === 'Removed')) return 'profiles'
  if (msg.interface === I.device && msg.member === 'StateChanged') return 'device_state'
  if (msg.interface === I.active && msg.member === 'StateChanged') return 'active_connection'
  if (msg.interface === I.props && msg.member === 'PropertiesChanged') {
    const [iface, changed] = msg.body as [string, Record<string, unknown>]
    if (iface === I.ip4) return 'ip_config'
    if (iface === I.device || path.startsWith(`${MANAGER}/Devices/`)) {
      if ('Ip4Config' in changed) return 'ip_config'
      if ('State' in changed) return 'device_state'
      if ('ActiveConnection' in changed || 'AvailableConnections' in changed) return 'active_connection'
    }
  }
  return null
}
