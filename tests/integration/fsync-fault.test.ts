// A recording whose per-second fsync fails (a dying card answers EIO), on the real streamer: the failure
// is logged once for the episode, not every second, and shown where a pilot looks, on the recording
// (start_recording from a stream) and on the stream status (a RECORDING stream), until the disk takes
// the file again. The fault is injected into fsync only: the files themselves are written as usual.
import { afterAll, afterEach, beforeAll, expect, spyOn, test } from 'bun:test'
import * as fsPromises from 'node:fs/promises'
import type { StreamJob } from '../../core/types'
import { createLogger } from '../../core/log'
import { freePort, requireGStreamer, simulatedJob, testStreamer, waitFor } from './gstreamer.helpers'

const lines: Record<string, any>[] = []
const { streamer } = testStreamer({ log: createLogger('info', {}, (line) => lines.push(JSON.parse(line))) })
beforeAll(() => requireGStreamer())
afterAll(() => streamer.stopAll())

let failing = false
let failedSyncs = 0
const realOpen = fsPromises.open
const spy = spyOn(fsPromises, 'open').mockImplementation((async (...args: Parameters<typeof fsPromises.open>) => {
  const handle = await realOpen(...args)
  if (!failing || !String(args[0]).endsWith('.mkv')) return handle
  // The card refuses to flush: fsync fails with EIO (the handle still closes).
  failedSyncs++
  return Object.assign(Object.create(handle), { sync: async () => Promise.reject(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' })), close: () => handle.close() })
}) as typeof fsPromises.open)
afterAll(() => spy.mockRestore())
afterEach(() => {
  failing = false
})

const reported = () => lines.filter((l) => l.msg === 'a recording cannot be pushed to the disk')
const recovered = () => lines.filter((l) => l.msg === 'a recording reaches the disk again')

async function running(job: StreamJob): Promise<void> {
  await streamer.start(job)
  await waitFor('the stream running', () => streamer.status(job.bus_info).state === 'running', 20_000)
}

test('start_recording: the recording shows the fsync failure while it lasts; logged once per episode', async () => {
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP', ports: [freePort()] })
  await running(job)
  try {
    const before = reported().length
    failing = true
    await streamer.startRecording(job.bus_info)
    const shown = await waitFor('the recording to show the fsync failure', () => streamer.recording(job.bus_info).error, 20_000)
    expect(shown).toContain('fsync: EIO')
    expect(streamer.recording(job.bus_info).active).toBe(true)
    // Three more failing fsyncs (one a second): still one report.
    const syncs = failedSyncs
    await waitFor('three more failing fsyncs', () => failedSyncs >= syncs + 3, 20_000)
    expect(reported().length - before).toBe(1)
    failing = false
    await waitFor('the disk takes it again', () => streamer.recording(job.bus_info).error === null, 20_000)
    expect(recovered().length).toBeGreaterThan(0)
    const stopped = await streamer.stopRecording(job.bus_info)
    expect(stopped).toMatchObject({ active: false, error: null })
  } finally {
    await streamer.stop(job.bus_info)
  }
}, 90_000)

test('a RECORDING stream: its status shows the fsync failure while it lasts', async () => {
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'RECORDING', ports: [] })
  job.stream.endpoints = []
  failing = true
  await running(job)
  try {
    const shown = await waitFor('the stream status to show the fsync failure', () => streamer.status(job.bus_info).error, 20_000)
    expect(shown).toContain('fsync: EIO')
    expect(streamer.status(job.bus_info).state).toBe('running')
    failing = false
    await waitFor('the disk takes it again', () => streamer.status(job.bus_info).error === null, 20_000)
  } finally {
    await streamer.stop(job.bus_info)
  }
}, 90_000)
