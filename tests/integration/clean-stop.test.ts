// The clean stop, as systemd and docker do it: `npm start` with a camera streaming and recording, then a
// signal to the npm process alone. Within 5 s the port is closed, no process of the service's tree is
// left (Bun, the gst-launch-1.0 children, the RTSP server's Python helper) and the recording is a
// finished file (ffprobe reads its duration, which matroskamux writes only when it closes the file).
// npm itself killed with SIGKILL (it passes nothing on) takes the service with it too.
import { expect, test } from 'bun:test'
import { readdirSync, readFileSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { join } from 'node:path'
import { freeTcpPort, until } from '../helpers'
import { freePort, playableSecondsNow, requireGStreamer, tempDir } from './gstreamer.helpers'

const ROOT = join(import.meta.dir, '../..')
const EHD = 'usb-0000:00:14.0-1'

/** Live processes of session `sid` (zombies are gone already): pid and command name. */
function sessionProcesses(sid: number): { pid: number; comm: string }[] {
  const found: { pid: number; comm: string }[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8')
    } catch {
      continue // gone meanwhile
    }
    // pid (comm) state ppid pgrp session …: comm may hold spaces and parentheses, so split after the last ')'.
    const close = stat.lastIndexOf(')')
    const [state, , , session] = stat.slice(close + 2).split(' ')
    if (Number(session) === sid && state !== 'Z') found.push({ pid: Number(entry), comm: stat.slice(stat.indexOf('(') + 1, close) })
  }
  return found
}

const portOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.on('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.on('error', () => resolve(false))
  })

/**
 * `npm start` in a session of its own (so every process of its tree can be found by session, wherever
 * it is reparented), a camera streaming with its sound and recording; returns once the recording holds
 * more than a second.
 */
async function startUnderNpm(launcher: string[] = ['npm', 'start', '--silent', '--']) {
  requireGStreamer()
  const dataDir = tempDir('periscope-stop-')
  const port = freeTcpPort()
  // setsid runs the launcher in place (a child of ours is no process group leader, so it does not fork): the pid is the launcher's.
  const npm = Bun.spawn(['setsid', ...launcher, '--host', '127.0.0.1', '--port', String(port), '--data-dir', dataDir, '--simulate', 'single', '--cockpit-port', 'off', '--cockpit-streams-port', 'off', '--rtsp-port', String(freeTcpPort()), '--log-level', 'error'], {
    cwd: ROOT,
    stdout: 'ignore',
    stderr: 'inherit',
    env: { ...process.env, npm_config_update_notifier: 'false' },
  })
  const url = `http://127.0.0.1:${port}`
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, { method, headers: body ? { 'content-type': 'application/json' } : {}, body: body ? JSON.stringify(body) : undefined })
    return { status: res.status, body: await res.json().catch(() => null) }
  }
  const cleanup = () => {
    for (const p of sessionProcesses(npm.pid)) {
      try {
        process.kill(p.pid, 'SIGKILL')
      } catch {}
    }
    rmSync(dataDir, { recursive: true, force: true })
  }
  try {
    await until('the service to answer', () => call('GET', '/api/health').catch(() => ({ status: 0, body: null })), (r) => r.status === 200 || npm.exitCode !== null, 60_000)
    expect(npm.exitCode).toBeNull()
    expect(readFileSync(`/proc/${npm.pid}/cmdline`, 'utf8')).toStartWith(launcher[0] === 'npm' ? 'npm' : launcher[0]!)
    const configured = await call('POST', '/api/devices/configure_stream', {
      bus_info: EHD,
      stream_type: 'UDP',
      encode_type: 'H264',
      stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port: freePort() }],
    })
    expect(configured.status).toBe(200)
    await until('the stream and its sound running', async () => [(await call('GET', '/api/devices')).body, (await call('GET', '/api/audio/streams')).body], ([devices, sound]: any[]) =>
      devices.find((d: any) => d.bus_info === EHD)?.stream_status?.state === 'running' && sound.find((a: any) => a.bus_info === EHD)?.state === 'running', 30_000)
    const started = await call('POST', '/api/devices/start_recording', { bus_info: EHD })
    expect(started.status).toBe(200)
    const dir = join(dataDir, 'recordings')
    const file = () => readdirSync(dir).map((f) => join(dir, f)).find((f) => f.endsWith('.mkv'))
    await until('more than a second recorded', async () => (file() ? playableSecondsNow(file()!) : 0), (s) => s > 1, 30_000)
    const tree = sessionProcesses(npm.pid)
    // The whole tree is there to be stopped: npm, Bun, the stream's, recorder's and sound's gst-launch-1.0, the RTSP helper.
    expect(tree.map((p) => p.comm.replace(/^bun\.exe$/, 'bun'))).toEqual(expect.arrayContaining(['bun', 'gst-launch-1.0', 'python3']))
    expect(tree.filter((p) => p.comm === 'gst-launch-1.0').length).toBeGreaterThanOrEqual(3)
    return { npm, port, file: file()!, cleanup }
  } catch (e) {
    cleanup()
    throw e
  }
}

/** Within 5 s of the signal: the port closed and the session empty; then the recording's duration as ffprobe reads it. */
async function expectStopped(npm: { pid: number }, port: number, file: string, signalledAt: number) {
  const left = await until('the port closed and no process of the service left', async () => ({ open: await portOpen(port), left: sessionProcesses(npm.pid) }), (s) => !s.open && s.left.length === 0, 5000 - (performance.now() - signalledAt)).catch((e) => e as Error)
  expect(left instanceof Error ? left.message : 'stopped').toBe('stopped')
  expect(performance.now() - signalledAt).toBeLessThan(5000)
  const probe = Bun.spawnSync(['ffprobe', '-v', 'error', '-show_entries', 'format=duration', '-of', 'csv=p=0', file], { timeout: 20_000 })
  expect(Number(probe.stdout.toString().trim())).toBeGreaterThan(1) // 'N/A' (NaN) for a file never closed
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal} to the npm process alone stops the service and every child within 5 s, the recording closed`, async () => {
    const { npm, port, file, cleanup } = await startUnderNpm()
    try {
      const at = performance.now()
      process.kill(npm.pid, signal)
      await expectStopped(npm, port, file, at)
    } finally {
      cleanup()
    }
  }, 120_000)
}

test('npm killed with SIGKILL (no signal passed on): the service sees its parent gone and stops within 5 s, the recording closed', async () => {
  const { npm, port, file, cleanup } = await startUnderNpm()
  try {
    const at = performance.now()
    process.kill(npm.pid, 'SIGKILL')
    await expectStopped(npm, port, file, at)
  } finally {
    cleanup()
  }
}, 120_000)

test("the systemd unit's stop (KillMode=mixed: SIGTERM to ExecStart's Bun alone, as docker stop does to the image's CMD) stops everything within 5 s, the recording closed", async () => {
  // With systemd's default KillMode=control-group every process of the unit gets SIGTERM at once, and a
  // recorder's gst-launch-1.0 dies of it before the service can ask it for EOS: its file is never closed.
  const unit = readFileSync(join(ROOT, 'examples/periscope.service'), 'utf8')
  expect(unit).toMatch(/^KillMode=mixed$/m)
  expect(unit).toMatch(/^ExecStart=\S*node_modules\/\.bin\/bun run --no-install core\/main\.ts$/m)
  const { npm: bun, port, file, cleanup } = await startUnderNpm([join(ROOT, 'node_modules/.bin/bun'), 'run', '--no-install', 'core/main.ts'])
  try {
    const at = performance.now()
    process.kill(bun.pid, 'SIGTERM')
    await expectStopped(bun, port, file, at)
  } finally {
    cleanup()
  }
}, 120_000)
