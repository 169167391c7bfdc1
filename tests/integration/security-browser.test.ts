// The defaults of docs/security.md in real Chromium: a page served from another origin (a tiny server on
// 127.0.0.2, which is not one of this machine's addresses) tries JSON, form and text/plain POSTs, PATCH
// and DELETE on every state-changing route of the OpenAPI document, and reads recordings and logs: the
// service answers every one of them 403, the page reads nothing, and the service's state is unchanged. A
// page on the vehicle's own address at another port (BlueOS's pages on port 80) works. With --token-scope
// all the console works after one prompt: its event stream and pictures ride on the cookie. And the
// live doors from another origin, against the whole service with a camera streaming H.264: the page
// cannot open a WHEP session, cannot open Cockpit's signalling socket (on either port, nor from a
// sandboxed frame, whose origin is null), shows MJPEG and snapshots in an <img> but cannot read their
// pixels, and cannot read the event stream; a page on the vehicle's own address does all of it.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { writeFileSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Server } from 'bun'
import { loadPlugin } from '../../core/loader'
import { freeTcpPort, startTestServer, until, type TestServer } from '../helpers'
import { launchBrowser, requireChromium } from './browser'
import { answerTokenPrompt, keptToken } from './console-page.helpers'
import { openConsole, waitInPage } from './console.helpers'
import { requireGStreamer } from './gstreamer.helpers'
import { h264Device, startService } from './service.helpers'

const EHD = 'usb-0000:00:14.0-1'
const RECORDING = 'dive-2026-01-01.mp4'

let service: TestServer
const pages: Server<undefined>[] = []

/** A page server on `hostname` (loopback): one blank page, the origin the browser runs the attack from. */
function pageServer(hostname: string): Server<undefined> {
  const server = Bun.serve({ hostname, port: 0, fetch: () => new Response('<!doctype html><title>elsewhere</title><p>a page elsewhere</p>', { headers: { 'content-type': 'text/html' } }) })
  pages.push(server)
  return server
}

beforeAll(async () => {
  requireChromium()
  const plugins = await Promise.all(['mock', 'cameras', 'preferences', 'dwe', 'recordings', 'metrics'].map(loadPlugin))
  service = await startTestServer({ plugins, config: { simulate: 'default' } })
  mkdirSync(join(service.dataDir, 'recordings'), { recursive: true })
  writeFileSync(join(service.dataDir, 'recordings', RECORDING), new Uint8Array(4096))
})

afterAll(async () => {
  for (const p of pages) p.stop(true)
  await service?.stop()
})

/** What a change could touch: the devices, the preferences, the recordings (and a recording's bytes). */
async function state(): Promise<unknown> {
  const read = async (path: string) => (await service.call('GET', path)).body
  return { devices: await read('/api/devices'), preferences: await read('/api/preferences'), recordings: await read('/api/recordings') }
}

test('a page on another origin: every state-changing route, in every way a page can send, refused 403; reads of recordings and logs refused; nothing changed', async () => {
  const doc = (await service.call('GET', '/openapi.json')).body
  const routes = [...new Set(Object.entries<Record<string, unknown>>(doc.paths).filter(([, ops]) => Object.keys(ops).some((m) => !['get', 'head', 'options'].includes(m))).map(([template]) => template.replace('{name}', RECORDING).replace(/\{[^}]+\}/g, EHD)))]
  expect(routes.length).toBeGreaterThan(15)
  const reads = ['/api/recordings', `/api/recordings/${RECORDING}`, `/api/recordings/${RECORDING}/download`, '/api/logs']
  const seen: number[] = []
  const answered: string[] = []
  const stopWatching = service.ctx.requests.watch(({ method, route, status }) => {
    seen.push(status)
    answered.push(`${status} ${method} ${route}`)
  })
  const before = await state()
  expect(JSON.stringify(before)).toContain(RECORDING)
  // The request log reports an answer once its body is sent: wait for state()'s three, then watch afresh.
  await until("state()'s reads reported", async () => answered, (a) => ['/api/devices', '/api/preferences', '/api/recordings'].every((p) => a.includes(`200 GET ${p}`)))
  seen.length = 0
  answered.length = 0
  const stranger = pageServer('127.0.0.2')
  const browser = await launchBrowser()
  try {
    const page = await browser.newPage()
    await page.goto(`http://127.0.0.2:${stranger.port}/`, { waitUntil: 'domcontentloaded' })
    const outcomes = await page.evaluate(
      async (base: string, routes: string[], reads: string[], bus: string) => {
        const json = JSON.stringify({ bus_info: bus, nickname: 'pwned', default_stream: { host: '127.0.0.9', port: 5600 }, new_name: 'pwned.mp4' })
        const attempts: [string, RequestInit][] = [
          ['JSON POST', { method: 'POST', headers: { 'content-type': 'application/json' }, body: json }],
          // A form and text/plain need no preflight: sent as they are (no-cors), the page sees nothing back.
          ['form POST', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: `bus_info=${bus}&nickname=pwned` }],
          ['text/plain POST', { method: 'POST', mode: 'no-cors', headers: { 'content-type': 'text/plain' }, body: json }],
          ['PATCH', { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: json }],
          ['DELETE', { method: 'DELETE' }],
        ]
        const out: { what: string; result: string }[] = []
        const tryIt = async (what: string, url: string, init: RequestInit) => {
          try {
            const res = await fetch(url, init)
            // An opaque answer (no-cors) tells the page nothing: not its status, not its body.
            out.push({ what, result: res.type === 'opaque' ? 'opaque' : `read ${res.status}: ${(await res.text()).slice(0, 80)}` })
          } catch {
            out.push({ what, result: 'refused' })
          }
        }
        for (const route of routes) for (const [kind, init] of attempts) await tryIt(`${kind} ${route}`, base + route, init)
        for (const read of reads) {
          await tryIt(`GET ${read}`, base + read, {})
          await tryIt(`GET ${read} (no-cors)`, base + read, { mode: 'no-cors' })
        }
        // A real form submitted into a frame, as a page would without script-visible fetch.
        const document = (globalThis as any).document
        const frame = document.createElement('iframe')
        frame.name = 'sink'
        document.body.append(frame)
        const form = document.createElement('form')
        Object.assign(form, { method: 'POST', action: `${base}/api/devices/set_nickname`, target: 'sink', enctype: 'text/plain' })
        const field = document.createElement('input')
        Object.assign(field, { name: `{"bus_info":"${bus}","nickname":"pwned","x":"`, value: '"}' })
        form.append(field)
        document.body.append(form)
        await new Promise<void>((resolve) => {
          frame.onload = () => resolve()
          form.submit()
        })
        return out
      },
      service.url,
      routes,
      reads,
      EHD,
    )
    expect(outcomes.length).toBe(routes.length * 5 + reads.length * 2)
    // The page read nothing back: each attempt failed or was opaque.
    expect(outcomes.filter((o) => o.result.startsWith('read'))).toEqual([])
    // And the service refused every request that reached it (preflights too), with 403 and nothing else.
    await until('the form submission answered', async () => seen.length, (n) => n > routes.length * 2)
    expect(answered.filter((a) => !a.startsWith('403 '))).toEqual([])
    expect(seen.length).toBeGreaterThan(routes.length * 5)
  } finally {
    stopWatching()
    await browser.close()
  }
  expect(await state()).toEqual(before)
  expect((await service.call('GET', `/api/recordings/${RECORDING}/download`)).status).toBe(200)
}, 120_000)

test("a page on the vehicle's own address at another port (BlueOS's pages on port 80): changes and reads work, with CORS", async () => {
  const own = pageServer('127.0.0.1')
  const browser = await launchBrowser()
  try {
    const page = await browser.newPage()
    await page.goto(`http://127.0.0.1:${own.port}/`, { waitUntil: 'domcontentloaded' })
    const result = await page.evaluate(async (base: string, bus: string) => {
      const changed = await fetch(`${base}/api/devices/set_nickname`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bus_info: bus, nickname: 'from-port-80' }) })
      const list = await fetch(`${base}/api/recordings`)
      return { changed: changed.status, recordings: list.status, names: ((await list.json()) as { name: string }[]).length }
    }, service.url, EHD)
    expect(result).toEqual({ changed: 200, recordings: 200, names: 1 })
    expect((await service.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD).nickname).toBe('from-port-80')
  } finally {
    await browser.close()
  }
}, 60_000)

test('--token-scope all: the console asks once, then its pages, event stream and pictures work; a reload asks nothing', async () => {
  const c = await openConsole({ args: ['--token', 'look-only', '--token-scope', 'all'] })
  try {
    const auth = { authorization: 'Bearer look-only' }
    await c.open('cameras')
    // Without the token the API answers 401 to a read; the page asks for it once.
    expect((await fetch(`${c.origin}/api/devices`)).status).toBe(401)
    await answerTokenPrompt(c.page, 'look-only')
    await waitInPage(c.page, 'the camera cards', () => (globalThis as any).document.querySelector('main [data-cards] .card'), 20_000)
    expect(await keptToken(c.page)).toBe('look-only')
    // The event stream (an EventSource: no header, the cookie) carries a change made elsewhere to the page.
    const nickname = `seen-${Date.now()}`
    await until('the change made', () => fetch(`${c.origin}/api/devices/set_nickname`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ bus_info: EHD, nickname }) }), (r) => r.status === 200)
    await c.page.waitForFunction((bus: string, n: string) => (globalThis as any).document.querySelector(`[data-device="${bus}"] input[data-nickname]`)?.value === n, { timeout: 15_000, polling: 100 }, EHD, nickname)
    // What the browser fetches by itself (a snapshot <img>) is served: the cookie.
    const picture = await c.page.evaluate(async (bus: string) => {
      const img = new (globalThis as any).Image()
      img.src = `api/streams/${encodeURIComponent(bus)}/snapshot.jpg`
      return new Promise<string>((resolve) => {
        img.onload = () => resolve(`loaded ${img.naturalWidth}`)
        img.onerror = () => resolve('failed')
      })
    }, EHD)
    expect(picture).toMatch(/^loaded \d+/)
    // A reload keeps the tab's token: no second prompt.
    await c.open('recordings')
    await c.open('cameras')
    await waitInPage(c.page, 'the camera cards again', () => (globalThis as any).document.querySelector('main [data-cards] .card'), 20_000)
    expect(await c.page.$('dialog[open]')).toBeNull()
    expect(c.errors()).toEqual([])
  } finally {
    await c.close()
  }
}, 120_000)

/** What a page can do with the live doors (run in the page: WHEP, the signalling socket on both ports and from a sandboxed frame, MJPEG and snapshot pixels, events). */
async function liveDoors(base: string, cockpitPort: number, bus: string) {
  const g = globalThis as any
  const out: Record<string, string> = {}
  // WHEP: a real offer, as a player makes it.
  const pc = new g.RTCPeerConnection()
  pc.addTransceiver('video', { direction: 'recvonly' })
  await pc.setLocalDescription(await pc.createOffer())
  try {
    const res = await fetch(`${base}/api/streams/${encodeURIComponent(bus)}/whep`, { method: 'POST', headers: { 'content-type': 'application/sdp' }, body: pc.localDescription.sdp })
    out.whep = `read ${res.status}`
  } catch {
    out.whep = 'refused'
  }
  pc.close()
  // The signalling socket: opened, or closed before it opened.
  const socket = (url: string) =>
    new Promise<string>((resolve) => {
      const ws = new g.WebSocket(url)
      ws.onopen = () => {
        ws.close()
        resolve('opened')
      }
      ws.onclose = () => resolve('refused')
    })
  out.signalling = await socket(`${base.replace('http:', 'ws:')}/api/cockpit/signalling`)
  out.signallingPort = await socket(`ws://127.0.0.1:${cockpitPort}`)
  // From a sandboxed frame: its origin is null, as a local file's and Cockpit's desktop app's.
  out.sandboxed = await new Promise<string>((resolve) => {
    const frame = g.document.createElement('iframe')
    frame.sandbox = 'allow-scripts'
    frame.srcdoc = `<script>const ws = new WebSocket('ws://127.0.0.1:${cockpitPort}'); ws.onopen = () => parent.postMessage('opened', '*'); ws.onclose = () => parent.postMessage('refused', '*')<\/script>`
    g.addEventListener('message', (e: any) => resolve(String(e.data)), { once: true })
    g.document.body.append(frame)
  })
  // Pictures: shown in an <img>, their pixels read through a canvas.
  const picture = (url: string, crossOrigin = false) =>
    new Promise<string>((resolve) => {
      const img = new g.Image()
      if (crossOrigin) img.crossOrigin = 'anonymous' // asks with an Origin: readable only where CORS allows it
      const started = Date.now()
      const look = () => {
        // Drawn once whole (complete: a JPEG, or an MJPEG's first frame): an image still arriving draws nothing, and leaves the canvas clean.
        if (img.complete && img.naturalWidth > 0) {
          const canvas = g.document.createElement('canvas')
          canvas.width = img.naturalWidth
          canvas.height = img.naturalHeight
          const context = canvas.getContext('2d')
          context.drawImage(img, 0, 0)
          let read: string
          try {
            context.getImageData(0, 0, 1, 1)
            read = 'pixels read'
          } catch (err: any) {
            read = err.name
          }
          const width = img.naturalWidth
          img.src = '' // the MJPEG connection ends with it
          resolve(`shown ${width}, ${read}`)
        } else if (Date.now() - started > 20_000) resolve('not shown')
        else setTimeout(look, 100)
      }
      img.onerror = () => resolve('not shown')
      img.src = url
      look()
    })
  out.mjpeg = await picture(`${base}/api/streams/${encodeURIComponent(bus)}/mjpeg`)
  out.snapshot = await picture(`${base}/api/streams/${encodeURIComponent(bus)}/snapshot.jpg?height=240`)
  out.snapshotCors = await picture(`${base}/api/streams/${encodeURIComponent(bus)}/snapshot.jpg?height=360`, true)
  try {
    const res = await fetch(`${base}/api/streams/${encodeURIComponent(bus)}/snapshot.jpg?height=240`)
    out.snapshotFetch = `read ${res.status} ${(await res.arrayBuffer()).byteLength > 0 ? 'bytes' : 'empty'}`
  } catch {
    out.snapshotFetch = 'refused'
  }
  // Events: an EventSource, which asks with an Origin.
  out.events = await new Promise<string>((resolve) => {
    const source = new g.EventSource(`${base}/api/events`)
    source.onmessage = () => {
      source.close()
      resolve('read')
    }
    source.onopen = () => {
      source.close()
      resolve('opened')
    }
    source.onerror = () => {
      source.close()
      resolve('refused')
    }
  })
  return out
}

test('the live doors from another origin: no WHEP session, no signalling socket (either port, nor a sandboxed frame), MJPEG and snapshots shown but their pixels unreadable, no events; the same page on the vehicle\'s own address gets all of them', async () => {
  requireGStreamer()
  const cockpitPort = freeTcpPort()
  const live = await startService({ args: ['--cockpit-port', String(cockpitPort)] })
  const stranger = pageServer('127.0.0.2')
  const own = pageServer('127.0.0.1')
  const browser = await launchBrowser()
  try {
    const cam = await h264Device(live)
    const configured = await live.call('POST', '/api/devices/configure_stream', {
      bus_info: cam.bus_info,
      stream_type: 'UDP',
      stream_format: { width: cam.width, height: cam.height, interval: { numerator: 1, denominator: cam.fps } },
      encode_type: 'H264',
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port: freeTcpPort() }],
    })
    expect(configured.status).toBe(200)
    await until('the stream running', () => live.call('GET', '/api/devices'), (r) => r.body.find((d: any) => d.bus_info === cam.bus_info)?.stream_status?.state === 'running', 20_000)
    const plugins = async () => (await live.call('GET', '/api/health')).body.plugins

    const page = await browser.newPage()
    await page.goto(`http://127.0.0.2:${stranger.port}/`, { waitUntil: 'domcontentloaded' })
    const elsewhere = await page.evaluate(liveDoors, live.url, cockpitPort, cam.bus_info)
    expect(elsewhere).toEqual({
      whep: 'refused',
      signalling: 'refused',
      signallingPort: 'refused',
      sandboxed: 'refused',
      mjpeg: expect.stringMatching(/^shown [1-9]\d*, SecurityError$/),
      snapshot: expect.stringMatching(/^shown [1-9]\d*, SecurityError$/),
      snapshotCors: 'not shown',
      snapshotFetch: 'refused',
      events: 'refused',
    })
    expect((await plugins()).whep.sessions).toBe(0)
    await page.close()

    // The vehicle's own address on another port (BlueOS's pages on port 80): every door opens.
    const mine = await browser.newPage()
    await mine.goto(`http://127.0.0.1:${own.port}/`, { waitUntil: 'domcontentloaded' })
    const home = await mine.evaluate(liveDoors, live.url, cockpitPort, cam.bus_info)
    expect(home).toMatchObject({ whep: 'read 201', signalling: 'opened', signallingPort: 'opened', sandboxed: 'refused', mjpeg: expect.stringMatching(/^shown [1-9]\d*, SecurityError$/), snapshotCors: expect.stringMatching(/^shown [1-9]\d*, pixels read$/), snapshotFetch: 'read 200 bytes', events: 'opened' })
    await mine.close()
  } finally {
    await browser.close()
    await live.kill()
  }
}, 120_000)
