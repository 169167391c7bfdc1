// The retention policy alone (drivers/storage/retention.ts): oldest finished recordings first, never a
// kept one or one being written, and only as many as the rule needs.
import { describe, expect, test } from 'bun:test'
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
