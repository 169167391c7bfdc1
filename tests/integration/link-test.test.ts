// The console's "Test the tether" (plugins/link, plugins/console/ui/link-test.ts) against iperf3, on a
// tether of the test's own held to 8 Mbit/s (two network namespaces, a veth, tc tbf on both ends): the
// service and iperf3's server on the vehicle's side, Chromium with the console and iperf3's client on the
// pilot's. Both directions within 10 % of iperf3's, the whole test within 10 s, while a second page of the
// browser keeps playing the camera's WebRTC video (it shows frames all along, never marked frozen).
// Prerequisites: root, scripts/setup/link.sh (iperf3, tc), chromium.sh and gstreamer.sh.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Page } from 'puppeteer-core'
import { until } from '../helpers'
import { launchBrowser, openPage } from './browser'
import { openConsole, waitInPage, type ConsoleSession } from './console.helpers'
import { requireGStreamer } from './gstreamer.helpers'
import { startServiceInNamespace, type LabService } from './nm/service'
import { makeTether, type Tether } from './nm/tether'

const EHD = 'usb-0000:00:14.0-1'
// 8 Mbit/s: a thin tether's rate, and well within what a busy machine's browser can push (at 20 beside
// another suite, Chromium's own upload fell 15 % short of iperf3's while the link had room).
const RATE_MBIT = 8
const IPERF_PORT = 5201 // inside the vehicle's own namespace: nothing else listens there

let tether: Tether
let service: LabService
let c: ConsoleSession

beforeAll(async () => {
  requireGStreamer()
  if (!Bun.which('iperf3')) throw new Error('iperf3 is missing: run scripts/setup/link.sh')
  tether = await makeTether('link', 1)
  await tether.limit(RATE_MBIT)
  c = await openConsole({
    service: async () => (service = await startServiceInNamespace(tether.vehicleNs, tether.vehicle)),
    browser: () => launchBrowser({ netns: tether.pilotNs }),
  })
}, 120_000)

afterAll(async () => {
  await c?.close()
  await tether?.remove()
})

/** iperf3 through the tether, `reverse`: the vehicle sends (as the download does); Mbit/s the receiver got. */
async function iperf(reverse: boolean): Promise<number> {
  const server = Bun.spawn([...tether.inVehicle, 'iperf3', '-s', '-1', '-B', tether.vehicle, '-p', String(IPERF_PORT)], { stdout: 'ignore', stderr: 'ignore' })
  try {
    // The server listens a moment after it starts: the client tries again until it has a figure (iperf3 3.12
    // may exit 0 with only an error in its JSON, "unable to connect").
    const result = await until('iperf3 measured', async () => {
      const client = Bun.spawn([...tether.inPilot, 'iperf3', '-c', tether.vehicle, '-p', String(IPERF_PORT), '-t', '4', '-J', ...(reverse ? ['-R'] : [])], { stdout: 'pipe', stderr: 'ignore' })
      const timer = setTimeout(() => client.kill('SIGKILL'), 20_000)
      const [out] = await Promise.all([new Response(client.stdout).text(), client.exited])
      clearTimeout(timer)
      try {
        return JSON.parse(out) as { end?: { sum_received?: { bits_per_second?: number } }; error?: string }
      } catch {
        return { error: out.slice(0, 500) }
      }
    }, (r) => typeof r.end?.sum_received?.bits_per_second === 'number', 30_000)
    return result.end!.sum_received!.bits_per_second! / 1e6
  } finally {
    server.kill('SIGKILL')
    await server.exited
  }
}

test(`"Test the tether" on a ${RATE_MBIT} Mbit/s tether: both ways within 10 % of iperf3, the round trip and jitter, under 10 s, while the video keeps playing`, async () => {
  let viewer: Page | undefined
  try {
    const d = ((await service.call('GET', '/api/devices')).body as any[]).find((x) => x.bus_info === EHD)
    const size = d.cameras.flatMap((cam: any) => cam.formats.H264 ?? []).sort((a: any, b: any) => a.width - b.width)[0]
    const r = await service.call('POST', '/api/devices/configure_stream', { bus_info: EHD, stream_type: 'UDP', encode_type: 'H264', stream_format: { width: size.width, height: size.height, interval: size.intervals[0] }, enabled: true, endpoints: [{ host: '127.0.0.1', port: 47_030 }] })
    expect(r.status, JSON.stringify(r.body)).toBe(200)
    await until('the stream running', async () => ((await service.call('GET', '/api/devices')).body as any[]).find((x) => x.bus_info === EHD), (x) => x?.stream_status?.state === 'running', 20_000)

    // The video, playing in a second page of the browser: its presented frames counted.
    viewer = await openPage(c.browser, c.origin)
    await viewer.goto(`${c.origin}/#/pilot`, { waitUntil: 'domcontentloaded' })
    await viewer.waitForSelector(`[data-tile="${EHD}"] video`, { timeout: 20_000 })
    await viewer.evaluate((bus: string) => {
      const w = globalThis as any
      const video = w.document.querySelector(`[data-tile="${bus}"] video`)
      w.frames = [] as number[]
      const frame = (now: number) => {
        w.frames.push(now)
        video.requestVideoFrameCallback(frame)
      }
      video.requestVideoFrameCallback(frame)
    }, EHD)
    await waitInPage(viewer, 'the video playing', () => (globalThis as any).frames.length >= 10, 20_000)

    // iperf3's figures, with the same video on the tether as during the console's test.
    const down = await iperf(true)
    const up = await iperf(false)
    console.log(`iperf3 on the ${RATE_MBIT} Mbit/s tether, the video playing: vehicle to pilot ${down.toFixed(2)}, pilot to vehicle ${up.toFixed(2)} Mbit/s`)

    await c.open('network')
    // The video's page is in front (a page behind renders no frame); this one's button is pressed by its
    // own script, as a click would (a page behind runs its requests as in front).
    await viewer.bringToFront()
    await c.page.$eval('[data-action="test-link"]', (b: any) => b.click())
    const started = await viewer.evaluate(() => performance.now())
    await c.page.waitForSelector('[data-link-test] dl.link-figures', { timeout: 20_000 })
    const ended = await viewer.evaluate(() => performance.now())
    const figures = await c.page.$eval('dl.link-figures', (e: any) => ({ ...e.dataset }) as Record<string, string>)
    console.log(`Test the tether: ${JSON.stringify(figures)}`)
    const ours = { down: Number(figures.downMbps), up: Number(figures.upMbps) }
    expect(Math.abs(ours.down - down) / down, `vehicle to pilot: ${ours.down} Mbit/s against iperf3's ${down.toFixed(2)}`).toBeLessThanOrEqual(0.1)
    expect(Math.abs(ours.up - up) / up, `pilot to vehicle: ${ours.up} Mbit/s against iperf3's ${up.toFixed(2)}`).toBeLessThanOrEqual(0.1)
    expect(Number(figures.seconds)).toBeLessThan(10)
    expect(Number(figures.roundTripMs)).toBeGreaterThan(0)
    expect(Number(figures.jitterMs)).toBeGreaterThanOrEqual(0)
    // The video played all along: frames through the test, no gap of a second, never marked frozen.
    const frames = await viewer.evaluate((from: number, to: number) => ((globalThis as any).frames as number[]).filter((t) => t >= from && t <= to), started, ended)
    const gaps = frames.slice(1).map((t, i) => t - frames[i]!)
    expect(frames.length).toBeGreaterThan(((ended - started) / 1000) * 5)
    expect(Math.max(...gaps)).toBeLessThan(1000)
    expect(await viewer.$(`[data-tile="${EHD}"] [data-frozen]`)).toBeNull()
    expect(c.errors().filter((e) => !/api\/network\//.test(e))).toEqual([])
  } finally {
    await viewer?.close()
  }
}, 180_000)
