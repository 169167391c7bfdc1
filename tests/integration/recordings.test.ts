// Recordings on real files: the listing (anchor formats, durations read from real MP4/Matroska/AVI
// headers), rename and delete with their refusals, downloads with Range, route order, and a corpus of
// hostile names that must leave every file outside the recordings directory untouched (by hash).
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Elysia } from 'elysia'
import { definePlugin } from '../../core/plugin'
import type { Streamer } from '../../core/types'
import recordings from '../../plugins/recordings'
import { startTestServer, tempDir, type TestServer } from '../helpers'
import { copyFixtures, curl, FIXTURE_DURATIONS, FIXTURES, requireTools, sha256, snapshot, text } from './fixtures/recordings/support'

/** Stands in for the GStreamer plugin: only what the recordings plugin asks of a streamer. */
let writing: string[] = []
const streamerStandIn = definePlugin({
  name: 'streamer-stand-in',
  setup({ registry }) {
    registry.provide('streamer', { name: 'stand-in', activeRecordings: () => writing } as unknown as Streamer, 'streamer-stand-in')
    return new Elysia({ name: 'periscope:streamer-stand-in' })
  },
})

let s: TestServer
let dir: string
beforeAll(async () => {
  requireTools()
  // The hostile corpus prepares many zips on purpose: the per-client limit (core/http/client-limits.ts) would answer 429.
  s = await startTestServer({ plugins: [streamerStandIn, recordings], config: { clientLimits: false } })
  dir = s.ctx.config.recordingsDir
})
afterAll(async () => {
  await s?.stop()
})

/** Empties the recordings directory between tests. */
function reset(): void {
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir)
  writing = []
}

describe('listing', () => {
  test('every recording with the anchor field formats and the durations of their own headers', async () => {
    reset()
    copyFixtures(dir)
    writeFileSync(join(dir, 'notes.txt'), 'not a recording')
    writeFileSync(join(dir, '.partial.mp4'), 'hidden')
    mkdirSync(join(dir, 'sub.mp4'))
    const r = await s.call('GET', '/api/recordings')
    expect(r.status).toBe(200)
    const byName = new Map((r.body as any[]).map((x) => [`${x.name}.${x.format}`, x]))
    expect([...byName.keys()].sort()).toEqual(Object.keys(FIXTURE_DURATIONS).sort())
    for (const [file, duration] of Object.entries(FIXTURE_DURATIONS)) {
      const rec = byName.get(file)
      const size = statSync(join(dir, file)).size
      expect(rec).toEqual({
        path: join(dir, file),
        name: file.replace(/\.[^.]+$/, ''),
        format: file.split('.').pop(),
        duration,
        size: `${(size / 1048576).toFixed(2)} MB`,
        created: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/),
        kind: 'recording',
      })
    }
  })

  test('headers far into the file are found: a 1 MiB box before moov or before the fragments', async () => {
    reset()
    for (const name of ['plain.mp4', 'fragmented.mp4']) {
      const original = readFileSync(join(FIXTURES, name))
      const ftyp = original.readUInt32BE(0)
      const free = Buffer.alloc(1 << 20)
      free.writeUInt32BE(free.length, 0)
      free.write('free', 4)
      writeFileSync(join(dir, `padded-${name}`), Buffer.concat([original.subarray(0, ftyp), free, original.subarray(ftyp)]))
    }
    const list = (await s.call('GET', '/api/recordings')).body as any[]
    expect(list.map((r) => [r.name, r.duration]).sort()).toEqual([
      ['padded-fragmented', '00:00:04'],
      ['padded-plain', '00:00:04'],
    ])
  })

  test('a changed file is read again (the cache is keyed by size and mtime); sizes in MB with two decimals', async () => {
    reset()
    copyFixtures(dir, ['plain.mp4'])
    expect((await s.call('GET', '/api/recordings')).body[0].duration).toBe('00:00:04')
    writeFileSync(join(dir, 'plain.mp4'), Buffer.alloc(3 * 1048576 + 52429)) // rewritten: zeros, no header
    const after = (await s.call('GET', '/api/recordings')).body[0]
    expect(after).toMatchObject({ duration: '00:00:00', size: '3.05 MB' })
  })

  test('newest first; a recording being written is listed and marked, and refuses rename, delete and zip', async () => {
    reset()
    copyFixtures(dir, ['plain.mp4', 'killed.mkv'])
    await Bun.sleep(20)
    cpSync(join(FIXTURES, 'streamable.mkv'), join(dir, 'live.mkv'))
    writing = [join(dir, 'live.mkv')]
    const list = (await s.call('GET', '/api/recordings')).body as any[]
    expect(list[0]).toMatchObject({ name: 'live', in_progress: true })
    expect(list.filter((x) => x.in_progress).length).toBe(1)
    expect('in_progress' in list.find((x) => x.name === 'plain')).toBe(false)

    expect(await s.call('PATCH', '/api/recordings/live.mkv/other.mkv')).toMatchObject({
      status: 409,
      body: { detail: expect.stringContaining('being recorded') },
    })
    expect(await s.call('DELETE', '/api/recordings/live.mkv')).toMatchObject({ status: 409, body: { detail: expect.stringContaining('being recorded') } })
    expect(await s.call('POST', '/api/recordings/zip/prepare', ['live'])).toMatchObject({ status: 409, body: { detail: expect.stringContaining('live.mkv') } })
    expect(existsSync(join(dir, 'live.mkv'))).toBe(true)
    writing = []
    expect((await s.call('DELETE', '/api/recordings/live.mkv')).status).toBe(200)
  })

  test('a recordings directory removed at run time is made again: 200 [], never an error', async () => {
    rmSync(dir, { recursive: true, force: true })
    expect(await s.call('GET', '/api/recordings')).toMatchObject({ status: 200, body: [] })
    expect(existsSync(dir)).toBe(true)
  })

  test('GET /api/recordings/disk answers total, used and free bytes', async () => {
    const r = await s.call('GET', '/api/recordings/disk')
    expect(r.status).toBe(200)
    expect(Object.keys(r.body).sort()).toEqual(['free', 'total', 'used'])
    expect(r.body.total).toBeGreaterThan(0)
    expect(r.body.used + r.body.free).toBeLessThanOrEqual(r.body.total)
    expect(Number.isInteger(r.body.free)).toBe(true)
  })
})

describe('rename', () => {
  test('renames within the directory, keeps the content, answers the list', async () => {
    reset()
    copyFixtures(dir, ['plain.mp4', 'clip.avi'])
    const before = sha256(join(dir, 'plain.mp4'))
    const r = await s.call('PATCH', '/api/recordings/plain.mp4/wreck%20dive%20%C3%A9t%C3%A9.mp4')
    expect(r.status).toBe(200)
    expect((r.body as any[]).map((x) => x.name).sort()).toEqual(['clip', 'wreck dive été'])
    expect(sha256(join(dir, 'wreck dive été.mp4'))).toBe(before)
    expect(existsSync(join(dir, 'plain.mp4'))).toBe(false)
    // The same name is a no-op, not a collision.
    expect((await s.call('PATCH', '/api/recordings/clip.avi/clip.avi')).status).toBe(200)
  })

  test('refusals: 422 in pydantic shape with the reason, 409 for a taken name, 404 for an unknown one', async () => {
    reset()
    copyFixtures(dir, ['plain.mp4', 'clip.avi'])
    writeFileSync(join(dir, 'taken.mp4'), 'x')
    const refused: [string, string][] = [
      ['..%2Fplain.mp4', 'path separator'],
      ['a%5Cb.mp4', 'path separator'],
      ['a..b.mp4', "'..'"],
      ['.hidden.mp4', 'starts with a dot'],
      ['a%00b.mp4', 'NUL'],
      ['a%0Ab.mp4', 'control'],
      ['a%E2%80%AEb.mp4', 'control or invisible'],
      [`${'x'.repeat(252)}.mp4`, 'longer than 255 bytes'],
      ['plain.mkv', 'extension cannot change'],
      ['plain', 'no extension'],
      ['plain.', 'extension'],
      ['a%3Ab.mp4', 'FAT'],
      ['%20spaced.mp4', 'space'],
      ['%EF%BC%8E%EF%BC%8E%EF%BC%8Fplain.mp4', 'path separator'], // fullwidth ．．／ becomes ../ under NFKC
    ]
    for (const [name, why] of refused) {
      const r = await s.call('PATCH', `/api/recordings/plain.mp4/${name}`)
      expect({ name, status: r.status }).toEqual({ name, status: 422 })
      expect(r.body.detail[0]).toMatchObject({
        type: 'value_error',
        loc: ['path', 'new_name'],
        msg: expect.stringMatching(/^Value error, /),
        ctx: { error: expect.stringContaining(why) },
      })
    }
    expect(await s.call('PATCH', '/api/recordings/plain.mp4/taken.mp4')).toMatchObject({
      status: 409,
      body: { detail: expect.stringContaining('already exists') },
    })
    expect(readFileSync(join(dir, 'taken.mp4'), 'utf8')).toBe('x')
    expect(await s.call('PATCH', '/api/recordings/ghost.mp4/x.mp4')).toMatchObject({ status: 404, body: { detail: expect.stringContaining('ghost.mp4') } })
    const badOld = await s.call('PATCH', '/api/recordings/..%2Fplain.mp4/x.mp4')
    expect(badOld).toMatchObject({ status: 422, body: { detail: [{ loc: ['path', 'old_name'] }] } })
    expect(existsSync(join(dir, 'plain.mp4'))).toBe(true)
  })
})

describe('delete', () => {
  test('deletes and answers the list; the last one leaves 200 []; again → 404', async () => {
    reset()
    copyFixtures(dir, ['plain.mp4', 'clip.avi'])
    const one = await s.call('DELETE', '/api/recordings/plain.mp4')
    expect(one.status).toBe(200)
    expect((one.body as any[]).map((x) => x.name)).toEqual(['clip'])
    expect(await s.call('DELETE', '/api/recordings/clip.avi')).toMatchObject({ status: 200, body: [] })
    expect(await s.call('GET', '/api/recordings')).toMatchObject({ status: 200, body: [] })
    expect((await s.call('DELETE', '/api/recordings/clip.avi')).status).toBe(404)
  })
})

describe('downloads and route order', () => {
  test('the file, inline or as an attachment, with Range (206, suffix, 416)', async () => {
    reset()
    copyFixtures(dir, ['clip.avi'])
    const bytes = readFileSync(join(dir, 'clip.avi'))
    const full = await curl('GET', `${s.url}/api/recordings/clip.avi`)
    expect(full.status).toBe(200)
    expect(Buffer.from(full.body).equals(bytes)).toBe(true)
    expect(full.headers['content-disposition']).toStartWith('inline')
    expect(full.headers['content-type']).toBe('video/x-msvideo')
    expect(full.headers['accept-ranges']).toBe('bytes')
    expect((await curl('GET', `${s.url}/api/recordings/clip.avi?download=true`)).headers['content-disposition']).toStartWith('attachment; filename="clip.avi"')
    const dl = await curl('GET', `${s.url}/api/recordings/clip.avi/download`)
    expect(dl.headers['content-disposition']).toStartWith('attachment')
    expect(Buffer.from(dl.body).equals(bytes)).toBe(true)
    // Without the extension, when it is unambiguous.
    expect((await curl('GET', `${s.url}/api/recordings/clip/download`)).body.length).toBe(bytes.length)

    const part = await curl('GET', `${s.url}/api/recordings/clip.avi/download`, ['-H', 'Range: bytes=100-199'])
    expect(part.status).toBe(206)
    expect(part.headers['content-range']).toBe(`bytes 100-199/${bytes.length}`)
    expect(Buffer.from(part.body).equals(bytes.subarray(100, 200))).toBe(true)
    const tail = await curl('GET', `${s.url}/api/recordings/clip.avi`, ['-H', 'Range: bytes=-10'])
    expect(Buffer.from(tail.body).equals(bytes.subarray(bytes.length - 10))).toBe(true)
    const beyond = await curl('GET', `${s.url}/api/recordings/clip.avi`, ['-H', `Range: bytes=${bytes.length}-`])
    expect(beyond.status).toBe(416)
    expect(beyond.headers['content-range']).toBe(`bytes */${bytes.length}`)
    expect((await curl('GET', `${s.url}/api/recordings/ghost.avi/download`)).status).toBe(404)
  })

  test('/disk and /zip/* are never taken for recording names, even when recordings are called so', async () => {
    reset()
    for (const n of ['disk.mp4', 'zip.mp4', 'download.mp4', 'prepare.mp4']) cpSync(join(FIXTURES, 'plain.mp4'), join(dir, n))
    const disk = await s.call('GET', '/api/recordings/disk')
    expect(Object.keys(disk.body).sort()).toEqual(['free', 'total', 'used'])
    const unknownToken = await s.call('GET', '/api/recordings/zip/download?token=nope')
    expect(unknownToken).toMatchObject({ status: 404, body: { detail: expect.stringContaining('token') } })
    expect((await s.call('GET', '/api/recordings/zip/download')).body.detail[0]).toMatchObject({ type: 'missing', loc: ['query', 'token'] })
    expect(await s.call('GET', '/api/recordings/zip/abc')).toMatchObject({ status: 404, body: { detail: expect.stringContaining('token') } })
    expect((await curl('GET', `${s.url}/api/recordings/disk.mp4`)).headers['content-type']).toBe('video/mp4')
    expect((await curl('GET', `${s.url}/api/recordings/download.mp4/download`)).status).toBe(200)
    expect((await s.call('PATCH', '/api/recordings/zip.mp4/zip2.mp4')).status).toBe(200)
    expect((await s.call('DELETE', '/api/recordings/disk.mp4')).status).toBe(200)
    expect((await s.call('GET', '/api/recordings')).body.map((r: any) => r.name).sort()).toEqual(['download', 'prepare', 'zip2'])
  })
})

describe('hostile names and paths', () => {
  test('a corpus of traversal, absolute, NUL, look-alike, overlong and symlink names touches nothing outside', async () => {
    reset()
    copyFixtures(dir, ['plain.mp4', 'clip.avi'])
    const root = s.dataDir
    // Targets outside the recordings directory: beside it, in a sibling directory, and elsewhere in /tmp.
    writeFileSync(join(root, 'victim.mp4'), 'victim beside the recordings directory')
    mkdirSync(join(root, 'outside'), { recursive: true })
    writeFileSync(join(root, 'outside', 'secret.mp4'), 'secret in a sibling directory')
    const elsewhere = tempDir('periscope-victim-')
    writeFileSync(join(elsewhere, 'far.mp4'), 'far away')
    symlinkSync(join(root, 'victim.mp4'), join(dir, 'escape.mp4')) // a symlink out of the directory
    symlinkSync('../outside', join(dir, 'outdir')) // a symlinked directory
    symlinkSync(join(elsewhere, 'far.mp4'), join(dir, 'far.mp4'))
    const outsideBefore = snapshot(root, (p) => p === dir)
    const elsewhereBefore = snapshot(elsewhere)
    const secrets = [join(root, 'victim.mp4'), join(root, 'outside', 'secret.mp4'), join(elsewhere, 'far.mp4')].map((p) => readFileSync(p))

    const abs = encodeURIComponent(join(root, 'victim.mp4'))
    const corpus = [
      '..%2Fvictim.mp4',
      '..%2F..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd',
      '%2E%2E%2Fvictim.mp4',
      '%2e%2e%2f%2e%2e%2fvictim.mp4',
      '..%5Cvictim.mp4',
      '..%5C..%5Cvictim.mp4',
      '%2Fetc%2Fpasswd',
      abs,
      `${abs}%00.mp4`,
      'victim.mp4%00.mp4',
      'plain.mp4%00',
      '..',
      '.',
      '%2E%2E',
      '%2E',
      '.hidden.mp4',
      '%252e%252e%252fvictim.mp4', // double-encoded: stays a literal, harmless name
      '%EF%BC%8E%EF%BC%8E%EF%BC%8Fvictim.mp4', // fullwidth ．．／
      '%E2%88%95etc%E2%88%95passwd.mp4', // ∕ division slash
      '%E2%81%84victim.mp4', // ⁄ fraction slash
      '%EF%BC%8F..%EF%BC%8Fvictim.mp4', // fullwidth solidus around ..
      '%C0%AE%C0%AE%2Fvictim.mp4', // overlong UTF-8 dots
      '%ZZ%2E%2E',
      `${'a'.repeat(300)}.mp4`,
      `${'%C3%A9'.repeat(200)}.mp4`,
      '%0Aplain.mp4',
      'plain%0D.mp4',
      '%7F.mp4',
      '%E2%80%AEgpj.mp4', // right-to-left override
      '%E2%80%8Bplain.mp4', // zero-width space
      'escape.mp4', // symlink to a file outside
      'far.mp4', // symlink to /tmp elsewhere
      'outdir', // symlink to a directory outside
      'outdir%2Fsecret.mp4',
      '....%2F%2Fvictim.mp4',
      '~%2Fvictim.mp4',
      'recordings%2F..%2F..%2Fvictim.mp4',
      '%5C%5Cserver%5Cshare.mp4',
      'C%3A%5Cvictim.mp4',
      'plain.mp4%2F..',
      '*.mp4',
      '..%00%2Fvictim.mp4',
    ]
    expect(corpus.length).toBeGreaterThanOrEqual(30)

    const statuses = new Map<string, number[]>()
    for (const h of corpus) {
      const got: number[] = []
      const requests: [string, string][] = [
        ['DELETE', `/api/recordings/${h}`],
        ['PATCH', `/api/recordings/${h}/x.mp4`],
        ['PATCH', `/api/recordings/plain.mp4/${h}`],
        ['GET', `/api/recordings/${h}`],
        ['GET', `/api/recordings/${h}/download`],
        ['GET', `/api/recordings/${h}?download=true`],
      ]
      for (const [method, path] of requests) {
        const r = await curl(method, s.url + path)
        got.push(r.status)
        expect({ h, method, path, status: r.status }).not.toMatchObject({ status: 500 })
        for (const secret of secrets) expect(Buffer.from(r.body).includes(secret)).toBe(false)
        // A hostile new name that happens to be harmless may succeed: it must stay inside, then go back.
        if (method === 'PATCH' && r.status === 200) {
          const renamed = (JSON.parse(text(r.body)) as any[]).find((x) => x.path !== join(dir, 'plain.mp4') && x.format === 'mp4')
          expect(renamed.path.startsWith(dir + '/')).toBe(true)
          expect(renamed.path.slice(dir.length + 1)).not.toContain('/')
          rmSync(renamed.path)
          copyFixtures(dir, ['plain.mp4'])
        }
      }
      const prep = await s.call('POST', '/api/recordings/zip/prepare', [decodeURIComponentSafe(h)])
      got.push(prep.status)
      expect([404, 422]).toContain(prep.status)
      statuses.set(h, got)
    }
    // Also the raw forms fetch() would normalise away.
    for (const raw of [
      '/api/recordings/../../victim.mp4',
      '/api/recordings/..%2f../victim.mp4',
      '/api/recordings/./../victim.mp4/download',
      '/api/recordings//etc/passwd',
    ]) {
      for (const method of ['GET', 'DELETE', 'PATCH']) {
        const r = await curl(method, s.url + raw)
        expect(r.status).not.toBe(500)
        expect(r.status).not.toBe(200)
      }
    }

    expect(snapshot(root, (p) => p === dir)).toEqual(outsideBefore)
    expect(snapshot(elsewhere)).toEqual(elsewhereBefore)
    // The symlinks are still there (never deleted through) and still point where they did.
    for (const link of ['escape.mp4', 'outdir', 'far.mp4']) expect(existsSync(join(dir, link))).toBe(true)
    // Symlinks are not recordings: not listed.
    expect((await s.call('GET', '/api/recordings')).body.map((r: any) => `${r.name}.${r.format}`).sort()).toEqual(['clip.avi', 'plain.mp4'])
    rmSync(elsewhere, { recursive: true, force: true })
  }, 60_000)
})

function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s)
  } catch {
    return s
  }
}
