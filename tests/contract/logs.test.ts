// Logs for people: the logger hands every entry it writes to its subscribers; the app keeps the recent
// ones in a bounded ring (core/log.ts), serves them at GET /api/logs (since/level/limit, 422s in the
// pydantic shape) and pushes those at warn and above as `log` events. A device failing is found there by
// a pilot without a shell. (A stream failing in real GStreamer: tests/integration/logs.test.ts.)
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { createLogger, LogRing, type LogRecord } from '../../core/log'
import { listenEvents, until, type TestServer } from '../helpers'
import { BRIGHTNESS, CONTRACT_PLUGINS, EHD, startContractServer } from './setup'

/** What the logger hands its subscribers, written by a real logger at `level`. */
function written(level: 'debug' | 'info' | 'warn' | 'error', msg: string, fields: Record<string, unknown> = {}): LogRecord {
  let record: LogRecord | undefined
  const log = createLogger('debug', {}, () => {})
  const stop = log.subscribe((r) => (record = r))
  log[level](msg, fields)
  stop()
  return record!
}

describe('the logger and its ring', () => {
  test('subscribers get what is written, from a child too, at the logger\'s level; one that throws breaks nothing', () => {
    const lines: string[] = []
    const log = createLogger('info', { service: 'periscope' }, (line) => lines.push(line))
    const seen: LogRecord[] = []
    log.subscribe(() => {
      throw new Error('a broken subscriber')
    })
    const stop = log.subscribe((r) => seen.push(r))
    log.debug('not written')
    log.child({ plugin: 'gstreamer' }).warn('pipeline failed', { bus_info: 'usb-1', reason: 'no element "x264enc"' })
    stop()
    log.error('after the unsubscribe')
    expect(seen).toHaveLength(1)
    expect(seen[0]).toMatchObject({ level: 'warn', msg: 'pipeline failed', line: lines[0] })
    expect(JSON.parse(seen[0]!.line)).toMatchObject({ level: 'warn', msg: 'pipeline failed', service: 'periscope', plugin: 'gstreamer', bus_info: 'usb-1' })
    expect(lines).toHaveLength(2)
  })

  test('a field cannot disguise an entry, and fields that cannot be written leave the message standing', () => {
    const disguised = JSON.parse(written('warn', 'real', { level: 'debug', msg: 'fake', time: 'then' }).line)
    expect(disguised).toMatchObject({ level: 'warn', msg: 'real' })
    expect(disguised.time).not.toBe('then')
    const big = JSON.parse(written('error', 'odd fields', { n: 10n }).line)
    expect(big).toMatchObject({ level: 'error', msg: 'odd fields' })
    expect(big.log_error).toContain('not serialisable')
  })

  test('routine lines never push out warnings: each kind keeps its own last `capacity`', () => {
    const ring = new LogRing(5)
    ring.add(written('error', 'stream failed'))
    for (let i = 0; i < 20; i++) ring.add(written('info', 'request', { i }))
    expect(ring.query({ level: 'warn', limit: 100 }).entries.map((e) => e.msg)).toEqual(['stream failed'])
    const all = ring.query({ limit: 100 }).entries
    expect(all.map((e) => e.seq)).toEqual([1, 17, 18, 19, 20, 21]) // merged in the order written
    expect(all.at(-1)!.fields).toEqual({ i: 19 })
  })

  test('since pages forward without a gap; without it, the newest; next_since continues; a restart is visible', () => {
    const ring = new LogRing(100)
    for (let i = 1; i <= 10; i++) ring.add(written(i % 3 === 0 ? 'warn' : 'info', `entry ${i}`))
    const pages: number[][] = []
    let since = 0
    for (;;) {
      const page = ring.query({ since, limit: 4 })
      if (!page.entries.length) break
      pages.push(page.entries.map((e) => e.seq))
      since = page.next_since
    }
    expect(pages).toEqual([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]])
    expect(since).toBe(10)
    expect(ring.query({ limit: 3 })).toMatchObject({ entries: [{ seq: 8 }, { seq: 9 }, { seq: 10 }], next_since: 10 })
    // A filter that finds nothing new still moves next_since on, so a poller does not read the same again.
    expect(ring.query({ since: 9, level: 'warn', limit: 10 })).toEqual({ entries: [], next_since: 10 })
    expect(ring.query({ since: 0, level: 'warn', limit: 2 })).toMatchObject({ entries: [{ seq: 3 }, { seq: 6 }], next_since: 6 })
    // A since from before a restart (larger than any seq now): nothing, and a next_since below it.
    expect(ring.query({ since: 5000, limit: 10 })).toEqual({ entries: [], next_since: 10 })
  })

  test('an entry as the API gives it: the error without its stack, a huge line kept as its message only', () => {
    const ring = new LogRing(10)
    const err = new Error('connect ENOENT /var/run/dbus/system_bus_socket')
    ring.add(written('error', 'network failed', { plugin: 'network', err }))
    ring.add(written('warn', 'huge', { stderr: 'x'.repeat(40_000) }))
    const [failed, huge] = ring.query({ limit: 10 }).entries
    expect(failed).toMatchObject({ seq: 1, level: 'error', msg: 'network failed', fields: { plugin: 'network', err: { name: 'Error', message: err.message } } })
    expect(failed!.fields.err).not.toHaveProperty('stack')
    expect(Date.parse(failed!.time)).toBeGreaterThan(0)
    expect(huge).toMatchObject({ seq: 2, level: 'warn', msg: 'huge' })
    expect(huge!.fields.truncated_bytes).toBeGreaterThan(40_000)
    expect(JSON.stringify(huge).length).toBeLessThan(1000)
  })
})

describe('GET /api/logs and the log event', () => {
  let s: TestServer
  beforeAll(async () => {
    s = await startContractServer({ logLevel: 'info', plugins: [...CONTRACT_PLUGINS, 'recordings'] })
  })
  afterAll(async () => {
    await s?.stop()
  })

  test('a device failure is there for the pilot: in /api/logs at warn, and as a log event; request lines are not events', async () => {
    const sse = listenEvents(`${s.url}/api/events`)
    try {
      await sse.ready
      expect((await s.call('POST', '/api/mock/fail', { bus_info: EHD, errno: 'EIO', count: 1 })).status).toBe(200)
      const failed = await s.call('POST', '/api/devices/set_uvc_control', { bus_info: EHD, control_id: BRIGHTNESS, value: 3 })
      expect(failed.status).toBe(502)
      const { body } = await s.call('GET', '/api/logs?level=warn')
      const entry = body.entries.find((e: any) => e.msg === 'request failed' && e.fields.status === 502)
      expect(entry).toMatchObject({ level: 'warn', fields: { method: 'POST', path: '/api/devices/set_uvc_control', detail: failed.body.detail } })
      expect(entry.fields.detail).toContain('EIO')
      await until('the log event', async () => sse.events.filter((e) => e.type === 'log'), (events) => events.some((e) => e.data.seq === entry.seq))
      expect(sse.events.find((e) => e.type === 'log' && e.data.seq === entry.seq)!.data).toEqual(entry)
      // Every request above was logged at info (the ring has them), none of them became an event.
      const requests = (await s.call('GET', `/api/logs?level=info&since=${Math.max(0, entry.seq - 10)}`)).body.entries.filter((e: any) => e.msg === 'request')
      expect(requests.map((e: any) => e.fields.path)).toEqual(expect.arrayContaining(['/api/mock/fail', '/api/devices/set_uvc_control']))
      expect(sse.events.filter((e) => e.type === 'log').every((e) => ['warn', 'error'].includes(e.data.level))).toBe(true)
    } finally {
      sse.close()
    }
  })

  test('each request line carries the status sent: a Response\'s own (206), a preflight\'s 204 (answered before any route)', async () => {
    const since = (await s.call('GET', '/api/logs?limit=1')).body.next_since
    const preflight = await fetch(`${s.url}/api/devices`, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' } })
    expect(preflight.status).toBe(204)
    mkdirSync(s.ctx.config.recordingsDir, { recursive: true })
    writeFileSync(join(s.ctx.config.recordingsDir, 'dive.mp4'), Buffer.alloc(1000, 1))
    const part = await fetch(`${s.url}/api/recordings/dive.mp4/download`, { headers: { range: 'bytes=0-99' } })
    expect(part.status).toBe(206)
    await part.arrayBuffer()
    const logged = (method: string, path: string) => async (): Promise<any> => (await s.call('GET', `/api/logs?since=${since}`)).body.entries.find((e: any) => e.fields.method === method && e.fields.path === path)
    expect((await until('the preflight logged', logged('OPTIONS', '/api/devices'), (e) => e !== undefined)).fields.status).toBe(204)
    expect((await until('the download logged', logged('GET', '/api/recordings/dive.mp4/download'), (e) => e !== undefined)).fields.status).toBe(206)
  })

  test('limit defaults to 100 and answers the newest; 422 in the pydantic shape for a bad since, level or limit', async () => {
    for (let i = 0; i < 110; i++) await s.call('GET', '/api/health')
    const { body } = await s.call('GET', '/api/logs')
    expect(body.entries).toHaveLength(100)
    expect(body.entries.at(-1).seq).toBeLessThanOrEqual(body.next_since)
    expect(body.entries.map((e: any) => e.seq)).toEqual([...body.entries.map((e: any) => e.seq)].sort((a, b) => a - b))
    const bad: [string, string, string][] = [
      ['since=-1', 'since', 'greater_than_equal'],
      ['since=first', 'since', 'int_parsing'],
      ['level=loud', 'level', 'enum'],
      ['limit=0', 'limit', 'greater_than_equal'],
      ['limit=1001', 'limit', 'less_than_equal'],
      ['limit=2.5', 'limit', 'int_parsing'],
    ]
    for (const [query, field, type] of bad) {
      const res = await s.call('GET', `/api/logs?${query}`)
      expect(res.status).toBe(422)
      expect(res.body.detail).toEqual([expect.objectContaining({ type, loc: ['query', field] })])
    }
  })

  test('documented: the query, the answer\'s model, the 422, and the log event', async () => {
    const doc = (await s.call('GET', '/openapi.json')).body
    const op = doc.paths['/api/logs'].get
    expect(op.parameters.map((p: any) => [p.name, p.in, p.required])).toEqual([
      ['since', 'query', false],
      ['level', 'query', false],
      ['limit', 'query', false],
    ])
    expect(op.parameters[1].schema.enum).toEqual(['debug', 'info', 'warn', 'error'])
    expect(op.parameters[2].schema).toMatchObject({ minimum: 1, maximum: 1000, default: 100 })
    expect(op.responses['422']).toBeDefined()
    expect(doc.components.schemas.LogEntryModel.required).toEqual(['seq', 'time', 'level', 'msg', 'fields'])
    expect(doc.paths['/api/events'].get.description).toContain('log')
  })
})
