// Configuration from flags and PERISCOPE_* environment variables (flags win). One table drives the
// parser, the environment names and --help, so they cannot drift apart.
import { existsSync, readdirSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { LOG_LEVELS } from './log'

export type LogLevel = 'debug' | 'info' | 'warn' | 'error'

export interface Config {
  host: string
  port: number
  dataDir: string
  recordingsDir: string
  /** Simulated-camera preset, or null when the mock plugin is off. */
  simulate: string | null
  plugins: string[]
  logLevel: LogLevel
  /** Origins allowed besides the service's own and the vehicle's own names and addresses ('*': any). */
  corsOrigins: string[]
  /** Host names served besides IP literals, localhost, the machine's names and mDNS `.local` ('*': any). */
  allowedHosts: string[]
  /** When set, mutating operations (and with tokenScope 'all', reads too) need `Authorization: Bearer <token>`. */
  token: string | null
  /** What --token protects: 'changes' (mutating operations) or 'all' (reads and live video too). */
  tokenScope: 'changes' | 'all'
  bodyLimit: number
  /** Whether the per-client limits on expensive operations hold (core/http/client-limits.ts). */
  clientLimits: boolean
  /** Seconds a request body may take to arrive whole; later: 408 and the connection closed. */
  bodyTimeoutSeconds: number
  /** Bytes of events queued for one GET /api/events client that does not keep up; past it the client is dropped. */
  eventsQueueBytes: number
  zipTokenTtlSeconds: number
  networkRollbackSeconds: number
  /** Viewers allowed per camera at once, for each way of watching (RTSP, WebRTC, MJPEG) apart. */
  maxViewers: number
  /** MiB that must be free on the recordings disk for start_recording (507 below). */
  minFreeToRecordMiB: number
  /** gst-launch children for snapshots (captures, decodes, scalers) at once; a few more wait, the rest get 503. */
  snapshotChildren: number
  /** Seconds an H.264 camera's snapshot decoder stays after its last snapshot (the next is then at once); 0 = none. */
  snapshotWarmSeconds: number
  /** Seconds a WHEP session may go unheard (no RTCP from the browser) before it is closed. */
  whepIdleTimeoutSeconds: number
  /** A viewer's camera-to-screen delay (ms) past which, for 2 s, the stream's health alert is raised. */
  delayAlertMs: number
  /** The RTSP server's TCP port; 0 = no RTSP server. */
  rtspPort: number
  /** RTSP connections at once; one more is closed at once. */
  rtspMaxConnections: number
  /** Seconds an RTSP connection may stay without a session before it is closed. */
  rtspIdleTimeoutSeconds: number
  rtspHelperTimeoutSeconds: number
  /** Where the MAVLink camera components talk (plugins/mavlink); null = off. */
  mavlink: MavlinkEndpoint | null
  /** Component id of the first camera (QGroundControl looks for cameras at 100–105). */
  mavlinkComponentBase: number
  /** The vehicle's MAVLink system id, which its camera components share. */
  mavlinkSystemId: number
  /** udpin: seconds a ground station may go unheard before it is no longer sent to. */
  mavlinkPeerTimeoutSeconds: number
  /** The vehicle's address in stream URIs sent over MAVLink; null = found automatically. */
  mavlinkStreamAddress: string | null
  /** MAVLink 2 signing key (32 bytes): set, every frame in and out is signed and unsigned ones are refused. */
  mavlinkSigningKey: Uint8Array | null
  /** The values of the loaded plugins' own flags (core/plugin.ts `flags`), by flag name. */
  pluginFlags: Record<string, unknown>
}

/** A flag a loaded plugin declares (core/plugin.ts PluginFlag), with its plugin's name. */
export interface PluginFlagSpec {
  flag: string
  plugin: string
  help: string
  default?: unknown
  parse?(raw: string): unknown
}

/**
 * A MAVLink link as mavlink-router and mavlink-camera-manager write it: `udpout:host:port` sends to a
 * ground station (or router) listening there, `udpin:addr:port` listens and answers whoever sent to it,
 * `tcpout:host:port` connects to a TCP server (BlueOS's mavlink-router at 127.0.0.1:5777). An IPv6
 * host is written in brackets: `udpout:[::1]:14550`.
 */
export interface MavlinkEndpoint {
  kind: 'udpout' | 'udpin' | 'tcpout'
  host: string
  port: number
}

export function parseMavlinkEndpoint(raw: string): MavlinkEndpoint {
  const m = /^(udpout|udpin|tcpout):(\[[0-9a-fA-F:.]+\]|[^:\s[\]]+):(\d{1,5})$/.exec(raw.trim())
  const port = m ? Number(m[3]) : NaN
  if (!m || port < 1 || port > 65535) {
    throw new Error(`mavlink must be udpout:<host>:<port>, udpin:<address>:<port> or tcpout:<host>:<port> (port 1-65535), got '${raw}'`)
  }
  return { kind: m[1] as MavlinkEndpoint['kind'], host: m[2]!.replace(/^\[|\]$/g, ''), port }
}
/** A MAVLink 2 signing key: 32 bytes, as 64 hex digits or base64. */
export function parseSigningKey(raw: string): Uint8Array {
  const text = raw.trim()
  const bytes = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : /^[A-Za-z0-9+/]{43}=?$/.test(text) ? Buffer.from(text, 'base64') : null
  if (!bytes || bytes.length !== 32) throw new Error('mavlink-signing-key must be 32 bytes, written as 64 hex digits or in base64 (44 characters)')
  return new Uint8Array(bytes)
}

export const DEFAULT_PLUGINS = ['cameras', 'preferences', 'recordings', 'network', 'link', 'gstreamer', 'audio', 'v4l2', 'dwe', 'jpeg', 'whep', 'cockpit', 'rtsp', 'metrics', 'mavlink', 'blueos', 'console']

interface Option {
  flag: string
  key: keyof Config
  help: string
  parse: (raw: string) => unknown
  def: () => unknown
}

const int = (name: string, min: number, max: number) => (raw: string) => {
  const n = Number(raw)
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}, got '${raw}'`)
  return n
}
const list = (raw: string) => raw.split(',').map((s) => s.trim()).filter(Boolean)

/** Simulated cameras are on by default only when the machine has no video node. */
function defaultSimulate(): string | null {
  const dir = '/sys/class/video4linux'
  const hasCameras = existsSync(dir) && readdirSync(dir).some((n) => n.startsWith('video'))
  return hasCameras ? null : 'default'
}

const OPTIONS: Option[] = [
  { flag: 'host', key: 'host', help: 'address to listen on', parse: String, def: () => '0.0.0.0' },
  { flag: 'port', key: 'port', help: 'TCP port (0 = any free port)', parse: int('port', 0, 65535), def: () => 8080 },
  { flag: 'data-dir', key: 'dataDir', help: 'settings database and default recordings live here', parse: (r) => resolve(r), def: () => resolve('data') },
  { flag: 'recordings-dir', key: 'recordingsDir', help: 'where recordings are written (default <data-dir>/recordings)', parse: (r) => resolve(r), def: () => '' },
  {
    flag: 'simulate',
    key: 'simulate',
    help: "simulated cameras: a preset (default, fleet, single) or 'off', plus the cameras vendor plugins declare; on by default when no /dev/video* exists",
    parse: (r) => (r === 'off' || r === 'false' ? null : r === '' || r === 'true' ? 'default' : r),
    def: defaultSimulate,
  },
  { flag: 'plugins', key: 'plugins', help: `comma-separated plugin names or module paths (default ${DEFAULT_PLUGINS.join(',')})`, parse: list, def: () => [...DEFAULT_PLUGINS] },
  {
    flag: 'log-level',
    key: 'logLevel',
    help: 'debug, info, warn or error',
    parse: (r) => {
      if (!LOG_LEVELS.includes(r as LogLevel)) throw new Error(`log-level must be one of ${LOG_LEVELS.join(', ')}, got '${r}'`)
      return r
    },
    def: () => 'info',
  },
  {
    flag: 'cors-origins',
    key: 'corsOrigins',
    help: "more origins allowed to call the API from a browser (the service's own and the vehicle's own names and addresses, any port, always are; '*' = any; docs/security.md)",
    parse: list,
    def: () => [],
  },
  { flag: 'allowed-hosts', key: 'allowedHosts', help: "more Host names served (IP literals, localhost, this machine's names and *.local always are; '*' = any); others get 421", parse: list, def: () => [] },
  { flag: 'token', key: 'token', help: 'bearer token required for mutating operations (off by default; --token-scope all: for reading too)', parse: (r) => r || null, def: () => null },
  {
    flag: 'token-scope',
    key: 'tokenScope',
    help: "what --token protects: 'changes' (mutating operations) or 'all' (also recordings, logs, events, live video and RTSP)",
    parse: (r) => {
      if (r !== 'changes' && r !== 'all') throw new Error(`token-scope must be 'changes' or 'all', got '${r}'`)
      return r
    },
    def: () => 'changes',
  },
  { flag: 'body-limit', key: 'bodyLimit', help: 'largest request body in bytes', parse: int('body-limit', 1, 1 << 30), def: () => 1 << 20 },
  {
    flag: 'client-limits',
    key: 'clientLimits',
    help: "'on' or 'off': the per-client limits on zip prepares, snapshots of a stopped camera, WebRTC sessions and places, and signalling sockets (429; docs/security.md)",
    parse: (r) => {
      if (!['on', 'off', 'true', 'false'].includes(r)) throw new Error(`client-limits must be 'on' or 'off', got '${r}'`)
      return r === 'on' || r === 'true'
    },
    def: () => true,
  },
  { flag: 'body-timeout', key: 'bodyTimeoutSeconds', help: 'seconds a request body may take to arrive whole; later: 408 and the connection closed', parse: int('body-timeout', 1, 3600), def: () => 30 },
  {
    flag: 'events-queue-bytes',
    key: 'eventsQueueBytes',
    help: 'bytes of events queued for one /api/events client that does not keep up; past it the client gets a last `dropped` event and is disconnected',
    parse: int('events-queue-bytes', 4096, 64 << 20),
    def: () => 256 * 1024,
  },
  { flag: 'zip-token-ttl', key: 'zipTokenTtlSeconds', help: 'seconds an unused zip download token lives', parse: int('zip-token-ttl', 1, 86400 * 7), def: () => 600 },
  {
    flag: 'network-rollback',
    key: 'networkRollbackSeconds',
    help: 'seconds without any API client after an address change before the old network configuration is restored',
    parse: int('network-rollback', 1, 3600),
    def: () => 30,
  },
  { flag: 'max-viewers', key: 'maxViewers', help: 'viewers per camera at once over each of RTSP, WebRTC (WHEP and Cockpit together) and MJPEG; more are refused with 503', parse: int('max-viewers', 1, 64), def: () => 8 },
  {
    flag: 'min-free-to-record',
    key: 'minFreeToRecordMiB',
    help: 'MiB that must be free on the recordings disk to start a recording while streaming; below it start_recording answers 507',
    parse: int('min-free-to-record', 0, 1 << 20),
    def: () => 64,
  },
  {
    flag: 'snapshot-children',
    key: 'snapshotChildren',
    help: 'snapshot children (capture, decode, scale) running at once; 8 more wait, further snapshots get 503 with Retry-After',
    parse: int('snapshot-children', 1, 32),
    def: () => 2,
  },
  {
    flag: 'snapshot-warm',
    key: 'snapshotWarmSeconds',
    help: "seconds an H.264 camera's decoder keeps running after its last snapshot, so the next snapshot is its newest frame at once instead of its group of pictures decoded anew (0 = never kept)",
    parse: int('snapshot-warm', 0, 3600),
    def: () => 30,
  },
  {
    flag: 'delay-alert',
    key: 'delayAlertMs',
    help: "milliseconds a viewer's picture may lag the camera (the console's WebRTC views measure it) before the stream's health alert is raised, after 2 s of it",
    parse: int('delay-alert', 1, 60_000),
    def: () => 400,
  },
  { flag: 'whep-idle-timeout', key: 'whepIdleTimeoutSeconds', help: 'seconds a WebRTC viewer may go unheard (closed tab, lost link) before its session is closed', parse: int('whep-idle-timeout', 1, 300), def: () => 30 },
  { flag: 'rtsp-port', key: 'rtspPort', help: 'RTSP server port: rtsp://<host>:<port>/<bus_info> for each running stream (0 = off)', parse: int('rtsp-port', 0, 65535), def: () => 8554 },
  { flag: 'rtsp-max-connections', key: 'rtspMaxConnections', help: 'RTSP connections at once (all cameras); one more is closed at once', parse: int('rtsp-max-connections', 1, 4096), def: () => 64 },
  {
    flag: 'rtsp-idle-timeout',
    key: 'rtspIdleTimeoutSeconds',
    help: 'seconds an RTSP connection may stay without a session (no SETUP, or a DESCRIBE only) before it is closed',
    parse: int('rtsp-idle-timeout', 1, 3600),
    def: () => 10,
  },
  {
    flag: 'rtsp-helper-timeout',
    key: 'rtspHelperTimeoutSeconds',
    help: "seconds the RTSP helper may leave the service's pings unanswered (its main loop stuck) before it is killed and restarted with every mount",
    parse: int('rtsp-helper-timeout', 2, 300),
    def: () => 12,
  },
  {
    flag: 'mavlink',
    key: 'mavlink',
    help: "MAVLink camera protocol for QGroundControl: udpout:<host>:<port>, udpin:<address>:<port> or tcpout:<host>:<port> (off when unset or 'off')",
    parse: (r) => (r === '' || r === 'off' ? null : parseMavlinkEndpoint(r)),
    def: () => null,
  },
  { flag: 'mavlink-component-base', key: 'mavlinkComponentBase', help: 'MAVLink component id of the first camera; the next cameras take the next free ids (QGroundControl looks at 100-105)', parse: int('mavlink-component-base', 1, 255), def: () => 100 },
  { flag: 'mavlink-system-id', key: 'mavlinkSystemId', help: "the vehicle's MAVLink system id, shared by its camera components", parse: int('mavlink-system-id', 1, 255), def: () => 1 },
  {
    flag: 'mavlink-peer-timeout',
    key: 'mavlinkPeerTimeoutSeconds',
    help: 'udpin: seconds a ground station may go unheard before it is no longer sent to (QGroundControl sends a heartbeat every second)',
    parse: int('mavlink-peer-timeout', 1, 300),
    def: () => 10,
  },
  {
    flag: 'mavlink-stream-address',
    key: 'mavlinkStreamAddress',
    help: "the vehicle's address in the stream URIs sent over MAVLink (default: --host when it is one address, else the one facing the MAVLink peer, else the first LAN address)",
    parse: (r) => r || null,
    def: () => null,
  },
  {
    flag: 'mavlink-signing-key',
    key: 'mavlinkSigningKey',
    help: 'MAVLink 2 signing key, 32 bytes as 64 hex digits or base64: frames without a valid signature are refused and ours are signed (off by default)',
    parse: (r) => (r === '' || r === 'off' ? null : parseSigningKey(r)),
    def: () => null,
  },
]

const envName = (flag: string) => `PERISCOPE_${flag.toUpperCase().replaceAll('-', '_')}`

export function helpText(pluginFlags: PluginFlagSpec[] = []): string {
  const rows = OPTIONS.map((o) => `  --${o.flag.padEnd(18)} ${envName(o.flag).padEnd(30)} ${o.help}`)
  const extra = pluginFlags.map((f) => `  --${f.flag.padEnd(18)} ${envName(f.flag).padEnd(30)} ${f.help} (plugin ${f.plugin})`)
  return ['Usage: npm start -- [options]', '', '  flag                 environment                    meaning', ...rows, ...extra, '  --help               show this text', ''].join('\n')
}

/** The plugins' flags, refused when one takes a name the core or another plugin has. */
function checkPluginFlags(flags: PluginFlagSpec[]): void {
  flags.forEach((f, i) => {
    if (!/^[a-z][a-z0-9-]*$/.test(f.flag)) throw new ConfigError(`plugin '${f.plugin}' declares a flag '${f.flag}': use lower-case letters, digits and dashes`)
    if (OPTIONS.some((o) => o.flag === f.flag) || f.flag === 'help') throw new ConfigError(`plugin '${f.plugin}' declares --${f.flag}, which is the service's own flag: choose another name`)
    const other = flags.slice(0, i).find((g) => g.flag === f.flag)
    if (other) throw new ConfigError(`plugins '${other.plugin}' and '${f.plugin}' both declare --${f.flag}: one of them must rename it`)
  })
}

const parsePluginFlag = (f: PluginFlagSpec, raw: string) => {
  try {
    return f.parse ? f.parse(raw) : raw
  } catch (e) {
    throw new ConfigError(`--${f.flag} (plugin ${f.plugin}): ${(e as Error).message}`)
  }
}

export class ConfigError extends Error {}

/**
 * Builds the effective config: defaults, then PERISCOPE_* variables, then flags, then `overrides`.
 * `pluginFlags`: the loaded plugins' own flags; `lenient` skips flags it does not know (the first pass,
 * which only learns which plugins to load).
 */
export function loadConfig(
  argv: string[] = [],
  env: Record<string, string | undefined> = {},
  overrides: Partial<Config> = {},
  pluginFlags: PluginFlagSpec[] = [],
  lenient = false,
): Config {
  checkPluginFlags(pluginFlags)
  const config = {} as Record<string, unknown>
  const fromPlugins: Record<string, unknown> = {}
  for (const f of pluginFlags) {
    const fromEnv = env[envName(f.flag)]
    fromPlugins[f.flag] = fromEnv !== undefined ? parsePluginFlag(f, fromEnv) : typeof f.default === 'string' ? parsePluginFlag(f, f.default) : f.default
  }
  for (const o of OPTIONS) {
    const fromEnv = env[envName(o.flag)]
    config[o.key] = fromEnv !== undefined ? o.parse(fromEnv) : undefined
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (!arg.startsWith('--')) throw new ConfigError(`unexpected argument '${arg}' (see --help)`)
    const [name, inline] = arg.slice(2).split(/=(.*)/s, 2) as [string, string | undefined]
    const option = OPTIONS.find((o) => o.flag === name)
    const pluginFlag = option ? undefined : pluginFlags.find((f) => f.flag === name)
    if (pluginFlag || (!option && lenient)) {
      const raw = inline ?? (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith('--') ? argv[++i] : undefined)
      if (!pluginFlag) continue
      if (raw === undefined) throw new ConfigError(`--${name} needs a value`)
      fromPlugins[name] = parsePluginFlag(pluginFlag, raw)
      continue
    }
    if (!option) throw new ConfigError(`unknown option --${name} (see --help)`)
    let raw = inline
    if (raw === undefined) {
      const next = argv[i + 1]
      if (next !== undefined && !next.startsWith('--')) raw = argv[++i]
      else if (option.key === 'simulate') raw = ''
      else throw new ConfigError(`--${name} needs a value`)
    }
    try {
      config[option.key] = option.parse(raw!)
    } catch (e) {
      throw new ConfigError((e as Error).message)
    }
  }
  for (const o of OPTIONS) if (config[o.key] === undefined) config[o.key] = o.def()
  config.pluginFlags = fromPlugins
  Object.assign(config, overrides)
  if (!config.recordingsDir) config.recordingsDir = join(config.dataDir as string, 'recordings')
  return config as unknown as Config
}
