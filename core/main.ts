// The service's entry point: `npm start -- [flags]`.
import { createApp } from './app'
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
log.info('starting', { config: { ...config, token: config.token ? '(set)' : null, mavlinkSigningKey: config.mavlinkSigningKey ? '(set)' : null } })
let periscope
try {
  periscope = await createApp(config, plugins!, log)
} catch (e) {
  // A plugin refused at setup (a clashing vendor, a malformed definition): its sentence, not a stack.
  fail((e as Error).message, 1)
}
periscope = periscope!
const { url } = await periscope.listen()
log.info('listening', { url, docs: `${url}/docs` })

let stopping = false
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, async () => {
    if (stopping) return
    stopping = true
    log.info('stopping', { signal })
    await periscope.stop()
    process.exit(0)
  })
}
