// The MAVLink camera components: every camera whose stream runs is a MAVLink camera (MAV_TYPE_CAMERA)
// with a component id of its own, as QGroundControl expects (it looks at components 100–105 of the
// vehicle's system). Each sends a HEARTBEAT every second and answers COMMAND_LONG requests for its
// information, its stream (the RTSP URL of plugins/rtsp, else where its RTP goes), its status and
// storage; VIDEO_START_CAPTURE / STOP_CAPTURE record while streaming through the cameras plugin's own
// start_recording / stop_recording. Cameras appear and vanish on the link as their streams do.
import { createSocket } from 'node:dgram'
import { isIP } from 'node:net'
import { networkInterfaces } from 'node:os'
import { common, type MavLinkData } from 'mavlink-mappings'
import type { MavLinkPacket } from 'node-mavlink'
import type { Config } from '../../core/config'
import { HttpError } from '../../core/errors'
import type { Refusals } from '../../core/http/refusals'
import type { EventBus } from '../../core/events'
import type { Logger } from '../../core/log'
import type { PluginHealth, Registry } from '../../core/plugin'
import type { SettingsStore } from '../../core/store'
import type { Device, DeviceDirectory, StreamHub } from '../../core/types'
import { VERSION } from '../../core/version'
import { diskUsage } from '../../core/disk'
import { cameraDefinition, cameraNames, definitionPath } from './camdef'
import { canCapture, imageCaptured, stillsOf, type PendingStill, type Position } from './capture'
import { endpointText, MavlinkLink } from './link'
import * as msg from './messages'
import { CameraParams } from './params'
import { VehicleTelemetryReader } from './vehicle'

const TICK_MS = 1000
/** QGroundControl looks for cameras at these component ids (MAV_COMP_ID_CAMERA … CAMERA6). */
const QGC_CAMERA_IDS = { first: 100, last: 105 }
/** A retransmitted capture command (same confirmation chain) within this is answered, not done again. */
const RETRANSMIT_MS = 5000
const MAX_STATUS_HZ = 10

const Cmd = common.MavCmd
const Result = common.MavResult

interface Component {
  bus_info: string
  compid: number
  hub: StreamHub
  member: number
  /** The hub's byte count of the member at the last measurement, and the rate measured then (bits/s). */
  bytes: number
  measuredAt: number
  bitrate: number
  /** The stream URI last sent in VIDEO_STREAM_INFORMATION (null: never asked): a change is sent again. */
  announcedUri: string | null
  recordingActive: boolean
  /** CAMERA_CAPTURE_STATUS at the rate VIDEO_START_CAPTURE asked for, while recording. */
  statusTimer: ReturnType<typeof setInterval> | null
}

interface Sender {
  sysid: number
  compid: number
}

export interface MavlinkContext {
  config: Config
  registry: Registry
  events: EventBus
  log: Logger
  /** The per-client limits (a still's rate, per system/component id). */
  refusals: Refusals
  /** Where each camera's component id is kept, so that it has the same one after a restart. */
  store: Pick<SettingsStore, 'list' | 'set'>
}

/** The settings namespace of the component ids: bus_info → id. */
const COMPONENTS_NS = 'mavlink_components'

const isLoopback = (address: string) => address.startsWith('127.') || address === '::1' || address === '::ffff:127.0.0.1'
const isWildcard = (address: string) => address === '' || address === '0.0.0.0' || address === '::'

/** The local address the kernel would use to reach `host` (a UDP connect sends nothing). */
function addressToward(host: string): Promise<string | null> {
  return new Promise((resolve) => {
    const socket = createSocket(isIP(host) === 6 ? 'udp6' : 'udp4')
    const timer = setTimeout(() => done(null), 2000)
    const done = (address: string | null) => {
      clearTimeout(timer)
      try {
        socket.close()
      } catch {}
      resolve(address)
    }
    socket.on('error', () => done(null))
    socket.connect(9, host, () => {
      try {
        done(socket.address().address)
      } catch {
        done(null)
      }
    })
  })
}

/** The vehicle's first LAN address: IPv4, not loopback, not a container or VM bridge. */
function lanAddress(): string | null {
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (/^(lo|docker|br-|veth|virbr|podman|cni)/.test(name)) continue
    const found = addresses?.find((a) => a.family === 'IPv4' && !a.internal)
    if (found) return found.address
  }
  return null
}

/** What VIDEO_STREAM_INFORMATION last said, to send it again when it changes (a new address, RTSP up). */
const announced = (streams: { uri: { uri: string } }[]) => streams.map((s) => s.uri.uri).join(' ')

export class MavlinkService {
  private readonly link: MavlinkLink
  private readonly sysid: number
  private readonly base: number
  private components = new Map<string, Component>()
  /** Component ids of cameras present now (kept while a camera's stream stops and starts again). */
  private assigned = new Map<string, number>()
  /** The last id each camera had (kept in the settings: across restarts too), offered again when it comes back and the id is free. */
  private remembered = new Map<string, number>()
  /** Cameras streaming but left without an id (every id up to 255 taken). */
  private unassigned = new Set<string>()
  private recent = new Map<string, { done: boolean; result: common.MavResult; at: number }>()
  private address: string
  private timer: ReturnType<typeof setInterval> | null = null
  private unsubscribeEvents: (() => void) | null = null
  private scheduled = false
  private gcs: { sysid: number; compid: number; at: number } | null = null
  private readonly params: CameraParams
  /** The vehicle's last GLOBAL_POSITION_INT (from its own system), for CAMERA_IMAGE_CAPTURED. */
  private position: Position | null = null
  /** Stills taken per camera since the service started (CAMERA_IMAGE_CAPTURED's image_index). */
  private stills = new Map<string, number>()
  /** Each camera's mode as a ground station last set it (MAV_CMD_SET_CAMERA_MODE); video until then. */
  private modes = new Map<string, msg.CameraMode>()
  /** The autopilot's telemetry into the registry's TelemetrySource (the recorder's text track reads it). */
  private readonly vehicle: VehicleTelemetryReader

  constructor(private readonly ctx: MavlinkContext) {
    const { config } = ctx
    if (!config.mavlink) throw new Error('no --mavlink endpoint')
    this.sysid = config.mavlinkSystemId
    for (const { key, value } of ctx.store.list<number>(COMPONENTS_NS)) if (Number.isInteger(value)) this.remembered.set(key, value)
    this.base = config.mavlinkComponentBase
    this.link = new MavlinkLink(config.mavlink, ctx.log, (packet) => this.onPacket(packet), {
      signingKey: config.mavlinkSigningKey,
      peerTimeoutMs: config.mavlinkPeerTimeoutSeconds * 1000,
      onRefused: (why) => ctx.registry.limitHit(`mavlink_frame_${why}`),
    })
    this.vehicle = new VehicleTelemetryReader(this.sysid, ctx.registry.telemetry)
    this.address = this.fixedAddress() ?? lanAddress() ?? '127.0.0.1'
    this.params = new CameraParams({
      targets: (sysid, compid) => (sysid === 0 || sysid === this.sysid ? [...this.components.values()].filter((c) => compid === 0 || c.compid === compid) : []),
      device: (bus_info) => this.device(bus_info),
      setControl: async (bus_info, control_id, value) => {
        const directory = this.directory()
        if (!directory) throw new HttpError(503, 'no cameras plugin')
        return directory.setControl(bus_info, control_id, value)
      },
      send: (compid, message) => this.link.send(message, this.sysid, compid),
      log: ctx.log,
    })
  }

  start(): void {
    this.link.start()
    this.unsubscribeEvents = this.ctx.events.subscribe((event) => {
      if (event.type === 'recording') this.onRecording(event.data as { members?: string[]; active?: boolean })
      else if (event.type === 'stream_error' || event.type.startsWith('device_')) this.schedule()
    })
    this.timer = setInterval(() => this.tick(), TICK_MS)
    void this.refreshAddress()
    this.schedule()
    this.ctx.log.info('MAVLink cameras on', { endpoint: endpointText(this.link.endpoint), system_id: this.sysid, component_base: this.base })
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    this.unsubscribeEvents?.()
    this.unsubscribeEvents = null
    for (const component of [...this.components.values()]) this.remove(component)
    this.link.stop()
    this.ctx.registry.telemetry.clear()
  }

  health(): PluginHealth {
    const link = this.link.status()
    const kind = this.link.endpoint.kind
    const down = (kind === 'tcpout' && link.state !== 'connected') || (kind === 'udpin' && link.state === 'reconnecting')
    const cameras = [...this.components.values()].map((c) => ({ bus_info: c.bus_info, component_id: c.compid })).sort((a, b) => a.component_id - b.component_id)
    const outside = cameras.filter((c) => c.component_id < QGC_CAMERA_IDS.first || c.component_id > QGC_CAMERA_IDS.last)
    const notes = [
      down ? `the MAVLink link is ${link.state}${link.last_error ? `: ${link.last_error}` : ''}` : null,
      outside.length ? `component ids ${outside.map((c) => c.component_id).join(', ')} are outside 100-105, where QGroundControl looks for cameras` : null,
      this.unassigned.size ? `no free component id for ${[...this.unassigned].join(', ')}` : null,
    ].filter(Boolean)
    return {
      state: down ? 'degraded' : 'ok',
      ...(notes.length ? { detail: notes.join('; ') } : {}),
      enabled: true,
      link,
      system_id: this.sysid,
      component_base: this.base,
      stream_address: this.address,
      cameras,
      ground_station: this.gcs ? { system_id: this.gcs.sysid, component_id: this.gcs.compid, last_heartbeat_ms_ago: Date.now() - this.gcs.at } : null,
      // The autopilot's last telemetry (what recordings carry as their text track); null without one on the link.
      vehicle: this.ctx.registry.telemetry.current(),
    }
  }

  // ---- cameras coming and going ----

  private directory(): DeviceDirectory | null {
    try {
      return this.ctx.registry.deviceDirectory()
    } catch {
      return null // no cameras plugin: no camera to announce
    }
  }

  private schedule(): void {
    if (this.scheduled) return
    this.scheduled = true
    queueMicrotask(() => {
      this.scheduled = false
      this.reconcile()
    })
  }

  /** Components follow the running streams: one per camera whose stream runs, gone when it stops or is unplugged. */
  private reconcile(): void {
    if (!this.timer) return
    const devices = this.directory()?.devices() ?? []
    const present = new Set(devices.map((d) => d.bus_info))
    for (const bus_info of [...this.assigned.keys()]) if (!present.has(bus_info)) this.assigned.delete(bus_info)
    const streamer = this.ctx.registry.get('streamer')
    const live = new Map<string, { hub: StreamHub; member: number }>()
    for (const device of devices) {
      const found = streamer?.live(device.bus_info)
      if (found) live.set(device.bus_info, found)
    }
    for (const component of [...this.components.values()]) {
      const now = live.get(component.bus_info)
      if (!now || now.hub !== component.hub || now.member !== component.member) this.remove(component)
    }
    this.unassigned.clear()
    for (const bus_info of [...live.keys()].sort()) {
      if (this.components.has(bus_info)) continue
      const compid = this.allocate(bus_info)
      if (compid === null) {
        this.unassigned.add(bus_info)
        continue
      }
      this.add(bus_info, compid, live.get(bus_info)!)
    }
  }

  private allocate(bus_info: string): number | null {
    const held = this.assigned.get(bus_info)
    if (held !== undefined) return held
    const taken = new Set(this.assigned.values())
    const before = this.remembered.get(bus_info)
    let compid: number | null = before !== undefined && !taken.has(before) ? before : null
    for (let id = this.base; compid === null && id <= 255; id++) if (!taken.has(id)) compid = id
    if (compid === null) return null
    this.assigned.set(bus_info, compid)
    if (this.remembered.get(bus_info) !== compid) {
      this.remembered.set(bus_info, compid)
      try {
        this.ctx.store.set(COMPONENTS_NS, bus_info, compid)
      } catch (e) {
        // A full or read-only card: the id holds until the service restarts; the camera streams on.
        this.ctx.log.warn('could not keep a camera\'s MAVLink component id in the settings', { bus_info, compid, error: (e as Error).message })
      }
    }
    return compid
  }

  private add(bus_info: string, compid: number, live: { hub: StreamHub; member: number }): void {
    const component: Component = {
      bus_info,
      compid,
      hub: live.hub,
      member: live.member,
      // The stream's own bitrate, from the hub's count of the member's bytes (no per-packet reader needed).
      bytes: live.hub.sent(live.member).bytes,
      measuredAt: Date.now(),
      bitrate: 0,
      announcedUri: null,
      recordingActive: this.ctx.registry.get('streamer')?.recording(bus_info).active ?? false,
      statusTimer: null,
    }
    this.components.set(bus_info, component)
    this.ctx.log.info('MAVLink camera on the link', { bus_info, component_id: compid })
    this.send(component, msg.heartbeat(this.device(bus_info)?.stream_status?.state === 'running'))
  }

  private remove(component: Component): void {
    if (component.statusTimer) clearInterval(component.statusTimer)
    this.components.delete(component.bus_info)
    this.ctx.log.info('MAVLink camera off the link', { bus_info: component.bus_info, component_id: component.compid })
  }

  private tick(): void {
    this.reconcile()
    void this.refreshAddress()
    const now = Date.now()
    for (const [key, entry] of this.recent) if (now - entry.at > RETRANSMIT_MS) this.recent.delete(key)
    for (const component of this.components.values()) {
      const elapsed = (now - component.measuredAt) / 1000
      if (elapsed > 0.5) {
        const bytes = component.hub.sent(component.member).bytes
        component.bitrate = Math.round(((bytes - component.bytes) * 8) / elapsed)
        component.bytes = bytes
        component.measuredAt = now
      }
      const device = this.device(component.bus_info)
      if (!device) continue
      this.send(component, msg.heartbeat(device.stream_status?.state === 'running'))
      // A stream URI that changed since the ground station asked (the RTSP server came up after it, a
      // new address) is sent again.
      if (component.announcedUri !== null) {
        if (announced(this.streamFacts(component, device)) !== component.announcedUri) this.sendStreamInformation(component, device)
      }
    }
  }

  private device(bus_info: string): Device | undefined {
    return this.directory()?.device(bus_info)
  }

  // ---- what a camera says about itself ----

  private cameraFacts(device: Device): msg.CameraFacts {
    const names = cameraNames(this.ctx.registry, device)
    let sensor = { width: 0, height: 0 }
    for (const camera of device.cameras ?? [])
      for (const sizes of Object.values(camera.formats)) for (const size of sizes) if (size.width * size.height > sensor.width * sensor.height) sensor = { width: size.width, height: size.height }
    const host = isIP(this.address) === 6 ? `[${this.address}]` : this.address
    return {
      ...names,
      streamName: device.nickname || device.name || device.bus_info,
      sensor,
      firmware: VERSION,
      stills: canCapture(this.ctx.registry, device.bus_info, this.ctx.config),
      // Served by this service's HTTP API on the same address as the stream URIs.
      definition: { uri: `http://${host}:${this.ctx.config.port}${definitionPath(device.bus_info)}`, version: cameraDefinition(device, names).version },
    }
  }

  /**
   * The camera's streams: 1, its RTSP URL (else its RTP over UDP); 2, its WHEP URL when it can be
   * watched so (H.264), after RTSP so that a ground station that plays only the first plays RTSP.
   */
  private streamFacts(component: Component, device: Device): msg.StreamFacts[] {
    const { hub } = component
    const base = {
      running: device.stream_status?.state === 'running',
      width: hub.width,
      height: hub.height,
      fps: hub.fps,
      encoding: hub.encoding,
      bitrate: component.bitrate,
    }
    const uris = [this.streamUri(component, device)]
    const whep = this.ctx.registry.watch(device.bus_info, new URL(`http://${this.hostPort()}`)).whep
    if (whep) uris.push({ type: 'WHEP', uri: whep })
    return uris.map((uri, i) => ({ ...base, uri, id: i + 1, count: uris.length }))
  }

  /** The vehicle's address and HTTP port, as the stream and definition URLs carry them. */
  private hostPort(): string {
    return `${isIP(this.address) === 6 ? `[${this.address}]` : this.address}:${this.ctx.config.port}`
  }

  /** The RTSP URL (plugins/rtsp's watch link, on the vehicle's address), else where its RTP over UDP goes. */
  private streamUri(component: Component, device: Device): msg.StreamFacts['uri'] {
    const host = isIP(this.address) === 6 ? `[${this.address}]` : this.address
    const rtsp = this.ctx.registry.watch(device.bus_info, new URL(`http://${host}`)).rtsp
    if (rtsp) return { type: 'RTSP', uri: rtsp }
    // A follower's RTP goes out with its leader's, on the leader's port + its place in the group.
    const leader = device.leader ? this.device(device.leader) : device
    const endpoint = leader?.stream.stream_type === 'UDP' ? leader.stream.endpoints[0] : undefined
    if (!endpoint) return { type: 'RTPUDP', uri: '' }
    const port = endpoint.port + component.member
    return { type: 'RTPUDP', uri: `udp://${isIP(endpoint.host) === 6 ? `[${endpoint.host}]` : endpoint.host}:${port}` }
  }

  private disk(): msg.DiskFacts | null {
    try {
      return diskUsage(this.ctx.config.recordingsDir)
    } catch {
      return null // not there yet (the recordings plugin makes it) or unreadable
    }
  }

  // ---- the vehicle's address in stream URIs ----

  private fixedAddress(): string | null {
    const { mavlinkStreamAddress, host } = this.ctx.config
    return mavlinkStreamAddress ?? (isWildcard(host) ? null : host)
  }

  /** --mavlink-stream-address, else --host when it is one address, else the address facing the peer, else the first LAN address. */
  private async refreshAddress(): Promise<void> {
    const fixed = this.fixedAddress()
    if (fixed) {
      this.address = fixed
      return
    }
    const peer = this.link.peerHost()
    const facing = this.link.tcpLocalAddress() ?? (peer ? await addressToward(peer) : null)
    this.address = (facing && !isLoopback(facing) && !isWildcard(facing) ? facing.replace(/^::ffff:/, '') : null) ?? lanAddress() ?? '127.0.0.1'
  }

  // ---- the link ----

  private send(component: Component, message: MavLinkData): void {
    this.link.send(message, this.sysid, component.compid)
  }

  private onRecording(data: { members?: string[]; active?: boolean }): void {
    for (const bus_info of data.members ?? []) {
      const component = this.components.get(bus_info)
      if (!component || component.recordingActive === !!data.active) continue
      component.recordingActive = !!data.active
      if (!data.active && component.statusTimer) {
        clearInterval(component.statusTimer)
        component.statusTimer = null
      }
      // The ground station's record button follows a recording started or ended any way (HTTP, a stream stop).
      this.sendCaptureStatus(component)
    }
  }

  private sendCaptureStatus(component: Component): void {
    const recording = this.ctx.registry.get('streamer')?.recording(component.bus_info) ?? { active: false, file: null, started: null, bytes: 0, error: null }
    this.send(component, msg.cameraCaptureStatus(recording, this.disk(), this.stills.get(component.bus_info) ?? 0))
  }

  /** VIDEO_STREAM_INFORMATION of stream `id`, or of every stream (0). */
  private sendStreamInformation(component: Component, device: Device, id = 0): void {
    const streams = this.streamFacts(component, device)
    component.announcedUri = announced(streams)
    const camera = this.cameraFacts(device)
    for (const stream of streams) if (id === 0 || stream.id === id) this.send(component, msg.videoStreamInformation(camera, stream))
  }

  /** VIDEO_STREAM_STATUS of stream `id`, or of every stream (0). */
  private sendStreamStatus(component: Component, device: Device, id = 0): void {
    for (const stream of this.streamFacts(component, device)) if (id === 0 || stream.id === id) this.send(component, msg.videoStreamStatus(stream))
  }

  private onPacket(packet: MavLinkPacket): void {
    const { msgid, sysid, compid } = packet.header
    if (VehicleTelemetryReader.handles(msgid) && this.vehicle.onPacket(packet) && msgid !== common.GlobalPositionInt.MSG_ID) return
    if (msgid === 0) {
      // A ground station's heartbeat (QGroundControl: 255/190), for /api/health.
      if (sysid !== this.sysid) this.gcs = { sysid, compid, at: Date.now() }
      return
    }
    if (CameraParams.handles(msgid)) return this.params.onPacket(packet)
    if (msgid === common.GlobalPositionInt.MSG_ID) {
      if (sysid !== this.sysid) return // another vehicle's, or a ground station's
      const p = packet.protocol.data(packet.payload, common.GlobalPositionInt)
      this.position = { lat: p.lat, lon: p.lon, alt: p.alt, relativeAlt: p.relativeAlt, at: Date.now() }
      return
    }
    if (msgid !== common.CommandLong.MSG_ID) return
    const command = packet.protocol.data(packet.payload, common.CommandLong)
    if (command.targetSystem !== 0 && command.targetSystem !== this.sysid) return
    const targets = command.targetComponent === 0 ? [...this.components.values()] : [...this.components.values()].filter((c) => c.compid === command.targetComponent)
    for (const component of targets) {
      this.handle(component, command, { sysid, compid }).catch((e) => this.ctx.log.warn('MAVLink command failed', { command: command.command, bus_info: component.bus_info, err: e }))
    }
  }

  private ack(component: Component, command: number, result: common.MavResult, to: Sender): void {
    this.send(component, msg.commandAck(command, result, to))
  }

  /** One COMMAND_LONG for one camera: acknowledged, then the requested message (the order MAVLink's command protocol gives). */
  private async handle(component: Component, command: common.CommandLong, from: Sender): Promise<void> {
    const device = this.device(component.bus_info)
    if (!device) return
    const param = (value: number) => (Number.isFinite(value) ? Math.round(value) : 0)
    const answer = (message: MavLinkData) => {
      this.ack(component, command.command, Result.ACCEPTED, from)
      this.send(component, message)
    }
    // This camera has one storage, id 1, and one or two streams (streamFacts); 0 asks for all of them.
    const oursOrAll = (id: number) => id === 0 || id === 1
    const aStream = (id: number) => id === 0 || this.streamFacts(component, device).some((s) => s.id === id)
    switch (command.command) {
      case Cmd.REQUEST_MESSAGE:
        return this.requestMessage(component, device, command, from)
      case Cmd.REQUEST_CAMERA_INFORMATION:
        return answer(msg.cameraInformation(this.cameraFacts(device)))
      case Cmd.REQUEST_CAMERA_SETTINGS:
        return answer(this.settings(component))
      case Cmd.SET_CAMERA_MODE:
        return this.setMode(component, device, command, from)
      case Cmd.REQUEST_STORAGE_INFORMATION:
        if (!oursOrAll(param(command._param1))) return this.ack(component, command.command, Result.DENIED, from)
        return answer(msg.storageInformation(this.disk()))
      case Cmd.REQUEST_CAMERA_CAPTURE_STATUS: {
        this.ack(component, command.command, Result.ACCEPTED, from)
        return this.sendCaptureStatus(component)
      }
      case Cmd.REQUEST_VIDEO_STREAM_INFORMATION:
        if (!aStream(param(command._param1))) return this.ack(component, command.command, Result.DENIED, from)
        this.ack(component, command.command, Result.ACCEPTED, from)
        return this.sendStreamInformation(component, device, param(command._param1))
      case Cmd.REQUEST_VIDEO_STREAM_STATUS:
        if (!aStream(param(command._param1))) return this.ack(component, command.command, Result.DENIED, from)
        this.ack(component, command.command, Result.ACCEPTED, from)
        return this.sendStreamStatus(component, device, param(command._param1))
      case Cmd.VIDEO_START_CAPTURE:
      case Cmd.VIDEO_STOP_CAPTURE:
        return this.capture(component, command, from)
      case Cmd.IMAGE_START_CAPTURE:
        return this.still(component, device, command, from)
      default:
        return this.ack(component, command.command, Result.UNSUPPORTED, from)
    }
  }

  private settings(component: Component): common.CameraSettings {
    return msg.cameraSettings(this.modes.get(component.bus_info) ?? 'video')
  }

  /**
   * MAV_CMD_SET_CAMERA_MODE (param2: CAMERA_MODE_IMAGE 0 or CAMERA_MODE_VIDEO 1): what the ground
   * station's shutter does (msg.CameraMode); a camera that cannot take stills has only video. Answered
   * with CAMERA_SETTINGS, as the camera protocol asks, so every ground station on the link follows.
   */
  private setMode(component: Component, device: Device, command: common.CommandLong, from: Sender): void {
    const mode = command._param2 === common.CameraMode.IMAGE ? 'image' : command._param2 === common.CameraMode.VIDEO ? 'video' : null
    if (!mode || (mode === 'image' && !canCapture(this.ctx.registry, device.bus_info, this.ctx.config))) {
      return this.ack(component, command.command, Result.DENIED, from)
    }
    this.modes.set(component.bus_info, mode)
    this.ack(component, command.command, Result.ACCEPTED, from)
    this.send(component, this.settings(component))
  }

  /** MAV_CMD_REQUEST_MESSAGE: param1 the message id, param2 its index (stream or storage id) where it has one. */
  private requestMessage(component: Component, device: Device, command: common.CommandLong, from: Sender): void {
    const id = Math.round(command._param1)
    const index = Number.isFinite(command._param2) ? Math.round(command._param2) : 0
    const indexOk = index === 0 || index === 1
    const aStream = index === 0 || this.streamFacts(component, device).some((s) => s.id === index)
    const accept = () => this.ack(component, command.command, Result.ACCEPTED, from)
    const deny = () => this.ack(component, command.command, Result.DENIED, from)
    switch (id) {
      case common.CameraInformation.MSG_ID:
        accept()
        return this.send(component, msg.cameraInformation(this.cameraFacts(device)))
      case common.CameraSettings.MSG_ID:
        accept()
        return this.send(component, this.settings(component))
      case common.StorageInformation.MSG_ID:
        if (!indexOk) return deny()
        accept()
        return this.send(component, msg.storageInformation(this.disk()))
      case common.CameraCaptureStatus.MSG_ID:
        accept()
        return this.sendCaptureStatus(component)
      case common.VideoStreamInformation.MSG_ID:
        if (!aStream) return deny()
        accept()
        return this.sendStreamInformation(component, device, index)
      case common.VideoStreamStatus.MSG_ID:
        if (!aStream) return deny()
        accept()
        return this.sendStreamStatus(component, device, index)
      default:
        return deny() // a message this camera does not send
    }
  }

  /**
   * VIDEO_START_CAPTURE (param1 stream id, param2 CAMERA_CAPTURE_STATUS rate in Hz, param3 camera id)
   * and VIDEO_STOP_CAPTURE (param1 stream id, param2 camera id): POST /api/devices/start_recording
   * and stop_recording, the same code. Refused (404, 409: not streaming, already or not recording)
   * is DENIED; a recorder that could not start is FAILED.
   */
  private async capture(component: Component, command: common.CommandLong, from: Sender): Promise<void> {
    const start = command.command === Cmd.VIDEO_START_CAPTURE
    const key = `${component.compid}/${from.sysid}/${from.compid}/${command.command}`
    const earlier = this.recent.get(key)
    if (command.confirmation > 0 && earlier) {
      // A retransmission: the first one is being (or was) carried out; answer it once done.
      if (earlier.done) this.ack(component, command.command, earlier.result, from)
      return
    }
    const param = (value: number) => (Number.isFinite(value) ? Math.round(value) : 0)
    const streamId = param(command._param1)
    const cameraId = param(start ? command._param3 : command._param2)
    if ((streamId !== 0 && streamId !== 1) || (cameraId !== 0 && cameraId !== component.compid)) {
      return this.ack(component, command.command, Result.DENIED, from)
    }
    this.recent.set(key, { done: false, result: Result.IN_PROGRESS, at: Date.now() })
    let result: common.MavResult = Result.ACCEPTED
    const directory = this.directory()
    try {
      if (!directory) throw new HttpError(503, 'no cameras plugin')
      if (start) await directory.startRecording(component.bus_info)
      else await directory.stopRecording(component.bus_info)
    } catch (e) {
      result = e instanceof HttpError && (e.status === 404 || e.status === 409) ? Result.DENIED : Result.FAILED
      this.ctx.log.info(`MAVLink ${start ? 'start' : 'stop'} capture refused`, { bus_info: component.bus_info, detail: e instanceof HttpError ? e.detail : (e as Error).message })
    }
    this.recent.set(key, { done: true, result, at: Date.now() })
    this.ack(component, command.command, result, from)
    if (component.statusTimer) clearInterval(component.statusTimer)
    component.statusTimer = null
    const hz = Number.isFinite(command._param2) ? command._param2 : 0
    if (start && result === Result.ACCEPTED && hz > 0) {
      component.statusTimer = setInterval(() => this.sendCaptureStatus(component), 1000 / Math.min(hz, MAX_STATUS_HZ))
    }
  }

  /**
   * IMAGE_START_CAPTURE (param1 camera id, param2 interval, param3 total images, param4 sequence number):
   * one image at a time (param3 1). ACCEPTED only for a still that will be written: every check of
   * Stills.begin comes first (the free-space floor and the sender's rate, per system/component id: DENIED;
   * too many stills at once: TEMPORARILY_REJECTED; no snapshot service: DENIED). Then CAMERA_IMAGE_CAPTURED
   * once the file is saved (capture_result 0 when it could not be). A retransmission (confirmation > 0)
   * is answered as the first was, not taken twice. Series (param3 ≠ 1) are UNSUPPORTED.
   */
  private async still(component: Component, device: Device, command: common.CommandLong, from: Sender): Promise<void> {
    const key = `${component.compid}/${from.sysid}/${from.compid}/${command.command}`
    const earlier = this.recent.get(key)
    if (command.confirmation > 0 && earlier) return this.ack(component, command.command, earlier.result, from)
    const param = (value: number) => (Number.isFinite(value) ? Math.round(value) : 0)
    const cameraId = param(command._param1)
    if (cameraId !== 0 && cameraId !== component.compid) return this.ack(component, command.command, Result.DENIED, from)
    if (param(command._param3) !== 1) return this.ack(component, command.command, Result.UNSUPPORTED, from)
    let pending: PendingStill
    try {
      pending = stillsOf(this.ctx).begin(device, `mavlink ${from.sysid}/${from.compid}`)
    } catch (e) {
      // Counted (/metrics), not logged: a flood of commands must not flood the log too.
      const result = e instanceof HttpError && e.status === 503 && e.retryAfter ? Result.TEMPORARILY_REJECTED : Result.DENIED
      this.recent.set(key, { done: true, result, at: Date.now() })
      return this.ack(component, command.command, result, from)
    }
    this.recent.set(key, { done: true, result: Result.ACCEPTED, at: Date.now() })
    this.ack(component, command.command, Result.ACCEPTED, from)
    const index = this.stills.get(device.bus_info) ?? 0
    this.stills.set(device.bus_info, index + 1)
    let fileUrl = ''
    let ok = true
    try {
      const name = await pending.take()
      const host = isIP(this.address) === 6 ? `[${this.address}]` : this.address
      fileUrl = `http://${host}:${this.ctx.config.port}/api/recordings/${encodeURIComponent(name)}`
      this.ctx.log.info('MAVLink still saved', { bus_info: device.bus_info, file: name })
    } catch (e) {
      ok = false
      this.ctx.log.warn('MAVLink still failed', { bus_info: device.bus_info, err: e })
    }
    this.send(component, imageCaptured({ index, ok, fileUrl, position: this.position }))
  }
}
