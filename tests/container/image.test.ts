// The container image, built and run here: scripts/container/build.sh builds it with podman from a base
// that mmdebstrap makes of Debian's packages (or scripts/test.ts did, in the background, before this file
// ran: PERISCOPE_CONTAINER_BUILD_LOG), then the image runs as BlueOS would create it, from its
// own `permissions` label (host network, /dev, /sys, the D-Bus socket, the data directory, the device
// rules), the host paths swapped for the test's own: the D-Bus socket is the NetworkManager lab's bus, the
// data directory a temporary one. Loopback only: the service listens on 127.0.0.1 on free ports.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { segmentFileName } from '../../core/naming'
import { VERSION } from '../../core/version'
import { jpegSize } from '../../plugins/jpeg/jpeg'
import { readDockerfile } from '../../scripts/container/dockerfile'
import { freeTcpPort, tempDir, until } from '../helpers'
import { freePort, Receiver, requireGStreamer, waitFor } from '../integration/gstreamer.helpers'
import { startNmLab, type NmLab } from '../integration/nm/lab'
import { h264Device } from '../integration/service.helpers'

const ROOT = join(import.meta.dir, '..', '..')
const CONTAINERS_CONF = join(ROOT, 'scripts', 'container', 'containers.conf')
const ARCH = Bun.spawnSync(['dpkg', '--print-architecture']).stdout.toString().trim()
const IMAGE = `localhost/periscope:${VERSION}-${ARCH}`
const NAME = `periscope-test-${process.pid}`

/** podman with the project's containers.conf; resolves with stdout, throws with stderr. */
async function podman(...args: string[]): Promise<string> {
  const proc = Bun.spawn(['podman', ...args], { env: { ...process.env, CONTAINERS_CONF }, stdout: 'pipe', stderr: 'pipe' })
  const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()])
  if ((await proc.exited) !== 0) throw new Error(`podman ${args.join(' ')} failed: ${err.trim()}`)
  return out
}

/**
 * The build's closing line and its figures: the build scripts/test.ts ran (its log named by
 * PERISCOPE_CONTAINER_BUILD_LOG, passed only once it succeeded), or one run here, its output shown as it comes.
 */
async function build(): Promise<{ seconds: number; megabytes: number; line: string; id: string }> {
  const logPath = process.env.PERISCOPE_CONTAINER_BUILD_LOG
  let out: string
  if (logPath) out = readFileSync(logPath, 'utf8')
  else {
    const proc = Bun.spawn(['bash', join(ROOT, 'scripts', 'container', 'build.sh'), ARCH], { cwd: ROOT, stdout: 'pipe', stderr: 'inherit' })
    out = await new Response(proc.stdout).text()
    process.stderr.write(out)
    if ((await proc.exited) !== 0) throw new Error(`scripts/container/build.sh ${ARCH} exited ${proc.exitCode}`)
  }
  const line = out.trim().split('\n').at(-1)!
  const figures = line.match(/^container build: (\S+) built;.* total ([\d.]+) s; size (\d+) MB/)
  if (!figures) throw new Error(`the build's closing line${logPath ? ` in ${logPath}` : ''} gives no figures: ${line}`)
  if (figures[1] !== IMAGE) throw new Error(`the build made ${figures[1]}, not ${IMAGE}`)
  // Its own build by id: a suite beside this one (another clone) may have tagged its own IMAGE since.
  const id = line.match(/; id ([0-9a-f]{64})$/)?.[1]
  if (!id) throw new Error(`the build's closing line gives no image id: ${line}`)
  return { seconds: Number(figures[2]), megabytes: Number(figures[3]), line, id }
}

let built: Awaited<ReturnType<typeof build>>
let inspected: any
let lab: NmLab | null = null
let dataDir = ''
let receiver: Receiver | null = null
let url = ''
let rtspPort = 0

const call = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(url + path, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined })
  const text = await res.text()
  return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers }
}

beforeAll(async () => {
  requireGStreamer() // the receiver on the host side
  built = await build()
  console.log(`container: ${built.line}`)
  inspected = JSON.parse(await podman('image', 'inspect', built.id))[0]
}, 20 * 60_000)

afterAll(async () => {
  await podman('rm', '--force', '--time', '10', NAME).catch(() => {})
  await receiver?.stop()
  await lab?.stop()
  if (dataDir) rmSync(dataDir, { recursive: true, force: true })
}, 60_000)

/** scripts/container/slim.sh keeps only what the service loads (905 MB before it). */
const MAX_IMAGE_MB = 400

describe('the image', () => {
  test(`is built for this machine (${ARCH}), in at most ${MAX_IMAGE_MB} MB (an SD card and a slow tether pay for it)`, () => {
    expect(inspected.Architecture).toBe(ARCH)
    console.log(`container: image ${IMAGE}: ${(inspected.Size / 1e6).toFixed(0)} MB, built in ${built.seconds} s`)
    expect(inspected.Size).toBeGreaterThan(0)
    expect(inspected.Size / 1e6).toBeLessThanOrEqual(MAX_IMAGE_MB)
  })

  test("carries the Dockerfile's labels, as the builder read them, and each JSON one parses", () => {
    const { labels } = readDockerfile()
    for (const [name, value] of Object.entries(labels)) expect({ name, value: inspected.Labels[name] }).toEqual({ name, value })
    for (const name of ['permissions', 'authors', 'company', 'links', 'tags']) expect(() => JSON.parse(inspected.Labels[name])).not.toThrow()
    expect(inspected.Labels.version).toBe(VERSION)
  })
})

describe('run as BlueOS creates it', () => {
  beforeAll(async () => {
    lab = await startNmLab()
    dataDir = tempDir('periscope-container-')
    const { HostConfig } = JSON.parse(inspected.Labels.permissions)
    // The label's host paths, with the test's own where the machine's would be wrong to use.
    const hostPath: Record<string, string> = { '/run/dbus': lab.dir, '/data': dataDir }
    const binds = (HostConfig.Binds as string[]).flatMap((bind) => {
      const [source, target] = bind.split(':') as [string, string]
      return ['--volume', `${hostPath[target] ?? source}:${target}`]
    })
    const rules = (HostConfig.DeviceCgroupRules as string[]).flatMap((rule) => ['--device-cgroup-rule', rule])
    const port = freeTcpPort()
    rtspPort = freeTcpPort()
    url = `http://127.0.0.1:${port}`
    // The image's own command and data directory; only the address, the ports and the simulated cameras differ.
    // Cockpit's own ports (6021, 6020 on the host's network) are off: a suite beside this one wants them too.
    const env = { PERISCOPE_HOST: '127.0.0.1', PERISCOPE_PORT: String(port), PERISCOPE_RTSP_PORT: String(rtspPort), PERISCOPE_SIMULATE: 'default', PERISCOPE_COCKPIT_PORT: 'off', PERISCOPE_COCKPIT_STREAMS_PORT: 'off' }
    await podman('run', '--detach', '--name', NAME, `--network=${HostConfig.NetworkMode}`, ...binds, ...rules, ...Object.entries(env).flatMap(([k, v]) => ['--env', `${k}=${v}`]), built.id)
    const running = async () => (await podman('inspect', '--format', '{{.State.Running}}', NAME)).trim() === 'true'
    await until('the service in the container to answer', () => call('GET', '/api/health').catch(async () => ({ status: (await running()) ? 0 : -1 })), (r) => r.status === 200 || r.status === -1, 90_000)
    if (!(await running())) throw new Error(`the container stopped: ${await podman('logs', NAME).catch((e) => String(e))}`)
  }, 120_000)

  test('/api/health and /register_service answer; GStreamer, its RTSP server and BlueOS are ok', async () => {
    const health = await until('GStreamer and RTSP ready', () => call('GET', '/api/health'), (r) => r.body.plugins.rtsp.state === 'ok', 30_000)
    expect(health.body.version).toBe(VERSION)
    for (const plugin of ['gstreamer', 'rtsp', 'blueos', 'cameras', 'recordings']) expect({ plugin, state: health.body.plugins[plugin].state }).toEqual({ plugin, state: 'ok' })
    expect(health.body.plugins.rtsp.port).toBe(rtspPort)
    expect(health.body.plugins.recordings.directory).toBe('/data/recordings')
    const service = await call('GET', '/register_service')
    expect(service.status).toBe(200)
    expect(service.body).toMatchObject({ name: 'Periscope', version: VERSION, api: '/docs' })
  }, 40_000)

  test("reaches NetworkManager through the bound D-Bus socket (the lab's bus)", async () => {
    const health = await until('the network plugin on the bus', () => call('GET', '/api/health'), (r) => r.body.plugins.network.state === 'ok', 20_000)
    expect(health.body.plugins.network.bus).toBe('unix:path=/var/run/dbus/system_bus_socket')
    const wired = await call('GET', '/api/network/wired/devices')
    expect(wired.status).toBe(200)
    expect(wired.body.map((d: { interface: string }) => d.interface).sort()).toEqual([...lab!.interfaces].sort())
  }, 30_000)

  test('streams RTP to a receiver on the host and records onto the data volume', async () => {
    const dev = await h264Device({ call })
    const port = freePort()
    receiver = new Receiver(port, 'H264')
    await receiver.ready()
    const t0 = Date.now()
    const configured = await call('POST', '/api/devices/configure_stream', {
      bus_info: dev.bus_info,
      stream_type: 'UDP',
      stream_format: { width: dev.width, height: dev.height, interval: { numerator: 1, denominator: dev.fps } },
      encode_type: 'H264',
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port }],
    })
    expect(configured.status).toBe(200)
    await waitFor('decoded frames from the container', () => receiver!.firstFrameAfter(t0), 30_000)
    await waitFor('a size', () => receiver!.width > 0)
    expect([receiver.width, receiver.height]).toEqual([dev.width, dev.height])

    const started = await call('POST', '/api/devices/start_recording', { bus_info: dev.bus_info })
    expect(started.status).toBe(200)
    // The recording's first segment (docs/recordings.md): <stem>_seg001.mkv.
    const segment = segmentFileName(started.body.file.replace(/\.mkv$/, ''), 1, 'mkv')
    const onHost = join(dataDir, 'recordings', segment)
    await waitFor('the recording growing on the host side of the volume', () => existsSync(onHost) && statSync(onHost).size > 50_000, 20_000)
    expect((await call('POST', '/api/devices/stop_recording', { bus_info: dev.bus_info })).status).toBe(200)
    expect(readdirSync(join(dataDir, 'recordings'))).toContain(segment)
    expect(existsSync(join(dataDir, 'periscope.sqlite'))).toBe(true)

    // The image carries OpenH264's decoder, not FFmpeg's (slim.sh): a snapshot of the H.264 stream is
    // decoded by it, into a JPEG of the stream's size.
    const snapshot = await fetch(`${url}/api/streams/${encodeURIComponent(dev.bus_info)}/snapshot.jpg`)
    expect(snapshot.status).toBe(200)
    const jpeg = new Uint8Array(await snapshot.arrayBuffer())
    expect(jpegSize(jpeg)).toEqual({ width: dev.width, height: dev.height })
  }, 60_000)
})
