// The supervisor: a killed child comes back, backoff grows 1, 2, 4 s and resets after a stable run, a
// stall is seen and acted on, a vanished device parks its stream, and no gst process outlives anything.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { GstStreamer } from '../../drivers/gstreamer/streamer'
import { alive, gstChildrenOf, requireGStreamer, simulatedJob, tempDir, testStreamer, waitFor, type Recorded } from './gstreamer.helpers'

const streamers: GstStreamer[] = []
const spawned: number[] = []
function make(options: Parameters<typeof testStreamer>[0] = {}): { streamer: GstStreamer; events: Recorded[] } {
  const made = testStreamer(options)
  streamers.push(made.streamer)
  return made
}

beforeAll(() => requireGStreamer())
afterAll(async () => {
  await Promise.all(streamers.map((s) => s.stopAll()))
  for (const pid of spawned) if (alive(pid)) process.kill(pid, 'SIGKILL')
})

const running = (s: GstStreamer, bus: string) => s.status(bus).state === 'running'

test('a killed streaming child is brought back, and the state says so on the way', async () => {
  const { streamer, events } = make()
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP' })
  await streamer.start(job)
  await waitFor('running', () => running(streamer, job.bus_info))
  const first = streamer.pid(job.bus_info)!
  process.kill(first, 'SIGKILL')
  await waitFor('backoff', () => streamer.status(job.bus_info).state === 'backoff', 8000, 10)
  expect(streamer.status(job.bus_info).error).toMatch(/exited unexpectedly.*restarting in 1 s/)
  await waitFor('running again', () => running(streamer, job.bus_info), 10_000)
  expect(streamer.pid(job.bus_info)).not.toBe(first)
  expect(alive(first)).toBe(false)
  expect(streamer.status(job.bus_info)).toEqual({ state: 'running', error: null, restarts: 1 })
  const states = events.filter((e) => e.type === 'stream_error' && e.data.bus_info === job.bus_info).map((e) => e.data.state)
  expect(states).toEqual(['starting', 'running', 'backoff', 'starting', 'running'])
  await streamer.stop(job.bus_info)
}, 45_000)

test('backoff grows 1, 2, 4 s while a pipeline keeps failing, and resets after a stable run', async () => {
  const { streamer, events } = make({ stableMs: 1500 })
  const job = simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP' })
  // A camera that gives up after a few frames: every run ends by itself.
  job.members[0]!.source = { kind: 'gst', description: job.members[0]!.source.kind === 'gst' ? job.members[0]!.source.description.replace('is-live=true', 'is-live=true num-buffers=3') : '' }
  await streamer.start(job)
  await waitFor('fourth restart', () => streamer.status(job.bus_info).restarts >= 4, 30_000)
  await streamer.stop(job.bus_info)
  const starts = events.filter((e) => e.type === 'stream_error' && e.data.state === 'starting').map((e) => (e as any).at as number)
  expect(starts.length).toBeGreaterThanOrEqual(4)
  const delays = events.filter((e) => e.type === 'stream_error' && e.data.state === 'backoff').map((e) => /restarting in (\d+) s/.exec(e.data.error)![1])
  expect(delays.slice(0, 4)).toEqual(['1', '2', '4', '8'])

  // Stable for longer than stableMs: the next failure waits 1 s again.
  const stable = simulatedJob({ encode_type: 'H264', stream_type: 'UDP' })
  await streamer.start(stable)
  await waitFor('running', () => running(streamer, stable.bus_info))
  const killAndRecover = async (expectDelay: number) => {
    const pid = streamer.pid(stable.bus_info)!
    process.kill(pid, 'SIGKILL')
    await waitFor(`backoff ${expectDelay} s`, () => new RegExp(`restarting in ${expectDelay} s`).test(streamer.status(stable.bus_info).error ?? ''), 8000, 10)
    await waitFor('running again', () => running(streamer, stable.bus_info) && streamer.pid(stable.bus_info) !== pid, 15_000)
  }
  await killAndRecover(1)
  await killAndRecover(2)
  // "Stable" is a duration: this child's run (from its running event) must outlast stableMs plus one tick
  // of the runner's 1 s watchdog, which is what notices it. The watchdog's timer is due before this
  // wait's last poll, in this same event loop, so it has run by then however loaded the machine is.
  const runningSince = events.filter((e) => e.type === 'stream_error' && e.data.bus_info === stable.bus_info && e.data.state === 'running').at(-1)!.at
  await waitFor('a run longer than stableMs and a watchdog tick', () => Date.now() - runningSince > 1500 + 1000 + 250, 10_000)
  process.kill(streamer.pid(stable.bus_info)!, 'SIGKILL')
  await waitFor('backoff 1 s', () => /restarting in 1 s/.test(streamer.status(stable.bus_info).error ?? ''), 8000, 10)
  await streamer.stop(stable.bus_info)
}, 60_000)

test('a stall (no buffers) counts as a failure and restarts the child', async () => {
  const { streamer } = make({ stallMs: 2000 }) // the service default is 5 s; shorter keeps the test quick
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP' })
  await streamer.start(job)
  await waitFor('running', () => running(streamer, job.bus_info))
  const frozen = streamer.pid(job.bus_info)!
  spawned.push(frozen)
  process.kill(frozen, 'SIGSTOP') // alive, but no buffer flows
  await waitFor('stall noticed', () => /stalled: no buffers for 2 s/.test(streamer.status(job.bus_info).error ?? ''), 15_000)
  await waitFor('running again', () => running(streamer, job.bus_info), 15_000)
  expect(streamer.pid(job.bus_info)).not.toBe(frozen)
  expect(alive(frozen)).toBe(false)
  await streamer.stop(job.bus_info)
}, 45_000)

test('a vanished device parks the stream without restarts, and it resumes when the device returns', async () => {
  const { streamer } = make()
  const device = join(tempDir(), 'video9')
  const job = simulatedJob({ encode_type: 'H264', stream_type: 'UDP' })
  job.members[0]!.source = { kind: 'v4l2', device }
  await streamer.start(job)
  expect(streamer.status(job.bus_info).state).toBe('error')
  expect(streamer.status(job.bus_info).error).toMatch(/is gone; the stream resumes when it returns/)
  // Nothing must happen while it is gone: an absence takes a wait of time, longer than the first backoff (1 s) and a second.
  await Bun.sleep(2500)
  expect(streamer.status(job.bus_info).restarts).toBe(0)
  expect(streamer.pid(job.bus_info)).toBeNull()
  writeFileSync(device, '') // it "returns" (not a real camera: the launch is what we look for)
  await waitFor('a launch', () => ['starting', 'running', 'backoff'].includes(streamer.status(job.bus_info).state), 8000)
  rmSync(device)
  await waitFor('parked again', () => /is gone/.test(streamer.status(job.bus_info).error ?? ''), 10_000)
  await streamer.stop(job.bus_info)
  expect(streamer.status(job.bus_info).state).toBe('stopped')
}, 45_000)

test('stopAll leaves no gst process', async () => {
  const { streamer } = make()
  const jobs = [simulatedJob({ encode_type: 'H264', stream_type: 'UDP' }), simulatedJob({ encode_type: 'MJPG', stream_type: 'RECORDING' })]
  for (const job of jobs) await streamer.start(job)
  await waitFor('running', () => jobs.every((j) => running(streamer, j.bus_info)))
  const pids = jobs.map((j) => streamer.pid(j.bus_info)!)
  await streamer.stopAll()
  expect(pids.filter(alive)).toEqual([])
}, 45_000)

for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
  test(`${signal} to the service leaves no gst child behind`, async () => {
    const service = Bun.spawn([process.execPath, join(import.meta.dir, 'gstreamer.service-fixture.ts')], { stdout: 'pipe', stderr: 'inherit' })
    spawned.push(service.pid)
    const reader = (service.stdout as ReadableStream<Uint8Array>).getReader()
    const { value } = await reader.read()
    const pids = JSON.parse(new TextDecoder().decode(value)) as number[]
    spawned.push(...pids)
    expect(pids.every(alive)).toBe(true)
    expect(gstChildrenOf(service.pid).sort()).toEqual([...pids].sort())
    service.kill(signal)
    await service.exited
    await waitFor('children gone', () => pids.every((p) => !alive(p)), 10_000)
  }, 45_000)
}

test.each([
  ['a pipeline error', 'filesrc location=/nonexistent/video.mjpg ! jpegparse', /Resource not found|No such file|Could not open/],
  ['a missing element', 'nosuchelement ! image/jpeg,width=320,height=240,framerate=30/1', /erroneous pipeline: no element "nosuchelement"/],
])('%s shows its own text in the status and the stream_error event', async (_what, description, text) => {
  const { streamer, events } = make()
  const job = simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP' })
  job.members[0]!.source = { kind: 'gst', description }
  await streamer.start(job)
  await waitFor('backoff', () => streamer.status(job.bus_info).state === 'backoff', 10_000)
  expect(streamer.status(job.bus_info).error).toMatch(text)
  expect(streamer.status(job.bus_info).error).toMatch(/restarting in 1 s/)
  expect(events.some((e) => e.type === 'stream_error' && e.data.state === 'backoff' && text.test(e.data.error))).toBe(true)
  await streamer.stop(job.bus_info)
}, 45_000)
