// How requests are read before any handler: path parameters decoded once for every route, 405 with
// Allow for a known path and a method it does not serve, and JSON bodies that cannot set a prototype.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parsePythonJson } from '../../core/pyjson'
import type { TestServer } from '../helpers'
import { EHD, startContractServer } from './setup'

let s: TestServer
let doc: { paths: Record<string, Record<string, unknown>> }
beforeAll(async () => {
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'recordings', 'network', 'gstreamer'] })
  doc = (await s.call('GET', '/openapi.json')).body
})
afterAll(async () => {
  await s.stop()
})

/** Every documented path with its parameters filled in, and the methods the document gives it. */
function documented(value: string): { path: string; methods: Set<string> }[] {
  const templates = Object.entries(doc.paths).map(([template, ops]) => ({ template, methods: Object.keys(ops).map((m) => m.toUpperCase()) }))
  const matches = (template: string, path: string) => new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`).test(path)
  return [...new Set(templates.map(({ template }) => template.replace(/\{[^}]+\}/g, value)))].map((path) => ({
    path,
    // A concrete path can be several templates' ('/api/recordings/x': GET {name}, DELETE {recording_path}).
    methods: new Set(templates.filter(({ template }) => matches(template, path)).flatMap(({ methods }) => methods)),
  }))
}

describe('path parameters: decoded once, in one place, for every route', () => {
  test("'%25' is '%' (not decoded again into a 500): a recording named '%41.mp4' is found as %2541.mp4", async () => {
    const dir = join(s.dataDir, 'recordings')
    mkdirSync(dir, { recursive: true })
    writeFileSync(join(dir, '%41.mp4'), 'not really a video')
    const once = await fetch(`${s.url}/api/recordings/%2541.mp4`)
    expect(once.status).toBe(200)
    expect(await once.text()).toBe('not really a video')
    // Decoded twice it would have been 'A.mp4'.
    expect((await s.call('GET', '/api/recordings/A.mp4')).status).toBe(404)
  })

  test('a parameter that is not valid percent-encoded UTF-8 is a 422 naming it, with the segment as sent, on every route that has one', async () => {
    const templates = Object.entries(doc.paths).filter(([template]) => template.includes('{'))
    expect(templates.map(([t]) => t)).toContain('/api/streams/{bus_info}/sdp')
    for (const [template, ops] of templates) {
      for (const method of Object.keys(ops)) {
        for (const bad of ['%zz', '%C0%AF', '%E0%A4%A', '%ED%A0%80', '%FF']) {
          const names = [...template.matchAll(/\{([^}]+)\}/g)].map((m) => m[1])
          const res = await fetch(s.url + template.replace(/\{[^}]+\}/g, bad), { method: method.toUpperCase() })
          expect({ template, method, bad, status: res.status }).toEqual({ template, method, bad, status: 422 })
          const { detail } = (await res.json()) as { detail: unknown }
          expect(detail).toEqual(
            names.map((name) => ({ type: 'value_error', loc: ['path', name], msg: `Value error, the ${name} is not valid percent-encoded UTF-8`, input: bad, ctx: { error: `the ${name} is not valid percent-encoded UTF-8` } })),
          )
        }
      }
    }
  })

  test("'%00' and '%2F' reach the handler as NUL and '/', and are refused by it, not by a 500", async () => {
    const nul = await s.call('GET', '/api/recordings/a%00.mp4')
    expect(nul.status).toBe(422)
    expect(nul.body.detail[0].msg).toContain('NUL')
    const slash = await s.call('DELETE', '/api/recordings/..%2Fsecret.mp4')
    expect(slash.status).toBe(422)
    expect(slash.body.detail[0].msg).toContain('path separator')
  })
})

describe('405 Method Not Allowed, as FastAPI answers it', () => {
  test('every documented path, with every method it does not serve: 405, Allow lists the ones it does', async () => {
    let checked = 0
    for (const { path, methods } of documented('x')) {
      const allow = new Set(methods)
      if (allow.has('GET')) allow.add('HEAD')
      for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'TRACE']) {
        if (methods.has(method)) continue
        const res = await fetch(s.url + path, { method, ...(['POST', 'PUT', 'PATCH'].includes(method) ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}) })
        expect({ path, method, status: res.status }).toEqual({ path, method, status: 405 })
        // Bun's fetch drops the body of an answer to TRACE (it is there: raw-http.test.ts reads it).
        if (method !== 'TRACE') expect(await res.json()).toEqual({ detail: 'Method Not Allowed' })
        expect(new Set(res.headers.get('allow')!.split(', '))).toEqual(allow)
        checked++
      }
    }
    expect(checked).toBeGreaterThan(100)
  })

  test('TRACE /api/devices: 405 Allow: GET, HEAD; HEAD still answers the GET; OPTIONS is the CORS preflight; an unknown path is 404', async () => {
    const trace = await fetch(`${s.url}/api/devices`, { method: 'TRACE' })
    expect(trace.status).toBe(405)
    expect(trace.headers.get('allow')).toBe('GET, HEAD')
    const head = await fetch(`${s.url}/api/devices`, { method: 'HEAD' })
    expect(head.status).toBe(200)
    expect(await head.text()).toBe('')
    // HEAD on a path that only takes POST: the 405's headers.
    const headPost = await fetch(`${s.url}/api/devices/set_nickname`, { method: 'HEAD' })
    expect(headPost.status).toBe(405)
    expect(headPost.headers.get('allow')).toBe('POST')
    const preflight = await fetch(`${s.url}/api/devices/set_nickname`, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' } })
    expect(preflight.status).toBe(204)
    expect(preflight.headers.get('access-control-allow-methods')).toContain('POST')
    for (const method of ['GET', 'POST', 'DELETE']) {
      const unknown = await fetch(`${s.url}/api/nothing/here`, { method })
      expect(unknown.status).toBe(404)
      expect(unknown.headers.get('allow')).toBeNull()
      expect(await unknown.json()).toEqual({ detail: 'Not Found' })
    }
  })
})

describe('JSON bodies cannot set a prototype', () => {
  test('the parser makes "__proto__" an own field, as Python and JSON.parse do', () => {
    const parsed = parsePythonJson('{"__proto__": {"polluted": true}, "a": {"__proto__": []}}') as any
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype)
    expect(Object.getPrototypeOf(parsed.a)).toBe(Object.prototype)
    expect(parsed.polluted).toBeUndefined()
    expect(Object.keys(parsed)).toEqual(['__proto__', 'a'])
    expect(JSON.stringify(parsed)).toBe(JSON.stringify(JSON.parse('{"__proto__": {"polluted": true}, "a": {"__proto__": []}}')))
    expect(({} as any).polluted).toBeUndefined()
  })

  test('fields under "__proto__" were never sent: 422 missing, and nothing is set', async () => {
    const body = `{"__proto__": {"bus_info": "${EHD}", "nickname": "polluted"}}`
    const r = await s.call('POST', '/api/devices/set_nickname', body)
    expect(r.status).toBe(422)
    expect(r.body.detail.map((e: any) => [e.type, e.loc])).toEqual([
      ['missing', ['body', 'bus_info']],
      ['missing', ['body', 'nickname']],
    ])
    expect(r.body.detail[0].input).toEqual(JSON.parse(body))
    const dev = (await s.call('GET', '/api/devices')).body.find((d: any) => d.bus_info === EHD)
    expect(dev.nickname).not.toBe('polluted')
  })
})
