// Resolves plugin names to plugins: a built-in name loads plugins/<name>/index.ts, anything that looks
// like a path (./vendor/acme.ts, /opt/x/plugin.js, @acme/periscope-plugin) is imported as a module whose
// default export is a plugin. The core names no driver: everything arrives through this door.
//
// A plugin outside the checkout has no node_modules of its own: its imports of 'periscope/plugin' (the
// SDK, core/sdk.ts) and 'elysia' are pointed at the service's own files as they load, so it shares the
// service's Elysia and needs no install (Bun's auto-install is off: bunfig.toml, npm start's --no-install).
import { plugin as bunPlugin } from 'bun'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, isAbsolute, join, relative, resolve } from 'node:path'
import type { Config, PluginFlagSpec } from './config'
import type { PeriscopePlugin } from './plugin'

const ROOT = join(import.meta.dir, '..')
const PLUGINS_DIR = join(ROOT, 'plugins')
/** The import path of the plugin SDK, the one a plugin outside the checkout uses. */
export const SDK_IMPORT = 'periscope/plugin'
/** What the SDK path and 'elysia' mean to a plugin: the service's own copies. */
const SHARED: Record<string, string> = { [SDK_IMPORT]: join(import.meta.dir, 'sdk.ts'), elysia: Bun.resolveSync('elysia', import.meta.dir) }

const builtinPath = (name: string) => join(PLUGINS_DIR, name, 'index.ts')
const isModulePath = (name: string) => name.startsWith('.') || isAbsolute(name) || name.startsWith('@') || /\.[cm]?[jt]s$/.test(name)

export function isPlugin(value: unknown): value is PeriscopePlugin {
  return typeof value === 'object' && value !== null && typeof (value as PeriscopePlugin).name === 'string' && typeof (value as PeriscopePlugin).setup === 'function'
}

const LOADERS = { ts: 'ts', mts: 'ts', cts: 'ts', tsx: 'tsx', js: 'js', mjs: 'js', cjs: 'js', jsx: 'jsx' } as const
// `from 'x'`, `import 'x'`, `import('x')` for the two shared specifiers.
const SHARED_IMPORT = /(\bfrom\s*|\bimport\s*\(?\s*)(['"])(periscope\/plugin|elysia)\2/g
const served = new Set<string>()

/**
 * Maps the shared specifiers to the service's files for every module under `dir` (the plugin and its
 * own relative imports). Bun 1.4's runtime onResolve does not run for bare specifiers (oven-sh/bun#40579);
 * onLoad does, so the specifiers are rewritten in the source as it loads.
 */
function serveSharedImports(dir: string): void {
  if (served.has(dir) || (dir + '/').startsWith(ROOT + '/')) return // inside the checkout: tsconfig paths do it
  served.add(dir)
  const escape = (path: string) => path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')
  // Not the service's own files (a plugin in the checkout's parent directory), nor installed packages.
  const notOurs = (ROOT + '/').startsWith(dir + '/') ? `(?!${escape(relative(dir, ROOT))}/)` : ''
  const filter = new RegExp(`^${dir === '/' ? '' : escape(dir)}/${notOurs}(?!.*/node_modules/).*\\.[cm]?[jt]sx?$`)
  bunPlugin({
    name: `periscope-sdk:${dir}`,
    setup(build) {
      build.onLoad({ filter }, ({ path }) => {
        const ext = path.slice(path.lastIndexOf('.') + 1) as keyof typeof LOADERS
        const contents = readFileSync(path, 'utf8').replace(SHARED_IMPORT, (_m, head, quote, spec) => `${head}${quote}${SHARED[spec]}${quote}`)
        return { contents, loader: LOADERS[ext] ?? 'ts' }
      })
    },
  })
}

/** Why a plugin module failed to import, in a sentence that names it (and the fix for a missing package). */
function importFailure(name: string, e: unknown): Error {
  const message = (e as Error)?.message ?? String(e)
  const missing = /Cannot find (?:package|module) '([^']+)'/.exec(message)?.[1]
  if (missing)
    return new Error(
      `plugin '${name}' imports '${missing}', which the service cannot find and does not install: a plugin imports '${SDK_IMPORT}' (Elysia, t and the core's types), node: built-ins and its own relative files; bundle anything else into it (${message})`,
    )
  return new Error(`plugin '${name}' failed to load: ${message}`)
}

export async function loadPlugin(name: string): Promise<PeriscopePlugin> {
  const specifier = isModulePath(name) ? (name.startsWith('@') ? name : resolve(name)) : builtinPath(name)
  if (!isModulePath(name) && !existsSync(specifier)) throw new Error(`unknown plugin '${name}': no ${specifier}`)
  if (isModulePath(name) && !name.startsWith('@')) {
    if (!existsSync(specifier)) throw new Error(`plugin '${name}': no file ${specifier}`)
    serveSharedImports(dirname(specifier))
  }
  const mod = await import(specifier).catch((e) => {
    throw importFailure(name, e)
  })
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

/** The flags the plugins declare, for the config and --help. */
export const pluginFlagSpecs = (plugins: PeriscopePlugin[]): PluginFlagSpec[] =>
  plugins.flatMap((p) => Object.entries(p.flags ?? {}).map(([flag, f]) => ({ flag, plugin: p.name, ...f })))
