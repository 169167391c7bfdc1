// Retention on a small card: a loop-mounted 64 MB ext4 image holds the recordings of the real service
// (core/main.ts) while a simulated camera records over it. As the card fills, the oldest finished
// recordings go first, the one being written never, the one marked kept never; GET
// /api/recordings/retention, the `recording_deleted` events and GET /api/logs say which and why.
// Needs root (losetup/mount); the integration tier runs as root.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { closeSync, fsyncSync, readdirSync, openSync, rmSync, statfsSync, utimesSync, writeSync } from 'node:fs'
import { join } from 'node:path'
import { loopCard, type Card } from '../cards'
import { listenEvents, until } from '../helpers'
import { freePort, requireGStreamer, RtpCounter } from './gstreamer.helpers'
import { h264Device, startService, type Service } from './service.helpers'

const MB = 1024 * 1024
const GB = 1024 * MB
let disk: Card
let card: string
let service: Service | null = null

beforeAll(() => {
  requireGStreamer()
  disk = loopCard(64, 'periscope-retention-')
  card = disk.dir
})
afterAll(async () => {
  await service?.kill()
  await disk?.remove()
})

/** An empty card, whatever the last test left. */
function freshCard(): void {
  for (const name of readdirSync(card)) if (name !== 'lost+found') rmSync(join(card, name), { recursive: true, force: true })
}
const free = () => statfsSync(card).bavail * statfsSync(card).bsize

/** Writes real blocks (fsynced, so the free count is settled) of `bytes` to `name` on the card. */
function writeFile(name: string, bytes: number, ageDays = 0): void {
  const fd = openSync(join(card, name), 'w')
  const chunk = Buffer.alloc(MB, 0x5a)
  for (let left = bytes; left > 0; left -= MB) writeSync(fd, chunk, 0, Math.min(MB, left))
  fsyncSync(fd)
  closeSync(fd)
  if (ageDays) {
    const when = new Date(Date.now() - ageDays * 86_400_000)
    utimesSync(join(card, name), when, when)
  }
}

test('a long recording on a small card: oldest finished recordings go first, the one being written and the kept one never; API, events and logs say so', async () => {
  freshCard()
  // Four finished recordings of 8 MB, oldest first: kept (4 days), old-a (3), old-b (2), new-d (1).
  writeFile('kept.mkv', 8 * MB, 4)
  writeFile('old-a.mkv', 8 * MB, 3)
  writeFile('old-b.mkv', 8 * MB, 2)
  writeFile('new-d.mkv', 8 * MB, 1)

  // No periodic pass during the test (--retention-interval): each pass here has the trigger the test gives it.
  // The card is small on purpose: a recording may start with 1 MiB free (--min-free-to-record), and the
  // retention policy is what keeps it going.
  service = await startService({ args: ['--recordings-dir', card, '--log-level', 'warn', '--retention-interval', '3600', '--min-free-to-record', '1'] })
  const { call } = service
  const events = listenEvents(`${service.url}/api/events`)
  await events.ready
  const port = freePort()
  const endpoint = await RtpCounter.open(port)
  try {
    // The policy is off until the pilot turns it on; a bad policy is a 422 in pydantic's shape.
    expect((await call('GET', '/api/recordings/retention')).body).toMatchObject({ enabled: false, min_free_gb: 0, max_age_days: 0, deletions: [] })
    const bad = await call('POST', '/api/recordings/retention', { enabled: true, min_free_gb: -1 })
    expect(bad.status).toBe(422)
    expect(bad.body.detail[0]).toMatchObject({ type: 'greater_than_equal', loc: ['body', 'min_free_gb'] })

    // The pilot marks the oldest one kept.
    expect((await call('POST', '/api/recordings/kept.mkv/keep')).body).toEqual({ name: 'kept.mkv', kept: true })
    expect((await call('GET', '/api/recordings')).body.find((r: any) => r.name === 'kept')?.kept).toBe(true)
    expect(events.events.some((e) => e.type === 'recording_kept' && e.data.name === 'kept.mkv' && e.data.kept)).toBe(true)

    // A camera streams (to a loopback endpoint) and records onto the card.
    const dev = await h264Device(service)
    const configured = await call('POST', '/api/devices/configure_stream', {
      bus_info: dev.bus_info,
      stream_type: 'UDP',
      stream_format: { width: dev.width, height: dev.height, interval: { numerator: 1, denominator: dev.fps } },
      encode_type: 'H264',
      enabled: true,
      endpoints: [{ host: '127.0.0.1', port }],
    })
    expect(configured.status).toBe(200)
    await until('the stream running', () => call('GET', '/api/devices'), (r) => r.body.find((d: any) => d.bus_info === dev.bus_info)?.stream_status?.state === 'running', 30_000)
    const started = await call('POST', '/api/devices/start_recording', { bus_info: dev.bus_info })
    expect(started.status).toBe(200)
    const writing: string = started.body.file
    await until('the recording growing', () => call('GET', '/api/devices'), (r) => r.body.find((d: any) => d.bus_info === dev.bus_info)?.recording?.bytes > 0, 20_000)

    // Keep 16 MB free, with about 20 MB free: nothing goes.
    const ballastFor = (targetFree: number) => Math.max(0, Math.floor((free() - targetFree) / MB)) * MB
    writeFile('ballast-1.bin', ballastFor(20 * MB))
    const saved = await call('POST', '/api/recordings/retention', { enabled: true, min_free_gb: 16 / 1024, max_age_days: 0 })
    expect(saved.status).toBe(200)
    expect(saved.body).toMatchObject({ enabled: true, min_free_gb: 16 / 1024, max_age_days: 0 })
    expect((await call('GET', '/api/recordings/retention')).body.deletions).toEqual([])

    // The card fills while recording (10 MB free): the oldest finished, not kept, recording goes.
    writeFile('ballast-2.bin', ballastFor(10 * MB))
    const first = await until('a deletion', () => call('GET', '/api/recordings/retention'), (r) => r.body.deletions.length >= 1, 20_000)
    expect(first.body.deletions.map((d: any) => [d.name, d.reason])).toEqual([['old-a.mkv', 'min_free']])

    // Fuller still (5 MB free): the next oldest go, until only the kept one and the one being written are left.
    writeFile('ballast-3.bin', ballastFor(5 * MB))
    const after = await until('two more deletions', () => call('GET', '/api/recordings/retention'), (r) => r.body.deletions.length >= 3, 20_000)
    // Newest first in the answer: the order they went is old-a, old-b, new-d.
    expect(after.body.deletions.map((d: any) => d.name).reverse()).toEqual(['old-a.mkv', 'old-b.mkv', 'new-d.mkv'])
    for (const d of after.body.deletions) expect(d.detail).toContain('below the 0.015625 GB to keep free')

    const left = ((await call('GET', '/api/recordings')).body as any[]).map((r) => `${r.name}.${r.format}`).sort()
    expect(left).toEqual(['kept.mkv', writing].sort())
    expect((await call('GET', '/api/devices')).body.find((d: any) => d.bus_info === dev.bus_info).recording).toMatchObject({ active: true, file: writing, error: null })

    // The events said so, in that order, with the reason.
    await until('three recording_deleted events', async () => events.events.filter((e) => e.type === 'recording_deleted'), (e) => e.length >= 3, 10_000)
    const evented = events.events.filter((e) => e.type === 'recording_deleted').map((e) => [e.data.name, e.data.reason])
    expect(evented).toEqual([
      ['old-a.mkv', 'min_free'],
      ['old-b.mkv', 'min_free'],
      ['new-d.mkv', 'min_free'],
    ])
    // And the log (GET /api/logs): each deletion with its reason.
    const logs = (await call('GET', '/api/logs?level=warn&limit=1000')).body
    const entries: any[] = Array.isArray(logs) ? logs : logs.entries
    const deleted = entries.filter((e) => e.msg === 'recording deleted by the retention policy')
    expect(deleted.map((e) => [e.fields?.file ?? e.file, e.fields?.reason ?? e.reason])).toEqual([
      ['old-a.mkv', 'min_free'],
      ['old-b.mkv', 'min_free'],
      ['new-d.mkv', 'min_free'],
    ])

    // Fuller again: nothing more can go (kept, being written): the state says how much is missing, and the recording goes on.
    writeFile('ballast-4.bin', ballastFor(5 * MB))
    const short = await until('the shortfall reported', () => call('GET', '/api/recordings/retention'), (r) => r.body.short_bytes > 0, 20_000)
    expect(short.body.free).toBeLessThan(16 * MB)
    const stopped = await call('POST', '/api/devices/stop_recording', { bus_info: dev.bus_info })
    expect(stopped.body).toMatchObject({ active: false, file: writing, error: null })

    // Unmarked, the kept one is the oldest finished recording: the pass that follows takes it, and that is
    // enough once the last ballast is gone (10 MB free + 8), so the one just finished, newer, stays.
    rmSync(join(card, 'ballast-4.bin'))
    writeFile('ballast-5.bin', ballastFor(10 * MB))
    expect((await call('DELETE', '/api/recordings/kept.mkv/keep')).body).toEqual({ name: 'kept.mkv', kept: false })
    const unkept = await until('the unmarked one deleted', () => call('GET', '/api/recordings/retention'), (r) => r.body.deletions.length >= 4, 90_000)
    expect(unkept.body.deletions[0]).toMatchObject({ name: 'kept.mkv', reason: 'min_free' })
    expect(((await call('GET', '/api/recordings')).body as any[]).map((r) => `${r.name}.${r.format}`)).toEqual([writing])
  } finally {
    events.close()
    endpoint.close()
    await service.kill()
    service = null
  }
}, 240_000)

test('a RECORDING stream\'s file is never deleted, even when it is all there is and the disk is below the minimum; the shortfall is said', async () => {
  freshCard()
  writeFile('finished.mkv', 4 * MB, 1)
  service = await startService({ args: ['--recordings-dir', card, '--log-level', 'warn', '--min-free-to-record', '1'] })
  const { call } = service
  try {
    const dev = await h264Device(service)
    const configure = (enabled: boolean) =>
      call('POST', '/api/devices/configure_stream', {
        bus_info: dev.bus_info,
        stream_type: 'RECORDING',
        stream_format: { width: dev.width, height: dev.height, interval: { numerator: 1, denominator: dev.fps } },
        encode_type: 'H264',
        enabled,
        endpoints: [],
      })
    expect((await configure(true)).status).toBe(200)
    const writing = await until(
      'the stream writing its recording',
      async () => ((await call('GET', '/api/recordings')).body as any[]).find((r) => r.in_progress),
      (r) => r !== undefined,
      30_000,
    )
    // Wanting more free space than the whole card: the finished one goes, the one being written stays.
    expect((await call('POST', '/api/recordings/retention', { enabled: true, min_free_gb: 1, max_age_days: 0 })).status).toBe(200)
    const state = await until('the pass done and short', () => call('GET', '/api/recordings/retention'), (r) => r.body.deletions.length >= 1 && r.body.short_bytes > 0, 20_000)
    expect(state.body.deletions.map((d: any) => [d.name, d.reason])).toEqual([['finished.mkv', 'min_free']])
    expect(state.body.short_bytes).toBeGreaterThan(GB - 64 * MB)
    // Two more passes (the watch runs one every 2 s while recording below the minimum): still there, still written.
    let passes = 0
    let seen = state.body.last_run
    await until('two more passes', () => call('GET', '/api/recordings/retention'), (r) => {
      if (r.body.last_run !== seen) [passes, seen] = [passes + 1, r.body.last_run]
      return passes >= 2
    }, 20_000)
    expect((await call('GET', '/api/recordings/retention')).body.deletions).toHaveLength(1)
    expect((await call('GET', '/api/recordings')).body).toEqual([expect.objectContaining({ path: writing.path, in_progress: true })])
    const logs = (await call('GET', '/api/logs?level=warn&limit=1000')).body
    const entries: any[] = Array.isArray(logs) ? logs : logs.entries
    expect(entries.filter((e) => e.msg.startsWith('the retention policy cannot keep enough space free'))).toHaveLength(1)
    expect((await configure(false)).status).toBe(200)
  } finally {
    await service.kill()
    service = null
  }
}, 120_000)
