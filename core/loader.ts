// Resolves plugin names to plugins: a built-in name loads plugins/<name>/index.ts, anything that looks
// like a path (./vendor/acme.ts, /opt/x/plugin.js, @acme/periscope-plugin) is imported as a module whose
// default export is a plugin. The core names no driver: everything arrives through this door.
import { existsSync } from 'node:fs'
import { isAbsolute, join, resolve } from 'node:path'
import type { Config } from './config'
import type { PeriscopePlugin } from './plugin'

const PLUGINS_DIR = join(import.meta.dir, '..', 'plugins')

const builtinPath = (name: string) => join(PLUGINS_DIR, name, 'index.ts')
const isModulePath = (name: string) => name.startsWith('.') || isAbsolute(name) || name.startsWith('@') || /\.[cm]?[jt]s$/.test(name)

export function isPlugin(value: unknown): value is PeriscopePlugin {
  return typeof value === 'object' && value !== null && typeof (value as PeriscopePlugin).name === 'string' && typeof (value as PeriscopePlugin).setup === 'function'
}

export async function loadPlugin(name: string): Promise<PeriscopePlugin> {
  const specifier = isModulePath(name) ? (name.startsWith('@') ? name : resolve(name)) : builtinPath(name)
  if (!isModulePath(name) && !existsSync(specifier)) throw new Error(`unknown plugin '${name}': no ${specifier}`)
  const mod = await import(specifier)
  const plugin = mod.default ?? mod.plugin
  if (!isPlugin(plugin)) throw new Error(`plugin module '${name}' has no default export of the shape { name, setup() }`)
  return plugin
}

/** The plugins of a config: its list, with `mock` first when simulated cameras are on. */
export async function loadPlugins(config: Config): Promise<PeriscopePlugin[]> {
  const names = [...config.plugins]
  if (config.simulate && !names.includes('mock')) names.unshift('mock')
  const plugins: PeriscopePlugin[] = []
  for (const name of names) plugins.push(await loadPlugin(name))
  return plugins
}
