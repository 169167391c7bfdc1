// The wire shapes the console reads, from the service's own schemas (type-only: nothing of the server
// is bundled).
export type {
  Control,
  ControlFlags,
  ConnectionProfile,
  Device,
  DeviceRecording,
  Endpoint,
  EncodeType,
  FormatSize,
  Interval,
  IpConfiguration,
  Recording,
  Stream,
  StreamHealth,
  StreamStatus,
  StreamType,
  WiredDevice,
} from '../../../core/types'

/** GET /api/health */
export interface Health {
  status: 'ok' | 'degraded'
  version: string
  uptime_s: number
  settings: { state: string; detail?: string; [k: string]: unknown }
  plugins: Record<string, { state: 'ok' | 'degraded' | 'down'; detail?: string; [k: string]: unknown }>
  backends: Record<string, string>
}

export interface Preferences {
  default_stream: { host: string; port: number }
  suggest_host: boolean
  frequency_offset: number
}
