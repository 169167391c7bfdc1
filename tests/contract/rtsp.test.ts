// The RTSP plugin's contract: its flag, its place in /api/health (off, up, or down saying what to
// install) and its status route in the OpenAPI document. Serving video is the integration tier's.
import { expect, test } from 'bun:test'
import { DEFAULT_PLUGINS, helpText, loadConfig } from '../../core/config'
import { startContractServer } from './setup'
import { freeTcpPort } from '../helpers'

test('--rtsp-port / PERISCOPE_RTSP_PORT: 8554 by default, 0 = off, a bad value refused; the plugin is on by default', () => {
  expect(loadConfig([]).rtspPort).toBe(8554)
  expect(loadConfig(['--rtsp-port', '9554']).rtspPort).toBe(9554)
  expect(loadConfig([], { PERISCOPE_RTSP_PORT: '0' }).rtspPort).toBe(0)
  expect(() => loadConfig(['--rtsp-port', '70000'])).toThrow('rtsp-port must be an integer from 0 to 65535')
  expect(() => loadConfig(['--rtsp-port', 'x'])).toThrow('rtsp-port must be an integer')
  expect(helpText()).toContain('PERISCOPE_RTSP_PORT')
  expect(DEFAULT_PLUGINS).toContain('rtsp')
})

test('off (--rtsp-port 0): health says so, the status route lists nothing, and it is documented', async () => {
  const s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'rtsp'], config: { rtspPort: 0 } })
  try {
    expect((await s.call('GET', '/api/health')).body.plugins.rtsp).toMatchObject({ state: 'ok', enabled: false })
    expect((await s.call('GET', '/api/rtsp')).body).toEqual({ enabled: false, port: 0, max_viewers: 8, state: 'stopped', error: null, mounts: [] })
    const doc = (await s.call('GET', '/openapi.json')).body
    expect(Object.keys(doc.paths['/api/rtsp'])).toEqual(['get'])
    expect(doc.paths['/api/rtsp'].get.responses['200'].content['application/json'].schema.properties.mounts).toBeDefined()
    const wrong = await s.call('POST', '/api/rtsp', {})
    expect(wrong.status).toBe(405)
    expect(wrong.body.detail).toBeString()
  } finally {
    await s.stop()
  }
})

test('on: the plugin is in /api/health, ok when GStreamer\'s RTSP server is installed, else down saying what to install', async () => {
  const rtspPort = freeTcpPort()
  const installed = Bun.spawnSync(['/usr/bin/python3', '-c', "import gi; gi.require_version('GstRtspServer', '1.0')"]).exitCode === 0
  const s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'rtsp'], config: { rtspPort } })
  try {
    const deadline = Date.now() + 15_000
    let rtsp: any
    do {
      rtsp = (await s.call('GET', '/api/health')).body.plugins.rtsp
      if (rtsp.state === (installed ? 'ok' : 'down')) break
      await Bun.sleep(50)
    } while (Date.now() < deadline)
    if (installed) expect(rtsp).toMatchObject({ state: 'ok', enabled: true, port: rtspPort, mounts: 0 })
    else expect(rtsp).toMatchObject({ state: 'down', detail: expect.stringContaining('scripts/setup/rtsp.sh') })
    // No stream runs: no mount, and the route still answers.
    expect((await s.call('GET', '/api/rtsp')).body).toMatchObject({ enabled: true, port: rtspPort, mounts: [] })
  } finally {
    await s.stop()
  }
}, 20_000)
