// Stills: MAV_CMD_IMAGE_START_CAPTURE and POST /api/devices/capture_still (Cockpit's action), one home
// for both. A still is taken by the jpeg plugin's snapshot (the same shared capture as GET
// /api/streams/{bus_info}/snapshot.jpg: from the running stream without touching it, else one
// capture), saved as a JPEG in the recordings directory (GET /api/recordings lists it, `kind: "still"`),
// and, over MAVLink, announced with CAMERA_IMAGE_CAPTURED carrying the vehicle's last GLOBAL_POSITION_INT.
//
// Everything that can refuse a still is checked before it is promised (an HTTP answer, MAVLink's
// ACCEPTED): the snapshot service, the free-space floor (--min-free-to-record), the stills in flight
// over every client, and the client's own rate (per HTTP client address, per MAVLink system/component
// id, and the MAVLink link's as a whole; core/http/client-limits.ts). Each still's name is its own: to the millisecond, and held from the
// press until the file is in place, so two stills of one moment never share (or race for) a name.
import { existsSync } from 'node:fs'
import { mkdir, rename, unlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { common, standard } from 'mavlink-mappings'
import type { Config } from '../../core/config'
import { belowFloor, noRoomDetail } from '../../core/disk'
import { HttpError, LimitError, unavailable } from '../../core/errors'
import type { Refusals } from '../../core/http/refusals'
import type { Registry } from '../../core/plugin'
import type { Device } from '../../core/types'
import { STILL_EXTENSION, stillFileName } from '../../core/naming'
import { charField, timeBootMs } from './messages'

/** Stills in flight at once (being taken or written), every client and peer together: a MAVLink peer's identity costs nothing to forge. */
export const MAX_STILLS_AT_ONCE = 64

/** How long a still may take (an H.264 camera's next key frame, or a camera's first frame, plus the encode). */
export const STILL_TIMEOUT_MS = 15_000
/** A position older than this is not the vehicle's position when the still was taken. */
export const POSITION_MAX_AGE_MS = 5_000

export interface Position {
  lat: number // degE7
  lon: number // degE7
  alt: number // mm, MSL
  relativeAlt: number // mm
  at: number
}

/** The service's own HTTP API, reached from inside it (the snapshot route is the one home of stills). */
function ownOrigin(config: Config): URL {
  const wildcard = config.host === '' || config.host === '0.0.0.0' || config.host === '::'
  const host = wildcard ? '127.0.0.1' : config.host.includes(':') ? `[${config.host}]` : config.host
  return new URL(`http://${host}:${config.port}`)
}

/** Whether this service can take stills of the camera now (the jpeg plugin and GStreamer are here). */
export const canCapture = (registry: Registry, bus_info: string, config: Config) => registry.watch(bus_info, ownOrigin(config)).snapshot !== null

/** A still promised: its file name (reserved now), written by take(). */
export interface PendingStill {
  file: string
  /** Takes the picture and writes the file; answers its name. Throws with a sentence when it cannot. */
  take(): Promise<string>
}

/** The stills of one service: what is in flight and which names are handed out. */
export class Stills {
  private inFlight = 0
  /** Stems handed out and not yet in place as files (their `.part` may not exist yet either). */
  private readonly reserved = new Set<string>()

  constructor(private readonly o: { registry: Registry; config: Config; refusals: Refusals }) {}

  /**
   * Every check before a still is promised; throws an HttpError (503: no snapshot service, or too many
   * at once; 507: below the free-space floor; 429: the client's rate), else reserves its name.
   * `client`: the HTTP request, or a MAVLink peer as `mavlink <sysid>/<compid>`.
   */
  begin(device: Device, client: Request | string): PendingStill {
    const { registry, config, refusals } = this.o
    if (!canCapture(registry, device.bus_info, config)) throw unavailable('No still can be taken: no snapshot service (the jpeg plugin or GStreamer is missing)')
    const free = belowFloor(config.recordingsDir, config.minFreeToRecordMiB)
    if (free !== null) {
      registry.limitHit('still_disk_full')
      throw new HttpError(507, noRoomDetail(free, config.minFreeToRecordMiB, 'a still'))
    }
    if (this.inFlight >= MAX_STILLS_AT_ONCE) {
      registry.limitHit('stills_at_once')
      throw new LimitError(503, `${MAX_STILLS_AT_ONCE} stills are being taken now, the most at once; try again in 1 s`, 1)
    }
    // Last, so a still refused above costs the client no token.
    if (typeof client === 'string') {
      refusals.limits.take('still', client)
      refusals.limits.take('still_mavlink', 'link')
    } else refusals.limits.take('still', client)
    const dir = config.recordingsDir
    const file = stillFileName(device.nickname || device.name || device.bus_info, new Date(), (stem) =>
      this.reserved.has(stem) || existsSync(join(dir, `${stem}.${STILL_EXTENSION}`)) || existsSync(join(dir, `.${stem}.${STILL_EXTENSION}.part`)),
    )
    const stem = file.slice(0, -STILL_EXTENSION.length - 1)
    this.reserved.add(stem)
    this.inFlight++
    let started = false
    return {
      file,
      take: () => {
        if (started) throw new Error('a still is taken once')
        started = true
        return this.write(device, file).finally(() => {
          this.reserved.delete(stem)
          this.inFlight--
        })
      },
    }
  }

  private async write(device: Device, file: string): Promise<string> {
    const { registry, config } = this.o
    const url = registry.watch(device.bus_info, ownOrigin(config)).snapshot
    if (!url) throw new Error('no snapshot service (the jpeg plugin or GStreamer is missing)')
    // With --token (the security flags; scope 'all' guards reads too) the service's own request carries it.
    const token = (config as { token?: string | null }).token
    const res = await fetch(url, { signal: AbortSignal.timeout(STILL_TIMEOUT_MS), headers: token ? { authorization: `Bearer ${token}` } : {} })
    if (res.status !== 200) throw new Error(`the snapshot failed: ${res.status} ${await res.text().catch(() => '')}`)
    const jpeg = new Uint8Array(await res.arrayBuffer())
    const dir = config.recordingsDir
    await mkdir(dir, { recursive: true })
    // Written aside, then renamed: the listing never shows half a file. The name is ours alone (reserved), so is its .part.
    const part = join(dir, `.${file}.part`)
    try {
      await writeFile(part, jpeg, { flag: 'wx' })
      await rename(part, join(dir, file))
    } catch (e) {
      await unlink(part).catch(() => {})
      throw e
    }
    return file
  }
}

/** The Stills of this service (one per registry: the MAVLink and Cockpit plugins share its bounds and names). */
const perService = new WeakMap<Registry, Stills>()
export function stillsOf(o: { registry: Registry; config: Config; refusals: Refusals }): Stills {
  let stills = perService.get(o.registry)
  if (!stills) perService.set(o.registry, (stills = new Stills(o)))
  return stills
}

export function imageCaptured(options: { index: number; ok: boolean; fileUrl: string; position: Position | null }): common.CameraImageCaptured {
  const msg = new common.CameraImageCaptured()
  const fresh = options.position && Date.now() - options.position.at <= POSITION_MAX_AGE_MS ? options.position : null
  msg.timeBootMs = timeBootMs()
  msg.timeUtc = BigInt(Date.now()) * 1000n
  msg.cameraId = 0
  msg.lat = fresh?.lat ?? 0
  msg.lon = fresh?.lon ?? 0
  msg.alt = fresh?.alt ?? 0
  msg.relativeAlt = fresh?.relativeAlt ?? 0
  msg.q = [NaN, NaN, NaN, NaN] // the camera's attitude is not known (common.xml: NaN when unknown)
  msg.imageIndex = options.index
  msg.captureResult = (options.ok ? 1 : 0) as standard.MavBool
  msg.fileUrl = charField(options.fileUrl, 205)
  return msg
}
