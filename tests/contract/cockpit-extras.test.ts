// What Cockpit reads from this extension (plugins/cockpit/extras.ts): the file /register_service names,
// in the shape of Cockpit's ExtrasJsonSchema (src/libs/blueos/schemas.ts: a widget needs a name, an
// iframeUrl and an icon; an http-request action an absolute URL, a method, headers, urlParams and a
// body; a joystick suggestion an action's id, a button and a modifier key); each camera's widget page
// (read-only, framed by anyone); and the rule that lets Cockpit's actions through: the vehicle's own
// origins may change things, others may not (docs/security.md).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { TestServer } from '../helpers'
import { EHD, LEADER, startContractServer } from './setup'

let s: TestServer
beforeAll(async () => {
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'whep', 'cockpit', 'blueos'] })
})
afterAll(() => s.stop())

test("/register_service names the extras file, and it is Cockpit's shape: a widget per camera that streams itself (not a led follower), three actions each, joystick suggestions naming them", async () => {
  const register = (await s.call('GET', '/register_service')).body
  const { status, body } = await s.call('GET', register.extras.cockpit)
  expect(status).toBe(200)
  expect(body.targetCockpitApiVersion).toMatch(/^1\.\d+\.\d+$/)
  expect(body.targetSystem).toBe('Cockpit')
  const devices = (await s.call('GET', '/api/devices')).body as any[]
  const cameras = devices.filter((d) => !d.leader).map((d) => d.bus_info)
  expect(cameras).toContain(LEADER)
  expect(body.widgets.map((w: any) => w.iframeUrl).sort()).toEqual(cameras.map((b) => `/widget/${encodeURIComponent(b)}`).sort())
  for (const w of body.widgets) {
    expect(w.name).toStartWith('Periscope: ')
    expect(w.useExtensionPathAsBaseUrl).toBe(true)
    expect((await fetch(s.url + w.iframeIcon)).headers.get('content-type')).toBe('image/svg+xml')
  }
  expect(body.actions).toHaveLength(cameras.length * 3)
  // Taken first: Bun's toMatchObject below leaves its matchers in the object it checks.
  const ids = new Set<string>(body.actions.map((a: any) => a.id))
  for (const a of body.actions) {
    expect(a).toMatchObject({ id: expect.stringMatching(/^periscope-[a-z-]+-[A-Za-z0-9-]+$/), type: 'http-request', config: { method: 'POST', urlParams: {}, headers: { 'Content-Type': 'application/json' } } })
    // Cockpit fills {{ vehicle-address }} in, then builds new URL(url).
    const url = new URL(a.config.url.replace('{{ vehicle-address }}', '192.168.2.2'))
    expect(url.port).toBe(new URL(s.url).port)
    expect(['/api/devices/start_recording', '/api/devices/stop_recording', '/api/devices/capture_still']).toContain(url.pathname)
    expect(cameras).toContain(JSON.parse(a.config.body).bus_info)
  }
  expect(ids.size).toBe(body.actions.length)
  const suggestions = body.joystickSuggestions.flatMap((g: any) => g.buttonMappingSuggestions)
  expect(suggestions).toHaveLength(3)
  for (const m of suggestions) {
    expect(ids.has(m.actionId)).toBe(true)
    expect(m).toMatchObject({ actionProtocol: 'cockpit-action', modifierKey: 'shift', button: expect.any(Number) })
  }
})

test("a camera's widget page: bare HTML, relative paths (BlueOS's prefix), any page may frame it, scripts from here only; unknown camera 404", async () => {
  const res = await fetch(`${s.url}/widget/${encodeURIComponent(EHD)}`)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toStartWith('text/html')
  const policy = res.headers.get('content-security-policy')!
  expect(policy).toContain('frame-ancestors *')
  expect(policy).toContain("script-src 'self'")
  const html = await res.text()
  expect(html).toContain('<script src="../widget-player.js"></script>')
  expect(html).toContain(`data-bus-info="${EHD}"`)
  expect(html).not.toMatch(/(src|href)="\//)
  const player = await fetch(`${s.url}/widget-player.js`)
  expect(player.headers.get('content-type')).toStartWith('text/javascript')
  expect(await player.text()).toContain("'api/streams/'")
  const unknown = await s.call('GET', '/widget/usb-nowhere')
  expect(unknown.status).toBe(404)
  expect(unknown.body.detail).toContain('usb-nowhere')
})

test("Cockpit's actions get through from the vehicle's own origin and are refused from another; a still needs the jpeg plugin (503 without), an unknown camera is 404", async () => {
  const port = new URL(s.url).port
  const post = (path: string, origin: string, bus_info = EHD) => fetch(s.url + path, { method: 'POST', headers: { origin, 'content-type': 'application/json' }, body: JSON.stringify({ bus_info }) })
  // Cockpit served by BlueOS on the vehicle (here: the service's own address on another port).
  const fromVehicle = await post('/api/devices/stop_recording', `http://127.0.0.1:${Number(port) + 1}`)
  expect(fromVehicle.status).not.toBe(403)
  const fromElsewhere = await post('/api/devices/stop_recording', 'http://cockpit.elsewhere.example')
  expect(fromElsewhere.status).toBe(403)
  const still = await post('/api/devices/capture_still', `http://127.0.0.1:${port}`)
  expect(still.status).toBe(503)
  expect(((await still.json()) as any).detail).toContain('No still can be taken')
  const unknown = await post('/api/devices/capture_still', `http://127.0.0.1:${port}`, 'usb-nowhere')
  expect(unknown.status).toBe(404)
})
