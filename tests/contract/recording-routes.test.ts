// Recording while streaming, its refusals (no GStreamer needed): every device carries `recording`;
// start/stop_recording answer 404 for an unknown camera, 503 without a streamer, 409 with what to do
// when the stream does not run, 422 for a bad body; all documented in /openapi.json.
import { Elysia } from 'elysia'
import { expect, test } from 'bun:test'
import { createLogger } from '../../core/log'
import { definePlugin } from '../../core/plugin'
import { loadPlugin } from '../../core/loader'
import { GstStreamer } from '../../drivers/gstreamer/streamer'
import { startTestServer } from '../helpers'
import { CONTRACT_PLUGINS, EHD, startContractServer } from './setup'

const ROUTES = ['/api/devices/start_recording', '/api/devices/stop_recording']

test('every device carries an inactive recording object; without a streamer both routes answer 503, an unknown camera 404', async () => {
  const s = await startContractServer()
  try {
    const { body } = await s.call('GET', '/api/devices')
    expect(body.length).toBeGreaterThan(0)
    for (const d of body) expect(d.recording).toEqual({ active: false, file: null, started: null, bytes: 0, error: null })
    for (const route of ROUTES) {
      expect(await s.call('POST', route, { bus_info: EHD })).toMatchObject({ status: 503, body: { detail: expect.stringContaining('GStreamer') } })
      expect(await s.call('POST', route, { bus_info: 'usb-no-such-camera' })).toMatchObject({ status: 404, body: { detail: expect.stringContaining('usb-no-such-camera') } })
    }
  } finally {
    await s.stop()
  }
})

test('with a streamer but no running stream: 409 saying to start the stream first', async () => {
  // The real GStreamer streamer: constructing it runs nothing, and with no job started no stream runs.
  const streamer = definePlugin({
    name: 'idle-streamer',
    setup({ registry }) {
      registry.provide('streamer', new GstStreamer({ log: createLogger('error'), emit: () => {} }), 'idle-streamer')
      return new Elysia({ name: 'periscope:idle-streamer' })
    },
  })
  const plugins = [...(await Promise.all(CONTRACT_PLUGINS.map(loadPlugin))), streamer]
  const s = await startTestServer({ plugins, config: { simulate: 'default' } })
  try {
    const started = await s.call('POST', '/api/devices/start_recording', { bus_info: EHD })
    expect(started.status).toBe(409)
    expect(started.body.detail).toMatch(/stream of .* is not running.*restart_stream/)
    const stopped = await s.call('POST', '/api/devices/stop_recording', { bus_info: EHD })
    expect(stopped.status).toBe(409)
    expect(stopped.body.detail).toMatch(/restart_stream/)
    expect((await s.call('POST', '/api/devices/start_recording', { bus_info: 'usb-x' })).status).toBe(404)
  } finally {
    await s.stop()
  }
})

test('a bad body is a 422 in the validation shape; both routes are documented with their errors', async () => {
  const s = await startContractServer()
  try {
    for (const route of ROUTES) {
      const missing = await s.call('POST', route, { bus: EHD })
      expect(missing.status).toBe(422)
      expect(missing.body.detail[0]).toMatchObject({ type: 'missing', loc: ['body', 'bus_info'] })
      expect((await s.call('POST', route, { bus_info: 5 })).status).toBe(422)
      expect((await s.call('POST', route, '{')).status).toBe(422)
      expect((await s.call('GET', route)).status).toBe(405)
    }
    const doc = (await s.call('GET', '/openapi.json')).body
    for (const route of ROUTES) expect(Object.keys(doc.paths[route].post.responses)).toEqual(expect.arrayContaining(['200', '404', '409', '422', '503']))
    expect(doc.components.schemas.DeviceModel.properties.recording).toBeDefined()
  } finally {
    await s.stop()
  }
})
