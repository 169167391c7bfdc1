// Failures that used to vanish, each brought about on purpose (an injected fault) and then looked for
// where a person looks: the log, health, the device, the status. Each test fails without its fix.
import { afterEach, expect, spyOn, test } from 'bun:test'
import { Database } from 'bun:sqlite'
import * as fs from 'node:fs'
import { mkdtempSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { LISTENER_FAULT_REPORT_MS } from '../../core/events'
import { createLogger } from '../../core/log'
import { syncProblem, syncToDisk } from '../../drivers/gstreamer/child'
import { tempDir, until, type TestServer } from '../helpers'
import { device, EHD, startContractServer, WEBCAM } from './setup'

const servers: TestServer[] = []
const restores: (() => void)[] = []
afterEach(async () => {
  restores.splice(0).forEach((restore) => restore())
  await Promise.all(servers.splice(0).map((s) => s.stop()))
})

async function start(options: Parameters<typeof startContractServer>[0] = {}): Promise<TestServer> {
  const s = await startContractServer(options)
  servers.push(s)
  return s
}

const erofs = (what: string) => Object.assign(new Error(`EROFS: read-only file system, ${what}`), { code: 'EROFS', errno: -30 })

test("an event listener's error is logged with its reason (once per minute for a listener that keeps failing), and the other listeners still hear the event", async () => {
  const s = await start()
  const heard: string[] = []
  s.ctx.events.subscribe(() => {
    throw new Error('the listener broke')
  })
  s.ctx.events.subscribe((event) => heard.push(event.type))
  s.ctx.events.emit('preferences_updated', {})
  s.ctx.events.emit('preferences_updated', {})
  expect(heard.filter((t) => t === 'preferences_updated').length).toBe(2)
  const failures = s.logs.filter((l) => l.msg === 'an event listener failed')
  expect(failures.length).toBe(1) // the second failure falls inside LISTENER_FAULT_REPORT_MS
  expect(failures[0]).toMatchObject({ level: 'error', event: 'preferences_updated', err: { message: 'the listener broke' } })
  expect(LISTENER_FAULT_REPORT_MS).toBeGreaterThan(0)
})

test('a vendor control whose read fails at plug-in is listed with its default and says why: flags.read_error, a warning, and degraded health; a later set and read clears it', async () => {
  const s = await start()
  // The next extension-unit transfer of the exploreHD fails (the injected fault); a re-plug reads its vendor controls again.
  expect((await s.call('POST', '/api/mock/fail', { bus_info: EHD, errno: 'EIO', count: 1 })).status).toBe(200)
  await s.call('POST', '/api/mock/unplug', { bus_info: EHD })
  await until('the exploreHD gone', () => device(s, EHD), (d) => !d)
  await s.call('POST', '/api/mock/plug', { bus_info: EHD })
  const ehd = await until('the exploreHD back', () => device(s, EHD), (d) => !!d)
  const bitrate = ehd.controls.find((c: any) => c.control_id === -1)
  expect(bitrate).toMatchObject({ value: 5_000_000, flags: { default_value: 5_000_000, read_error: expect.stringContaining('EIO') } })
  expect(ehd.controls.find((c: any) => c.control_id === -2).flags.read_error).toBeUndefined() // read fine
  expect(s.logs.find((l) => l.msg === 'a vendor control could not be read; it shows its default')).toMatchObject({ level: 'warn', bus_info: EHD, control_id: -1 })
  const health = (await s.call('GET', '/api/health')).body
  expect(health.plugins.cameras).toMatchObject({ state: 'degraded', detail: expect.stringContaining(`${EHD}: control -1 'H.264 Bitrate (bits/s)' could not be read`) })
  expect(await s.call('POST', '/api/devices/set_uvc_control', { bus_info: EHD, control_id: -1, value: 2_000_000 })).toMatchObject({ status: 200, body: { value: 2_000_000 } })
  expect((await device(s, EHD)).controls.find((c: any) => c.control_id === -1).flags.read_error).toBeUndefined()
  expect((await s.call('GET', '/api/health')).body.plugins.cameras).toEqual({ state: 'ok' })
})

test('a failing fsync of a recording is logged once per episode, said by syncProblem() meanwhile (the recording and stream status show it), and its end is logged', async () => {
  const dir = mkdtempSync('/tmp/periscope-fsync-')
  const lines: Record<string, any>[] = []
  const log = createLogger('info', {}, (line) => lines.push(JSON.parse(line)))
  const file = join(dir, 'rec.mkv')
  const real = join(dir, 'real.mkv')
  writeFileSync(real, 'x')
  try {
    // fsync on a /proc file fails (EINVAL) as it would on a failing card: the injected fault.
    symlinkSync('/proc/self/status', file)
    for (let i = 0; i < 3; i++) syncToDisk(file, log)
    await until('the failure reported', async () => syncProblem(file), (p) => p !== null)
    // The other two tries find the episode already reported, whenever they finish.
    expect(syncProblem(file)).toContain('fsync: EINVAL')
    expect(lines.filter((l) => l.msg === 'a recording cannot be pushed to the disk').length).toBe(1)
    // The disk takes it again: the episode ends, said once.
    unlinkSync(file)
    symlinkSync(real, file)
    syncToDisk(file, log)
    await until('the episode over', async () => syncProblem(file), (p) => p === null)
    expect(lines.filter((l) => l.msg === 'a recording reaches the disk again').length).toBe(1)
    // A new failure is a new episode, logged again.
    unlinkSync(file)
    symlinkSync('/proc/self/status', file)
    syncToDisk(file, log)
    await until('a second episode', async () => syncProblem(file), (p) => p !== null)
    expect(lines.filter((l) => l.msg === 'a recording cannot be pushed to the disk').length).toBe(2)
    // A file filesink has not created yet is no failure.
    syncToDisk(join(dir, 'not-yet.mkv'), log)
    syncToDisk(real, log)
    await until('the real file synced', async () => syncProblem(real), (p) => p === null)
    expect(syncProblem(join(dir, 'not-yet.mkv'))).toBeNull()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a read-only card at start (EROFS making the data dir): the service runs on defaults, health says read-only, a change answers 507 saying so', async () => {
  const dataDir = join(tempDir(), 'new-data-dir')
  const realMkdir = fs.mkdirSync
  const spy = spyOn(fs, 'mkdirSync').mockImplementation(((path: fs.PathLike, options?: fs.MakeDirectoryOptions) => {
    if (String(path) === dataDir) throw erofs(`mkdir '${dataDir}'`)
    return realMkdir(path, options)
  }) as typeof fs.mkdirSync)
  restores.push(() => spy.mockRestore())
  const s = await start({ dataDir })
  expect((await s.call('GET', '/api/health')).body.settings).toMatchObject({ state: 'degraded', detail: expect.stringContaining('is read-only') })
  expect((await device(s, WEBCAM)).bus_info).toBe(WEBCAM)
  const refused = await s.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'aft' })
  expect(refused).toMatchObject({ status: 507, body: { detail: expect.stringContaining('read-only') } })
  expect((await device(s, WEBCAM)).nickname).toBe('')
})

test('a card that turns read-only while running (writes throw EROFS): the service keeps running, health says read-only, a change answers 507 saying so, reads go on', async () => {
  const s = await start()
  expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'bow' })).status).toBe(200)
  const realQuery = Database.prototype.query
  const realExec = Database.prototype.exec
  const writes = /^\s*(INSERT|DELETE|PRAGMA user_version =)/i
  const spy = spyOn(Database.prototype, 'query').mockImplementation(function (this: Database, sql: string) {
    if (writes.test(sql)) throw erofs('write')
    return realQuery.call(this, sql)
  } as typeof Database.prototype.query)
  const spyExec = spyOn(Database.prototype, 'exec').mockImplementation(function (this: Database, sql: string, ...rest: unknown[]) {
    if (writes.test(sql)) throw erofs('write')
    return (realExec as (...a: unknown[]) => unknown).call(this, sql, ...rest)
  } as typeof Database.prototype.exec)
  restores.push(() => spy.mockRestore(), () => spyExec.mockRestore())
  const refused = await s.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'stern' })
  expect(refused).toMatchObject({ status: 507, body: { detail: expect.stringContaining('is read-only') } })
  expect((await device(s, WEBCAM)).nickname).toBe('bow')
  expect((await s.call('GET', '/api/health')).body.settings).toMatchObject({ state: 'degraded', detail: expect.stringContaining('is read-only') })
  const prefs = await s.call('POST', '/api/preferences/save_preferences', (await s.call('GET', '/api/preferences')).body)
  expect(prefs).toMatchObject({ status: 507, body: { detail: expect.stringContaining('read-only') } })
  spy.mockRestore()
  spyExec.mockRestore()
  expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: WEBCAM, nickname: 'stern' })).status).toBe(200)
})
