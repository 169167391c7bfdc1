// Why a stream failed, without a shell: a camera whose pipeline cannot be built (a GStreamer element
// that does not exist, as when a plugin package is missing) is really run by gst-launch-1.0, fails, and
// the supervisor's warning reaches GET /api/logs and the `log` event on /api/events with GStreamer's own
// words, beside the stream's backoff status.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Elysia } from 'elysia'
import { loadPlugin } from '../../core/loader'
import { definePlugin } from '../../core/plugin'
import { MockCameraBackend } from '../../drivers/mock/backend'
import { PRESETS } from '../../drivers/mock/cameras'
import { listenEvents, startTestServer, until, type TestServer } from '../helpers'
import { requireGStreamer } from './gstreamer.helpers'

const EHD = 'usb-0000:00:14.0-1'

/** One simulated exploreHD whose video comes from an element no GStreamer has. */
const brokenCamera = definePlugin({
  name: 'broken-camera',
  setup({ registry }) {
    const backend = new MockCameraBackend(PRESETS.single!)
    backend.videoSource = () => ({ kind: 'gst', description: 'periscopenosuchsrc' })
    registry.addCameraBackend(backend, 'broken-camera')
    return new Elysia({ name: 'periscope:broken-camera' })
  },
})

let s: TestServer
beforeAll(async () => {
  requireGStreamer()
  const plugins = [brokenCamera, ...(await Promise.all(['cameras', 'preferences', 'gstreamer'].map(loadPlugin)))]
  s = await startTestServer({ plugins, config: { simulate: 'single' } })
}, 30_000)

afterAll(async () => {
  await s?.stop()
})

test('a stream that fails in gst-launch-1.0 is in GET /api/logs and a log event, with its reason', async () => {
  const sse = listenEvents(`${s.url}/api/events`)
  try {
    await sse.ready
    expect((await s.call('POST', '/api/devices/restart_stream', { bus_info: EHD })).status).toBe(200)
    const failed = await until(
      'the failure in /api/logs',
      async () => (await s.call('GET', '/api/logs?level=warn')).body.entries.find((e: any) => e.msg === 'pipeline failed'),
      (entry) => entry !== undefined,
      20_000,
    )
    expect(failed).toMatchObject({ level: 'warn', fields: { plugin: 'gstreamer', bus_info: EHD } })
    expect(failed.fields.reason).toContain('no element "periscopenosuchsrc"')
    // The same entry, pushed to whoever watches the event stream.
    const event = await until('the log event', async () => sse.events.find((e) => e.type === 'log' && e.data.seq === failed.seq), (e) => e !== undefined, 5000)
    expect(event!.data).toEqual(failed)
    // And the device says the same in its status.
    const device = (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD)
    expect(device.stream_status.error).toContain('periscopenosuchsrc')
  } finally {
    sse.close()
    await s.call('POST', '/api/devices/unconfigure_stream', { bus_info: EHD })
  }
}, 45_000)
