// Cockpit against Periscope, in Chromium. Not a test tier: it needs Cockpit's source (bluerobotics/
// cockpit, fetched beside the project, never copied into it) and npm packages from the registry.
//
// 1. Cockpit's video code: its WebRTCManager (src/composables/webRTC.ts, the video widget's engine),
//    Signaller and Session (src/libs/webrtc/), bundled with Bun's bundler (Vue from the registry), pick a
//    simulated Periscope camera by its nickname through Periscope's signalling URI (watch.cockpit) and
//    decode its frames at its size, and get the stream's Opus sound (the simulated hydrophone) in the
//    media stream the widget plays; Cockpit lists the vehicle's ICE address from our candidates.
// 2. When the Cockpit source has its npm packages installed (and its three git submodules), Cockpit's
//    whole web app, from its own Vite dev server: a fresh Cockpit with its own "ROV default" profile
//    finds Periscope at ws://<its host>:6021 with nothing typed, gives its video widget the first
//    stream, and decodes it. (Its production build also bundles the Electron app, which needs a
//    native SDL package from GitHub; the dev server serves the same web app.) Cockpit's own zod schemas
//    (src/libs/blueos/schemas.ts) then read /register_service and the extras file.
//
// With --faults, in place of 2: Cockpit's manager through a stream restart, an unplug and plug, and a
// kill -9 of the service started again where it was (issue 33).
//
//   scripts/cockpit-check.sh [--faults] [<cockpit source dir>] [<dir with node_modules/vue>]
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { launchBrowser, openPage } from '../tests/integration/browser'
import { startService, type Service } from '../tests/integration/service.helpers'
import { freeTcpPort, until } from '../tests/helpers'

const positional = process.argv.slice(2).filter((a) => !a.startsWith('--'))
// By default both sit beside the project's directory.
const source = resolve(positional[0] ?? join(import.meta.dir, '../../cockpit-src'))
const deps = resolve(positional[1] ?? join(import.meta.dir, '../../cockpit-deps'))
const src = join(source, 'src')
for (const file of ['composables/webRTC.ts', 'libs/webrtc/signaller.ts', 'libs/webrtc/session.ts']) {
  if (!existsSync(join(src, file))) throw new Error(`${join(src, file)} is missing: give the Cockpit source directory (git archive of bluerobotics/cockpit)`)
}
const vue = join(deps, 'node_modules/vue/dist/vue.runtime.esm-browser.prod.js')
if (!existsSync(vue)) throw new Error(`${vue} is missing: npm install --prefix ${deps} vue@<Cockpit's version, yarn.lock>`)

// The page's driver: Cockpit's manager as its VideoPlayer widget uses it (startStream with a selected
// stream ref, no ICE IP or protocol filter, jitter buffer target 0), and the Array helpers Cockpit adds
// in src/libs/cosmos.ts (first, isEmpty), which its code calls.
const work = mkdtempSync(join(tmpdir(), 'cockpit-check-'))
const entry = join(work, 'entry.ts')
writeFileSync(
  entry,
  `import { ref, watch } from 'vue'
import { WebRTCManager } from ${JSON.stringify(join(src, 'composables/webRTC.ts'))}
;(Array.prototype as any).isEmpty ??= function () { return this.length === 0 }
;(Array.prototype as any).first ??= function () { return this[0] }
;(window as any).playWithCockpit = (uri: string, name: string) => {
  const manager = new WebRTCManager(new URL(uri) as any, { iceServers: [] } as any)
  const selected = ref<any>(undefined)
  const out = manager.startStream(selected as any, ref([]), ref([]), ref(0))
  watch(manager.availableStreams, (streams: any[]) => { if (!selected.value) selected.value = streams.find((s) => s.name === name) })
  watch(out.mediaStream, (stream) => {
    const video = document.createElement('video')
    video.muted = true
    video.autoplay = true
    video.srcObject = stream as any
    document.body.appendChild(video)
  })
  ;(window as any).cockpit = { manager, out }
}
;(window as any).cockpitStats = async () => {
  const pc = (window as any).cockpit?.manager?.session?.peerConnection
  let video = { framesDecoded: 0, width: 0, height: 0 }
  let sound = { packets: 0, codec: null as string | null }
  if (pc) {
    const stats = await pc.getStats()
    stats.forEach((s: any) => {
      if (s.type === 'inbound-rtp' && s.kind === 'video') video = { framesDecoded: s.framesDecoded ?? 0, width: s.frameWidth ?? 0, height: s.frameHeight ?? 0 }
      if (s.type === 'inbound-rtp' && s.kind === 'audio') sound = { packets: s.packetsReceived ?? 0, codec: stats.get(s.codecId)?.mimeType ?? null }
    })
  }
  const c = (window as any).cockpit
  // The stream Cockpit's widget plays and records (the manager's mediaStream).
  const media = c?.out.mediaStream.value
  return { ...video, sound, tracks: media ? media.getTracks().map((t: any) => t.kind).sort() : [], streams: c?.manager.availableStreams.value.map((s: any) => s.name) ?? [], iceIps: [...(c?.manager.availableICEIPs.value ?? [])], signaller: c?.out.signallerStatus.value, stream: c?.out.streamStatus.value }
}
`,
)
const built = await Bun.build({
  entrypoints: [entry],
  target: 'browser',
  plugins: [
    {
      name: 'cockpit-paths',
      setup(build) {
        build.onResolve({ filter: /^vue$/ }, () => ({ path: vue }))
        build.onResolve({ filter: /^@\// }, (args) => {
          const base = join(src, args.path.slice(2))
          const path = ['.ts', '.d.ts', '/index.ts', ''].map((ext) => base + ext).find((p) => existsSync(p) && !p.endsWith('/'))
          if (!path) throw new Error(`Cockpit's ${args.path} is not in ${src}`)
          return { path }
        })
      },
    },
  ],
})
if (!built.success) throw new Error(`the bundle failed: ${built.logs.join('\n')}`)
const bundle = await built.outputs[0]!.text()
rmSync(work, { recursive: true, force: true })

/** A simulated single camera streaming H.264 at 640 wide or less under `nickname`; its size and watch.cockpit. */
async function streaming(service: Service, nickname: string): Promise<{ bus_info: string; width: number; height: number; uri: string }> {
  const devices = (await service.call('GET', '/api/devices')).body as any[]
  const d = devices.find((x) => !x.leader && !x.followers?.length && (x.cameras ?? []).some((c: any) => (c.formats?.H264 ?? []).some((s: any) => s.width <= 640)))
  if (!d) throw new Error('no simulated camera streams H.264 at 640 wide or less')
  const size = d.cameras.flatMap((c: any) => c.formats?.H264 ?? []).find((s: any) => s.width <= 640)
  await service.call('POST', '/api/devices/set_nickname', { bus_info: d.bus_info, nickname })
  await service.call('POST', '/api/devices/configure_stream', { bus_info: d.bus_info, stream_type: 'UDP', stream_format: { width: size.width, height: size.height, interval: size.intervals[0] }, encode_type: 'H264', enabled: true, endpoints: [{ host: '127.0.0.1', port: d.stream.endpoints?.[0]?.port ?? 47000 }] })
  const running = await until('the stream running', () => service.call('GET', '/api/devices'), (r) => r.body.find((x: any) => x.bus_info === d.bus_info)?.stream_status?.state === 'running', 30_000)
  return { bus_info: d.bus_info, width: size.width, height: size.height, uri: running.body.find((x: any) => x.bus_info === d.bus_info).watch.cockpit }
}

async function checkBundle(): Promise<boolean> {
  const service = await startService({ args: ['--cockpit-port', String(freeTcpPort())] })
  const browser = await launchBrowser()
  try {
    const cam = await streaming(service, 'Cockpit check')
    // The simulated hydrophone's sound on the camera's stream: Cockpit's session gets it beside the video.
    await service.call('POST', '/api/audio/attach', { bus_info: cam.bus_info, source: 'sim:hydrophone' })
    await until('the sound running', () => service.call('GET', '/api/audio/streams'), (r) => r.body.find((a: any) => a.bus_info === cam.bus_info)?.state === 'running', 30_000)
    console.log(`[bundle] Periscope's signalling URI (watch.cockpit): ${cam.uri}`)
    const page = await openPage(browser, service.url)
    await page.addScriptTag({ content: bundle })
    await page.evaluate((uri: string) => (globalThis as any).playWithCockpit(uri, 'Cockpit check'), cam.uri)
    const stats = await until('Cockpit decoding frames and receiving sound', () => page.evaluate(() => (globalThis as any).cockpitStats()), (s: any) => s.framesDecoded > 30 && s.width > 0 && s.sound.packets > 50, 60_000)
    console.log(`[bundle] Cockpit's streams: ${JSON.stringify(stats.streams)}; the vehicle's ICE addresses it lists: ${JSON.stringify(stats.iceIps)}; stream: ${stats.stream}`)
    console.log(`[bundle] decoded ${stats.framesDecoded} frames at ${stats.width}x${stats.height} (the camera streams ${cam.width}x${cam.height})`)
    console.log(`[bundle] sound: ${stats.sound.packets} packets of ${stats.sound.codec}; the tracks of Cockpit's media stream: ${JSON.stringify(stats.tracks)}`)
    // The addresses come from our trickled candidates (Cockpit's IP filter works on them).
    return stats.width === cam.width && stats.height === cam.height && stats.iceIps.length > 0 && stats.sound.codec === 'audio/opus' && JSON.stringify(stats.tracks) === '["audio","video"]'
  } finally {
    await browser.close()
    await service.kill()
  }
}

/**
 * Cockpit's manager through the faults a pilot meets (issue 33): a stream restart, the camera unplugged
 * and plugged back, the service killed (-9) and started again where it was. Each: the time from the
 * camera's stream running again to Cockpit's next new decoded frame, or "never" after 20 s.
 */
async function checkFaults(): Promise<boolean> {
  const port = freeTcpPort()
  const args = ['--cockpit-port', String(freeTcpPort())]
  let service = await startService({ port, args })
  const browser = await launchBrowser()
  const results: string[] = []
  let ok = true
  try {
    const cam = await streaming(service, 'Cockpit faults')
    const page = await openPage(browser, service.url)
    await page.addScriptTag({ content: bundle })
    await page.evaluate((uri: string) => (globalThis as any).playWithCockpit(uri, 'Cockpit faults'), cam.uri)
    await until('Cockpit decoding frames', () => page.evaluate(() => (globalThis as any).cockpitStats()), (s: any) => s.framesDecoded > 30, 60_000)
    const running = () => until('the stream running', () => service.call('GET', '/api/devices').catch(() => ({ status: 0, body: [] })), (r) => r.body?.find?.((x: any) => x.bus_info === cam.bus_info)?.stream_status?.state === 'running', 30_000)
    const faults: [string, () => Promise<void>][] = [
      ['a stream restart', async () => void (await service.call('POST', '/api/devices/restart_stream', { bus_info: cam.bus_info }))],
      ['an unplug and plug', async () => {
        await service.call('POST', '/api/mock/unplug', { bus_info: cam.bus_info })
        await until('the camera gone', () => service.call('GET', '/api/devices'), (r) => !r.body.some((x: any) => x.bus_info === cam.bus_info), 10_000)
        await service.call('POST', '/api/mock/plug', { bus_info: cam.bus_info })
      }],
      ['a kill -9 of the service, started again', async () => {
        await service.kill()
        service = await startService({ port, args, dataDir: service.dataDir })
      }],
    ]
    for (const [name, fault] of faults) {
      await fault()
      await running()
      const since = Date.now()
      const before = await page.evaluate(() => (globalThis as any).cockpitStats())
      let after = before
      while (Date.now() - since < 20_000) {
        after = await page.evaluate(() => (globalThis as any).cockpitStats())
        if (after.framesDecoded !== before.framesDecoded && after.framesDecoded > 0) break
        await Bun.sleep(100)
      }
      const took = Date.now() - since
      const back = after.framesDecoded !== before.framesDecoded && after.framesDecoded > 0 && took <= 5_000
      ok &&= back
      results.push(`${name}: ${back ? `new frames ${took} ms after the stream ran again` : `no new frame within ${took} ms`} (stream status: ${after.stream}; signaller: ${after.signaller})`)
    }
  } finally {
    for (const line of results) console.log(`[faults] ${line}`)
    await browser.close()
    await service.kill()
  }
  return ok
}

/** Is a TCP port free on loopback? */
function portFree(port: number): boolean {
  try {
    Bun.listen({ hostname: '127.0.0.1', port, socket: { data() {} } }).stop(true)
    return true
  } catch {
    return false
  }
}

async function checkApp(): Promise<boolean | null> {
  const vite = join(source, 'node_modules/.bin/vite')
  if (!existsSync(vite) || !existsSync(join(src, 'libs/connection/m2r/messages'))) {
    console.log(`[app] skipped: ${source} has no node_modules (install Cockpit's packages) or no submodules`)
    return null
  }
  // Cockpit looks at ws://<its page's host>:6021 by default: with 6021 free, Periscope listens there and
  // nothing is typed; else Cockpit is given the address in its webRTCSignallingURI query parameter.
  const byDefault = portFree(6021)
  const signallingPort = byDefault ? 6021 : freeTcpPort()
  const vitePort = freeTcpPort()
  const server = Bun.spawn([vite, '--host', '127.0.0.1', '--port', String(vitePort), '--strictPort'], { cwd: source, env: { ...process.env, COCKPIT_VERSION: 'cockpit-check' }, stdout: 'ignore', stderr: 'ignore' })
  const service = await startService({ args: ['--cockpit-port', String(signallingPort)] })
  const browser = await launchBrowser()
  try {
    const cockpitUrl = `http://127.0.0.1:${vitePort}/${byDefault ? '' : `?webRTCSignallingURI=${encodeURIComponent(`ws://127.0.0.1:${signallingPort}`)}`}`
    await until("Cockpit's dev server", () => fetch(cockpitUrl).then((r) => r.status).catch(() => 0), (s) => s === 200, 60_000)
    const cam = await streaming(service, 'Front')
    // Cockpit's own "ROV default" profile (src/assets/defaults.ts, read from its dev server) has a video
    // widget; the blank profile a fresh Cockpit opens without a vehicle has none. It goes in as Cockpit's
    // old-style localStorage value, which Cockpit's settings migrate on its first load.
    const first = await browser.newPage()
    await first.goto(cockpitUrl, { waitUntil: 'domcontentloaded', timeout: 120_000 })
    const profile = await first.evaluate(async () => JSON.stringify((await import('/src/assets/defaults.ts' as string)).widgetProfiles.find((p: any) => p.name === 'ROV default')))
    await first.close()
    const context = await browser.createBrowserContext()
    const page = await context.newPage()
    await page.evaluateOnNewDocument((profile: string) => {
      localStorage.setItem('cockpit-views-group-v1', profile)
      // The fake camera, granted early, lets Chromium offer loopback candidates (tests/integration/browser.ts).
      ;(navigator as any).mediaDevices.getUserMedia({ video: true }).then((s: any) => s.getTracks().forEach((t: any) => t.stop())).catch(() => {})
    }, profile)
    await page.setViewport({ width: 1280, height: 800 })
    await page.goto(cockpitUrl, { waitUntil: 'domcontentloaded', timeout: 120_000 })
    const videos = () => page.evaluate(() => [...(globalThis as any).document.querySelectorAll('video')].map((v: any) => ({ width: v.videoWidth as number, height: v.videoHeight as number, frames: (v.getVideoPlaybackQuality?.().totalVideoFrames ?? 0) as number })))
    const seen = await until("Cockpit's video widget playing", videos, (vs) => vs.some((v) => v.frames > 30 && v.width > 0), 180_000)
    const playing = seen.find((v) => v.frames > 30)!
    console.log(`[app] Cockpit ${byDefault ? 'found Periscope at ws://127.0.0.1:6021 by itself (nothing typed)' : `was given ws://127.0.0.1:${signallingPort} (6021 is taken here)`}; its video widget decoded ${playing.frames} frames at ${playing.width}x${playing.height} (the camera streams ${cam.width}x${cam.height})`)
    // What BlueOS would hand Cockpit: /register_service (as its helper's metadata) and the extras file,
    // read by Cockpit's own zod schemas (src/libs/blueos/schemas.ts) in Cockpit's page.
    const register = (await service.call('GET', '/register_service')).body
    const extras = (await service.call('GET', register.extras.cockpit)).body
    const read = await page.evaluate(
      async (register: unknown, extras: unknown) => {
        const schemas = await import('/src/libs/blueos/schemas.ts' as string)
        const service = schemas.ServiceSchema.safeParse({ metadata: register, port: 8080 })
        const parsed = schemas.ExtrasJsonSchema.safeParse(extras)
        return {
          service: service.success ? { extras: service.data.metadata?.extras?.cockpit, relative: service.data.metadata?.worksInRelativePaths } : String(service.error),
          extras: parsed.success ? { widgets: parsed.data.widgets.length, actions: parsed.data.actions.length, suggestions: parsed.data.joystickSuggestions?.flatMap((g: any) => g.buttonMappingSuggestions).length ?? 0 } : String(parsed.error),
        }
      },
      register,
      extras,
    )
    console.log(`[app] Cockpit's schemas read /register_service as ${JSON.stringify(read.service)} and the extras as ${JSON.stringify(read.extras)}`)
    const extrasOk = typeof read.extras === 'object' && read.extras.widgets > 0 && read.extras.actions > 0 && read.extras.suggestions > 0 && typeof read.service === 'object' && read.service.extras === register.extras.cockpit
    return playing.width === cam.width && playing.height === cam.height && extrasOk
  } finally {
    await browser.close()
    await service.kill()
    server.kill()
    await server.exited
  }
}

const bundled = await checkBundle()
console.log(bundled ? "PASS [bundle]: Cockpit's own WebRTC code plays a Periscope camera" : 'FAIL [bundle]')
const faults = process.argv.includes('--faults') ? await checkFaults() : null
if (faults !== null) console.log(faults ? "PASS [faults]: Cockpit's own WebRTC code shows the camera again within 5 s of each fault" : 'FAIL [faults]')
const app = process.argv.includes('--faults') ? null : await checkApp()
if (app !== null) console.log(app ? "PASS [app]: Cockpit's web app plays a Periscope camera" : 'FAIL [app]')
process.exit(bundled && faults !== false && app !== false ? 0 : 1)
