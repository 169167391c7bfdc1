// A tether of a test's own: the vehicle and the pilot's laptop as two network namespaces joined by a veth
// pair (10.79.<n>.1 and .2), as a tether joins them. Its end can be taken down and up (a cut), and its
// rate held (tc tbf on both ends, as a thin tether is). Names carry the test process's pid, so a suite
// beside it makes its own; remove() deletes both namespaces and throws, naming them, when it cannot.
// Needs root and iproute2 (tc for a rate).

export interface Tether {
  vehicleNs: string
  pilotNs: string
  vehicle: string
  pilot: string
  /** Runs `args` in the vehicle's or the pilot's namespace (`ip netns exec`), as a command prefix. */
  inVehicle: string[]
  inPilot: string[]
  /** The vehicle's end down (the cable cut) or up again. */
  set(state: 'up' | 'down'): Promise<void>
  /** Both ends held to `mbit` Mbit/s (tc tbf, a queue of `latencyMs`). */
  limit(mbit: number, latencyMs?: number): Promise<void>
  remove(): Promise<void>
}

export async function ip(...args: string[]): Promise<void> {
  const proc = Bun.spawn(['/usr/sbin/ip', ...args], { stdout: 'ignore', stderr: 'pipe' })
  const [err, code] = await Promise.all([new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`ip ${args.join(' ')}: ${err.trim()}`)
}

/** A tether for test `name` (a short word: the namespaces are periscope-<name>-vehicle-<pid>…), subnet 10.79.`subnet`.0/24. */
export async function makeTether(name: string, subnet: number): Promise<Tether> {
  if (process.getuid?.() !== 0) throw new Error(`the ${name} tether needs root (network namespaces)`)
  const tag = `${process.pid}`.slice(-5)
  const vehicleNs = `periscope-${name}-vehicle-${tag}`
  const pilotNs = `periscope-${name}-pilot-${tag}`
  // Interface names at most 15 characters, one pair per subnet.
  const vehicleIf = `tv${subnet}-${tag}`
  const pilotIf = `tp${subnet}-${tag}`
  const vehicle = `10.79.${subnet}.1`
  const pilot = `10.79.${subnet}.2`
  const made: string[] = []
  const remove = async () => {
    const problems: string[] = []
    for (const ns of made.splice(0)) await ip('netns', 'del', ns).catch((e) => problems.push((e as Error).message))
    if (problems.length) throw new Error(`the ${name} tether's namespaces were not all deleted: ${problems.join('; ')}`)
  }
  try {
    for (const ns of [vehicleNs, pilotNs]) {
      await ip('netns', 'add', ns)
      made.push(ns)
    }
    await ip('link', 'add', vehicleIf, 'netns', vehicleNs, 'type', 'veth', 'peer', 'name', pilotIf, 'netns', pilotNs)
    for (const [ns, dev, address] of [[vehicleNs, vehicleIf, vehicle], [pilotNs, pilotIf, pilot]] as const) {
      await ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up')
      await ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${address}/24`, 'dev', dev)
      await ip('netns', 'exec', ns, 'ip', 'link', 'set', dev, 'up')
    }
  } catch (e) {
    await remove().catch(() => {})
    throw e
  }
  return {
    vehicleNs,
    pilotNs,
    vehicle,
    pilot,
    inVehicle: ['/usr/sbin/ip', 'netns', 'exec', vehicleNs],
    inPilot: ['/usr/sbin/ip', 'netns', 'exec', pilotNs],
    set: (state) => ip('netns', 'exec', vehicleNs, 'ip', 'link', 'set', vehicleIf, state),
    async limit(mbit, latencyMs = 50) {
      for (const [ns, dev] of [[vehicleNs, vehicleIf], [pilotNs, pilotIf]] as const) {
        // A burst of one 1 ms of the rate at least (tbf needs more than one MTU).
        const burst = Math.max(16 * 1024, Math.round((mbit * 1e6) / 8 / 1000))
        await ip('netns', 'exec', ns, 'tc', 'qdisc', 'replace', 'dev', dev, 'root', 'tbf', 'rate', `${mbit}mbit`, 'burst', String(burst), 'latency', `${latencyMs}ms`)
      }
    },
    remove,
  }
}
