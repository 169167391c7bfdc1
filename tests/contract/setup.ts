// The contract tier's instance: simulated cameras with the foundation's plugins, no hardware.
import { loadPlugin } from '../../core/loader'
import { CID } from '../../drivers/mock/cameras'
import type { Config, LogLevel } from '../../core/config'
import { startTestServer, type TestServer } from '../helpers'

export const CONTRACT_PLUGINS = ['mock', 'cameras', 'preferences', 'dwe']

export const EHD = 'usb-0000:00:14.0-1' // exploreHD, serial EHD0001
export const LEADER = 'usb-0000:00:14.0-2' // stellarHD leader
export const FOLLOWER = 'usb-0000:00:14.0-3' // stellarHD follower
export const WEBCAM = 'usb-0000:00:14.0-4' // Logitech, no serial

export const BRIGHTNESS = CID.BRIGHTNESS
export const AUTO_WB = CID.AUTO_WHITE_BALANCE
export const WB_TEMPERATURE = CID.WHITE_BALANCE_TEMPERATURE
export const POWER_LINE = CID.POWER_LINE_FREQUENCY
export const EXPOSURE_AUTO = CID.EXPOSURE_AUTO
export const EXPOSURE_ABSOLUTE = CID.EXPOSURE_ABSOLUTE
export const PRIVACY = CID.PRIVACY

export async function startContractServer(options: { config?: Partial<Config>; dataDir?: string; plugins?: string[]; logLevel?: LogLevel } = {}): Promise<TestServer> {
  const plugins = await Promise.all((options.plugins ?? CONTRACT_PLUGINS).map(loadPlugin))
  return startTestServer({ plugins, dataDir: options.dataDir, logLevel: options.logLevel, config: { simulate: 'default', ...options.config } })
}

export async function device(s: TestServer, bus_info: string): Promise<any> {
  const { body } = await s.call('GET', '/api/devices')
  return (body as any[]).find((d) => d.bus_info === bus_info)
}

export const controlOf = (dev: any, id: number) => dev.controls.find((c: any) => c.control_id === id)
