// Input the red team got stored (issue 25, item 8): nicknames with NUL, BEL or U+202E (which shows what
// follows reversed), a stream width of 4.99e23 with encode_type NONE; and the OpenAPI document listing
// fields that have defaults as required. Each is now refused or documented as pydantic would.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { NICKNAME_PATTERN } from '../../core/schemas'
import type { TestServer } from '../helpers'
import { device, EHD, startContractServer } from './setup'

let s: TestServer
beforeAll(async () => {
  s = await startContractServer()
})
afterAll(async () => {
  await s.stop()
})

test('a nickname with a control character or a bidi override is 422 in pydantic\'s shape; other Unicode is kept', async () => {
  for (const nickname of ['a\u0000b', 'bell\u0007', 'cam\u202Eaxe.exe', 'line\nbreak', 'del\u007f', 'iso\u2066late\u2069']) {
    const r = await s.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname })
    expect(r.status).toBe(422)
    expect(r.body.detail).toEqual([
      { type: 'string_pattern_mismatch', loc: ['body', 'nickname'], msg: `String should match pattern '${NICKNAME_PATTERN}'`, input: nickname, ctx: { pattern: NICKNAME_PATTERN } },
    ])
  }
  expect((await device(s, EHD)).nickname).not.toContain('\u0000')
  const ok = await s.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'Kamera vorne – 日本 ✓' })
  expect(ok.status).toBe(200)
  expect((await device(s, EHD)).nickname).toBe('Kamera vorne – 日本 ✓')
})

test('configure_stream bounds the frame size and interval whatever the encode type: 4.99e23 is 422, nothing stored', async () => {
  const before = (await device(s, EHD)).stream
  const body = (width: number, denominator = 30) => ({
    bus_info: EHD,
    stream_type: 'UDP',
    encode_type: 'NONE',
    enabled: false,
    endpoints: [],
    stream_format: { width, height: 1080, interval: { numerator: 1, denominator } },
  })
  // Past what an integer holds, pydantic says so before any bound (int_parsing_size); within it, the bound.
  const huge = await s.call('POST', '/api/devices/configure_stream', body(4.99e23))
  expect(huge.status).toBe(422)
  expect(huge.body.detail).toEqual([{ type: 'int_parsing_size', loc: ['body', 'stream_format', 'width'], msg: 'Unable to parse input string as an integer, exceeded maximum size', input: 4.99e23 }])
  const wide = await s.call('POST', '/api/devices/configure_stream', body(16385))
  expect(wide.status).toBe(422)
  expect(wide.body.detail).toEqual([{ type: 'less_than_equal', loc: ['body', 'stream_format', 'width'], msg: 'Input should be less than or equal to 16384', input: 16385, ctx: { le: 16384 } }])
  const rate = await s.call('POST', '/api/devices/configure_stream', body(1920, 1e9))
  expect(rate.status).toBe(422)
  expect(rate.body.detail[0]).toMatchObject({ type: 'less_than_equal', loc: ['body', 'stream_format', 'interval', 'denominator'], ctx: { le: 1000000 } })
  expect((await device(s, EHD)).stream).toEqual(before)
})

test('the OpenAPI document lists as required only fields without a default, as pydantic does', async () => {
  const doc = (await s.call('GET', '/openapi.json')).body
  const schemas = doc.components.schemas as Record<string, any>
  let checked = 0
  for (const [name, schema] of Object.entries(schemas)) {
    for (const field of schema.required ?? []) {
      expect(schema.properties[field]?.default, `${name}.${field}`).toBeUndefined()
      checked++
    }
  }
  expect(checked).toBeGreaterThan(20)
  expect(schemas.PreferencesModel.required).toBeUndefined()
  expect(schemas.ControlFlagsModel.required).toEqual(['default_value', 'control_type'])
  const nickname = schemas.SetNicknameRequest.properties.nickname
  expect(nickname).toMatchObject({ maxLength: 64, pattern: NICKNAME_PATTERN })
})
