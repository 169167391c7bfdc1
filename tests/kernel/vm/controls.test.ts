// Inside the VM: controls set through the backend (S_EXT_CTRLS in a worker) are read back by v4l2-ctl -C,
// and the driver's refusals become the right HTTP errors.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { fromDeviceError, HttpError, RequestValidationError } from '../../../core/errors'
import { DeviceError, type ControlValue } from '../../../core/types'
import { V4l2Backend } from '../../../drivers/v4l2/backend'
import { nodeNames } from '../../../drivers/v4l2/sysfs'
import { v4l2ctl } from './v4l2ctl'

const BUS = 'platform:vivid-000'
const NODE = '/dev/video0'
const backend = new V4l2Backend()

beforeAll(async () => {
  if (nodeNames().length === 0) throw new Error('no V4L2 nodes: this test runs inside the kernel-tier VM with vivid loaded')
  await backend.list()
})
afterAll(() => backend.stop())

/** `v4l2-ctl -C name` → the value text ("brightness: 77" → "77", strings unquoted, menu names dropped). */
const theirValue = (name: string) => v4l2ctl(['-d', NODE, '-C', name]).trim().replace(/^[^:]+: /, '').replace(/^'(.*)'$/, '$1').replace(/ \(.*\)$/, '')

const CASES: [string, number, ControlValue, ControlValue, string][] = [
  // name, id, value sent, value read back, v4l2-ctl's text
  ['brightness', 0x00980900, 77, 77, '77'],
  ['brightness', 0x00980900, 999, 255, '255'], // the driver clamps integers to the range
  ['boolean', 0x0098f901, 0, 0, '0'], // a boolean is a number (0/1) on every backend
  ['boolean', 0x0098f901, 1, 1, '1'],
  ['integer_64_bits', 0x0098f903, 1234567890123, 1234567890123, '1234567890123'],
  ['integer_64_bits', 0x0098f903, -42, -42, '-42'],
  ['menu', 0x0098f904, 4, 4, '4'],
  ['string', 0x0098f905, 'abc', 'abc', 'abc'],
  ['bitmask', 0x0098f906, 0x80000010, 0x80000010, String(0x80000010 | 0)],
  ['integer_menu', 0x0098f907, 6, 6, '6'],
  ['integer_32_bits', 0x0098f902, -2147483648, -2147483648, '-2147483648'],
]

for (const [name, id, sent, back, text] of CASES) {
  test(`${name} = ${JSON.stringify(sent)} is set, read back as ${JSON.stringify(back)}, and v4l2-ctl agrees`, async () => {
    expect(await backend.setControl(BUS, id, sent)).toEqual(back)
    expect(theirValue(name)).toBe(text)
    const listed = (await backend.list()).find((d) => d.bus_info === BUS)!.controls.find((c) => c.control_id === id)!
    expect(listed.value).toEqual(back)
  })
}

test('a button is pressed (write-only: no read-back)', async () => {
  expect(await backend.setControl(BUS, 0x0098f900, 1)).toBe(1)
})

async function refusal(bus: string, id: number, value: ControlValue): Promise<{ e: DeviceError; http: Error }> {
  try {
    await backend.setControl(bus, id, value)
  } catch (e) {
    expect(e).toBeInstanceOf(DeviceError)
    return { e: e as DeviceError, http: fromDeviceError(e as DeviceError, 'set_uvc_control') }
  }
  throw new Error(`setting ${id} = ${value} on ${bus} was accepted`)
}

const status = (e: Error) => (e instanceof RequestValidationError ? 422 : (e as HttpError).status)

test('a menu hole is refused: EINVAL → 422', async () => {
  const { e, http } = await refusal(BUS, 0x0098f904, 2)
  expect(e.code).toBe('EINVAL')
  expect(status(http)).toBe(422)
})

test('a menu index past the end is refused: ERANGE → 422', async () => {
  const { e, http } = await refusal(BUS, 0x0098f904, 9)
  expect(['ERANGE', 'EINVAL']).toContain(e.code)
  expect(status(http)).toBe(422)
})

test('a string longer than the maximum is refused → 422', async () => {
  const { e, http } = await refusal(BUS, 0x0098f905, 'abcdefgh')
  expect(['ERANGE', 'EINVAL']).toContain(e.code)
  expect(status(http)).toBe(422)
})

test('a 32-bit control given a value beyond 32 bits → 422 (no silent wrap-around)', async () => {
  const { e, http } = await refusal(BUS, 0x0098f902, 2 ** 40)
  expect(e.code).toBe('ERANGE')
  expect(status(http)).toBe(422)
})

test('a read-only control: EACCES → 409 saying read-only', async () => {
  const { e, http } = await refusal(BUS, 0x0098f90c, 3)
  expect(e.code).toBe('EACCES')
  expect(e.message).toContain('read-only')
  expect(status(http)).toBe(409)
})

test('a control the device does not have → 404; an unknown device → 404', async () => {
  expect(status((await refusal(BUS, 0x00981234, 1)).http)).toBe(404)
  expect(status((await refusal('usb-nowhere', 0x00980900, 1)).http)).toBe(404)
})

test('a string value for a number control (and the reverse) → 422', async () => {
  expect(status((await refusal(BUS, 0x00980900, 'bright')).http)).toBe(422)
  expect(status((await refusal(BUS, 0x0098f905, 5)).http)).toBe(422)
})

test('activeFormat reads G_FMT/G_PARM as v4l2-ctl does', async () => {
  const f = (await backend.activeFormat(BUS))!
  const fmt = v4l2ctl(['-d', NODE, '--get-fmt-video'])
  const parm = v4l2ctl(['-d', NODE, '--get-parm'])
  expect(fmt).toContain(`Width/Height      : ${f.width}/${f.height}`)
  expect(fmt).toContain(`'YUYV'`)
  expect(f.encode_type).toBe('NONE')
  expect(f.device_path).toBe(NODE)
  expect(parm).toContain(`Frames per second: ${(f.interval.denominator / f.interval.numerator).toFixed(3)} (${f.interval.denominator}/${f.interval.numerator})`)
})

test('UVCIOC_CTRL_QUERY reaches the driver: vivid is not UVC (ENOTTY → 502 naming the errno)', async () => {
  const e = await backend.xuQuery(NODE, { unit: 4, selector: 2, query: 0x81, data: new Uint8Array(11) }).catch((x) => x)
  expect(e).toBeInstanceOf(DeviceError)
  expect((e as DeviceError).code).toBe('ENOTTY')
  const http = fromDeviceError(e, 'exploreHD bitrate') as HttpError
  expect(http.status).toBe(502)
  expect(http.detail).toContain('ENOTTY')
})

test("controls(bus_info) re-reads one device's values and flags: auto gain off makes gain active", async () => {
  const gain = async () => (await backend.controls(BUS)).find((c) => c.control_id === 0x00980913)!
  expect((await gain()).flags.inactive).toBe(true)
  await backend.setControl(BUS, 0x00980912, 0) // gain_automatic
  expect((await gain()).flags.inactive).toBe(false)
  expect(v4l2ctl(['-d', NODE, '--list-ctrls'])).toMatch(/ gain 0x00980913 \(int\)\s+: min=0 max=255 step=1 default=100 value=\d+$/m)
  await backend.setControl(BUS, 0x00980912, 1)
  expect((await gain()).flags.inactive).toBe(true)
})
