// The JPEG views' refusals (plugins/jpeg), with or without GStreamer: 404 unknown device, 503 nothing to
// stream or capture with, 422 for a bad ?height= in pydantic's shape, and both routes in the OpenAPI
// document with their content types. What needs real video is in tests/integration/jpeg.test.ts.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { TestServer } from '../helpers'
import { startContractServer, WEBCAM } from './setup'

let s: TestServer
let noGst: TestServer
beforeAll(async () => {
  // Without the gstreamer plugin: no streamer, so no stream runs.
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'jpeg'] })
  // And as on a machine without GStreamer at all: gst-launch-1.0 is looked up once, at setup.
  const path = process.env.PATH
  process.env.PATH = '/nonexistent'
  try {
    noGst = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'jpeg'] })
  } finally {
    process.env.PATH = path
  }
})
afterAll(async () => {
  await s.stop()
  await noGst.stop()
})

test('an unknown bus_info is 404 on both routes', async () => {
  for (const route of ['mjpeg', 'snapshot.jpg', 'snapshot.jpg?height=100']) {
    const r = await s.call('GET', `/api/streams/usb-nope/${route}`)
    expect(r.status).toBe(404)
    expect(r.body).toEqual({ detail: "No device with bus_info 'usb-nope' is connected" })
  }
})

test('MJPEG with no streamer is 503 saying why; without GStreamer both routes are 503 saying what to install', async () => {
  const r = await s.call('GET', `/api/streams/${WEBCAM}/mjpeg`)
  expect(r.status).toBe(503)
  expect(r.body.detail).toContain('No streamer is available')
  for (const route of ['mjpeg', 'snapshot.jpg']) {
    const n = await noGst.call('GET', `/api/streams/${WEBCAM}/${route}`)
    expect(n.status).toBe(503)
    expect(n.body.detail).toContain('gst-launch-1.0 not found')
  }
  expect((await noGst.call('GET', '/api/health')).body.plugins.jpeg.state).toBe('down')
})

test('?height= is validated as pydantic would: an integer from 16 to 4320', async () => {
  const cases: [string, unknown][] = [
    ['abc', { type: 'int_parsing', loc: ['query', 'height'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'abc' }],
    ['1.5', { type: 'int_parsing', loc: ['query', 'height'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: '1.5' }],
    ['8', { type: 'greater_than_equal', loc: ['query', 'height'], msg: 'Input should be greater than or equal to 16', input: '8', ctx: { ge: 16 } }],
    ['99999', { type: 'less_than_equal', loc: ['query', 'height'], msg: 'Input should be less than or equal to 4320', input: '99999', ctx: { le: 4320 } }],
  ]
  for (const [height, error] of cases) {
    const r = await s.call('GET', `/api/streams/${WEBCAM}/snapshot.jpg?height=${height}`)
    expect(r.status).toBe(422)
    expect(r.body).toEqual({ detail: [error] })
  }
})

test('both routes are documented with their content types, parameters and errors', async () => {
  const { body: doc } = await s.call('GET', '/openapi.json')
  const mjpeg = doc.paths['/api/streams/{bus_info}/mjpeg'].get
  expect(Object.keys(mjpeg.responses['200'].content)).toEqual(['multipart/x-mixed-replace'])
  expect(Object.keys(mjpeg.responses).sort()).toEqual(['200', '401', '403', '404', '409', '422', '503'])
  const snap = doc.paths['/api/streams/{bus_info}/snapshot.jpg'].get
  expect(Object.keys(snap.responses['200'].content)).toEqual(['image/jpeg'])
  expect(Object.keys(snap.responses).sort()).toEqual(['200', '401', '403', '404', '409', '422', '429', '502', '503', '504'])
  expect(snap.parameters).toContainEqual({ name: 'height', in: 'query', required: false, schema: expect.objectContaining({ type: 'integer', minimum: 16, maximum: 4320 }) })
  expect(snap.parameters).toContainEqual({ name: 'bus_info', in: 'path', required: true, schema: { type: 'string' } })
})
