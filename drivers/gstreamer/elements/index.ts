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
let probing: Promise<boolean> | undefined
const PROBE = ['gst-inspect-1.0', '--exists', 'periscopetimecode']

/**
 * Asks GStreamer, once and in the background, whether periscopetimecode loads
 * (gstreamer1.0-python3-plugin-loader, scripts/setup/gstreamer.sh): the simulated cameras' driver asks at
 * its start, so the first stream finds the answer ready (the first ask builds our registry: seconds).
 */
export function probeTimecode(): Promise<boolean> {
  probing ??= (async () => {
    try {
      const probe = Bun.spawn(PROBE, { env: withElements(), stdout: 'ignore', stderr: 'ignore' })
      timecode ??= (await probe.exited) === 0
    } catch {
      timecode ??= false // no GStreamer at all: the stream itself will say so
    }
    return timecode
  })()
  return probing
}

/** Whether simulated cameras paint their time code: the probe's answer, else asked now (blocking). */
export function timecodeAvailable(): boolean {
  if (timecode !== undefined) return timecode
  try {
    timecode = Bun.spawnSync(PROBE, { env: withElements(), stdout: 'ignore', stderr: 'ignore' }).exitCode === 0
  } catch {
    timecode = false
  }
  return timecode
}
