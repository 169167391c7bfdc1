// A recording is opened once (issue 25, item 7): the download used to check the name (lstat: a regular
// file) and then open the path again, so a symlink swapped in between was followed (113 of 3,000
// downloads returned the file outside). Now the file is opened without following symlinks, checked on
// its descriptor, and served from it. A Python process swaps a symlink to an outside file and the real
// recording in place, as fast as it can, while 3,000 downloads run.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { linkSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { until, type TestServer } from '../helpers'
import { startContractServer } from './setup'

let s: TestServer
let swapper: Subprocess | null = null
const INSIDE = Buffer.alloc(64 * 1024, 'inside! ')
const OUTSIDE = Buffer.alloc(64 * 1024, 'OUTSIDE ')

beforeAll(async () => {
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'recordings'] })
})
afterAll(async () => {
  swapper?.kill('SIGKILL')
  await swapper?.exited
  await s.stop()
})

test('a symlink swapped in and out of a recording\'s name during 3,000 downloads never serves the outside file', async () => {
  const recordings = join(s.dataDir, 'recordings')
  mkdirSync(recordings, { recursive: true })
  const outside = join(mkdtempSync(join(tmpdir(), 'periscope-outside-')), 'secret.mp4')
  writeFileSync(outside, OUTSIDE)
  // The real content is kept under a hidden name (not listed) and hard-linked back each time.
  writeFileSync(join(recordings, '.keep.mp4'), INSIDE)
  linkSync(join(recordings, '.keep.mp4'), join(recordings, 'dive.mp4'))
  expect((await s.call('GET', '/api/recordings')).body.map((r: any) => r.name)).toEqual(['dive'])

  const proc = Bun.spawn(
    [
      'python3',
      '-c',
      `
import os, sys
d, outside = sys.argv[1], sys.argv[2]
name, keep = os.path.join(d, 'dive.mp4'), os.path.join(d, '.keep.mp4')
link, real = os.path.join(d, '.link'), os.path.join(d, '.real')
print('swapping', flush=True)
while True:
    os.symlink(outside, link)
    os.rename(link, name)
    os.link(keep, real)
    os.rename(real, name)
`,
      recordings,
      outside,
    ],
    { stdout: 'pipe', stderr: 'inherit' },
  )
  swapper = proc
  const reader = proc.stdout.getReader()
  expect(new TextDecoder().decode((await reader.read()).value)).toContain('swapping')

  const openFds = () => readdirSync('/proc/self/fd').length
  const fdsBefore = openFds()
  const counts = { inside: 0, outside: 0, refused: 0, other: 0 }
  let next = 0
  const worker = async () => {
    while (next < 3000) {
      next++
      const path = next % 2 ? '/api/recordings/dive.mp4' : '/api/recordings/dive.mp4/download'
      const res = await fetch(`${s.url}${path}`)
      const body = Buffer.from(await res.arrayBuffer())
      if (res.status === 200 && body.equals(INSIDE)) counts.inside++
      else if (body.includes('OUTSIDE')) counts.outside++
      else if (res.status === 404) counts.refused++
      else counts.other++
    }
  }
  await Promise.all(Array.from({ length: 8 }, worker))
  expect(counts.outside).toBe(0)
  expect(counts.other).toBe(0)
  // The race was run, not refused throughout: both outcomes of the swap were met many times (how many
  // of each depends on the machine's load).
  // Under emulation (the arm64 tier) the swapper outruns the service: 13 inside of 3,000 seen there.
  const emulated = !!process.env.PERISCOPE_TEST_BUN
  expect(counts.inside).toBeGreaterThan(emulated ? 5 : 20)
  expect(counts.refused).toBeGreaterThan(emulated ? 5 : 20)
  // Every descriptor opened for a download was closed (8 keep-alive connections may stay).
  await until('the descriptors closed', async () => openFds(), (n) => n <= fdsBefore + 24)
  swapper.kill('SIGKILL')
  await swapper.exited
  swapper = null

  // Served from the descriptor, a Range request keeps its exact length; a symlink in the name is 404.
  rmSync(join(recordings, 'dive.mp4'), { force: true })
  linkSync(join(recordings, '.keep.mp4'), join(recordings, 'dive.mp4'))
  const ranged = await fetch(`${s.url}/api/recordings/dive.mp4`, { headers: { range: 'bytes=8-15' } })
  expect(ranged.status).toBe(206)
  expect(ranged.headers.get('content-length')).toBe('8')
  expect(ranged.headers.get('content-range')).toBe(`bytes 8-15/${INSIDE.length}`)
  expect(await ranged.text()).toBe('inside! ')
  const whole = await fetch(`${s.url}/api/recordings/dive.mp4/download`)
  expect(whole.headers.get('content-length')).toBe(String(INSIDE.length))
  expect(Buffer.from(await whole.arrayBuffer()).equals(INSIDE)).toBe(true)
  rmSync(join(recordings, 'dive.mp4'))
  symlinkSync(outside, join(recordings, 'dive.mp4'))
  expect((await fetch(`${s.url}/api/recordings/dive.mp4`)).status).toBe(404)
}, 180_000)
