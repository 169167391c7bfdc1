// Every device says where to watch it (`watch`): absolute URLs built on the host the request came to,
// filled by the viewer plugins that are loaded, null otherwise.
import { expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { connect } from 'node:net'
import { loadPlugin } from '../../core/loader'
import { definePlugin } from '../../core/plugin'
import { startTestServer } from '../helpers'
import { CONTRACT_PLUGINS, EHD, startContractServer } from './setup'

test('without viewer plugins every way is null, on every device', async () => {
  const s = await startContractServer()
  try {
    const devices = (await s.call('GET', '/api/devices')).body as any[]
    expect(devices.length).toBeGreaterThan(1)
    for (const d of devices) expect(d.watch).toEqual({ rtsp: null, whep: null, cockpit: null, mjpeg: null, snapshot: null })
  } finally {
    await s.stop()
  }
})

/** GET /api/devices with this Host header, over a raw socket (fetch sets its own Host). */
function devicesAt(url: string, host: string): Promise<any[]> {
  const { port } = new URL(url)
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1', () => socket.write(`GET /api/devices HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`))
    let text = ''
    socket.on('data', (chunk) => (text += chunk))
    socket.on('error', reject)
    socket.on('end', () => {
      const body = text.slice(text.indexOf('\r\n\r\n') + 4)
      // Bun answers a large body chunked: join the chunks.
      const chunked = /transfer-encoding: chunked/i.test(text.slice(0, text.indexOf('\r\n\r\n')))
      resolve(JSON.parse(chunked ? dechunk(body) : body))
    })
  })
}

function dechunk(body: string): string {
  let out = ''
  for (let at = 0; ; ) {
    const eol = body.indexOf('\r\n', at)
    const size = parseInt(body.slice(at, eol), 16)
    if (!size) return out
    out += body.slice(eol + 2, eol + 2 + size)
    at = eol + 2 + size + 2
  }
}

test("a viewer plugin's links are on the host the request came to, one cached answer per host", async () => {
  const seen: string[] = []
  const viewer = definePlugin({
    name: 'viewer',
    setup({ registry }) {
      registry.addWatchLink('snapshot', (bus_info, origin) => (seen.push(origin.host), `${origin.origin}/api/streams/${encodeURIComponent(bus_info)}/snapshot.jpg`), 'viewer')
      registry.addWatchLink('rtsp', (bus_info, origin) => (bus_info === EHD ? `rtsp://${origin.hostname}:8554/${encodeURIComponent(bus_info)}` : null), 'viewer')
      return new Elysia({ name: 'periscope:viewer' })
    },
  })
  const s = await startTestServer({ plugins: [...(await Promise.all(CONTRACT_PLUGINS.map(loadPlugin))), viewer], config: { simulate: 'default' } })
  try {
    const port = new URL(s.url).port
    const rov = (await devicesAt(s.url, `rov.local:${port}`)).find((d) => d.bus_info === EHD)
    expect(rov.watch).toEqual({
      rtsp: `rtsp://rov.local:8554/${encodeURIComponent(EHD)}`,
      whep: null,
      cockpit: null,
      mjpeg: null,
      snapshot: `http://rov.local:${port}/api/streams/${encodeURIComponent(EHD)}/snapshot.jpg`,
    })
    const others = (await devicesAt(s.url, `[::1]:${port}`)).filter((d) => d.bus_info !== EHD)
    expect(others.every((d) => d.watch.rtsp === null && d.watch.snapshot.startsWith(`http://[::1]:${port}/`))).toBe(true)
    // Cached per host: asking again builds no link.
    const built = seen.length
    await devicesAt(s.url, `rov.local:${port}`)
    expect(seen.length).toBe(built)
    // Two plugins cannot claim one way.
    expect(() => s.ctx.registry.addWatchLink('rtsp', () => null, 'another')).toThrow("watch link 'rtsp' is already provided by plugin 'viewer'")
  } finally {
    await s.stop()
  }
})
