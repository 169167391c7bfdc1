// The service's entry point: `npm start -- [flags]`.
import { createApp, type PeriscopeApp } from './app'
import { ConfigError, helpText, loadConfig } from './config'
import { loadPlugins, pluginFlagSpecs } from './loader'
import { createLogger } from './log'

const argv = process.argv.slice(2)
const fail = (message: string, code: number): never => {
  process.stderr.write(`periscope: ${message}\n`)
  process.exit(code)
}

// Two passes: the first learns which plugins to load (their flags are not known yet), the second reads
// the flags they declare too. --help lists those of the plugins it would load.
let config
let plugins
try {
  const first = loadConfig(argv.filter((a) => a !== '--help' && a !== '-h'), process.env, {}, [], true)
  plugins = await loadPlugins(first)
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(helpText(pluginFlagSpecs(plugins)))
    process.exit(0)
  }
  config = loadConfig(argv, process.env, {}, pluginFlagSpecs(plugins))
} catch (e) {
  fail((e as Error).message, e instanceof ConfigError ? 2 : 1)
}
config = config!

const log = createLogger(config.logLevel)

// The clean stop: SIGTERM (systemd, docker stop) or SIGINT (Ctrl-C) stops every plugin, which ends
// every child (a recording gets EOS, so its file is closed), then the process exits. A signal that comes
// while the service is still starting stops it as soon as it has started. Past STOP_DEADLINE_MS the
// process exits anyway, and the exit hook of media/children.ts kills whatever child is left.
const STOP_DEADLINE_MS = 4500
let periscope: PeriscopeApp | null = null
let stopRequested: Record<string, unknown> | null = null
let stopping = false
async function stop(): Promise<void> {
  if (stopping || !periscope || !stopRequested) return
  stopping = true
  await periscope.stop()
  process.exit(0)
}
function requestStop(why: Record<string, unknown>): void {
  if (stopRequested) return
  stopRequested = why
  log.info('stopping', why)
  setTimeout(() => {
    log.error('stopping took too long: exiting now, any child left is killed', { deadline_ms: STOP_DEADLINE_MS })
    process.exit(1)
  }, STOP_DEADLINE_MS).unref()
  void stop()
}
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => requestStop({ signal }))
// Under `npm start`, npm is the parent (the start script execs Bun, and npm forwards SIGTERM and SIGINT
// to it). Should npm go without passing a signal on (SIGKILL, SIGHUP, a crash), the service would be
// left running, orphaned, holding its port and cameras: when the parent changes, it stops. Only under
// npm: started by hand with nohup or from a service manager, a parent leaving means nothing.
if (process.env.npm_lifecycle_event === 'start') {
  const parent = process.ppid
  setInterval(() => {
    if (process.ppid !== parent) requestStop({ reason: `npm (pid ${parent}), which started the service, is gone` })
  }, 500).unref()
}

log.info('starting', { config: { ...config, token: config.token ? '(set)' : null, mavlinkSigningKey: config.mavlinkSigningKey ? '(set)' : null } })
try {
  periscope = await createApp(config, plugins!, log)
} catch (e) {
  // A plugin refused at setup (a clashing vendor, a malformed definition): its sentence, not a stack.
  fail((e as Error).message, 1)
}
const { url } = await periscope!.listen()
log.info('listening', { url, docs: `${url}/docs` })
void stop() // a signal that came while starting
