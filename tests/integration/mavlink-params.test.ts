// QGroundControl's camera settings sequence against the whole service (simulated cameras, real GStreamer),
// from a ground station that shares no code with it (tests/mavlink-gcs.ts, written from common.xml):
// heartbeat, CAMERA_INFORMATION, the camera definition downloaded from cam_definition_uri and parsed by
// an independent XML parser (python3's xml.etree.ElementTree) against QGroundControl's rules, every
// parameter read with PARAM_EXT_REQUEST_LIST, a PARAM_EXT_SET seen in GET /api/devices and read back
// with PARAM_EXT_REQUEST_READ, refusals (out of range, governed by an auto mode) acknowledged with
// nothing changed.
import { afterEach, beforeAll, expect, test } from 'bun:test'
import { until } from '../helpers'
import { bytesText, GroundStation, MAV, type Message, paramValue, paramValueBytes } from '../mavlink-gcs'
import { freePort, freeTcpPort, requireGStreamer } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

const EHD = 'usb-0000:00:14.0-1' // exploreHD: H.264, vendor options
const CID = { BRIGHTNESS: 0x00980900, EXPOSURE_AUTO: 0x009a0901, EXPOSURE_ABSOLUTE: 0x009a0902 }

let s: Service | null = null
let gcs: GroundStation | null = null
beforeAll(() => requireGStreamer())
afterEach(async () => {
  gcs?.close()
  await s?.kill()
  gcs = null
  s = null
})

interface DefParam {
  name: string
  type: string
  default: string | null
  min: string | null
  max: string | null
  step: string | null
  description: string | null
  options: { name: string; value: string; exclusions: string[] }[] | null
  updates: string[]
}
interface Definition {
  root: string
  version: string
  model: string
  vendor: string
  params: DefParam[]
}

/** The definition as python3's ElementTree reads it (a parser that is not ours). */
async function parseDefinition(xml: string): Promise<Definition> {
  const script = `
import json, sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
d = root.find('definition')
out = {'root': root.tag, 'version': d.get('version'), 'model': d.findtext('model'), 'vendor': d.findtext('vendor'), 'params': []}
for p in root.find('parameters').findall('parameter'):
    opts = p.find('options')
    out['params'].append({
        'name': p.get('name'), 'type': p.get('type'), 'default': p.get('default'), 'min': p.get('min'), 'max': p.get('max'), 'step': p.get('step'),
        'description': p.findtext('description'),
        'options': None if opts is None else [{'name': o.get('name'), 'value': o.get('value'), 'exclusions': [e.text for e in o.findall('exclusions/exclude')]} for o in opts.findall('option')],
        'updates': [u.text for u in p.findall('updates/update')],
    })
print(json.dumps(out))
`
  const proc = Bun.spawn(['python3', '-c', script], { stdin: new TextEncoder().encode(xml), stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  if (code !== 0) throw new Error(`python3 could not parse the definition: ${err}`)
  return JSON.parse(out)
}

/** QGroundControl's rules for a definition it loads (VehicleCameraControl::_loadSettings and QGCCameraParamIO). */
function checkQgcRules(def: Definition): void {
  expect(def.root).toBe('mavlinkcamera')
  expect(Number(def.version)).toBeGreaterThan(0)
  expect(def.model).toBeTruthy()
  expect(def.vendor).toBeTruthy()
  expect(def.params.length).toBeGreaterThan(0)
  const names = def.params.map((p) => p.name)
  expect(new Set(names).size).toBe(names.length) // a duplicate is dropped by QGC
  for (const p of def.params) {
    expect(p.name.length).toBeLessThanOrEqual(16) // PARAM_EXT's param_id is char[16]
    expect(p.name).toMatch(/^[\x21-\x7e]+$/)
    expect(['bool', 'uint8', 'int32']).toContain(p.type)
    expect(p.description, `${p.name} has a description`).toBeTruthy()
    for (const id of [...p.updates, ...(p.options ?? []).flatMap((o) => o.exclusions)]) expect(names).toContain(id)
    if (p.options) {
      expect(p.options.length).toBeGreaterThan(0)
      for (const o of p.options) expect(Number.isInteger(Number(o.value))).toBe(true)
      if (p.default !== null) expect(p.options.map((o) => o.value)).toContain(p.default)
    } else if (p.type === 'int32') {
      const [min, max, step] = [Number(p.min), Number(p.max), Number(p.step)]
      expect(Number.isInteger(min) && Number.isInteger(max) && step >= 1).toBe(true)
      expect(min).toBeLessThanOrEqual(max)
      if (p.default !== null) {
        expect(Number(p.default)).toBeGreaterThanOrEqual(min)
        expect(Number(p.default)).toBeLessThanOrEqual(max)
      }
    } else if (p.type === 'bool' && p.default !== null) expect(['0', '1']).toContain(p.default)
  }
}

const paramName = (id: number) => `CID_${id.toString(16).toUpperCase().padStart(8, '0')}`
const controlValue = async (id: number) => (await s!.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD).controls.find((c: any) => c.control_id === id).value

/** A service whose exploreHD streams, with its camera on the link to a ground station; answers its component id. */
async function cameraOnLink(): Promise<number> {
  gcs = await GroundStation.udp()
  s = await startService({ args: ['--mavlink', `udpout:127.0.0.1:${gcs.port}`, '--rtsp-port', String(freeTcpPort())] })
  const configured = await s.call('POST', '/api/devices/configure_stream', {
    bus_info: EHD,
    stream_type: 'UDP',
    stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
    encode_type: 'H264',
    enabled: true,
    endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  expect(configured.status, JSON.stringify(configured.body)).toBe(200)
  const health = await until('the camera on the link', async () => (await s!.call('GET', '/api/health')).body.plugins.mavlink, (h) => h?.cameras?.some((c: any) => c.bus_info === EHD), 30_000)
  const compid: number = health.cameras.find((c: any) => c.bus_info === EHD).component_id
  await gcs.next('a camera heartbeat', (m) => m.name === 'HEARTBEAT' && m.compid === compid, 15_000, 0)
  gcs.send('HEARTBEAT', { type: 6, autopilot: 8, system_status: 4, mavlink_version: 3 }) // MAV_TYPE_GCS, as QGC
  return compid
}

test("QGroundControl's camera sequence: definition, every parameter, a set seen over HTTP, refusals", async () => {
  const compid = await cameraOnLink()
  s = s!
  gcs = gcs!
  // CAMERA_INFORMATION points at the definition, on the address the stream URIs use.
  const info = await gcs.request(compid, 'CAMERA_INFORMATION')
  const uri = info.fields.cam_definition_uri as string
  expect(uri).toBe(`${s.url}/api/streams/${EHD}/camera.xml`)
  const version = info.fields.cam_definition_version as number
  expect(version).toBeGreaterThan(0)

  const res = await fetch(uri)
  expect(res.status).toBe(200)
  expect(res.headers.get('content-type')).toContain('xml')
  const def = await parseDefinition(await res.text())
  checkQgcRules(def)
  expect(Number(def.version)).toBe(version)
  expect(def.vendor).toBe(bytesText(info.fields.vendor_name as number[]))
  expect(def.model).toBe(bytesText(info.fields.model_name as number[]))
  // The controls as the API lists them: menus, switches and integers, and the auto modes' exclusions.
  const byName = new Map(def.params.map((p) => [p.name, p]))
  expect(byName.get(paramName(CID.BRIGHTNESS))).toMatchObject({ type: 'int32', min: '-64', max: '64', step: '1', default: '0', description: 'Brightness' })
  const autoExposure = byName.get(paramName(CID.EXPOSURE_AUTO))!
  expect(autoExposure.options).toEqual([
    { name: 'Manual Mode', value: '1', exclusions: [] },
    { name: 'Aperture Priority Mode', value: '3', exclusions: [paramName(CID.EXPOSURE_ABSOLUTE)] },
  ])
  expect(autoExposure.updates).toEqual([paramName(CID.EXPOSURE_ABSOLUTE)])
  const focusAuto = byName.get(paramName(0x009a090c))!
  expect(focusAuto).toMatchObject({ type: 'uint8', options: [{ value: '0', exclusions: [] }, { value: '1', exclusions: [paramName(0x009a090a)] }] })
  expect(byName.get(paramName(0x009a090a))).toMatchObject({ step: '5' })
  expect(def.params.some((p) => p.name.startsWith('VND_'))).toBe(true) // the exploreHD's vendor options
  expect(byName.has(paramName(0x009a0910))).toBe(false) // Privacy: read-only, nothing to set
  expect((await fetch(`${s.url}/api/streams/usb-nope/camera.xml`)).status).toBe(404)

  // PARAM_EXT_REQUEST_LIST: every parameter of the definition, each with the value the API shows.
  const since = gcs.messages.length
  gcs.send('PARAM_EXT_REQUEST_LIST', { target_system: 1, target_component: compid })
  const values = () => gcs!.messages.slice(since).filter((m) => m.name === 'PARAM_EXT_VALUE' && m.compid === compid)
  await gcs.next('every PARAM_EXT_VALUE', () => values().length >= def.params.length, 15_000, since)
  const listed = values()
  expect(listed.map((m) => m.fields.param_id).sort()).toEqual(def.params.map((p) => p.name).sort())
  expect(new Set(listed.map((m) => m.fields.param_index))).toEqual(new Set(def.params.map((_, i) => i)))
  for (const m of listed) expect(m.fields.param_count).toBe(def.params.length)
  const device = (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD)
  for (const m of listed) {
    const p = byName.get(m.fields.param_id as string)!
    expect(m.fields.param_type).toBe(p.type === 'int32' ? MAV.PARAM_EXT_TYPE_INT32 : MAV.PARAM_EXT_TYPE_UINT8)
    const control = device.controls.find((c: any) => (c.control_id >= 0 ? paramName(c.control_id) : `VND_${-c.control_id}`) === p.name)
    expect(paramValue(m), p.name).toBe(control.value)
  }

  const set = async (id: string, value: number, type: number = MAV.PARAM_EXT_TYPE_INT32) => {
    const at = gcs!.messages.length
    gcs!.send('PARAM_EXT_SET', { target_system: 1, target_component: compid, param_id: id, param_value: paramValueBytes(value, type), param_type: type })
    return gcs!.next(`PARAM_EXT_ACK for ${id}`, (m) => m.name === 'PARAM_EXT_ACK' && m.compid === compid && m.fields.param_id === id, 10_000, at)
  }
  const read = async (id: string, index = -1) => {
    const at = gcs!.messages.length
    gcs!.send('PARAM_EXT_REQUEST_READ', { target_system: 1, target_component: compid, param_id: index >= 0 ? '' : id, param_index: index })
    return gcs!.next(`PARAM_EXT_VALUE of ${id}`, (m) => m.name === 'PARAM_EXT_VALUE' && m.compid === compid && m.fields.param_id === id, 10_000, at)
  }

  // A set: accepted with the value the camera holds, seen over HTTP, read back by id and by index.
  const brightness = paramName(CID.BRIGHTNESS)
  const accepted = await set(brightness, 20)
  expect(accepted.fields).toMatchObject({ param_result: MAV.PARAM_ACK_ACCEPTED, param_type: MAV.PARAM_EXT_TYPE_INT32 })
  expect(paramValue(accepted)).toBe(20)
  expect(await controlValue(CID.BRIGHTNESS)).toBe(20)
  expect(paramValue(await read(brightness))).toBe(20)
  const index = listed.find((m) => m.fields.param_id === brightness)!.fields.param_index as number
  expect(paramValue(await read(brightness, index))).toBe(20)
  // A negative value travels as int32 bytes too.
  expect(paramValue(await set(brightness, -7))).toBe(-7)
  expect(await controlValue(CID.BRIGHTNESS)).toBe(-7)

  // Out of range: VALUE_UNSUPPORTED with the value still held, and nothing changed.
  const refused = await set(brightness, 1000)
  expect(refused.fields.param_result).toBe(MAV.PARAM_ACK_VALUE_UNSUPPORTED)
  expect(paramValue(refused)).toBe(-7)
  expect(await controlValue(CID.BRIGHTNESS)).toBe(-7)

  // The dependency the definition states: exposure is refused while auto exposure drives it, taken in manual.
  const exposure = paramName(CID.EXPOSURE_ABSOLUTE)
  expect((await set(exposure, 300)).fields.param_result).toBe(MAV.PARAM_ACK_VALUE_UNSUPPORTED)
  expect(await controlValue(CID.EXPOSURE_ABSOLUTE)).toBe(157)
  expect((await set(paramName(CID.EXPOSURE_AUTO), 2)).fields.param_result).toBe(MAV.PARAM_ACK_VALUE_UNSUPPORTED) // not a menu entry
  expect((await set(paramName(CID.EXPOSURE_AUTO), 1)).fields.param_result).toBe(MAV.PARAM_ACK_ACCEPTED)
  const manual = await set(exposure, 300)
  expect(manual.fields.param_result).toBe(MAV.PARAM_ACK_ACCEPTED)
  expect(await controlValue(CID.EXPOSURE_ABSOLUTE)).toBe(300)
  // A switch, as QGC sends a uint8 parameter.
  expect((await set(paramName(0x009a090c), 0, MAV.PARAM_EXT_TYPE_UINT8)).fields).toMatchObject({ param_result: MAV.PARAM_ACK_ACCEPTED, param_type: MAV.PARAM_EXT_TYPE_UINT8 })
  expect(await controlValue(0x009a090c)).toBe(0)

  // The values set are the camera's saved settings, and the definition's version did not move with them.
  expect((await gcs.request(compid, 'CAMERA_INFORMATION')).fields.cam_definition_version).toBe(version)
  expect(gcs.decoder.badChecksum).toBe(0)
}, 120_000)

test('a still over MAVLink: IMAGE_START_CAPTURE saves a JPEG listed in GET /api/recordings, CAMERA_IMAGE_CAPTURED carries the vehicle position', async () => {
  const compid = await cameraOnLink()
  const info = await gcs!.request(compid, 'CAMERA_INFORMATION')
  expect((info.fields.flags as number) & MAV.CAP_CAPTURE_IMAGE).toBe(MAV.CAP_CAPTURE_IMAGE)
  // The autopilot's position on the link (system 1, component 1), as ArduSub sends it.
  const position = { time_boot_ms: 1000, lat: 473977420, lon: 85455940, alt: -12_500, relative_alt: -15_000, hdg: 9000 }
  gcs!.send('GLOBAL_POSITION_INT', position, { sysid: 1, compid: 1 })
  // A ground station's own position is not the vehicle's: ignored.
  gcs!.send('GLOBAL_POSITION_INT', { ...position, lat: 1, lon: 1 })
  // QGroundControl's single shot: param3 = 1 image, param4 its sequence number.
  const shot = await gcs!.command(compid, MAV.CMD_IMAGE_START_CAPTURE, [0, 0, 1, 1], { timeoutMs: 10_000 })
  expect(shot.ack.fields.result).toBe(MAV.RESULT_ACCEPTED)
  const captured = await gcs!.next('CAMERA_IMAGE_CAPTURED', (m) => m.name === 'CAMERA_IMAGE_CAPTURED' && m.compid === compid, 30_000, shot.sentAt)
  expect(captured.fields).toMatchObject({ capture_result: 1, image_index: 0, lat: position.lat, lon: position.lon, alt: position.alt, relative_alt: position.relative_alt })
  expect(Math.abs((captured.fields.time_utc as number) / 1000 - Date.now())).toBeLessThan(60_000)
  const url = captured.fields.file_url as string
  expect(url).toMatch(new RegExp(`^${s!.url}/api/recordings/[^/]+\\.jpg$`))
  const name = decodeURIComponent(url.split('/').pop()!)
  const listed = (await s!.call('GET', '/api/recordings')).body.find((r: any) => `${r.name}.${r.format}` === name)
  expect(listed).toBeTruthy()
  const file = await fetch(url)
  expect(file.status).toBe(200)
  expect(file.headers.get('content-type')).toBe('image/jpeg')
  const jpeg = new Uint8Array(await file.arrayBuffer())
  expect([jpeg[0], jpeg[1]]).toEqual([0xff, 0xd8]) // SOI
  expect(jpeg.length).toBeGreaterThan(1000)
  // A series is not offered; another camera id is not this camera.
  expect((await gcs!.command(compid, MAV.CMD_IMAGE_START_CAPTURE, [0, 1, 0, 2])).ack.fields.result).toBe(MAV.RESULT_UNSUPPORTED)
  expect((await gcs!.command(compid, MAV.CMD_IMAGE_START_CAPTURE, [compid + 1, 0, 1, 3])).ack.fields.result).toBe(MAV.RESULT_DENIED)
}, 120_000)
