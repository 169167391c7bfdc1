// Zip downloads, validated by independent readers (Info-ZIP unzip -t and zipinfo, Python's zipfile):
// small archives of real recordings, ZIP64 for a 4 GiB + 1 MiB sparse entry and offsets past 4 GiB, ZIP64 by
// entry count, the exact announced length, progress, expiry, cancel, files renamed or deleted meanwhile,
// and concurrent rename/zip/delete.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, readdirSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import recordings from '../../plugins/recordings'
import { planZip } from '../../drivers/storage/zip'
import { tmpfsCard } from '../cards'
import { FOLLOW_EVENTS, startTestServer, tempDir, until, type TestServer } from '../helpers'
import { copyFixtures, curl, FIXTURE_DURATIONS, pythonZip, requireTools, run, sha256 } from './fixtures/recordings/support'

let s: TestServer
let dir: string
let work: string
beforeAll(async () => {
  requireTools()
  // Many zips from one client in a few seconds: the per-client limit (docs/security.md) is not under test here.
  s = await startTestServer({ plugins: [recordings], config: { clientLimits: false } })
  dir = s.ctx.config.recordingsDir
  work = tempDir('periscope-zip-')
})
afterAll(async () => {
  await s?.stop()
  if (work) rmSync(work, { recursive: true, force: true })
})

function reset(): void {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir)
}

async function prepare(names: string[], server = s): Promise<{ token: string; status_url: string; download_url: string }> {
  const r = await server.call('POST', '/api/recordings/zip/prepare', names)
  expect(r.status).toBe(200)
  return r.body
}

async function waitReady(token: string, server = s): Promise<any> {
  for (let i = 0; i < 600; i++) {
    const st = await server.call('GET', `/api/recordings/zip/${token}`)
    if (st.body.state !== 'preparing') return st.body
    await Bun.sleep(50)
  }
  throw new Error('zip job never left preparing')
}

/** unzip -t, zipinfo and Python's zipfile must all accept `zip` (read at once: each reads it alone); answers Python's view. */
async function validate(zip: string, hash = true) {
  const [t, info, py] = await Promise.all([run(['unzip', '-t', zip]), run(['zipinfo', zip]), pythonZip(zip, hash)])
  expect(t.out).toContain('No errors detected')
  expect(t.code).toBe(0)
  expect(info.code).toBe(0)
  expect(py.bad).toBeNull()
  return { py, zipinfo: info.out }
}

describe('zip downloads', () => {
  test('an archive of real recordings: every reader agrees, content and CRCs match, the announced length is exact', async () => {
    reset()
    copyFixtures(dir)
    writeFileSync(join(dir, 'wreck été.mp4'), Buffer.alloc(70_000, 7))
    const names = [...Object.keys(FIXTURE_DURATIONS).map((n) => n.replace(/\.[^.]+$/, (e) => (n.startsWith('plain') ? '' : e))), 'wreck été.mp4', 'clip.avi']
    const events: any[] = []
    const unsubscribe = s.ctx.events.subscribe((e) => e.type === 'zip_progress' && events.push(e.data))
    const job = await prepare(names)
    expect(job.download_url).toBe(`/api/recordings/zip/download?token=${job.token}`)
    const out = join(work, 'fixtures.zip')
    // HEAD waits for the preparing pass, then answers the exact Content-Length without reading a recording.
    const head = await curl('HEAD', s.url + job.download_url, ['-I'])
    expect(head.status).toBe(200)
    expect((await s.call('GET', `/api/recordings/zip/${job.token}`)).body).toMatchObject({ state: 'ready', downloaded: 0 })
    const r = await curl('GET', s.url + job.download_url, ['-o', out])
    unsubscribe()
    expect(Number(head.headers['content-length'])).toBe(statSync(out).size)
    expect(r.status).toBe(200)
    expect(r.headers['content-type']).toBe('application/zip')
    expect(r.headers['content-disposition']).toMatch(/^attachment; filename="recordings_.*\.zip"/)
    // The exact length, known before the first byte: no chunked framing.
    expect(Number(r.headers['content-length'])).toBe(statSync(out).size)
    expect(r.headers['transfer-encoding']).toBeUndefined()
    expect(Number(r.headers['x-archive-size'])).toBe(statSync(out).size)

    const { py, zipinfo } = await validate(out)
    const expected = [...Object.keys(FIXTURE_DURATIONS), 'wreck été.mp4'].sort()
    expect(py.entries.map((e) => e.name).sort()).toEqual(expected) // duplicates ('clip.avi' twice) once
    for (const e of py.entries) {
      expect(e.size).toBe(statSync(join(dir, e.name)).size)
      expect(e.sha256).toBe(sha256(join(dir, e.name)))
    }
    expect(zipinfo).toContain('stor') // stored, not deflated
    expect(py.zip64).toBe(false)

    const status = (await s.call('GET', `/api/recordings/zip/${job.token}`)).body
    expect(status).toMatchObject({
      state: 'ready',
      bytes_done: status.bytes_total,
      archive_size: statSync(out).size,
      downloaded: statSync(out).size,
      error: null,
    })
    expect(events.map((e) => e.state)).toContain('preparing')
    expect(events.at(-1)).toMatchObject({ token: job.token, state: 'ready' })
  })

  test('zip_progress reaches GET /api/events', async () => {
    reset()
    copyFixtures(dir, ['plain.mp4'])
    const controller = new AbortController()
    const res = await fetch(`${s.url}/api/events`, { signal: controller.signal, headers: FOLLOW_EVENTS })
    const reader = res.body!.getReader()
    const job = await prepare(['plain'])
    let seen = ''
    const deadline = Date.now() + 5000
    while (!/event: zip_progress\ndata: .*"state":"ready"/.test(seen) && Date.now() < deadline) {
      const { value, done } = await reader.read()
      if (done) break
      seen += new TextDecoder().decode(value)
    }
    controller.abort()
    expect(seen).toContain(`"token":"${job.token}"`)
    expect(seen).toMatch(/event: zip_progress\ndata: .*"state":"ready"/)
  })

  test('refusals: empty list 422 (pydantic wording), unknown names 404 naming them, bad names 422, bad body 422', async () => {
    reset()
    copyFixtures(dir, ['plain.mp4'])
    expect(await s.call('POST', '/api/recordings/zip/prepare', [])).toEqual({
      status: 422,
      headers: expect.anything(),
      body: {
        detail: [
          {
            type: 'too_short',
            loc: ['body'],
            msg: 'List should have at least 1 item after validation, not 0',
            input: [],
            ctx: { field_type: 'List', min_length: 1, actual_length: 0 },
          },
        ],
      },
    })
    const missing = await s.call('POST', '/api/recordings/zip/prepare', ['plain', 'ghost', 'wraith.mkv'])
    expect(missing.status).toBe(404)
    expect(missing.body.detail).toContain("'ghost'")
    expect(missing.body.detail).toContain("'wraith.mkv'")
    const bad = await s.call('POST', '/api/recordings/zip/prepare', ['plain', '../../etc/passwd'])
    expect(bad).toMatchObject({ status: 422, body: { detail: [{ type: 'string_pattern_mismatch', loc: ['body', 1], input: '../../etc/passwd' }] } })
    expect((await s.call('POST', '/api/recordings/zip/prepare', { names: ['plain'] })).body.detail[0]).toMatchObject({ type: 'list_type', loc: ['body'] })
    expect((await s.call('POST', '/api/recordings/zip/prepare', [1])).body.detail[0]).toMatchObject({ type: 'string_type', loc: ['body', 0] })
  })

  test('renamed or deleted after prepare: the download is refused with 409 naming the file, not a corrupt archive', async () => {
    reset()
    copyFixtures(dir, ['plain.mp4', 'clip.avi', 'finished.mkv'])
    const a = await prepare(['plain', 'clip'])
    await waitReady(a.token)
    renameSync(join(dir, 'clip.avi'), join(dir, 'clip2.avi'))
    const r = await curl('GET', s.url + a.download_url)
    expect(r.status).toBe(409)
    expect(JSON.parse(new TextDecoder().decode(r.body)).detail).toContain("'clip.avi'")

    const b = await prepare(['plain', 'finished'])
    await waitReady(b.token)
    unlinkSync(join(dir, 'finished.mkv'))
    expect((await curl('GET', s.url + b.download_url)).status).toBe(409)

    const c = await prepare(['plain'])
    await waitReady(c.token)
    writeFileSync(join(dir, 'plain.mp4'), Buffer.alloc(10)) // replaced by another file
    expect((await curl('GET', s.url + c.download_url)).status).toBe(409)
  })

  test('a recording deleted during the transfer cuts it short; the job says why', async () => {
    reset()
    Bun.spawnSync(['truncate', '-s', '200M', join(dir, 'first.mkv')])
    copyFixtures(dir, ['clip.avi'])
    const job = await prepare(['first', 'clip'])
    await waitReady(job.token)
    const out = join(work, 'cut.zip')
    const transfer = curl('GET', s.url + job.download_url, ['--limit-rate', '100M', '-o', out])
    // Once first.mkv is streaming (clip.avi is opened only when its turn comes), delete clip.avi.
    for (let i = 0; i < 200 && (await s.call('GET', `/api/recordings/zip/${job.token}`)).body.downloaded < 10 << 20; i++) await Bun.sleep(25)
    unlinkSync(join(dir, 'clip.avi'))
    const r = await transfer
    expect(r.exitCode).toBe(18) // curl: "transferred a partial file", short of Content-Length
    expect(statSync(out).size).toBeLessThan(Number(r.headers['x-archive-size']))
    const status = (await s.call('GET', `/api/recordings/zip/${job.token}`)).body
    expect(status.state).toBe('failed')
    expect(status.error).toContain('clip.avi')
    expect(s.logs).toContainEqual(expect.objectContaining({ level: 'warn', msg: 'zip job failed', plugin: 'recordings', token: job.token, error: status.error }))
  }, 30_000)

  test('a client that hangs up mid-transfer (the tether pulled): reading stops, the job is ready again, a new download is whole', async () => {
    reset()
    Bun.spawnSync(['truncate', '-s', '300M', join(dir, 'long.mkv')])
    copyFixtures(dir, ['clip.avi'])
    const job = await prepare(['long', 'clip'])
    await waitReady(job.token)
    const size = (await s.call('GET', `/api/recordings/zip/${job.token}`)).body.archive_size as number
    const cut = Bun.spawn(['curl', '-sS', '--limit-rate', '20M', '-o', join(work, 'hangup.zip'), s.url + job.download_url], { stdout: 'ignore', stderr: 'ignore' })
    for (let i = 0; i < 200 && (await s.call('GET', `/api/recordings/zip/${job.token}`)).body.downloaded < 5 << 20; i++) await Bun.sleep(25)
    cut.kill('SIGKILL')
    await cut.exited
    const after = await until('the job to be ready again', () => s.call('GET', `/api/recordings/zip/${job.token}`), (r) => r.body.state === 'ready')
    expect(after.body.error).toBeNull() // a hang-up is not the job's failure
    const stoppedAt = after.body.downloaded as number
    expect(stoppedAt).toBeLessThan(size)
    await Bun.sleep(500) // an absence (nothing read for nobody) takes a wait of time
    expect((await s.call('GET', `/api/recordings/zip/${job.token}`)).body.downloaded).toBe(stoppedAt)

    const out = join(work, 'again.zip')
    const again = await curl('GET', s.url + job.download_url, ['-o', out])
    expect(again.status).toBe(200)
    expect(statSync(out).size).toBe(size)
    const { py } = await validate(out, false)
    expect(py.entries.map((e) => e.name).sort()).toEqual(['clip.avi', 'long.mkv'])
  }, 60_000)

  test('on a full card: prepare, download and rename still work (no temporary file, the CRC memory is only a cache)', async () => {
    const disk = tmpfsCard('6m')
    const card = disk.dir
    let full: TestServer | null = null
    try {
      mkdirSync(join(card, 'recordings'))
      copyFixtures(join(card, 'recordings'), ['plain.mp4', 'clip.avi'])
      full = await startTestServer({ plugins: [recordings], dataDir: card })
      Bun.spawnSync(['dd', 'if=/dev/zero', `of=${join(card, 'filler')}`, 'bs=4k']) // until ENOSPC
      expect((await full.call('GET', '/api/recordings/disk')).body.free).toBeLessThan(4096)
      expect(() => writeFileSync(join(card, 'probe'), Buffer.alloc(8192))).toThrow(/ENOSPC/)

      const job = await prepare(['plain', 'clip'], full)
      expect(await waitReady(job.token, full)).toMatchObject({ state: 'ready', error: null })
      const out = join(work, 'full-card.zip')
      const r = await curl('GET', full.url + job.download_url, ['-o', out])
      expect(r.status).toBe(200)
      const { py } = await validate(out)
      expect(py.entries.map((e) => e.name).sort()).toEqual(['clip.avi', 'plain.mp4'])
      for (const e of py.entries) expect(e.sha256).toBe(sha256(join(card, 'recordings', e.name)))
      const renamed = await full.call('PATCH', '/api/recordings/plain.mp4/kept.mp4')
      expect(renamed.status).toBe(200)
      expect(renamed.body.map((x: { name: string }) => x.name).sort()).toEqual(['clip', 'kept'])
    } finally {
      await full?.stop()
      await disk.remove()
    }
  }, 30_000)

  test('a job can be cancelled; an unused token expires; the job table is bounded', async () => {
    reset()
    Bun.spawnSync(['truncate', '-s', '2G', join(dir, 'big.mkv')])
    const job = await prepare(['big'])
    const cancelled = await s.call('DELETE', `/api/recordings/zip/${job.token}`)
    expect(cancelled).toMatchObject({ status: 200, body: { state: 'cancelled' } })
    expect(await s.call('GET', `/api/recordings/zip/${job.token}`)).toMatchObject({ status: 200, body: { state: 'cancelled' } })
    const refused = await curl('GET', s.url + job.download_url)
    expect(refused.status).toBe(409)
    expect(new TextDecoder().decode(refused.body)).toContain('cancelled')
    expect((await s.call('DELETE', '/api/recordings/zip/nope')).status).toBe(404)

    const short = await startTestServer({ plugins: [recordings], config: { zipTokenTtlSeconds: 1, clientLimits: false } })
    try {
      copyFixtures(short.ctx.config.recordingsDir, ['plain.mp4'])
      const t = await prepare(['plain'], short)
      await waitReady(t.token, short)
      // Its 1 s TTL runs out (looking at the job does not count as using it).
      await until('the unused token to expire', () => short.call('GET', `/api/recordings/zip/${t.token}`), (r) => r.status === 404, 15_000)
      expect(await short.call('GET', `/api/recordings/zip/${t.token}`)).toMatchObject({ status: 404, body: { detail: expect.stringContaining('expired') } })
      expect((await short.call('GET', t.download_url)).status).toBe(404)
      // The job table is bounded: a client looping on prepare gets 409, not an ever-growing table.
      for (let i = 0; i < 64; i++) expect((await short.call('POST', '/api/recordings/zip/prepare', ['plain'])).status).toBe(200)
      expect(await short.call('POST', '/api/recordings/zip/prepare', ['plain'])).toMatchObject({
        status: 409,
        body: { detail: expect.stringContaining('64 zip jobs') },
      })
    } finally {
      await short.stop()
    }
  }, 30_000)

  test('CRCs are remembered across a restart (in the settings store) and forgotten when their file changes', async () => {
    const dataDir = tempDir('periscope-zip-restart-')
    try {
      const first = await startTestServer({ plugins: [recordings], dataDir })
      const rdir = first.ctx.config.recordingsDir
      copyFixtures(rdir, ['clip.avi', 'plain.mp4'])
      const job = await prepare(['clip', 'plain'], first)
      await waitReady(job.token, first)
      const remembered = first.ctx.store.list<number>('recordings.crc32')
      expect(remembered.length).toBe(2)
      const out = join(work, 'restart.zip')
      await curl('GET', first.url + job.download_url, ['-o', out])
      const { py } = await validate(out, false)
      expect(remembered.map((r) => r.value).sort()).toEqual(py.entries.map((e) => e.crc).sort())
      await first.stop()

      writeFileSync(join(rdir, 'plain.mp4'), Buffer.alloc(5000, 9)) // changed while the service was down
      const second = await startTestServer({ plugins: [recordings], dataDir })
      try {
        const kept = second.ctx.store.list<number>('recordings.crc32')
        expect(kept.length).toBe(1) // plain.mp4's old CRC is forgotten, clip.avi's kept
        const again = await prepare(['clip', 'plain'], second)
        await waitReady(again.token, second)
        await curl('GET', second.url + again.download_url, ['-o', out])
        expect((await validate(out)).py.entries.find((e) => e.name === 'plain.mp4')!.sha256).toBe(sha256(join(rdir, 'plain.mp4')))
      } finally {
        await second.stop()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 30_000)

  // The size: 4 GiB and 1 MiB is past 2^32, so the entry's sizes need ZIP64 and the next entry's local
  // header starts past 4 GiB (a ZIP64 offset), what 5 GiB showed; each reader still reads all of it.
  const HUGE = 2 ** 32 + 2 ** 20
  test('ZIP64: a 4 GiB + 1 MiB sparse recording and an entry past 4 GiB, read back with its CRC by all three readers', async () => {
    reset()
    Bun.spawnSync(['truncate', '-s', String(HUGE), join(dir, 'huge.mkv')])
    copyFixtures(dir, ['clip.avi'])
    const job = await prepare(['huge.mkv', 'clip.avi'])
    const ready = await waitReady(job.token)
    expect(ready.state).toBe('ready')
    const out = join(work, 'huge.zip')
    // dd conv=sparse keeps the zeros sparse on this side too.
    const p = Bun.spawn([
      'bash',
      '-c',
      `set -o pipefail; curl -sS -D ${out}.headers '${s.url}${job.download_url}' | dd of=${out} bs=1M conv=sparse status=none`,
    ])
    expect(await p.exited).toBe(0)
    const length = Number(/x-archive-size: (\d+)/i.exec(await Bun.file(`${out}.headers`).text())![1])
    expect(statSync(out).size).toBe(length)
    expect(length).toBeGreaterThan(HUGE)

    // unzip -t and testzip() read all of the big entry and check its CRC; the small entry after it (its
    // local header past 4 GiB: a ZIP64 offset) is extracted by unzip at the same time.
    const [{ py, zipinfo }, extract] = await Promise.all([validate(out, false), run(['bash', '-c', `unzip -p '${out}' clip.avi | sha256sum`])])
    expect(py.zip64).toBe(true)
    const huge = py.entries.find((e) => e.name === 'huge.mkv')!
    expect(huge.size).toBe(HUGE)
    expect(huge.crc).toBe(crcOfZeros(HUGE))
    const clip = py.entries.find((e) => e.name === 'clip.avi')!
    expect(clip.size).toBe(statSync(join(dir, 'clip.avi')).size)
    expect(zipinfo).toContain(String(HUGE))
    expect(extract.out.split(' ')[0]).toBe(sha256(join(dir, 'clip.avi')))
    rmSync(out)
  }, 240_000)

  test('ZIP64 by entry count: 70,000 entries (the archive laid out by planZip, read by all three readers)', async () => {
    const sources = Array.from({ length: 70_000 }, (_, i) => ({ name: `r${i}.mp4`, size: 0, crc32: 0, mtimeMs: Date.UTC(2026, 0, 1) }))
    const plan = planZip(sources)
    const out = join(work, 'many.zip')
    const writer = Bun.file(out).writer()
    for (const e of plan.entries) writer.write(e.localHeader)
    writer.write(plan.trailer)
    await writer.end()
    expect(statSync(out).size).toBe(plan.size)
    const { py } = await validate(out, false)
    expect(py.zip64).toBe(true)
    expect(py.entries.length).toBe(70_000)
    expect(py.entries[69_999]!.name).toBe('r69999.mp4')
  }, 120_000)

  test('concurrent rename, zip and delete corrupt nothing', async () => {
    reset()
    const originals = new Map<string, string>() // content hash → original name
    for (let i = 0; i < 12; i++) {
      const name = `dive${i}.mp4`
      writeFileSync(join(dir, name), Buffer.alloc(3_000_000 + i * 1000, i + 1))
      originals.set(sha256(join(dir, name)), name)
    }
    for (let i = 0; i < 3; i++) {
      writeFileSync(join(dir, `keep${i}.mkv`), Buffer.alloc(2_000_000 + i, 100 + i)) // never renamed nor deleted
      originals.set(sha256(join(dir, `keep${i}.mkv`)), `keep${i}.mkv`)
    }
    const all = Array.from({ length: 12 }, (_, i) => `dive${i}`)
    // Jobs prepared before the storm, and more prepared during it.
    const early = await Promise.all([prepare(['keep0', 'keep1', 'keep2']), prepare(all.slice(0, 6)), prepare(all.slice(6)), prepare([...all, 'keep1'])])
    await Promise.all(early.map((j) => waitReady(j.token)))
    const download = async (url: string, i: number) => {
      const file = join(work, `concurrent-${i}.zip`)
      const d = await curl('GET', s.url + url, ['--limit-rate', '20M', '-o', file])
      return { ok: d.status === 200 && d.exitCode === 0, status: d.status, file }
    }
    const zips = early.map((j, i) => download(j.download_url, i))
    const ops: Promise<number>[] = []
    for (let i = 0; i < 12; i++) {
      await Bun.sleep(15)
      if (i % 3 === 0) ops.push(s.call('DELETE', `/api/recordings/dive${i}.mp4`).then((r) => r.status))
      else ops.push(s.call('PATCH', `/api/recordings/dive${i}.mp4/moved${i}.mp4`).then((r) => r.status))
      if (i % 4 === 1) {
        zips.push(
          s
            .call('POST', '/api/recordings/zip/prepare', all)
            .then(async (r) => (r.status === 200 ? download(r.body.download_url, 10 + i) : { ok: false, status: r.status, file: '' })),
        )
      }
    }
    for (const st of await Promise.all(ops)) expect(st).toBe(200)
    const results = await Promise.all(zips)
    expect(results[0]!.ok).toBe(true) // the job whose files nobody touched is whole
    for (const z of results) {
      expect([200, 404, 409]).toContain(z.status) // 200 may still be cut short: then it is not whole
      if (!z.ok) continue
      const { py } = await validate(z.file)
      for (const e of py.entries) expect(originals.get(e.sha256!)).toBe(e.name) // each entry is its own original content
    }
    // Every file left is one of the originals, intact, under its moved name, exactly once; the deleted are gone.
    const left = readdirSync(dir).sort()
    const expected = all
      .map((_, i) => i)
      .filter((i) => i % 3 !== 0)
      .map((i) => `moved${i}.mp4`)
    expect(left).toEqual([...expected, 'keep0.mkv', 'keep1.mkv', 'keep2.mkv'].sort())
    for (const name of left) expect(originals.get(sha256(join(dir, name)))).toBe(name.replace('moved', 'dive'))
  }, 120_000)
})

/** CRC-32 of `n` zero bytes (testzip() above has already checked the stored CRC against the data with zlib). */
function crcOfZeros(n: number): number {
  const block = new Uint8Array(1 << 20)
  let crc = 0
  for (let left = n; left > 0; left -= block.length) crc = Bun.hash.crc32(left >= block.length ? block : block.subarray(0, left), crc)
  return crc >>> 0
}
