// A next segment is written under a hidden `.part` name until its first bytes (drivers/gstreamer/recorder.ts):
// one left by a kill -9 is put right when the recordings' store starts.
import { expect, test } from 'bun:test'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { RecordingStore } from '../../drivers/storage/recordings'
import { tempDir } from '../helpers'

test('at start, a left-over .part with bytes gets its name, an empty one goes, anything else stays', async () => {
  const dir = tempDir('periscope-parts-')
  writeFileSync(join(dir, '.cam_2026-11-25_22-00-00_seg002.mkv.part'), 'frames')
  writeFileSync(join(dir, '.cam_2026-11-25_22-00-00_seg003.mkv.part'), '')
  // Its name is taken already: it is left as it is, never written over.
  writeFileSync(join(dir, 'cam_2026-11-25_23-00-00_seg002.mkv'), 'kept')
  writeFileSync(join(dir, '.cam_2026-11-25_23-00-00_seg002.mkv.part'), 'other')
  writeFileSync(join(dir, '.notes.txt.part'), 'not a recording')
  const store = new RecordingStore(dir)
  await store.init()
  expect(readdirSync(dir).sort()).toEqual(['.cam_2026-11-25_23-00-00_seg002.mkv.part', '.notes.txt.part', 'cam_2026-11-25_22-00-00_seg002.mkv', 'cam_2026-11-25_23-00-00_seg002.mkv'])
  expect(readFileSync(join(dir, 'cam_2026-11-25_22-00-00_seg002.mkv'), 'utf8')).toBe('frames')
  expect(readFileSync(join(dir, 'cam_2026-11-25_23-00-00_seg002.mkv'), 'utf8')).toBe('kept')
  expect(existsSync(join(dir, '.cam_2026-11-25_22-00-00_seg003.mkv.part'))).toBe(false)
})

test('a segmented recording whose next segment is still under its hidden name is in progress: listed so, and neither deleted nor renamed whole', async () => {
  const dir = tempDir('periscope-parts-')
  const stem = 'cam_2026-11-26_06-00-00'
  writeFileSync(join(dir, `${stem}_seg001.mkv`), 'one')
  writeFileSync(join(dir, `${stem}_seg002.mkv`), 'two')
  writeFileSync(join(dir, `.${stem}_seg003.mkv.part`), '')
  // The recorder names the segment it writes: seg003, not on disk under that name until its first bytes.
  const store = new RecordingStore(dir, () => [join(dir, `${stem}_seg003.mkv`)])
  const [listed] = await store.list()
  expect(listed).toMatchObject({ name: stem, in_progress: true })
  expect(listed!.segments!.map((s) => s.file)).toEqual([`${stem}_seg001.mkv`, `${stem}_seg002.mkv`])
  await expect(store.remove(stem)).rejects.toThrow(`'${stem}_seg003.mkv' is still being recorded`)
  await expect(store.rename(`${stem}.mkv`, 'dive.mkv')).rejects.toThrow(/still being recorded/)
  expect(readdirSync(dir).sort()).toEqual([`.${stem}_seg003.mkv.part`, `${stem}_seg001.mkv`, `${stem}_seg002.mkv`])
  // A finished segment named exactly is a file of its own: it may go.
  expect((await store.remove(`${stem}_seg001.mkv`)).map((f) => f.fileName)).toEqual([`${stem}_seg001.mkv`])
})
