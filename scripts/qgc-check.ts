// QGroundControl's camera sequence against a simulated Periscope camera, from a ground station built on
// the official MAVLink C headers (scripts/qgc-check/gcs.c on mavlink/c_library_v2). Not a test tier: the
// headers come from GitHub, which CI does not reach (tests/integration/mavlink*.test.ts run the same
// sequence in CI from a station written from common.xml). Every answer is compared with the HTTP API:
// the definition downloaded and parsed by Python's XML parser, every parameter read with the value the
// API shows, one set read back over HTTP, both video streams (RTSP, then WHEP), a still with the
// autopilot's position, listed in /api/recordings.
//   scripts/qgc-check.sh <c_library_v2 checkout>
import { existsSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { freeTcpPort, freeUdpPortPair, until } from '../tests/helpers'
import { freePort } from '../tests/integration/gstreamer.helpers'
import { startService } from '../tests/integration/service.helpers'

const headers = resolve(process.argv[2] ?? '/tmp/c_library_v2')
if (!existsSync(join(headers, 'common/mavlink.h'))) throw new Error(`${headers}/common/mavlink.h is missing: give a checkout of mavlink/c_library_v2`)
const EHD = 'usb-0000:00:14.0-1' // the default preset's exploreHD
const BRIGHTNESS = 'CID_00980900'
const [LAT, LON] = [473769123, 85417456]

const bin = join(mkdtempSync(join(tmpdir(), 'qgc-check-')), 'gcs')
const cc = Bun.spawnSync(['cc', '-O1', '-Wall', '-Wno-address-of-packed-member', '-I', headers, '-o', bin, join(import.meta.dir, 'qgc-check/gcs.c')], { stderr: 'pipe' })
if (cc.exitCode !== 0) throw new Error(`cc failed: ${cc.stderr.toString()}`)
const commit = Bun.spawnSync(['git', '-C', headers, 'log', '-1', '--format=%h'], { stdout: 'pipe', stderr: 'ignore' }).stdout.toString().trim() || 'not a git checkout'

const port = freeUdpPortPair()
const s = await startService({ args: ['--mavlink', `udpin:127.0.0.1:${port}`, '--rtsp-port', String(freeTcpPort())] })
let failed = 0
const check = (what: string, ok: boolean, detail = '') => {
  console.log(`${ok ? 'PASS' : 'FAIL'} ${what}${detail ? `: ${detail}` : ''}`)
  if (!ok) failed++
}
try {
  const configured = await s.call('POST', '/api/devices/configure_stream', {
    bus_info: EHD, stream_type: 'UDP', stream_format: { width: 640, height: 480, interval: { numerator: 1, denominator: 15 } },
    encode_type: 'H264', enabled: true, endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  if (configured.status !== 200) throw new Error(`configure_stream: ${JSON.stringify(configured.body)}`)
  const health = await until('the camera on the link', async () => (await s.call('GET', '/api/health')).body.plugins.mavlink, (h) => h?.cameras?.some((c: any) => c.bus_info === EHD), 30_000)
  const compid: number = health.cameras.find((c: any) => c.bus_info === EHD).component_id
  const device = await until('the RTSP and WHEP links', async () => (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD), (d) => !!d.watch?.rtsp && !!d.watch?.whep, 30_000)

  const gcs = Bun.spawnSync([bin, String(port), String(compid), BRIGHTNESS, '17', String(LAT), String(LON)], { stdout: 'pipe', stderr: 'pipe', timeout: 90_000 })
  const out = gcs.stdout.toString()
  console.log(`the C ground station (c_library_v2 ${commit}) said:\n${out.replace(/^/gm, '  ')}`)
  check('the C ground station ran the whole sequence', gcs.exitCode === 0, gcs.stderr.toString())
  const lines = (tag: string) => out.split('\n').filter((l) => l.startsWith(tag + ' ')).map((l) => l.slice(tag.length + 1))

  // CAMERA_INFORMATION → the definition, parsed by Python's own XML parser.
  const info = lines('INFO')[0] ?? ''
  const uri = info.split('|')[2] ?? ''
  check('CAMERA_INFORMATION names the camera definition', uri === `${s.url}/api/streams/${EHD}/camera.xml`, uri)
  const xml = await (await fetch(uri)).text()
  const py = Bun.spawnSync(['python3', '-c', 'import sys, xml.etree.ElementTree as E; r = E.fromstring(sys.stdin.read()); print("\\n".join(p.get("name") for p in r.iter("parameter")))'], { stdin: Buffer.from(xml), stdout: 'pipe', stderr: 'pipe' })
  const defined = py.stdout.toString().trim().split('\n').filter(Boolean)
  check('the definition parses (python xml.etree) and has parameters', py.exitCode === 0 && defined.length > 5, `${defined.length} parameters`)

  // Every parameter, each with the value the API shows.
  const params = lines('PARAM').map((l) => l.split(' ')).map(([index, id, type, value]) => ({ index: Number(index), id: id!, type: Number(type), value: Number(value) }))
  check('PARAM_EXT_REQUEST_LIST gave every parameter of the definition', JSON.stringify(params.map((p) => p.id).sort()) === JSON.stringify([...defined].sort()), `${params.length} of ${defined.length}`)
  const controlName = (c: any) => (c.control_id >= 0 ? `CID_${c.control_id.toString(16).toUpperCase().padStart(8, '0')}` : `VND_${-c.control_id}`)
  const wrong = params.filter((p) => device.controls.find((c: any) => controlName(c) === p.id)?.value !== p.value)
  check('each PARAM_EXT_VALUE is the value GET /api/devices shows', wrong.length === 0, wrong.map((p) => `${p.id}=${p.value}`).join(', '))

  // The set, read back over HTTP.
  const [setId, result, held] = (lines('SET')[0] ?? '').split(' ')
  const brightness = (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD).controls.find((c: any) => controlName(c) === BRIGHTNESS).value
  check('PARAM_EXT_SET accepted (PARAM_ACK_ACCEPTED) and GET /api/devices shows it', setId === BRIGHTNESS && result === '0' && held === '17' && brightness === 17, `ack ${result} ${held}, API ${brightness}`)

  // Both streams: RTSP first, then WHEP (VIDEO_STREAM_TYPE_WHEP = 4 in the C headers' common.h).
  const streams = lines('STREAM').map((l) => l.split(' ')).map(([id, count, type, , , uri]) => ({ id: Number(id), count: Number(count), type: Number(type), uri }))
  const sorted = streams.sort((a, b) => a.id - b.id)
  check('VIDEO_STREAM_INFORMATION: stream 1 RTSP, stream 2 WHEP, as watch says', sorted.length === 2 && sorted[0]!.type === 0 && sorted[0]!.uri === device.watch.rtsp && sorted[1]!.type === 4 && sorted[1]!.uri === device.watch.whep, JSON.stringify(sorted))

  // The still, with the autopilot's position, listed by the API.
  const [captured, lat, lon, , url] = (lines('IMAGE')[0] ?? '').split(' ')
  const listed = (await s.call('GET', '/api/recordings')).body as any[]
  const file = decodeURIComponent(url?.split('/').pop() ?? '')
  check('IMAGE_START_CAPTURE: CAMERA_IMAGE_CAPTURED with the position, the JPEG listed', lines('ACK')[0] === '0' && captured === '1' && Number(lat) === LAT && Number(lon) === LON && listed.some((r: any) => `${r.name}.${r.format}` === file), `${captured} ${lat} ${lon} ${url}`)
} finally {
  await s.kill()
}
console.log(failed ? `${failed} check(s) failed` : 'every check passed')
process.exit(failed ? 1 : 0)
