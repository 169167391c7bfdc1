// One connection to the system bus for the whole service. dbus-next's proxy objects introspect on every
// creation and add a match rule per signal listener without ever removing it (FIELD-NOTES §3: a bus
// allows 2048 per connection), so this speaks plain messages instead: method calls with a timeout, and
// exactly two match rules added once per connection. The link reconnects by itself when the bus returns.
import dbus from 'dbus-next'

type MessageBus = dbus.MessageBus
export type Message = dbus.Message
export const { Variant, Message: DBusMessage } = dbus
export type Variant = dbus.Variant
import { NetworkError, fromDBusError } from './errors'

export const NM = 'org.freedesktop.NetworkManager'
const DBUS = 'org.freedesktop.DBus'
const SIGNAL = 4 // MessageType.SIGNAL

/** The match rules this link adds, each once per connection. */
export const MATCH_RULES = [
  `type='signal',sender='${DBUS}',path='/org/freedesktop/DBus',interface='${DBUS}',member='NameOwnerChanged',arg0='${NM}'`,
  // A well-known sender: the bus daemon matches it against whoever owns the name at delivery time, so the
  // rule keeps working across NetworkManager restarts.
  `type='signal',sender='${NM}',path_namespace='/org/freedesktop/NetworkManager'`,
]

export function systemBusAddress(): string {
  return process.env.DBUS_SYSTEM_BUS_ADDRESS || 'unix:path=/var/run/dbus/system_bus_socket'
}

export interface BusLinkOptions {
  address?: string
  /** Per-call timeout; dbus-next has none, and a hung daemon must not hang an HTTP request. */
  callTimeoutMs?: number
  onSignal?: (msg: Message) => void
  /** The link (re)connected (true) or lost the bus (false). */
  onConnection?: (up: boolean) => void
}

export class BusLink {
  private bus: MessageBus | null = null
  private connecting: Promise<MessageBus> | null = null
  private closed = false
  /** Rejecters of calls in flight, so a lost connection fails them at once. */
  private inflight = new Set<(e: Error) => void>()
  readonly address: string
  private timeoutMs: number

  constructor(private options: BusLinkOptions = {}) {
    this.address = options.address ?? systemBusAddress()
    this.timeoutMs = options.callTimeoutMs ?? 10_000
  }

  get connected(): boolean {
    return this.bus !== null
  }

  /** The unique name of this connection on the bus (':1.42'), or null. */
  get uniqueName(): string | null {
    return (this.bus as unknown as { name: string | null } | null)?.name ?? null
  }

  /** Connects if needed; throws NetworkError('unavailable') when the bus cannot be reached. */
  async connect(): Promise<MessageBus> {
    if (this.closed) throw new NetworkError('unavailable', 'The network backend is stopped (the service is shutting down).')
    if (this.bus) return this.bus
    this.connecting ??= this.open().finally(() => (this.connecting = null))
    return this.connecting
  }

  private async open(): Promise<MessageBus> {
    // sessionBus({ busAddress }) is dbus-next's way to connect to an explicit address.
    const bus = dbus.sessionBus({ busAddress: this.address })
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error('no answer to Hello within 3 s')), 3000)
        bus.once('connect', () => (clearTimeout(timer), resolve()))
        bus.once('error', (e: Error) => (clearTimeout(timer), reject(e)))
      })
    } catch (e) {
      bus.removeAllListeners()
      bus.on('error', () => {})
      try {
        bus.disconnect()
      } catch {}
      throw new NetworkError('unavailable', `Cannot reach the system D-Bus at ${this.address} (${(e as Error).message}): is D-Bus running? Periscope tries again by itself.`)
    }
    bus.on('error', () => this.lost(bus))
    ;(bus as unknown as { _connection: NodeJS.EventEmitter })._connection.on('end', () => this.lost(bus))
    bus.on('message', (msg: Message) => {
      if (msg.type === SIGNAL) this.options.onSignal?.(msg)
    })
    this.bus = bus
    try {
      for (const rule of MATCH_RULES) await this.call(DBUS, '/org/freedesktop/DBus', DBUS, 'AddMatch', 's', [rule])
    } catch (e) {
      this.lost(bus)
      throw e
    }
    this.options.onConnection?.(true)
    return bus
  }

  private lost(bus: MessageBus): void {
    if (this.bus !== bus) return
    this.bus = null
    for (const reject of this.inflight) reject(new NetworkError('unavailable', `Lost the system D-Bus connection (${this.address}); Periscope connects again by itself.`))
    this.inflight.clear()
    try {
      bus.disconnect()
    } catch {}
    this.options.onConnection?.(false)
  }

  /** One method call; resolves with the reply body, throws NetworkError. */
  async call(destination: string, path: string, iface: string, member: string, signature = '', body: unknown[] = [], what = `${member} on ${path}`): Promise<any[]> {
    const bus = await this.connect()
    const msg = new DBusMessage({ destination, path, interface: iface, member, signature, body })
    let timer: ReturnType<typeof setTimeout> | undefined
    let rejectCall: (e: Error) => void = () => {}
    const guard = new Promise<never>((_, reject) => {
      rejectCall = reject
      timer = setTimeout(() => reject(new NetworkError('unavailable', `NetworkManager did not answer within ${this.timeoutMs / 1000} s while ${what}; try again in a moment.`)), this.timeoutMs)
    })
    this.inflight.add(rejectCall)
    try {
      const reply = await Promise.race([bus.call(msg), guard])
      return reply?.body ?? []
    } catch (e) {
      if (e instanceof NetworkError) throw e
      const err = e as { type?: string; text?: string; message?: string }
      if (err.type) throw fromDBusError(err.type, err.text ?? '', what)
      throw new NetworkError('unavailable', `The system D-Bus failed while ${what} (${err.message ?? String(e)}); Periscope connects again by itself.`)
    } finally {
      clearTimeout(timer)
      this.inflight.delete(rejectCall)
    }
  }

  /** A call to NetworkManager itself. */
  nm(path: string, iface: string, member: string, signature = '', body: unknown[] = [], what?: string): Promise<any[]> {
    return this.call(NM, path, iface, member, signature, body, what)
  }

  /** Every property of one interface, unwrapped from their variants. */
  async getAll(path: string, iface: string): Promise<Record<string, any>> {
    const [props] = await this.nm(path, 'org.freedesktop.DBus.Properties', 'GetAll', 's', [iface], `reading ${iface} of ${path}`)
    return unwrap(props) as Record<string, any>
  }

  /** Whether NetworkManager owns its name on the bus right now. */
  async nmPresent(): Promise<boolean> {
    const [has] = await this.call(DBUS, '/org/freedesktop/DBus', DBUS, 'NameHasOwner', 's', [NM])
    return has === true
  }

  close(): void {
    this.closed = true
    if (this.bus) this.lost(this.bus)
  }
}

/** Variants (and variants nested in arrays and dicts) → plain values. */
export function unwrap(value: unknown): unknown {
  if (value instanceof Variant) return unwrap(value.value)
  if (Array.isArray(value)) return value.map(unwrap)
  if (value && typeof value === 'object' && !(value instanceof Uint8Array) && !Buffer.isBuffer(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, unwrap(v)]))
  return value
}
