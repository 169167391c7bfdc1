// A real NetworkManager for the integration tier, fenced off from the host: a private system bus
// (dbus-daemon on a unix socket in a temp dir), a network namespace with veth pairs, systemd-udevd and
// NetworkManager inside that namespace. Both daemons see a private /run and /var/lib/NetworkManager
// (bind mounts inside `ip netns exec`'s own mount namespace), so nothing of the host's network, udev
// database or NetworkManager state is touched. Everything started is stopped by pid in stop().
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { BusLink } from '../../../drivers/networkmanager/bus'

const BINARIES: Record<string, string> = {
  NetworkManager: '/usr/sbin/NetworkManager',
  nmcli: '/usr/bin/nmcli',
  'systemd-udevd': '/lib/systemd/systemd-udevd',
  udevadm: '/usr/bin/udevadm',
  'dbus-daemon': '/usr/bin/dbus-daemon',
  ip: '/usr/sbin/ip',
}

/** Why the lab cannot run here, or null. Tests fail with this message (never skip). */
export function labPrerequisites(): string | null {
  const missing = Object.entries(BINARIES).filter(([, path]) => !existsSync(path)).map(([name]) => name)
  if (missing.length) return `missing ${missing.join(', ')}: run scripts/setup/networkmanager.sh (as root) first`
  if (process.getuid?.() !== 0) return 'the NetworkManager lab needs root (network namespaces, bind mounts)'
  return null
}

export interface NmLab {
  /** Network namespace holding the veth devices, udevd and NetworkManager. */
  ns: string
  /** DBUS_SYSTEM_BUS_ADDRESS of the private bus. */
  busAddress: string
  dir: string
  /** Ethernet interfaces inside the namespace, as NetworkManager sees them. */
  interfaces: string[]
  /** Runs nmcli against the lab's NetworkManager; resolves with stdout, throws with stderr. */
  nmcli(...args: string[]): Promise<string>
  /** IPv4 addresses ("10.0.0.1/24") on an interface inside the namespace. */
  ipv4(iface: string): Promise<string[]>
  /** A call to the lab bus daemon itself (org.freedesktop.DBus or its Debug.Stats interface); the reply body. */
  busCall(iface: string, member: string, signature?: string, body?: unknown[]): Promise<any[]>
  /** Stops NetworkManager (SIGTERM, then SIGKILL) and waits until its bus name is gone. */
  stopNetworkManager(): Promise<void>
  /** Starts NetworkManager again and waits until it answers. */
  startNetworkManager(): Promise<void>
  /** The pids this lab has running now (for assertions and for cleanup). */
  pids(): number[]
  stop(): Promise<void>
}

const BUS_CONFIG = (socket: string) => `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=${socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

// dns=none and rc-manager=unmanaged: never write /etc/resolv.conf; no-auto-default: no surprise
// "Wired connection 1" profiles, so the test decides every profile that exists. auth-polkit=root-only:
// root is always allowed and anyone else refused, as on a vehicle with no polkit rule for the service.
const NM_CONFIG = (connections: string) => `[main]
plugins=keyfile
auth-polkit=root-only
dns=none
rc-manager=unmanaged
no-auto-default=*
hostname-mode=none
dhcp=internal

[keyfile]
path=${connections}
unmanaged-devices=none

[connectivity]
enabled=false
`

async function run(cmd: string[], env?: Record<string, string>): Promise<string> {
  const proc = Bun.spawn(cmd, { stdout: 'pipe', stderr: 'pipe', env: env ? { ...process.env, ...env } : process.env })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`${cmd.join(' ')} exited ${code}: ${err.trim() || out.trim()}`)
  return out
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      if (await check()) return
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await sleep(100)
  }
}

async function stopPid(proc: Subprocess | null, graceMs = 5000): Promise<void> {
  if (!proc || proc.exitCode !== null || proc.signalCode !== null) return
  try {
    process.kill(proc.pid, 'SIGTERM')
  } catch {
    return
  }
  const exited = await Promise.race([proc.exited.then(() => true), sleep(graceMs).then(() => false)])
  if (!exited) {
    try {
      process.kill(proc.pid, 'SIGKILL')
    } catch {}
    await proc.exited
  }
}

/**
 * Starts the lab with `pairs` veth pairs (interfaces eth0..eth{2n-1}: NetworkManager's udev rules leave
 * veth devices unmanaged unless they are called eth*). Throws with a clear message when a prerequisite
 * is missing; cleans up after itself when start fails half-way.
 */
export async function startNmLab(options: { pairs?: number } = {}): Promise<NmLab> {
  const problem = labPrerequisites()
  if (problem) throw new Error(problem)
  const pairs = options.pairs ?? 1
  const dir = mkdtempSync(join(tmpdir(), 'periscope-nm-'))
  chmodSync(dir, 0o711) // an unprivileged test process reaches the bus socket inside
  const ns = `periscope-nm-${process.pid}-${Math.random().toString(36).slice(2, 7)}`
  const socket = join(dir, 'system_bus_socket')
  const busAddress = `unix:path=${socket}`
  const paths = { run: join(dir, 'run'), varlib: join(dir, 'var-lib-nm'), connections: join(dir, 'system-connections'), confd: join(dir, 'conf.d') }
  for (const p of Object.values(paths)) mkdirSync(p, { recursive: true })
  writeFileSync(join(dir, 'bus.conf'), BUS_CONFIG(socket))
  writeFileSync(join(dir, 'NetworkManager.conf'), NM_CONFIG(paths.connections))

  let bus: Subprocess | null = null
  let udevd: Subprocess | null = null
  let nm: Subprocess | null = null
  let nsCreated = false

  // Inside the namespace, with the lab's own /run (udev database, NM runtime state) and /var/lib/NetworkManager.
  const inLab = (cmd: string[]) => [
    BINARIES.ip!, 'netns', 'exec', ns, 'sh', '-c',
    'mount --bind "$LAB_RUN" /run && mount --bind "$LAB_VARLIB" /var/lib/NetworkManager && exec "$@"', 'sh', ...cmd,
  ]
  const labEnv = { LAB_RUN: paths.run, LAB_VARLIB: paths.varlib, DBUS_SYSTEM_BUS_ADDRESS: busAddress }
  const nmcli = (...args: string[]) => run([BINARIES.nmcli!, ...args], { DBUS_SYSTEM_BUS_ADDRESS: busAddress })
  const nmAnswers = async () => (await nmcli('-t', '-f', 'RUNNING', 'general')).trim() === 'running'

  const startNetworkManager = async () => {
    if (nm && nm.exitCode === null && nm.signalCode === null) return
    nm = Bun.spawn(
      inLab([
        BINARIES.NetworkManager!, '--no-daemon',
        `--config=${join(dir, 'NetworkManager.conf')}`, `--config-dir=${paths.confd}`, `--system-config-dir=${paths.confd}`,
        `--intern-config=${join(dir, 'NetworkManager-intern.conf')}`, `--state-file=${join(dir, 'NetworkManager.state')}`,
        `--pid-file=${join(dir, 'NetworkManager.pid')}`,
      ]),
      { env: { ...process.env, ...labEnv }, stdout: Bun.file(join(dir, 'NetworkManager.log')), stderr: Bun.file(join(dir, 'NetworkManager.err')) },
    )
    await waitFor('NetworkManager to answer on the private bus', nmAnswers, 20_000)
  }

  const stopNetworkManager = async () => {
    await stopPid(nm)
    nm = null
    await waitFor('NetworkManager to leave the bus', async () => !(await nmAnswers().catch(() => false)), 10_000)
  }

  let stopping = false
  let link: BusLink | null = null
  const busCall = async (iface: string, member: string, signature = '', body: unknown[] = []) => {
    link ??= new BusLink({ address: busAddress })
    return link.call('org.freedesktop.DBus', '/org/freedesktop/DBus', iface, member, signature, body)
  }

  const stop = async () => {
    stopping = true
    link?.close()
    await stopPid(nm)
    await stopPid(udevd)
    await stopPid(bus)
    if (nsCreated) await run([BINARIES.ip!, 'netns', 'del', ns]).catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  }

  try {
    bus = Bun.spawn(['/usr/bin/dbus-daemon', `--config-file=${join(dir, 'bus.conf')}`, '--nofork', '--nopidfile'], { stdout: 'ignore', stderr: 'ignore' })
    const b = bus
    void b.exited.then(() => { if (!stopping) console.error(`nm lab: dbus-daemon ${b.pid} exited early: code ${b.exitCode} signal ${b.signalCode}`) })
    await waitFor('the private D-Bus socket', () => existsSync(socket), 5000)

    await run([BINARIES.ip!, 'netns', 'add', ns]).catch((e) => {
      throw new Error(`cannot create a network namespace (a container needs CAP_SYS_ADMIN and CAP_NET_ADMIN): ${(e as Error).message}`)
    })
    nsCreated = true
    await run([BINARIES.ip!, '-n', ns, 'link', 'set', 'lo', 'up'])
    const interfaces: string[] = []
    for (let i = 0; i < pairs; i++) {
      const [a, b] = [`eth${2 * i}`, `eth${2 * i + 1}`]
      await run([BINARIES.ip!, '-n', ns, 'link', 'add', a, 'type', 'veth', 'peer', 'name', b])
      interfaces.push(a, b)
    }

    // Without udev, NetworkManager never manages a device (it waits for udev's "initialized").
    udevd = Bun.spawn(inLab([BINARIES['systemd-udevd']!]), { env: { ...process.env, ...labEnv }, stdout: 'ignore', stderr: 'ignore' })
    await waitFor('systemd-udevd', () => existsSync(join(paths.run, 'udev', 'control')), 5000)
    await run(inLab([BINARIES.udevadm!, 'trigger', '--subsystem-match=net', '--action=add']), labEnv)
    await run(inLab([BINARIES.udevadm!, 'settle', '--timeout=10']), labEnv)

    await startNetworkManager()
    await waitFor(
      `NetworkManager to manage ${interfaces.join(', ')}`,
      async () => {
        const lines = (await nmcli('-t', '-f', 'DEVICE,STATE', 'device')).trim().split('\n')
        return interfaces.every((i) => lines.some((l) => l.startsWith(`${i}:`) && !l.endsWith(':unmanaged')))
      },
      15_000,
    )

    return {
      ns,
      busAddress,
      dir,
      interfaces,
      nmcli,
      async ipv4(iface) {
        const out = JSON.parse(await run([BINARIES.ip!, '-n', ns, '-j', '-4', 'addr', 'show', 'dev', iface])) as {
          addr_info: { local: string; prefixlen: number }[]
        }[]
        return out.flatMap((l) => l.addr_info.map((a) => `${a.local}/${a.prefixlen}`))
      },
      busCall,
      stopNetworkManager,
      startNetworkManager,
      pids: () => [bus, udevd, nm].filter((p): p is Subprocess => !!p && p.exitCode === null && p.signalCode === null).map((p) => p.pid),
      stop,
    }
  } catch (e) {
    await stop()
    throw e
  }
}
