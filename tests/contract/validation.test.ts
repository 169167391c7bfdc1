// 422s exactly as FastAPI + pydantic v2 write them: a table of invalid requests with their whole bodies,
// fast and readable; fastapi-parity.test.ts measures the same against a real FastAPI app, over many more.
import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { parsePythonJson, PyJsonError } from '../../core/pyjson'
import type { TestServer } from '../helpers'
import { EHD, startContractServer } from './setup'

let s: TestServer
beforeAll(async () => {
  s = await startContractServer()
})
afterAll(async () => {
  await s.stop()
})

const SET = '/api/devices/set_uvc_control'
const CONF = '/api/devices/configure_stream'
const FOLLOW = '/api/devices/add_follower'
const PREFS = '/api/preferences/save_preferences'
const NOTIFY = '/api/devices/external/notify_camera'

const fmt = (over: Record<string, unknown> = {}) => ({ width: 1920, height: 1080, interval: { numerator: 1, denominator: 30 }, ...over })
const conf = (over: Record<string, unknown> = {}) => ({
  bus_info: EHD,
  stream_type: 'UDP',
  encode_type: 'H264',
  stream_format: fmt(),
  enabled: false,
  endpoints: [{ host: '127.0.0.1', port: 5600 }],
  ...over,
})
const json = (type: string, pos: number, error: string) => ({ type, loc: ['body', pos], msg: 'JSON decode error', input: {}, ctx: { error } })
const missing = (loc: (string | number)[], input: unknown) => ({ type: 'missing', loc, msg: 'Field required', input })
const ENCODE_EXPECTED = "'MJPG', 'H264', 'SOFTWARE_H264' or 'NONE'"

// [name, path, raw body (string = sent verbatim), expected detail]
const CASES: [string, string, unknown, unknown[]][] = [
  ['no body', SET, '', [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]],
  ['whitespace body', SET, '   ', [json('json_invalid', 3, 'Expecting value')]],
  ['truncated object', SET, '{', [json('json_invalid', 1, 'Expecting property name enclosed in double quotes')]],
  ['missing value', SET, '{"bus_info": }', [json('json_invalid', 13, 'Expecting value')]],
  ['trailing comma', SET, '{"bus_info": "x",}', [json('json_invalid', 17, 'Expecting property name enclosed in double quotes')]],
  ['missing colon', SET, '{"bus_info" "x"}', [json('json_invalid', 12, "Expecting ':' delimiter")]],
  ['missing comma', SET, '{"a": 1 "b": 2}', [json('json_invalid', 8, "Expecting ',' delimiter")]],
  ['single quotes', SET, "{'a': 1}", [json('json_invalid', 1, 'Expecting property name enclosed in double quotes')]],
  ['extra data', SET, '{} {}', [json('json_invalid', 3, 'Extra data')]],
  ['unterminated string', SET, '{"a": "abc', [json('json_invalid', 6, 'Unterminated string starting at')]],
  ['bad escape', SET, '{"a": "\\x"}', [json('json_invalid', 7, 'Invalid \\escape')]],
  ['control character in string', SET, '{"a": "a\tb"}', [json('json_invalid', 8, 'Invalid control character at')]],
  ['bare word', SET, 'hello', [json('json_invalid', 0, 'Expecting value')]],
  ['array body', SET, [1, 2], [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: [1, 2] }]],
  ['string body', SET, '"text"', [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: 'text' }]],
  ['number body', SET, '42', [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: 42 }]],
  // A JSON null is no body at all to FastAPI.
  ['null body', SET, 'null', [{ type: 'missing', loc: ['body'], msg: 'Field required', input: null }]],
  [
    'empty object',
    SET,
    {},
    [missing(['body', 'bus_info'], {}), missing(['body', 'control_id'], {}), missing(['body', 'value'], {})],
  ],
  ['bus_info int', SET, { bus_info: 5, control_id: 1, value: 1 }, [{ type: 'string_type', loc: ['body', 'bus_info'], msg: 'Input should be a valid string', input: 5 }]],
  ['bus_info null', SET, { bus_info: null, control_id: 1, value: 1 }, [{ type: 'string_type', loc: ['body', 'bus_info'], msg: 'Input should be a valid string', input: null }]],
  [
    'control_id unparsable string',
    SET,
    { bus_info: EHD, control_id: 'abc', value: 1 },
    [{ type: 'int_parsing', loc: ['body', 'control_id'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'abc' }],
  ],
  [
    'control_id fractional',
    SET,
    { bus_info: EHD, control_id: 1.5, value: 1 },
    [{ type: 'int_from_float', loc: ['body', 'control_id'], msg: 'Input should be a valid integer, got a number with a fractional part', input: 1.5 }],
  ],
  // Python's json reads 1e+30 as a float, which pydantic refuses beyond a 64-bit integer (not an id: not a 404).
  [
    'control_id too large for an integer',
    SET,
    '{"bus_info": "x", "control_id": 1e+30, "value": 1}',
    [{ type: 'int_parsing_size', loc: ['body', 'control_id'], msg: 'Unable to parse input string as an integer, exceeded maximum size', input: 1e30 }],
  ],
  ['control_id list', SET, { bus_info: EHD, control_id: [1], value: 1 }, [{ type: 'int_type', loc: ['body', 'control_id'], msg: 'Input should be a valid integer', input: [1] }]],
  ['control_id null', SET, { bus_info: EHD, control_id: null, value: 1 }, [{ type: 'int_type', loc: ['body', 'control_id'], msg: 'Input should be a valid integer', input: null }]],
  [
    'control_id fractional string',
    SET,
    { bus_info: EHD, control_id: '1.5', value: 1 },
    [{ type: 'int_parsing', loc: ['body', 'control_id'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: '1.5' }],
  ],
  // Python's json reads NaN; FastAPI then fails to write it back (a 500). We answer with input null.
  ['control_id NaN', SET, '{"bus_info": "x", "control_id": NaN, "value": 1}', [{ type: 'finite_number', loc: ['body', 'control_id'], msg: 'Input should be a finite number', input: null }]],
  [
    'value unparsable',
    SET,
    { bus_info: EHD, control_id: 1, value: 'high' },
    [{ type: 'float_parsing', loc: ['body', 'value'], msg: 'Input should be a valid number, unable to parse string as a number', input: 'high' }],
  ],
  ['value object', SET, { bus_info: EHD, control_id: 1, value: { v: 1 } }, [{ type: 'float_type', loc: ['body', 'value'], msg: 'Input should be a valid number', input: { v: 1 } }]],
  [
    'several errors in field order',
    SET,
    { control_id: 'x', value: [] },
    [
      missing(['body', 'bus_info'], { control_id: 'x', value: [] }),
      { type: 'int_parsing', loc: ['body', 'control_id'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'x' },
      { type: 'float_type', loc: ['body', 'value'], msg: 'Input should be a valid number', input: [] },
    ],
  ],
  [
    'follower missing field',
    FOLLOW,
    { leader_bus_info: 'a' },
    [missing(['body', 'follower_bus_info'], { leader_bus_info: 'a' })],
  ],
  [
    'encode_type not an enum member',
    CONF,
    conf({ encode_type: 'VP8' }),
    [{ type: 'enum', loc: ['body', 'encode_type'], msg: `Input should be ${ENCODE_EXPECTED}`, input: 'VP8', ctx: { expected: ENCODE_EXPECTED } }],
  ],
  [
    'stream_type lower case',
    CONF,
    conf({ stream_type: 'udp' }),
    [{ type: 'enum', loc: ['body', 'stream_type'], msg: "Input should be 'UDP' or 'RECORDING'", input: 'udp', ctx: { expected: "'UDP' or 'RECORDING'" } }],
  ],
  [
    'enabled not a boolean',
    CONF,
    conf({ enabled: 'maybe' }),
    [{ type: 'bool_parsing', loc: ['body', 'enabled'], msg: 'Input should be a valid boolean, unable to interpret input', input: 'maybe' }],
  ],
  ['enabled 2', CONF, conf({ enabled: 2 }), [{ type: 'bool_parsing', loc: ['body', 'enabled'], msg: 'Input should be a valid boolean, unable to interpret input', input: 2 }]],
  ['enabled list', CONF, conf({ enabled: [] }), [{ type: 'bool_type', loc: ['body', 'enabled'], msg: 'Input should be a valid boolean', input: [] }]],
  [
    'nested port not a number',
    CONF,
    conf({ endpoints: [{ host: 'h', port: 5600 }, { host: 'h', port: 'p' }] }),
    [{ type: 'int_parsing', loc: ['body', 'endpoints', 1, 'port'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'p' }],
  ],
  [
    'nested port out of range',
    CONF,
    conf({ endpoints: [{ host: 'h', port: 70000 }] }),
    [{ type: 'less_than_equal', loc: ['body', 'endpoints', 0, 'port'], msg: 'Input should be less than or equal to 65535', input: 70000, ctx: { le: 65535 } }],
  ],
  [
    'nested port zero',
    CONF,
    conf({ endpoints: [{ host: 'h', port: 0 }] }),
    [{ type: 'greater_than_equal', loc: ['body', 'endpoints', 0, 'port'], msg: 'Input should be greater than or equal to 1', input: 0, ctx: { ge: 1 } }],
  ],
  ['nested host missing', CONF, conf({ endpoints: [{ port: 5600 }] }), [missing(['body', 'endpoints', 0, 'host'], { port: 5600 })]],
  [
    'endpoints not a list',
    CONF,
    conf({ endpoints: { host: 'h', port: 1 } }),
    [{ type: 'list_type', loc: ['body', 'endpoints'], msg: 'Input should be a valid list', input: { host: 'h', port: 1 } }],
  ],
  [
    'endpoint not an object',
    CONF,
    conf({ endpoints: ['h:1'] }),
    [{ type: 'model_attributes_type', loc: ['body', 'endpoints', 0], msg: 'Input should be a valid dictionary or object to extract fields from', input: 'h:1' }],
  ],
  [
    'deep interval field',
    CONF,
    conf({ stream_format: fmt({ interval: { numerator: 1 } }) }),
    [missing(['body', 'stream_format', 'interval', 'denominator'], { numerator: 1 })],
  ],
  [
    'interval zero',
    CONF,
    conf({ stream_format: fmt({ interval: { numerator: 0, denominator: 30 } }) }),
    [{ type: 'greater_than_equal', loc: ['body', 'stream_format', 'interval', 'numerator'], msg: 'Input should be greater than or equal to 1', input: 0, ctx: { ge: 1 } }],
  ],
  [
    'empty host',
    CONF,
    conf({ endpoints: [{ host: '', port: 1 }] }),
    [{ type: 'string_too_short', loc: ['body', 'endpoints', 0, 'host'], msg: 'String should have at least 1 character', input: '', ctx: { min_length: 1 } }],
  ],
  [
    'notify event unknown',
    NOTIFY,
    { bus_info: EHD, event: 'REBOOT' },
    [
      {
        type: 'enum',
        loc: ['body', 'event'],
        msg: "Input should be 'DEVICE_MANAGED', 'DEVICE_UNMANAGED' or 'STREAM_START'",
        input: 'REBOOT',
        ctx: { expected: "'DEVICE_MANAGED', 'DEVICE_UNMANAGED' or 'STREAM_START'" },
      },
    ],
  ],
  ['restart without bus_info', '/api/devices/restart_stream', { bus: EHD }, [missing(['body', 'bus_info'], { bus: EHD })]],
  [
    'preferences port as text',
    PREFS,
    { default_stream: { host: 'h', port: 'five' } },
    [{ type: 'int_parsing', loc: ['body', 'default_stream', 'port'], msg: 'Input should be a valid integer, unable to parse string as an integer', input: 'five' }],
  ],
  [
    'preferences offset as text',
    PREFS,
    { frequency_offset: 'a lot' },
    [{ type: 'float_parsing', loc: ['body', 'frequency_offset'], msg: 'Input should be a valid number, unable to parse string as a number', input: 'a lot' }],
  ],
  [
    'preferences suggest_host',
    PREFS,
    { suggest_host: 'sometimes' },
    [{ type: 'bool_parsing', loc: ['body', 'suggest_host'], msg: 'Input should be a valid boolean, unable to interpret input', input: 'sometimes' }],
  ],
  [
    'preferences default_stream not an object',
    PREFS,
    { default_stream: 'h:1' },
    [{ type: 'model_attributes_type', loc: ['body', 'default_stream'], msg: 'Input should be a valid dictionary or object to extract fields from', input: 'h:1' }],
  ],
  [
    'nickname too long',
    '/api/devices/set_nickname',
    { bus_info: EHD, nickname: 'x'.repeat(65) },
    [{ type: 'string_too_long', loc: ['body', 'nickname'], msg: 'String should have at most 64 characters', input: 'x'.repeat(65), ctx: { max_length: 64 } }],
  ],
]

describe('422 bodies match FastAPI + pydantic v2', () => {
  test('the table has at least 40 cases', () => {
    expect(CASES.length).toBeGreaterThanOrEqual(40)
  })
  for (const [name, path, body, detail] of CASES) {
    test(name, async () => {
      const raw = typeof body === 'string' ? body : JSON.stringify(body)
      const res = await fetch(s.url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw })
      expect(res.status).toBe(422)
      expect(await res.json()).toEqual({ detail })
    })
  }

  test('lax coercion as pydantic does it: numeric strings, bools and "yes" are accepted', async () => {
    const r = await s.call('POST', SET, { bus_info: EHD, control_id: '9963776', value: ' 12 ' })
    expect(r.status).toBe(200)
    expect(r.body).toEqual({ success: true, value: 12 })
    const c = await s.call('POST', CONF, conf({ enabled: 'no', endpoints: [{ host: 'h', port: '5600' }] }))
    expect(c.status).toBe(200)
  })

  test('a non-JSON content type is read as text, as FastAPI does', async () => {
    const res = await fetch(s.url + SET, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{"bus_info": "x"}' })
    expect(res.status).toBe(422)
    expect(await res.json()).toEqual({
      detail: [{ type: 'model_attributes_type', loc: ['body'], msg: 'Input should be a valid dictionary or object to extract fields from', input: '{"bus_info": "x"}' }],
    })
  })
})

describe("the JSON parser fails exactly where and how Python's json.loads does", () => {
  const MALFORMED = ['', '  ', '{', '[', '[1,]', '{"a":1,}', '{"a" 1}', '{"a":1 "b":2}', '"abc', '"a\\qb"', '"\\u12"', '[1 2]', '01', '-', '1.', 'tru', '{"a": [1, {"b": }]}', '"é\u{1F600}', '{"é": x}', 'nul', '[] x', '{"a":"\x01"}']
  test('positions and messages', () => {
    const script = `import json,sys\nfor s in json.loads(sys.stdin.read()):\n  try:\n    json.loads(s); print("ok")\n  except json.JSONDecodeError as e:\n    print(json.dumps([e.msg, e.pos], separators=(",", ":")))`
    const py = Bun.spawnSync(['python3', '-c', script], { stdin: Buffer.from(JSON.stringify(MALFORMED)) })
    expect(py.exitCode).toBe(0)
    const expected = py.stdout.toString().trim().split('\n')
    const ours = MALFORMED.map((text) => {
      try {
        parsePythonJson(text)
        return 'ok'
      } catch (e) {
        if (!(e instanceof PyJsonError)) throw e
        return JSON.stringify([e.pyMessage, e.pos])
      }
    })
    expect(ours).toEqual(expected)
  })
})

test('absurd nesting is a 422, not a stack overflow', async () => {
  const res = await fetch(s.url + SET, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '['.repeat(100_000) })
  expect(res.status).toBe(422)
  expect(((await res.json()) as any).detail[0]).toEqual(json('json_invalid', 512, 'Nested deeper than 512 levels'))
})
