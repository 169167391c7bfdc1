// --max-viewers: one setting caps the viewers of each camera over each way of watching (RTSP, WebRTC,
// MJPEG); the refusals themselves (503) need real video and are in the integration tier.
import { expect, test } from 'bun:test'
import { helpText, loadConfig } from '../../core/config'
import { startContractServer } from './setup'

test('--max-viewers / PERISCOPE_MAX_VIEWERS: 8 by default, 1 to 64, the flag winning over the variable; the old --whep-max-viewers is gone', () => {
  expect(loadConfig([]).maxViewers).toBe(8)
  expect(loadConfig(['--max-viewers', '2']).maxViewers).toBe(2)
  expect(loadConfig(['--max-viewers=64']).maxViewers).toBe(64)
  expect(loadConfig([], { PERISCOPE_MAX_VIEWERS: '3' }).maxViewers).toBe(3)
  expect(loadConfig(['--max-viewers', '4'], { PERISCOPE_MAX_VIEWERS: '3' }).maxViewers).toBe(4)
  for (const bad of ['0', '65', '2.5', 'many']) expect(() => loadConfig(['--max-viewers', bad])).toThrow(`max-viewers must be an integer from 1 to 64, got '${bad}'`)
  expect(() => loadConfig([], { PERISCOPE_MAX_VIEWERS: '0' })).toThrow('max-viewers must be an integer from 1 to 64')
  expect(() => loadConfig(['--whep-max-viewers', '2'])).toThrow('unknown option --whep-max-viewers')
  expect(helpText()).toMatch(/--max-viewers\s+PERISCOPE_MAX_VIEWERS\s+viewers per camera at once over each of RTSP, WebRTC \(WHEP and Cockpit together\) and MJPEG/)
})

test('RTSP, WHEP and MJPEG all read the one setting', async () => {
  const s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'jpeg', 'whep', 'rtsp'], config: { maxViewers: 3, rtspPort: 0 } })
  try {
    expect((await s.call('GET', '/api/rtsp')).body.max_viewers).toBe(3)
    expect((await s.call('GET', '/api/health')).body.plugins.whep.max_viewers_per_camera).toBe(3)
    // The MJPEG route documents its cap (its health shows it too, when GStreamer is installed).
    const doc = (await s.call('GET', '/openapi.json')).body
    expect(doc.paths['/api/streams/{bus_info}/mjpeg'].get.description).toContain('At most 3 viewers per camera')
    const jpeg = (await s.call('GET', '/api/health')).body.plugins.jpeg
    if (jpeg.state === 'ok') expect(jpeg.max_viewers_per_camera).toBe(3)
  } finally {
    await s.stop()
  }
})
