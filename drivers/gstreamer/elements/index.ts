// Periscope's own GStreamer elements (Python, loaded by GStreamer's Python plugin loader from
// GST_PLUGIN_PATH/python): periscopetimecode, the time code simulated cameras paint (docs/latency.md).
// Children that may use them are spawned with `withElements`; whether they load here is probed once.
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'

/** The GST_PLUGIN_PATH entry that holds python/periscope_*.py. */
export const ELEMENTS_DIR = dirname(new URL(import.meta.url).pathname)

/**
 * `env` (the service's own by default) with our elements on GStreamer's plugin path, and a registry of its
 * own: GStreamer rewrites its one registry file whenever the plugin path differs from the last process's,
 * so children with our path and other GStreamer processes (a player, a second checkout) sharing it would
 * each rescan every plugin, seconds on a loaded machine.
 */
export function withElements(env: Record<string, string | undefined> = process.env): Record<string, string | undefined> {
  const path = [ELEMENTS_DIR, env.GST_PLUGIN_PATH].filter(Boolean).join(':')
  const cache = env.XDG_CACHE_HOME || join(env.HOME || tmpdir(), '.cache')
  const registry = join(cache, 'gstreamer-1.0', `periscope-registry-${process.arch}-${Bun.hash(path).toString(16)}.bin`)
  return { ...env, GST_PLUGIN_PATH: path, GST_REGISTRY: env.GST_REGISTRY ?? registry }
}

let timecode: boolean | undefined

/**
 * Whether periscopetimecode loads (gstreamer1.0-python3-plugin-loader, scripts/setup/gstreamer.sh). Asked
 * once, by the first simulated camera that starts: without it simulated cameras stream with no time code.
 */
export function timecodeAvailable(): boolean {
  if (timecode !== undefined) return timecode
  try {
    const probe = Bun.spawnSync(['gst-inspect-1.0', '--exists', 'periscopetimecode'], { env: withElements(), stdout: 'ignore', stderr: 'ignore' })
    timecode = probe.exitCode === 0
  } catch {
    timecode = false // no GStreamer at all: the stream itself will say so
  }
  return timecode
}
