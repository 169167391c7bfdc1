// The frame-sync board on a pseudo-terminal pair (python3's os.openpty): the fps command while a group
// streams, again when the board appears and when frequency_offset changes, 0,0 when no group streams.
// The plugin's wiring (the board DWE's plugin declares, preferences from the store, 'preferences_updated')
// is exercised with real core parts.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { mountPlugin } from '../../core/lifecycle'
import { Registry } from '../../core/plugin'
import { EventBus } from '../../core/events'
import { RequestWatchers } from '../../core/http/request-log'
import { Refusals } from '../../core/http/refusals'
import { createLogger } from '../../core/log'
import { SettingsStore } from '../../core/store'
import type { Config } from '../../core/config'
import { FrameSync } from '../../drivers/gstreamer/framesync'
import plugin from '../../plugins/gstreamer'
import dwe from '../../plugins/dwe'
import { DWE } from '../../plugins/dwe/vendor'
import { eachLine, requireGStreamer, simulatedJob, tempDir, testStreamer, waitFor } from './gstreamer.helpers'

/** A pty pair: `port` is the slave a service would open; `lines` is what arrived at the master. */
class PtyBoard {
  lines: string[] = []
  port = ''
  private proc: Subprocess

  constructor() {
    const script = `
import os, sys
master, slave = os.openpty()
print(os.ttyname(slave), flush=True)
buf = b''
while True:
    data = os.read(master, 1024)
    if not data: break
    buf += data
    while b'\\n' in buf:
        line, buf = buf.split(b'\\n', 1)
        print('LINE ' + line.decode(), flush=True)
`
    this.proc = Bun.spawn(['python3', '-c', script], { stdout: 'pipe', stderr: 'inherit', stdin: 'ignore' })
    void this.read()
  }

  private read(): Promise<void> {
    return eachLine(this.proc.stdout as ReadableStream<Uint8Array>, (line) => {
      if (line.startsWith('LINE ')) this.lines.push(line.slice(5).replace(/\r$/, ''))
      else if (line.startsWith('/dev/')) this.port = line.trim()
    })
  }

  async ready(): Promise<string> {
    return waitFor('pty', () => this.port, 10_000)
  }

  stop(): void {
    this.proc.kill('SIGKILL')
  }
}

const boards: PtyBoard[] = []
const cleanups: (() => Promise<void> | void)[] = []

beforeAll(() => {
  requireGStreamer()
  if (!Bun.which('python3')) throw new Error('python3 is missing: the frame-sync test makes its pseudo-terminal with python3 (scripts/setup/gstreamer.sh installs it)')
})
afterAll(async () => {
  for (const c of cleanups) await c()
  for (const b of boards) b.stop()
})

test('a streaming group drives the board; it is told again when it appears and when the offset changes', async () => {
  const board = new PtyBoard()
  boards.push(board)
  const port = await board.ready()
  let present = false
  let looks = 0 // how often the frame sync has looked for the board
  const sync = new FrameSync({
    log: createLogger('error'),
    board: () => DWE.frameSync,
    findPort: () => {
      looks++
      return present ? port : null
    },
    pollMs: 100,
  })
  /** Waits until the frame sync has looked for the board twice more (so it has seen the current `present`). */
  const twoMoreLooks = async () => {
    const seen = looks
    await waitFor('the frame sync to look for the board twice more', () => looks >= seen + 2, 10_000)
  }
  const { streamer } = testStreamer({ frameSync: sync })
  cleanups.push(() => streamer.stopAll(), () => sync.stop())
  sync.start()

  const group = simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP', members: 2, fps: 30 })
  await streamer.start(group)
  await twoMoreLooks()
  expect(board.lines).toEqual([]) // no board yet: nothing to tell

  present = true // the board is plugged in
  await waitFor('30,30 on appearance', () => board.lines.includes('30,30'), 10_000)

  sync.setFrequencyOffset(2) // what the plugin does on preferences_updated
  await waitFor('32,30 after the offset change', () => board.lines.includes('32,30'), 10_000)

  present = false // unplugged …
  await twoMoreLooks()
  const before = board.lines.length
  present = true // … and back: told again
  await waitFor('re-sent on re-appearance', () => board.lines.length > before && board.lines.at(-1) === '32,30', 10_000)

  // A lone camera does not drive the board; stopping the group stops it.
  const single = simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP', members: 1 })
  await streamer.start(single)
  await streamer.stop(group.bus_info)
  await waitFor('0,0 once no group streams', () => board.lines.at(-1) === '0,0', 10_000)
  await streamer.stop(single.bus_info)
}, 45_000)

test('the board is a vendor declaration: with none registered, no board is looked for and nothing is sent', async () => {
  const board = new PtyBoard()
  boards.push(board)
  const port = await board.ready()
  let looked = 0
  const sync = new FrameSync({ log: createLogger('error'), board: () => undefined, findPort: () => (looked++, port), pollMs: 50 })
  const { streamer } = testStreamer({ frameSync: sync })
  cleanups.push(() => streamer.stopAll(), () => sync.stop())
  sync.start()
  const group = simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP', members: 2, fps: 30 })
  await streamer.start(group)
  await waitFor('running', () => streamer.status(group.bus_info).state === 'running')
  await streamer.stop(group.bus_info)
  sync.stop()
  expect(looked).toBe(0)
  expect(board.lines).toEqual([])
}, 20_000)

test('the plugin provides the streamer, reads frequency_offset from the preferences, and follows preferences_updated', async () => {
  const board = new PtyBoard()
  boards.push(board)
  const port = await board.ready()
  process.env.PERISCOPE_FRAME_SYNC_PORT = port
  const dataDir = tempDir()
  const store = SettingsStore.open(dataDir)
  store.set('preferences', 'current', { default_stream: { host: '127.0.0.1', port: 5600 }, suggest_host: true, frequency_offset: 1 })
  const registry = new Registry()
  const events = new EventBus()
  const ctx = { config: { dataDir, recordingsDir: dataDir } as Config, registry, events, store, log: createLogger('error'), activity: { lastRequestAt: 0 }, requests: new RequestWatchers(), refusals: new Refusals(), handle: async () => new Response(null, { status: 404 }) }
  const instance = await mountPlugin(plugin, ctx)
  await mountPlugin(dwe, ctx) // the board is DWE's declaration, registered after the streamer: looked up when needed
  await instance.start?.()
  cleanups.push(async () => {
    await instance.stop?.()
    delete process.env.PERISCOPE_FRAME_SYNC_PORT
  })
  expect(instance.health?.().state).toBe('ok')
  const streamer = registry.require('streamer')

  const group = simulatedJob({ encode_type: 'MJPG', stream_type: 'UDP', members: 2, fps: 15 })
  const seen: unknown[] = []
  events.subscribe((e) => e.type === 'stream_error' && seen.push(e.data))
  await streamer.start(group)
  await waitFor('16,30 (15 fps + offset 1)', () => board.lines.includes('16,30'), 10_000)
  events.emit('preferences_updated', { default_stream: { host: '127.0.0.1', port: 5600 }, suggest_host: true, frequency_offset: -1 })
  await waitFor('14,30 after preferences_updated', () => board.lines.includes('14,30'), 10_000)
  await waitFor('running', () => streamer.status(group.bus_info).state === 'running')
  expect(seen).toContainEqual({ bus_info: group.bus_info, state: 'running', error: null, restarts: 0 })
  expect(instance.health?.()).toEqual({ state: 'ok', streams: { running: 1 }, recordings: 0 })
  await instance.stop?.()
  expect(streamer.status(group.bus_info).state).toBe('stopped')
  await waitFor('0,0 on shutdown', () => board.lines.at(-1) === '0,0', 10_000)
}, 45_000)
