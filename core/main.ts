// The service's entry point: `npm start -- [flags]`.
import { createApp } from './app'
import { ConfigError, helpText, loadConfig } from './config'
import { loadPlugins } from './loader'
import { createLogger } from './log'

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  process.stdout.write(helpText())
  process.exit(0)
}

let config
try {
  config = loadConfig(process.argv.slice(2), process.env)
} catch (e) {
  if (!(e instanceof ConfigError)) throw e
  process.stderr.write(`periscope: ${e.message}\n`)
  process.exit(2)
}

const log = createLogger(config.logLevel)
log.info('starting', { config: { ...config, token: config.token ? '(set)' : null, mavlinkSigningKey: config.mavlinkSigningKey ? '(set)' : null } })
const periscope = await createApp(config, await loadPlugins(config), log)
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
