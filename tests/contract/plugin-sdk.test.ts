// A plugin from outside the checkout, as an integrator writes it: the example of docs/plugins.md, copied
// as it is into a directory under /tmp with no node_modules, run by the real service (npm start's own
// command) with no network. The npm registry is pointed at a loopback server that counts requests: Bun
// must never ask it for anything (auto-install off), and a plugin's unknown import fails at start with a
// sentence naming the plugin. A definition that clashes with a shipped vendor is refused naming both.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Server, Subprocess } from 'bun'
import * as fs from 'node:fs'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { BUN, tempDir, until } from '../helpers'

const ROOT = join(import.meta.dir, '..', '..')
const SEABED_EYE = 'usb-0000:00:14.0-5' // after the default preset's four cameras

/** The plugin of docs/plugins.md: its first ```ts block. */
function docsExample(): string {
  const doc = readFileSync(join(ROOT, 'docs', 'plugins.md'), 'utf8')
  const block = /```ts\n([\s\S]*?)```/.exec(doc)?.[1]
  if (!block) throw new Error('docs/plugins.md has no ```ts example')
  return block
}

/** npm start's command (package.json), with the Bun running the tests. */
function startCommand(): string[] {
  const start = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.start as string
  // `exec`: npm's script shell becomes Bun, so the signals npm forwards reach the service (tests/integration/clean-stop.test.ts).
  const [exec, bun, ...args] = start.split(/\s+/)
  expect(exec).toBe('exec')
  expect(bun).toBe('bun')
  return [BUN, ...args]
}

let registry: Server<undefined>
const registryHits: string[] = []
let outside = ''
let env: Record<string, string | undefined> = {}

beforeAll(() => {
  registry = Bun.serve({ hostname: '127.0.0.1', port: 0, fetch: (req) => (registryHits.push(req.url), new Response('not here', { status: 404 })) })
  const url = `http://127.0.0.1:${registry.port}/`
  env = { ...process.env, NPM_CONFIG_REGISTRY: url, BUN_CONFIG_REGISTRY: url }
  outside = mkdtempSync('/tmp/periscope-outside-plugin-')
  expect(existsSync(join(outside, 'node_modules'))).toBe(false)
  expect(outside.startsWith(ROOT)).toBe(false)
})

afterAll(() => {
  registry.stop(true)
  rmSync(outside, { recursive: true, force: true })
})

interface Run {
  child: Subprocess<'ignore', 'ignore', 'pipe'>
  logs: Record<string, any>[]
  stderr: () => string
  dataDir: string
}

/** The service in its own process; its log lines (stderr, JSON) are read as they come. */
function service(args: string[], command = startCommand()): Run {
  const dataDir = tempDir()
  const child = Bun.spawn([...command, '--host', '127.0.0.1', '--port', '0', '--data-dir', dataDir, '--log-level', 'info', '--rtsp-port', '0', ...args], {
    cwd: ROOT,
    env,
    stdin: 'ignore',
    stdout: 'ignore',
    stderr: 'pipe',
  })
  const logs: Record<string, any>[] = []
  let text = ''
  ;(async () => {
    let rest = ''
    for await (const chunk of child.stderr as unknown as AsyncIterable<Uint8Array>) {
      const got = new TextDecoder().decode(chunk)
      text += got
      const lines = (rest + got).split('\n')
      rest = lines.pop()!
      for (const line of lines) {
        try {
          logs.push(JSON.parse(line))
        } catch {
          logs.push({ level: 'raw', line })
        }
      }
    }
  })()
  return { child, logs, stderr: () => text, dataDir }
}

async function stop(run: Run): Promise<void> {
  if (run.child.exitCode === null) run.child.kill('SIGTERM')
  await run.child.exited
  rmSync(run.dataDir, { recursive: true, force: true })
}

describe('a plugin outside the checkout, written from docs/plugins.md', () => {
  test('loads with --plugins <path>: its simulated camera is listed, its extension-unit control set and read back, its flag read; nothing fetched', async () => {
    const file = join(outside, 'seabed-plugin.ts')
    writeFileSync(file, docsExample())
    const run = service(['--simulate', 'default', '--plugins', `cameras,preferences,dwe,${file}`, '--seabed-wiper-interval', '30'])
    try {
      const listening = await until('the service to listen', async () => run.logs.find((l) => l.msg === 'listening'), (l) => l !== undefined || run.child.exitCode !== null, 30_000)
      expect({ exit: run.child.exitCode, stderr: listening ? '' : run.stderr() }).toEqual({ exit: null, stderr: '' })
      const base = listening!.url as string
      const devices = (await (await fetch(`${base}/api/devices`)).json()) as any[]
      const eye = devices.find((d) => d.bus_info === SEABED_EYE)
      expect(eye).toMatchObject({ name: 'Seabed Eye', manufacturer: 'Seabed Optics', vid: 0xf0c5, pid: 0x0042, string3: 'SB0001', device_type: 0 })
      expect(eye.cameras[0].formats.MJPG.map((s: any) => [s.width, s.height])).toEqual([[1280, 720], [640, 480]])
      const wiper = () => fetch(`${base}/api/devices`).then((r) => r.json() as Promise<any[]>).then((ds) => ds.find((d) => d.bus_info === SEABED_EYE).controls.find((c: any) => c.control_id === -200))
      expect(await wiper()).toMatchObject({ name: 'Wiper speed', value: 100, flags: { control_type: 'INTEGER', min_value: 0, max_value: 1000 } })
      const set = await fetch(`${base}/api/devices/set_uvc_control`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bus_info: SEABED_EYE, control_id: -200, value: 640 }) })
      expect({ status: set.status, body: await set.json() }).toEqual({ status: 200, body: { success: true, value: 640 } })
      expect((await wiper()).value).toBe(640)
      expect(await (await fetch(`${base}/api/seabed/wiper`)).json()).toEqual({ interval: 30 })
      // The DWE cameras keep their own controls beside it.
      expect(devices.find((d) => d.bus_info === 'usb-0000:00:14.0-1').controls.filter((c: any) => c.control_id < 0).map((c: any) => c.control_id)).toEqual([-1, -2, -3])
    } finally {
      await stop(run)
    }
    expect(registryHits).toEqual([])
  }, 60_000)

  test('its own relative files may import the SDK too, and its routes answer', async () => {
    const dir = join(outside, 'two-files')
    fs.mkdirSync(join(dir, 'lib'), { recursive: true })
    writeFileSync(join(dir, 'lib', 'routes.ts'), `import { Elysia, t } from 'periscope/plugin'\nexport const routes = () => new Elysia({ name: 'periscope:two' }).get('/api/two', () => ({ t: typeof t.String }))\n`)
    writeFileSync(join(dir, 'two.ts'), `import { definePlugin } from "periscope/plugin"\nimport { routes } from './lib/routes.ts'\nexport default definePlugin({ name: 'two', setup: routes })\n`)
    const run = service(['--simulate', 'off', '--plugins', `cameras,${join(dir, 'two.ts')}`])
    try {
      const listening = await until('the service to listen', async () => run.logs.find((l) => l.msg === 'listening'), (l) => l !== undefined || run.child.exitCode !== null, 30_000)
      expect({ exit: run.child.exitCode, stderr: listening ? '' : run.stderr() }).toEqual({ exit: null, stderr: '' })
      expect(await (await fetch(`${listening!.url}/api/two`)).json()).toEqual({ t: 'function' })
    } finally {
      await stop(run)
    }
  }, 60_000)

  // 90 s: two child Bun runs, 22 s under the arm64 tier's emulation beside another suite (of 30).
  test('--help lists its flag with its variable and its plugin', () => {
    const file = join(outside, 'seabed-plugin.ts')
    writeFileSync(file, docsExample())
    const out = Bun.spawnSync([...startCommand(), '--plugins', `cameras,${file}`, '--help'], { cwd: ROOT, env })
    expect(out.exitCode).toBe(0)
    expect(out.stdout.toString()).toMatch(/--seabed-wiper-interval\s+PERISCOPE_SEABED_WIPER_INTERVAL\s+seconds between two wipes of the Seabed Eye \(0 = never\) \(plugin seabed\)/)
    const bad = Bun.spawnSync([...startCommand(), '--plugins', `cameras,${file}`, '--seabed-wiper-interval', 'often'], { cwd: ROOT, env })
    expect(bad.exitCode).toBe(2)
    expect(bad.stderr.toString()).toContain("--seabed-wiper-interval (plugin seabed): must be a whole number of seconds, got 'often'")
  }, 90_000)

  // 90 s: a child Bun's start, 23.5 s under the arm64 tier's emulation beside another suite (of 30).
  test('a definition that claims a shipped vendor’s USB id is refused at start, naming both', async () => {
    const file = join(outside, 'clash-plugin.ts')
    writeFileSync(file, docsExample().replace('0xf0c5', '0x3961').replace('0x0042', '0x2100')) // DWE's exploreHD
    const run = service(['--simulate', 'default', '--plugins', `cameras,dwe,${file}`])
    try {
      await run.child.exited
      expect(run.child.exitCode).toBe(1)
      expect(run.stderr()).toContain(
        "periscope: vendor 'Seabed Optics' (plugin seabed) declares USB id 3961:2100 ('Seabed Eye'), which vendor 'DeepWater Exploration' (plugin dwe) already declares ('exploreHD'): a USB id belongs to one vendor",
      )
    } finally {
      await stop(run)
    }
  }, 90_000)

  test('a control id another vendor uses is refused at start, naming both', async () => {
    const file = join(outside, 'clash-control.ts')
    writeFileSync(file, docsExample().replace('control_id: -200', 'control_id: -2'))
    const run = service(['--simulate', 'default', '--plugins', `cameras,dwe,${file}`])
    try {
      await run.child.exited
      expect(run.child.exitCode).toBe(1)
      expect(run.stderr()).toContain("vendor 'Seabed Optics' (plugin seabed) declares control id -2 ('Wiper speed'), which vendor 'DeepWater Exploration' (plugin dwe) already declares ('H.264 GOP')")
    } finally {
      await stop(run)
    }
  }, 30_000)

  // Both ways auto-install is off: npm start's --no-install, and bunfig.toml for a plain `bun run`.
  for (const [how, command] of [
    ['npm start', () => startCommand()],
    ['bun run core/main.ts (bunfig.toml)', () => [BUN, 'run', 'core/main.ts']],
  ] as const) {
    test(`an import of a package the service does not have fails at start naming the plugin, with no fetch (${how})`, async () => {
      const file = join(outside, 'needs-left-pad.ts')
      writeFileSync(file, `import leftPad from 'left-pad'\nimport { definePlugin, Elysia } from 'periscope/plugin'\nexport default definePlugin({ name: 'pad', setup: () => new Elysia({ name: 'periscope:pad' + leftPad('', 0) }) })\n`)
      registryHits.length = 0
      const started = performance.now()
      const run = service(['--simulate', 'default', '--plugins', `cameras,${file}`], command())
      try {
        await run.child.exited
        expect(run.child.exitCode).toBe(1)
        expect(run.stderr()).toContain(`periscope: plugin '${file}' imports 'left-pad', which the service cannot find and does not install`)
        expect(registryHits).toEqual([])
        expect(performance.now() - started).toBeLessThan(20_000)
      } finally {
        await stop(run)
      }
    }, 30_000)
  }
})
