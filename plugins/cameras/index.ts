// The cameras plugin: spec operations 1–6 and the anchor's stream/nickname/follower extras, over the
// DeviceManager. Camera backends (mock, v4l2) and vendor definitions arrive through the registry.
import { Elysia } from 'elysia'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { typed } from '../../core/validation'
import {
  BusInfoRequest,
  ConfigureStreamRequest,
  DeviceModel,
  DeviceRecordingModel,
  FollowerRequest,
  NotifyCameraRequest,
  RecordWhileArmedRequest,
  SetNicknameRequest,
  SetUVCControlRequest,
  SuccessModel,
} from '../../core/schemas'
import { t } from 'elysia'
import { DeviceManager } from './devices'

export default definePlugin({
  name: 'cameras',
  setup(ctx) {
    const devices = new DeviceManager(ctx)
    ctx.registry.setDeviceDirectory(devices)
    const tag = 'cameras'
    ctx.lifecycle({ start: () => devices.start(), stop: () => devices.stop(), health: () => devices.health() })
    return new Elysia({ name: 'periscope:cameras' })
      .get('/api/devices', ({ request }) => new Response(devices.listJson(request.url), { headers: { 'content-type': 'application/json' } }), {
        ...docs({ tag, summary: 'Every device with its cameras, controls, stream and group', ok: t.Array(DeviceModel) }),
      })
      .post(
        '/api/devices/set_uvc_control',
        typed({ body: SetUVCControlRequest }, ({ body }) => devices.setControl(body.bus_info, body.control_id, body.value)),
        {
          ...docs({
            tag,
            summary: 'Set a UVC control',
            description:
              'Checked against the control\'s flags first (type, range, step, menu, read-only, inactive); answers the value the hardware holds afterwards and saves it. Negative ids are vendor options.',
            body: SetUVCControlRequest,
            ok: t.Object({ success: t.Boolean(), value: t.Union([t.Number(), t.String()]) }),
            errors: [404, 409, 502, 504, 507],
          }),
        },
      )
      .post(
        '/api/devices/add_follower',
        typed({ body: FollowerRequest }, ({ body }) => devices.addFollower(body.leader_bus_info, body.follower_bus_info, false)),
        { ...docs({ tag, summary: 'Add a follower to a leader', body: FollowerRequest, ok: SuccessModel, errors: [404, 409, 503, 507] }) },
      )
      .post(
        '/api/devices/external/add_follower',
        typed({ body: FollowerRequest }, ({ body }) => devices.addFollower(body.leader_bus_info, body.follower_bus_info, true)),
        {
          ...docs({
            tag,
            summary: 'Add a follower to a leader, even when the follower is externally managed',
            body: FollowerRequest,
            ok: SuccessModel,
            errors: [404, 409, 503, 507],
          }),
        },
      )
      .post(
        '/api/devices/remove_follower',
        typed({ body: FollowerRequest }, ({ body }) => devices.removeFollower(body.leader_bus_info, body.follower_bus_info)),
        { ...docs({ tag, summary: 'Remove a follower from its leader', body: FollowerRequest, ok: SuccessModel, errors: [404, 409, 503, 507] }) },
      )
      .post(
        '/api/devices/external/notify_camera',
        typed({ body: NotifyCameraRequest }, ({ body }) => devices.notifyCamera(body.bus_info, body.event ?? 'DEVICE_MANAGED')),
        {
          ...docs({
            tag,
            summary: 'An external tool took, released or reconfigured a camera',
            description: 'DEVICE_MANAGED (the default): we stop our stream and leave the camera alone. DEVICE_UNMANAGED: ours again. STREAM_START: re-read the active format into the stream.',
            body: NotifyCameraRequest,
            ok: SuccessModel,
            errors: [404, 409, 502, 503, 507],
          }),
        },
      )
      .post('/api/devices/restart_stream', typed({ body: BusInfoRequest }, ({ body }) => devices.restartStream(body.bus_info)), {
        ...docs({
          tag,
          summary: "Restart a device's stream (enables it; a follower restarts its leader's group)",
          body: BusInfoRequest,
          ok: SuccessModel,
          errors: [404, 409, 503, 507],
        }),
      })
      .post('/api/devices/configure_stream', typed({ body: ConfigureStreamRequest }, ({ body }) => devices.configureStream(body)), {
        ...docs({
          tag,
          summary: 'Configure, and start or stop, a device stream',
          description: 'The format must be one the camera offers; a 422 says what it offers. The configuration is saved before the stream starts.',
          body: ConfigureStreamRequest,
          ok: SuccessModel,
          errors: [404, 409, 503, 507],
        }),
      })
      .post('/api/devices/unconfigure_stream', typed({ body: BusInfoRequest }, ({ body }) => devices.unconfigureStream(body.bus_info)), {
        ...docs({ tag, summary: 'Stop a stream and clear its endpoints', body: BusInfoRequest, ok: SuccessModel, errors: [404, 507] }),
      })
      .post('/api/devices/start_recording', typed({ body: BusInfoRequest }, ({ body }) => devices.startRecording(body.bus_info)), {
        ...docs({
          tag,
          summary: 'Record the running stream to a file while it streams (a follower: its group, one file with a track per camera)',
          description:
            "The camera's encoded frames, taken from the running stream (no second encoder), into a Matroska file in the recordings directory, flushed every second; the file starts at the next key frame. " +
            'GET /api/recordings lists it with `in_progress: true` until it ends. Answers the `recording` object the device now shows. ' +
            '409 when the stream is not running (start it with restart_stream) or the camera already records; 507 when the recordings disk has less free than --min-free-to-record (64 MiB by default): nothing is written.',
          body: BusInfoRequest,
          ok: DeviceRecordingModel,
          errors: [404, 409, 503, 507],
        }),
      })
      .post('/api/devices/stop_recording', typed({ body: BusInfoRequest }, ({ body }) => devices.stopRecording(body.bus_info)), {
        ...docs({
          tag,
          summary: 'End the recording made while streaming; the stream and its viewers carry on untouched',
          description: 'The file is closed (end of stream to the muxer) and kept. Stopping, restarting or reconfiguring the stream, or unplugging the camera, ends the recording the same way.',
          body: BusInfoRequest,
          ok: DeviceRecordingModel,
          errors: [404, 409, 503],
        }),
      })
      .post('/api/devices/set_record_while_armed', typed({ body: RecordWhileArmedRequest }, ({ body }) => devices.setRecordWhileArmed(body.bus_info, body.enabled)), {
        ...docs({
          tag,
          summary: 'Record this camera while the vehicle is armed (saved per camera)',
          description:
            "When the autopilot on the MAVLink link (--mavlink) arms, a recording of the camera's running stream starts; when it disarms, the recording stops. " +
            'Switched on while the vehicle is armed, it starts recording at once. Each start, stop or failure is a `record_while_armed` event; a stream that is not running cannot be recorded (the event says so). ' +
            'An autopilot that falls silent does not stop the recording: the next disarm does. The device shows the setting as `record_while_armed`.',
          body: RecordWhileArmedRequest,
          ok: t.Object({ success: t.Boolean(), record_while_armed: t.Boolean() }),
          errors: [404, 507],
        }),
      })
      .post(
        '/api/devices/set_nickname',
        typed({ body: SetNicknameRequest }, ({ body }) => devices.setNickname(body.bus_info, body.nickname)),
        { ...docs({ tag, summary: 'Name a device', body: SetNicknameRequest, ok: SuccessModel, errors: [404, 507] }) },
      )
  },
})
