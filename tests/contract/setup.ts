// The contract tier's instance: simulated cameras with the foundation's plugins, no hardware.
import { loadPlugin } from '../../core/loader'
import type { Config } from '../../core/config'
import { startTestServer, type TestServer } from '../helpers'

export const CONTRACT_PLUGINS = ['mock', 'cameras', 'preferences', 'dwe']

export const EHD = 'usb-0000:00:14.0-1' // exploreHD, serial EHD0001
export const LEADER = 'usb-0000:00:14.0-2' // stellarHD leader
export const FOLLOWER = 'usb-0000:00:14.0-3' // stellarHD follower
export const WEBCAM = 'usb-0000:00:14.0-4' // Logitech, no serial

export const BRIGHTNESS = 0x00980900
export const AUTO_WB = 0x0098090c
export const WB_TEMPERATURE = 0x0098091a
export const POWER_LINE = 0x00980918
export const EXPOSURE_AUTO = 0x009a0901
export const EXPOSURE_ABSOLUTE = 0x009a0902
export const PRIVACY = 0x009a0910

export async function startContractServer(options: { config?: Partial<Config>; dataDir?: string; plugins?: string[] } = {}): Promise<TestServer> {
  const plugins = await Promise.all((options.plugins ?? CONTRACT_PLUGINS).map(loadPlugin))
  return startTestServer({ plugins, dataDir: options.dataDir, config: { simulate: 'default', ...options.config } })
}

export async function device(s: TestServer, bus_info: string): Promise<any> {
  const { body } = await s.call('GET', '/api/devices')
  return (body as any[]).find((d) => d.bus_info === bus_info)
}

export const controlOf = (dev: any, id: number) => dev.controls.find((c: any) => c.control_id === id)
