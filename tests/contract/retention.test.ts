// The retention policy alone (drivers/storage/retention.ts): oldest finished recordings first, never a
// kept one or one being written, and only as many as the rule needs; then its API on real files (kept
// marks, the policy saved and applied, deletions evented with their reason).
import { describe, expect, test } from 'bun:test'
import { existsSync, mkdirSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import type { PeriscopeEvent } from '../../core/events'
import { loadPlugin } from '../../core/loader'
import { definePlugin } from '../../core/plugin'
import type { Streamer } from '../../core/types'
import { diskFullStop } from '../../core/disk'
import { startTestServer, tempDir, until } from '../helpers'
import { startContractServer } from './setup'
import { DAY_MS, DEFAULT_POLICY, GB, planRetention, RECENT_WRITE_MS, type RetentionCandidate } from '../../drivers/storage/retention'

const NOW = Date.UTC(2026, 10, 25, 12)
const file = (fileName: string, ageMs: number, size = GB, extra: Partial<RetentionCandidate> = {}): RetentionCandidate => ({
  fileName,
  size,
  mtimeMs: NOW - ageMs,
  kept: false,
  active: false,
  ...extra,
})
const names = (plan: { deletions: { fileName: string }[] }) => plan.deletions.map((d) => d.fileName)

describe('retention policy', () => {
  test('off (the default): nothing goes, however full or old', () => {
    const plan = planRetention(DEFAULT_POLICY, [file('a.mkv', 400 * DAY_MS)], 0, NOW)
    expect(plan).toEqual({ deletions: [], shortBytes: 0 })
  })

  test('free space: the oldest finished recordings go first, only as many as needed', () => {
    const files = [file('new.mkv', 1 * DAY_MS), file('old.mkv', 3 * DAY_MS), file('mid.mkv', 2 * DAY_MS)]
    const plan = planRetention({ enabled: true, min_free_gb: 2.5, max_age_days: 0 }, files, 0.6 * GB, NOW)
    expect(names(plan)).toEqual(['old.mkv', 'mid.mkv'])
    expect(plan.deletions.every((d) => d.reason === 'min_free')).toBe(true)
    expect(plan.deletions[0]!.detail).toContain('614.4 MB free')
    expect(plan.shortBytes).toBe(0)
  })

  test('enough free: nothing goes', () => {
    expect(names(planRetention({ enabled: true, min_free_gb: 1, max_age_days: 0 }, [file('a.mkv', DAY_MS)], GB, NOW))).toEqual([])
  })

  test('never the one being written, never a kept one, never one written a moment ago; says what is still missing', () => {
    const files = [
      file('writing.mkv', 5 * DAY_MS, GB, { active: true }),
      file('kept.mkv', 4 * DAY_MS, GB, { kept: true }),
      file('finished.mkv', 3 * DAY_MS),
      file('just-ended.mkv', RECENT_WRITE_MS - 1),
    ]
    const plan = planRetention({ enabled: true, min_free_gb: 10, max_age_days: 1 }, files, 0, NOW)
    expect(names(plan)).toEqual(['finished.mkv'])
    expect(plan.shortBytes).toBe(9 * GB)
  })

  test('age: every finished recording older than D days goes, whatever the free space; then the free-space rule counts what they freed', () => {
    const files = [file('a.mkv', 10 * DAY_MS), file('b.mkv', 8 * DAY_MS), file('c.mkv', 2 * DAY_MS), file('d.mkv', 1 * DAY_MS)]
    const ageOnly = planRetention({ enabled: true, min_free_gb: 0, max_age_days: 7 }, files, 100 * GB, NOW)
    expect(names(ageOnly)).toEqual(['a.mkv', 'b.mkv'])
    expect(ageOnly.deletions[0]).toMatchObject({ reason: 'max_age' })
    expect(ageOnly.deletions[0]!.detail).toContain('10.0 days')
    const both = planRetention({ enabled: true, min_free_gb: 3, max_age_days: 7 }, files, 0.5 * GB, NOW)
    expect(both.deletions.map((d) => [d.fileName, d.reason])).toEqual([
      ['a.mkv', 'max_age'],
      ['b.mkv', 'max_age'],
      ['c.mkv', 'min_free'],
    ])
  })

  test('equal ages: by name, so the order is stable', () => {
    const files = [file('b.mkv', DAY_MS), file('a.mkv', DAY_MS)]
    expect(names(planRetention({ enabled: true, min_free_gb: 1, max_age_days: 0 }, files, 0, NOW))).toEqual(['a.mkv'])
  })
})

/** A finished recording file last written `ageDays` ago. */
const recording = (dir: string, name: string, ageDays: number) => {
  writeFileSync(join(dir, name), Buffer.alloc(4096, 1))
  const when = new Date(Date.now() - ageDays * DAY_MS)
  utimesSync(join(dir, name), when, when)
}

describe('retention over the API', () => {
  const start = (dataDir: string) => startContractServer({ plugins: ['recordings', 'metrics'], dataDir })

  test('kept marks: set, listed, carried by a rename, taken off; refusals in the contract shapes', async () => {
    const dataDir = tempDir()
    const s = await start(dataDir)
    const events: PeriscopeEvent[] = []
    const off = s.ctx.events.subscribe((e) => events.push(e))
    try {
      const dir = s.ctx.config.recordingsDir
      mkdirSync(dir, { recursive: true })
      recording(dir, 'dive.mkv', 1)
      expect(await s.call('POST', '/api/recordings/ghost.mkv/keep')).toMatchObject({ status: 404, body: { detail: expect.stringContaining('ghost') } })
      const bad = await s.call('POST', '/api/recordings/.hidden.mkv/keep')
      expect(bad.status).toBe(422)
      expect(bad.body.detail[0]).toMatchObject({ type: 'value_error', loc: ['path', 'recording_path'], input: '.hidden.mkv' })
      expect(await s.call('POST', '/api/recordings/dive/keep')).toMatchObject({ status: 200, body: { name: 'dive.mkv', kept: true } })
      expect((await s.call('GET', '/api/recordings')).body[0]).toMatchObject({ name: 'dive', kept: true })
      expect(events.filter((e) => e.type === 'recording_kept').map((e) => e.data)).toEqual([{ name: 'dive.mkv', kept: true }])

      const renamed = await s.call('PATCH', '/api/recordings/dive.mkv/wreck.mkv')
      expect(renamed.body[0]).toMatchObject({ name: 'wreck', kept: true })
      expect(await s.call('DELETE', '/api/recordings/wreck.mkv/keep')).toMatchObject({ status: 200, body: { name: 'wreck.mkv', kept: false } })
      expect((await s.call('GET', '/api/recordings')).body[0].kept).toBeUndefined()

      // A deletion by hand is listed and evented too, with its reason.
      expect((await s.call('DELETE', '/api/recordings/wreck.mkv')).status).toBe(200)
      expect(events.find((e) => e.type === 'recording_deleted')?.data).toMatchObject({ name: 'wreck.mkv', size: 4096, reason: 'manual' })
      expect((await s.call('GET', '/api/recordings/retention')).body.deletions).toEqual([expect.objectContaining({ name: 'wreck.mkv', reason: 'manual' })])
    } finally {
      off()
      await s.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  test('the age rule, saved: the old finished recording goes with its reason, the kept one and the young one stay; the policy survives a restart', async () => {
    const dataDir = tempDir()
    let s = await start(dataDir)
    const events: PeriscopeEvent[] = []
    let off = s.ctx.events.subscribe((e) => events.push(e))
    try {
      const dir = s.ctx.config.recordingsDir
      mkdirSync(dir, { recursive: true })
      recording(dir, 'oldest-kept.mkv', 30)
      recording(dir, 'old.mkv', 10)
      recording(dir, 'young.mkv', 2)
      expect((await s.call('POST', '/api/recordings/oldest-kept.mkv/keep')).status).toBe(200)

      const bad = await s.call('POST', '/api/recordings/retention', { enabled: 'maybe', max_age_days: -2 })
      expect(bad.status).toBe(422)
      expect(bad.body.detail.map((d: any) => [d.type, d.loc])).toEqual([
        ['bool_parsing', ['body', 'enabled']],
        ['greater_than_equal', ['body', 'max_age_days']],
      ])
      // Not a number a policy can hold: refused, so nothing reads it as "delete everything".
      for (const odd of ['nan', 'inf', 1e9])
        expect((await s.call('POST', '/api/recordings/retention', { enabled: true, min_free_gb: odd })).status, String(odd)).toBe(422)
      expect((await s.call('GET', '/api/recordings/retention')).body.enabled).toBe(false)
      const saved = await s.call('POST', '/api/recordings/retention', { enabled: true, max_age_days: 7 })
      expect(saved.status).toBe(200)
      expect(saved.body).toMatchObject({ enabled: true, min_free_gb: 0, max_age_days: 7, short_bytes: 0 })
      expect(events.some((e) => e.type === 'retention_updated')).toBe(true)

      await until('old.mkv deleted', async () => existsSync(join(dir, 'old.mkv')), (present) => !present)
      expect(existsSync(join(dir, 'oldest-kept.mkv'))).toBe(true)
      expect(existsSync(join(dir, 'young.mkv'))).toBe(true)
      const deleted = await until('the event', async () => events.filter((e) => e.type === 'recording_deleted'), (d) => d.length > 0)
      expect(deleted.map((e) => e.data)).toEqual([expect.objectContaining({ name: 'old.mkv', reason: 'max_age', detail: expect.stringContaining('beyond the 7-day limit') })])
      expect(s.logs.some((l) => l.msg === 'recording deleted by the retention policy' && l.file === 'old.mkv' && l.reason === 'max_age')).toBe(true)
      const metrics = await (await fetch(`${s.url}/metrics`)).text()
      expect(metrics).toContain('periscope_recordings_deleted_total{reason="max_age"} 1')
      expect(metrics).toContain('periscope_recordings_deleted_total{reason="min_free"} 0')

      off()
      await s.stop()
      s = await start(dataDir)
      off = () => {}
      expect((await s.call('GET', '/api/recordings/retention')).body).toMatchObject({ enabled: true, min_free_gb: 0, max_age_days: 7 })
      expect((await s.call('GET', '/api/recordings')).body.find((r: any) => r.name === 'oldest-kept').kept).toBe(true)
    } finally {
      off()
      await s.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe('kept means kept: a segmented recording, and one the disk filled up under', () => {
  /** Stands in for the GStreamer plugin: only which files are being written, which the test says. */
  let writing: string[] = []
  const streamerStandIn = definePlugin({
    name: 'streamer-stand-in',
    setup({ registry }) {
      registry.provide('streamer', { name: 'stand-in', activeRecordings: () => writing } as unknown as Streamer, 'streamer-stand-in')
      return new Elysia({ name: 'periscope:streamer-stand-in' })
    },
  })
  const start = async (dataDir: string) => startTestServer({ plugins: [streamerStandIn, ...(await Promise.all(['recordings', 'metrics'].map(loadPlugin)))], dataDir, config: { simulate: 'default' } })
  /** A finished segment, last written a day ago: the policy may delete it unless it is kept. */
  const segment = (dir: string, name: string) => {
    writeFileSync(join(dir, name), Buffer.alloc(4096, 1))
    const when = new Date(Date.now() - DAY_MS)
    utimesSync(join(dir, name), when, when)
  }
  /** Saves the policy and waits for a whole pass begun after it (last_run is set when a pass is done). */
  const applied = async (s: Awaited<ReturnType<typeof start>>, policy: object) => {
    const asked = new Date().toISOString()
    expect((await s.call('POST', '/api/recordings/retention', policy)).status).toBe(200)
    await until('a whole pass', async () => (await s.call('GET', '/api/recordings/retention')).body.last_run, (at) => at !== null && at >= asked)
  }
  const STEM = 'cam_2026-11-27_10-00-00'
  const seg = (n: number) => `${STEM}_seg00${n}.mkv`

  test('keep pressed while recording keeps every segment, the ones cut after the press too: the policy deletes only the rest', async () => {
    const dataDir = tempDir()
    const s = await start(dataDir)
    try {
      const dir = s.ctx.config.recordingsDir
      mkdirSync(dir, { recursive: true })
      recording(dir, 'other.mkv', 1)
      for (const n of [1, 2]) segment(dir, seg(n))
      writing = [join(dir, seg(3))]
      segment(dir, seg(3))
      // The console's Keep: the recording's name as listed (its path's last part).
      const listed = (await s.call('GET', '/api/recordings')).body.find((r: any) => r.name === STEM)
      expect(listed).toMatchObject({ in_progress: true })
      const kept = await s.call('POST', `/api/recordings/${encodeURIComponent(listed.path.split('/').pop())}/keep`)
      expect(kept).toMatchObject({ status: 200, body: { name: `${STEM}.mkv`, kept: true } })
      // Three more cuts after the press; then the recording ends.
      for (const n of [4, 5, 6]) {
        writing = [join(dir, seg(n))]
        segment(dir, seg(n - 1))
        segment(dir, seg(n))
      }
      writing = []
      expect((await s.call('GET', '/api/recordings')).body.find((r: any) => r.name === STEM)).toMatchObject({ kept: true, segments: Array.from({ length: 6 }, (_, i) => expect.objectContaining({ file: seg(i + 1), kept: true })) })
      // A policy that would delete every finished file: only the unkept one goes.
      await applied(s, { enabled: true, min_free_gb: 1_048_576 })
      expect(existsSync(join(dir, 'other.mkv'))).toBe(false)
      for (let n = 1; n <= 6; n++) expect(existsSync(join(dir, seg(n))), seg(n)).toBe(true)
      expect((await s.call('GET', '/api/recordings/retention')).body.short_bytes).toBeGreaterThan(0)

      // One segment cannot be unmarked alone while its recording is kept: 409 saying what to do.
      const alone = await s.call('DELETE', `/api/recordings/${seg(2)}/keep`)
      expect(alone).toMatchObject({ status: 409, body: { detail: expect.stringContaining(`its recording '${STEM}.mkv' is`) } })
      // The mark follows a rename of the whole recording; taken off, it frees every segment.
      const renamed = await s.call('PATCH', `/api/recordings/${STEM}.mkv/dive.mkv`)
      expect(renamed.body.find((r: any) => r.name === 'dive')).toMatchObject({ kept: true })
      expect(await s.call('DELETE', '/api/recordings/dive.mkv/keep')).toMatchObject({ status: 200, body: { name: 'dive.mkv', kept: false } })
      await until('every segment deleted', async () => readdirSync(dir).filter((f) => f.startsWith('dive_seg')), (left) => left.length === 0)
    } finally {
      writing = []
      await s.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  test('a recording stopped by a full disk is kept (the pilot is told, by a warning and an event); the policy deletes others, never it', async () => {
    const dataDir = tempDir()
    const s = await start(dataDir)
    const events: PeriscopeEvent[] = []
    const off = s.ctx.events.subscribe((e) => events.push(e))
    try {
      const dir = s.ctx.config.recordingsDir
      mkdirSync(dir, { recursive: true })
      recording(dir, 'older.mkv', 3)
      expect((await s.call('POST', '/api/recordings/retention', { enabled: true, max_age_days: 0, min_free_gb: 0 })).status).toBe(200)
      for (const n of [1, 2]) segment(dir, seg(n))
      // A recording made while streaming ends on a full disk, as the recorder says it (drivers/gstreamer/recorder.ts);
      // a RECORDING stream's end is a stream_error with the same sentence.
      s.ctx.events.emit('recording', { bus_info: 'usb-1', active: false, file: `${STEM}.mkv`, started: new Date().toISOString(), bytes: 8192, error: diskFullStop(seg(2)) })
      s.ctx.events.emit('stream_error', { bus_info: 'usb-2', state: 'error', error: diskFullStop(join(dir, 'rec_2026-11-27_11-00-00_seg001.mkv')), restarts: 0 })
      segment(dir, 'rec_2026-11-27_11-00-00_seg001.mkv')
      const told = events.filter((e) => e.type === 'recording_kept').map((e) => e.data)
      expect(told).toEqual([
        { name: `${STEM}.mkv`, kept: true, reason: 'disk_full', detail: expect.stringContaining('stopped by a full disk') },
        { name: 'rec_2026-11-27_11-00-00.mkv', kept: true, reason: 'disk_full', detail: expect.stringContaining('retention policy never deletes it') },
      ])
      expect(s.logs.filter((l) => l.msg === 'a recording stopped by a full disk is kept').map((l) => l.file)).toEqual([`${STEM}.mkv`, 'rec_2026-11-27_11-00-00.mkv'])
      const list = (await s.call('GET', '/api/recordings')).body
      expect(list.find((r: any) => r.name === STEM)).toMatchObject({ kept: true })
      expect(list.find((r: any) => r.name === 'rec_2026-11-27_11-00-00')).toMatchObject({ kept: true })
      // The policy must now make room: it deletes the older recording, never the stopped ones.
      await applied(s, { enabled: true, min_free_gb: 1_048_576 })
      expect(existsSync(join(dir, 'older.mkv'))).toBe(false)
      for (const f of [seg(1), seg(2), 'rec_2026-11-27_11-00-00_seg001.mkv']) expect(existsSync(join(dir, f)), f).toBe(true)
    } finally {
      off()
      await s.stop()
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})
