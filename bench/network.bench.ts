// The network plugin against a real NetworkManager (the integration tier's lab: private system bus,
// network namespace, udevd, NetworkManager 1.42). Needs root and scripts/setup/networkmanager.sh.
//  1. Soak: 10,000 network API calls (GET devices, GET profiles, POST update of an inactive profile);
//     the service's match rules on the bus must stay constant and its RSS grow < 5 MB.
//  2. Latency of GET /api/network/wired/devices vs running `nmcli -t device`, ratio printed.
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { labPrerequisites, startNmLab } from '../tests/integration/nm/lab'
import { unwrap } from '../drivers/networkmanager/bus'
import { freePort, rssOf, waitHttp } from './lib'

const ROOT = join(import.meta.dir, '..')
const CALLS = Number(process.env.BENCH_NETWORK_CALLS ?? 10_000)
const WORKERS = 4

const problem = labPrerequisites()
if (problem) {
  console.error(`network bench: ${problem}`)
  process.exit(1)
}

const percentile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length

const lab = await startNmLab()
const dir = mkdtempSync(join(tmpdir(), 'periscope-bench-nm-'))
let service: ReturnType<typeof Bun.spawn> | null = null
let failed = false
try {
  const add = (...args: string[]) => lab.nmcli('connection', 'add', 'type', 'ethernet', ...args)
  await add('ifname', 'eth0', 'con-name', 'static0', 'ipv4.method', 'manual', 'ipv4.addresses', '10.77.0.1/24', 'ipv6.method', 'disabled', 'connection.autoconnect', 'no')
  await add('con-name', 'spare', 'ipv4.method', 'auto', 'ipv6.method', 'disabled', 'connection.autoconnect', 'no')
  await lab.nmcli('connection', 'up', 'static0')

  const port = await freePort()
  service = Bun.spawn(
    ['bun', 'run', 'bench/network-service.ts', '--host', '127.0.0.1', '--port', String(port), '--data-dir', join(dir, 'data'), '--plugins', 'network', '--simulate', 'off', '--log-level', 'warn'],
    { cwd: ROOT, env: { ...process.env, DBUS_SYSTEM_BUS_ADDRESS: lab.busAddress }, stdout: 'ignore', stderr: 'inherit' },
  )
  const base = `http://127.0.0.1:${port}`
  await waitHttp(`${base}/api/network/wired/devices`)
  const profiles = (await (await fetch(`${base}/api/network/connection_profiles`)).json()) as { id: string; path: string }[]
  const spare = profiles.find((p) => p.id === 'spare')!.path

  // The service's connection on the bus: the unique name whose process is the service.
  const names = ((await lab.busCall('org.freedesktop.DBus', 'ListNames'))[0] as string[]).filter((n) => n.startsWith(':'))
  let serviceName = ''
  for (const n of names) {
    const [pid] = await lab.busCall('org.freedesktop.DBus', 'GetConnectionUnixProcessID', 's', [n]).catch(() => [0])
    if (pid === service.pid) serviceName = n
  }
  if (!serviceName) throw new Error('could not find the service on the bus')
  const matchRules = async () => {
    const all = (await lab.busCall('org.freedesktop.DBus.Debug.Stats', 'GetAllMatchRules'))[0] as Record<string, string[]>
    return (all[serviceName] ?? []).length
  }

  // RSS after a full collection in the service (bench/network-service.ts collects on SIGUSR2).
  const settledRss = async () => {
    for (let i = 0; i < 3; i++) {
      service!.kill('SIGUSR2')
      await Bun.sleep(300)
    }
    return rssOf(service!.pid).current
  }

  let n = 0
  const call = async (i: number) => {
    const kind = i % 10
    const r =
      kind < 9
        ? await fetch(`${base}${kind % 2 ? '/api/network/wired/devices' : '/api/network/connection_profiles'}`)
        : await fetch(`${base}/api/network/update_connection_profile?path=${encodeURIComponent(spare)}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ method: 'manual', ip_addresses: [{ address: `10.88.${(i >> 8) & 255}.${i & 255 || 1}`, prefix: 16 }] }),
          })
    if (r.status !== 200) throw new Error(`call ${i}: ${r.status} ${await r.text()}`)
    await r.arrayBuffer()
  }
  const run = async (count: number) => {
    const next = () => n++
    await Promise.all(Array.from({ length: WORKERS }, async () => {
      for (let i = next(); i < count; i = next()) await call(i)
    }))
    n = 0
  }

  await run(1000) // warm-up: JIT, allocator, keep-alive connections
  const rulesBefore = await matchRules()
  const rssBefore = await settledRss()
  const t0 = performance.now()
  for (let done = 0; done < CALLS; done += Math.min(2000, CALLS - done)) {
    await run(Math.min(2000, CALLS - done))
    if (process.env.BENCH_VERBOSE) console.log(`  after ${done + Math.min(2000, CALLS - done)} calls: RSS ${(await settledRss()).toFixed(1)} MB after GC`)
  }
  const soakSeconds = (performance.now() - t0) / 1000
  const rulesAfter = await matchRules()
  const rssAfter = await settledRss()
  const busStats = unwrap((await lab.busCall('org.freedesktop.DBus.Debug.Stats', 'GetStats'))[0]) as Record<string, number>

  console.log(`soak: ${CALLS} calls (${WORKERS} concurrent; 90% GET devices/profiles, 10% POST update_connection_profile) in ${soakSeconds.toFixed(1)} s = ${(CALLS / soakSeconds).toFixed(0)} calls/s`)
  console.log(`  service match rules on the bus: ${rulesBefore} before, ${rulesAfter} after (bus total ${busStats.MatchRules}, peak per connection ${busStats.PeakMatchRulesPerConnection})`)
  console.log(`  service RSS after GC: ${rssBefore.toFixed(1)} MB before, ${rssAfter.toFixed(1)} MB after (+${(rssAfter - rssBefore).toFixed(1)} MB, limit 5 MB)`)
  if (rulesAfter !== rulesBefore) (failed = true), console.error('  FAIL: match rules changed')
  if (rssAfter - rssBefore >= 5) (failed = true), console.error('  FAIL: RSS grew by 5 MB or more')

  // Latency, one request at a time.
  const api: number[] = []
  for (let i = 0; i < 300; i++) {
    const t = performance.now()
    await (await fetch(`${base}/api/network/wired/devices`)).arrayBuffer()
    api.push(performance.now() - t)
  }
  const cli: number[] = []
  for (let i = 0; i < 50; i++) {
    const t = performance.now()
    await lab.nmcli('-t', 'device')
    cli.push(performance.now() - t)
  }
  console.log(`latency: GET /api/network/wired/devices mean ${mean(api).toFixed(2)} ms, p50 ${percentile(api, 0.5).toFixed(2)} ms, p99 ${percentile(api, 0.99).toFixed(2)} ms`)
  console.log(`         nmcli -t device (a process)   mean ${mean(cli).toFixed(2)} ms, p50 ${percentile(cli, 0.5).toFixed(2)} ms, p99 ${percentile(cli, 0.99).toFixed(2)} ms`)
  console.log(`         ratio nmcli / API (mean): ${(mean(cli) / mean(api)).toFixed(1)}×`)
} catch (e) {
  failed = true
  console.error(`network bench failed: ${(e as Error).message}`)
} finally {
  if (service) {
    service.kill('SIGTERM')
    await Promise.race([service.exited, Bun.sleep(5000)])
    if (service.exitCode === null) service.kill('SIGKILL')
  }
  await lab.stop()
  rmSync(dir, { recursive: true, force: true })
}
process.exit(failed ? 1 : 0)
