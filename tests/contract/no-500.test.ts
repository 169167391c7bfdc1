// No input may produce a 500: every documented operation, fed hostile bodies, paths and queries.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import type { TestServer } from '../helpers'
import { startContractServer } from './setup'

let s: TestServer
beforeAll(async () => {
  // Every plugin that needs no extra system package; the network plugin finds no NetworkManager here.
  // gstreamer, jpeg, whep: their routes are there with or without GStreamer installed (503 without). rtsp:
  // its status route, with the server off (its helper is the integration tier's).
  s = await startContractServer({ plugins: ['mock', 'cameras', 'preferences', 'dwe', 'recordings', 'network', 'gstreamer', 'audio', 'jpeg', 'whep', 'rtsp', 'blueos', 'console'], config: { rtspPort: 0 } })
})
afterAll(async () => {
  await s.stop()
})

const BODIES = [
  '',
  '{',
  'null',
  '[]',
  '[null]',
  '{}',
  '"x"',
  '1e999',
  '-0',
  '{"bus_info": null, "leader_bus_info": [], "control_id": {}, "value": "NaN", "nickname": 1}',
  '{"bus_info": "usb-0000:00:14.0-1", "control_id": 9963776, "value": 1e308}',
  '{"bus_info": "usb-0000:00:14.0-1", "control_id": -1, "value": -1e308}',
  '{"__proto__": {"polluted": true}, "constructor": {"prototype": {"x": 1}}}',
  JSON.stringify({ bus_info: 'usb-0000:00:14.0-1', stream_type: 'UDP', encode_type: 'NONE', stream_format: { width: 2 ** 53, height: -1, interval: { numerator: 1e9, denominator: 1 } }, enabled: true, endpoints: [] }),
  JSON.stringify({ ip_addresses: [{ address: '999.1.1.1', prefix: 99 }], gateway: 5, method: 'manual', dns: [null], never_default: 'x' }),
  JSON.stringify(['../../etc/passwd', '\u0000', 'a'.repeat(5000)]),
  '\u0000\u0001\u0002',
  '{"a":"\ud800"}',
  '['.repeat(2000) + ']'.repeat(2000),
  '['.repeat(400_000),
  '{"a":'.repeat(100_000),
]

// Path parameters are decoded once, by the router: '%25' is '%', and what is not valid percent-encoded
// UTF-8 (a truncated sequence, overlong forms of '/' and '.', an encoded surrogate, '%zz') is a 422.
const PATH_NOISE = ['%', '%00', '%25', '%2525', '%2F', '%E0%A4%A', '%C0%AF', '%C0%AE%C0%AE', '%E0%80%AF', '%ED%A0%80', '%FF', '%zz', '..%2F..%2Fetc%2Fpasswd', 'a'.repeat(3000), '%F0%9F%98%80', '~', '.', '..']

test('no request answers 500', async () => {
  const doc = (await s.call('GET', '/openapi.json')).body
  const seen: string[] = []
  for (const [template, methods] of Object.entries<any>(doc.paths)) {
    for (const method of Object.keys(methods)) {
      const paths = template.includes('{') ? PATH_NOISE.map((n) => template.replace(/\{[^}]+\}/g, n)) : [template, `${template}?path=%00&token=..&x=${'%'}`]
      for (const path of paths) {
        for (const body of method === 'get' || method === 'delete' ? [undefined] : BODIES) {
          const res = await fetch(s.url + path, { method: method.toUpperCase(), body, headers: body === undefined ? {} : { 'content-type': 'application/json' } })
          const text = await res.text()
          if (res.status >= 500 && res.status !== 502 && res.status !== 503 && res.status !== 504) seen.push(`${method.toUpperCase()} ${path.slice(0, 80)} ${String(body).slice(0, 60)} → ${res.status} ${text.slice(0, 200)}`)
          if (res.status !== 200 && res.headers.get('content-type')?.includes('json')) expect(JSON.parse(text)).toHaveProperty('detail')
        }
      }
    }
  }
  expect(seen).toEqual([])
}, 120_000)
