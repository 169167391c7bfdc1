// Cockpit's own video code against Periscope, in Chromium. Not a test tier: it needs Cockpit's source
// (bluerobotics/cockpit, fetched beside the project, never copied into it) and Vue from the npm
// registry. It bundles Cockpit's WebRTCManager (src/composables/webRTC.ts, the video widget's engine)
// with its Signaller and Session (src/libs/webrtc/) with Bun's bundler, starts Periscope with simulated
// cameras, streams one as H.264 under a nickname, and has Cockpit's manager, pointed at Periscope's
// signalling URI (watch.cockpit), pick that stream by name and play it; it passes when Chromium has
// decoded frames at the camera's size.
//
//   scripts/cockpit-check.sh [<cockpit source dir>] [<dir with node_modules/vue>]
//
// Why not Cockpit's whole web build: its source has three git submodules (mavlink2rest's TypeScript,
// mavlink-json, ArduPilot's parameter repository) that a fetch of the one repository does not bring,
// and its build needs all of its npm packages; the video path is these three files and Vue. (The same
// submodules keep its extras schema, src/libs/blueos/schemas.ts, from being bundled: it imports
// mavlink2rest's enums; tests/contract/cockpit-extras.test.ts checks the shape it reads.)
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { launchBrowser, openPage } from '../tests/integration/browser'
import { startService } from '../tests/integration/service.helpers'
import { freeTcpPort, until } from '../tests/helpers'

const source = resolve(process.argv[2] ?? '/work/cockpit-src')
const deps = resolve(process.argv[3] ?? '/work/cockpit-deps')
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
  if (pc) (await pc.getStats()).forEach((s: any) => { if (s.type === 'inbound-rtp' && s.kind === 'video') video = { framesDecoded: s.framesDecoded ?? 0, width: s.frameWidth ?? 0, height: s.frameHeight ?? 0 } })
  const c = (window as any).cockpit
  return { ...video, streams: c?.manager.availableStreams.value.map((s: any) => s.name) ?? [], iceIps: [...(c?.manager.availableICEIPs.value ?? [])], signaller: c?.out.signallerStatus.value, stream: c?.out.streamStatus.value }
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

const cockpitPort = freeTcpPort()
const service = await startService({ args: ['--cockpit-port', String(cockpitPort)] })
const browser = await launchBrowser()
let ok = false
try {
  const devices = (await service.call('GET', '/api/devices')).body as any[]
  const d = devices.find((x) => !x.leader && !x.followers?.length && (x.cameras ?? []).some((c: any) => (c.formats?.H264 ?? []).some((s: any) => s.width <= 640)))
  if (!d) throw new Error('no simulated camera streams H.264 at 640 wide or less')
  const size = d.cameras.flatMap((c: any) => c.formats?.H264 ?? []).find((s: any) => s.width <= 640)
  await service.call('POST', '/api/devices/set_nickname', { bus_info: d.bus_info, nickname: 'Cockpit check' })
  await service.call('POST', '/api/devices/configure_stream', { bus_info: d.bus_info, stream_type: 'UDP', stream_format: { width: size.width, height: size.height, interval: size.intervals[0] }, encode_type: 'H264', enabled: true, endpoints: [{ host: '127.0.0.1', port: d.stream.endpoints?.[0]?.port ?? 47000 }] })
  const running = await until('the stream running', () => service.call('GET', '/api/devices'), (r) => r.body.find((x: any) => x.bus_info === d.bus_info)?.stream_status?.state === 'running', 30_000)
  const uri = running.body.find((x: any) => x.bus_info === d.bus_info).watch.cockpit as string
  console.log(`Periscope's signalling URI (watch.cockpit): ${uri}`)
  const page = await openPage(browser, service.url)
  await page.addScriptTag({ content: bundle })
  await page.evaluate((uri: string) => (globalThis as any).playWithCockpit(uri, 'Cockpit check'), uri)
  const stats = await until('Cockpit decoding frames', () => page.evaluate(() => (globalThis as any).cockpitStats()), (s: any) => s.framesDecoded > 30 && s.width > 0, 60_000)
  console.log(`Cockpit's streams: ${JSON.stringify(stats.streams)}; the vehicle's ICE addresses it lists: ${JSON.stringify(stats.iceIps)}; signaller: ${stats.signaller}; stream: ${stats.stream}`)
  console.log(`decoded ${stats.framesDecoded} frames at ${stats.width}x${stats.height} (the camera streams ${size.width}x${size.height})`)
  // The addresses come from our trickled candidates (Cockpit's IP filter works on them).
  ok = stats.width === size.width && stats.height === size.height && stats.iceIps.length > 0
} finally {
  await browser.close()
  await service.kill()
}
console.log(ok ? 'PASS: Cockpit\'s own WebRTC code plays a Periscope camera' : 'FAIL')
process.exit(ok ? 0 : 1)
