// The devices as the service lists them, kept current by events: a device added or removed shows at
// once from the event alone; events carry devices without their `watch` links (those name the host the
// page reached the service on), so a change also asks GET /api/devices once, shortly after, for them.
// Nothing here polls: with no event, no request.
import { ApiError, get, watchLinksForPage } from './api'
import { on } from './events'
import { Value } from './state'
import type { Device, DeviceRecording, StreamHealth, StreamStatus } from './types'
import { notify } from './widgets'

export const devices = new Value<Device[] | null>(null)
/**
 * Cameras unplugged while their stream was on, as they were last seen: their cards stay, saying so,
 * until they are back (the pilot is told what went, not left with a card gone from the row).
 */
export const unplugged = new Value<Device[]>([])
/** Why the list could not be loaded, if it could not. */
export const devicesError = new Value<string | null>(null)

const byTypeThenBus = (a: Device, b: Device) => a.device_type - b.device_type || (a.bus_info < b.bus_info ? -1 : a.bus_info > b.bus_info ? 1 : 0)

let loading: Promise<void> | null = null
let again = false

/** GET /api/devices now (one at a time; a call during one asks for one more after it). */
export function reloadDevices(): Promise<void> {
  if (loading) {
    again = true
    return loading
  }
  loading = (async () => {
    try {
      const list = (await get<Device[]>('/api/devices')).map(withPageLinks)
      devices.set(list)
      forgetReturned(list)
      devicesError.set(null)
    } catch (e) {
      devicesError.set((e as ApiError).detail ?? String(e))
    } finally {
      loading = null
      if (again) {
        again = false
        void reloadDevices()
      }
    }
  })()
  return loading
}

let soon: ReturnType<typeof setTimeout> | undefined
/** One reload a little after a burst of changes (their watch links). */
function reloadSoon(): void {
  clearTimeout(soon)
  soon = setTimeout(() => void reloadDevices(), 150)
}

/** The device with its watch links as this page reaches them (under a proxy's prefix too); once only. */
const withPageLinks = (d: Device): Device => (d.watch ? { ...d, watch: watchLinksForPage(d.watch) } : d)

/**
 * A device as an event or an answer reported it (keeps the watch links it had until the reload: events
 * carry none, and a device handed back from this list has them already for this page).
 */
export function replaceDevice(next: Device): void {
  const list = devices.get()
  if (!list) return
  const previous = list.find((d) => d.bus_info === next.bus_info)
  const merged = { ...next, watch: next.watch ?? previous?.watch }
  devices.set((previous ? list.map((d) => (d === previous ? merged : d)) : [...list, merged]).sort(byTypeThenBus))
}

/** The unplugged cameras that are in `list` again are no longer said to be unplugged. */
function forgetReturned(list: Device[]): void {
  const away = unplugged.get()
  if (away.some((u) => list.some((d) => d.bus_info === u.bus_info))) unplugged.set(away.filter((u) => !list.some((d) => d.bus_info === u.bus_info)))
}

function update(match: (d: Device) => boolean, change: (d: Device) => Device): void {
  const list = devices.get()
  if (!list?.some(match)) return
  devices.set(list.map((d) => (match(d) ? change(d) : d)))
}

let started = false
export function followDevices(): void {
  if (started) return
  started = true
  on('connected', () => void reloadDevices())
  on('device_removed', ({ bus_info }: { bus_info: string }) => {
    const list = devices.get()
    if (!list) return
    const gone = list.find((d) => d.bus_info === bus_info)
    devices.set(list.filter((d) => d.bus_info !== bus_info))
    if (gone?.stream.enabled) unplugged.set([...unplugged.get().filter((u) => u.bus_info !== bus_info), { ...gone, connected: false }])
  })
  on('device_added', ({ device }: { device: Device }) => {
    replaceDevice(device)
    forgetReturned([device])
    reloadSoon()
  })
  on('device_updated', ({ device }: { device: Device }) => {
    replaceDevice(device)
    reloadSoon()
  })
  // A stream's state (its key is the group's leader): the followers show the same.
  on('stream_error', ({ bus_info, ...status }: { bus_info: string } & StreamStatus) => {
    update((d) => d.bus_info === bus_info || d.leader === bus_info, (d) => ({ ...d, stream_status: { state: status.state, error: status.error ?? null, restarts: status.restarts ?? d.stream_status?.restarts ?? 0, health: d.stream_status?.health ?? null } }))
    reloadSoon()
  })
  // A stream's health alert raised or cleared (its own camera's, not its group's): the banner follows it.
  on('stream_health', ({ bus_info, health }: { bus_info: string; health: StreamHealth }) => {
    update((d) => d.bus_info === bus_info, (d) => ({ ...d, stream_status: { ...(d.stream_status ?? { state: 'running', error: null, restarts: 0 }), health } }))
  })
  on('frame_stats', ({ bus_info, num_drops }: { bus_info: string; num_drops: number }) => {
    update((d) => d.bus_info === bus_info || d.leader === bus_info, (d) => ({ ...d, frame_stats: { num_drops } }))
  })
  on('recording', ({ members, bus_info, ...state }: { bus_info: string; members?: string[] } & DeviceRecording) => {
    const who = new Set(members ?? [bus_info])
    update((d) => who.has(d.bus_info), (d) => ({ ...d, recording: { active: state.active, file: state.file, started: state.started, bytes: state.bytes, error: state.error, telemetry: state.telemetry } }))
  })
  // Arming or disarming started or stopped a camera's recording (record while armed), or could not: the pilot is told.
  on('record_while_armed', ({ bus_info, action, detail }: { bus_info: string; action: 'started' | 'stopped' | 'failed'; detail: string }) => {
    notify(action === 'failed' ? 'error' : 'ok', `${bus_info}: ${detail}`)
  })
}
