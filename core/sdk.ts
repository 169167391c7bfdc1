// The plugin SDK: the one import path of a Periscope plugin, `periscope/plugin` (docs/plugins.md). A
// plugin anywhere on disk imports from here and nothing else of the service's: the loader points this
// path and 'elysia' at the service's own files (core/loader.ts), so a plugin needs no node_modules.
export { Elysia, t } from 'elysia'
export { definePlugin } from './plugin'
export type { AppContext, Lifecycle, PeriscopePlugin, PluginContext, PluginFlag, PluginHealth, Registry } from './plugin'
export { defineVendor, formatSizes, usbId } from './vendors'
export type {
  Camera,
  CameraBackend,
  Control,
  ControlFlags,
  ControlValue,
  Device,
  FormatSize,
  FrameSyncBoard,
  GroupRole,
  RawDevice,
  SimulatedCamera,
  VendorControl,
  VendorDefinition,
  VendorModel,
  XuQuery,
} from './types'
export { DeviceError } from './types'
export type { ExtensionUnit, XuAddressing, XuControl, XuEncoding } from './xu'
export { docs } from './openapi'
export { conflict, HttpError, notFound, unavailable } from './errors'
