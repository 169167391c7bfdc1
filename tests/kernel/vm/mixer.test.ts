// Inside the VM: a sound card's own capture mixer, through the real ALSA path. snd-dummy is loaded (its
// mixer has a capture switch per input and no capture volume): GET /api/audio/sources shows the switch,
// POST /api/audio/mixer turns it (amixer, alsa-utils, reads it back independently), a capture volume the
// card lacks is refused with a sentence, and the saved switch is set again when the service starts.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { VmService } from './service.helpers'

const SOURCE = 'alsa:Dummy,0'
const service = new VmService(18085, 'audio')
const until = <T>(what: string, f: () => Promise<T | null | undefined | false>, timeoutMs: number) => service.until(what, f, timeoutMs, 250)
const get = async (path: string) => (await fetch(`${service.base}${path}`)).json() as Promise<any>
const source = async () => ((await get('/api/audio/sources')) as any[]).find((s) => s.id === SOURCE)
let card = -1

/** The card's 'Mic' capture switch as amixer itself reads it. */
function micCapture(): 'on' | 'off' {
  const out = spawnSync('amixer', ['-c', String(card), 'sget', 'Mic'], { encoding: 'utf8' })
  if (out.status !== 0) throw new Error(`amixer sget Mic: ${out.stderr}`)
  const found = /Capture \[(on|off)\]/.exec(out.stdout)?.[1]
  if (!found) throw new Error(`no capture switch in: ${out.stdout}`)
  return found as 'on' | 'off'
}

beforeAll(async () => {
  if (!existsSync('/sys/bus/platform/drivers/vivid/vivid.0')) throw new Error('vivid is not loaded: this test runs inside the kernel-tier VM')
  if (!Bun.which('amixer')) throw new Error('amixer is missing: run scripts/setup/gstreamer.sh (alsa-utils)')
  const modprobe = spawnSync('modprobe', ['snd-dummy'], { encoding: 'utf8' })
  if (modprobe.status !== 0) throw new Error(`the VM's kernel cannot load snd-dummy: ${modprobe.stderr}`)
  const cards = spawnSync('cat', ['/proc/asound/cards'], { encoding: 'utf8' }).stdout
  card = Number(/^\s*(\d+) \[Dummy\s*\]/m.exec(cards)?.[1] ?? -1)
  if (card < 0) throw new Error(`snd-dummy's card is not in /proc/asound/cards:\n${cards}`)
  await service.start()
}, 240_000)

afterAll(async () => {
  await service.stop(15_000)
})

test("snd-dummy's capture switch is listed, turned by the API (amixer agrees), and a capture volume it lacks is refused", async () => {
  const listed = await until('the dummy card listed with its mixer', async () => (await source())?.mixer, 30_000)
  expect(listed).toMatchObject({ control: null, volume: null, capture: expect.any(Boolean) })
  for (const capture of [false, true, false]) {
    const r = await service.post('/api/audio/mixer', { source: SOURCE, capture })
    expect(r.status).toBe(200)
    expect(((await r.json()) as any).capture).toBe(capture)
    expect(micCapture()).toBe(capture ? 'on' : 'off')
  }
  const refused = await service.post('/api/audio/mixer', { source: SOURCE, volume: 5 })
  expect(refused.status).toBe(409)
  expect(((await refused.json()) as any).detail).toContain('no capture volume')
}, 120_000)

test('the saved capture switch is set again when the service starts', async () => {
  await service.stop(15_000, true)
  // Someone turned it back on while the service was down.
  expect(spawnSync('amixer', ['-c', String(card), 'sset', 'Mic', 'cap']).status).toBe(0)
  expect(micCapture()).toBe('on')
  await service.start()
  await until('the saved switch (off) set again', async () => micCapture() === 'off', 30_000)
  expect((await source()).mixer.capture).toBe(false)
}, 120_000)
