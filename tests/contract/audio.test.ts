// Sound sources and their API, with no hardware: ALSA's /proc and /sys read from a fixture tree (a USB
// sound card on a camera's port, a loopback card), the simulated sources the mock plugin registers, and
// the choices (source, rate, gain, mute) that are checked, saved and survive a restart.
import { describe, expect, test } from 'bun:test'
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { AlsaBackend } from '../../drivers/alsa/backend'
import { listCaptures, usbCapture, usbPort } from '../../drivers/alsa/cards'
import { tempDir } from '../helpers'
import { CONTRACT_PLUGINS, EHD, LEADER, WEBCAM, startContractServer } from './setup'

const PLUGINS = [...CONTRACT_PLUGINS, 'audio']

const USB_STREAM0 = `C-Media Electronics Inc. USB Audio Device at usb-0000:00:14.0-2, full speed : USB Audio

Playback:
  Status: Stop
  Interface 1
    Altset 1
    Format: S16_LE
    Channels: 2
    Endpoint: 0x01 (1 OUT) (ADAPTIVE)
    Rates: 44100, 48000

Capture:
  Status: Stop
  Interface 2
    Altset 1
    Format: S16_LE
    Channels: 1
    Endpoint: 0x82 (2 IN) (ASYNC)
    Rates: 16000, 48000
`

/** /proc/asound and /sys/class/sound as the kernel writes them: a loopback card 0 and a USB card 1 on port 2. */
function alsaTree(withUsb = true) {
  const root = tempDir('periscope-alsa-')
  const proc = join(root, 'proc')
  const sys = join(root, 'sys', 'class', 'sound')
  mkdirSync(join(proc, 'card0'), { recursive: true })
  mkdirSync(sys, { recursive: true })
  writeFileSync(join(proc, 'card0', 'id'), 'Loopback\n')
  let cards = ' 0 [Loopback       ]: Loopback - Loopback\n                      Loopback 1\n'
  let pcm = '00-00: Loopback PCM : Loopback PCM : playback 8 : capture 8\n00-01: Loopback PCM : Loopback PCM : playback 8 : capture 8\n'
  if (withUsb) {
    mkdirSync(join(proc, 'card1'), { recursive: true })
    writeFileSync(join(proc, 'card1', 'id'), 'Device\n')
    writeFileSync(join(proc, 'card1', 'stream0'), USB_STREAM0)
    cards += ' 1 [Device         ]: USB-Audio - USB Audio Device\n                      C-Media Electronics Inc. USB Audio Device at usb-0000:00:14.0-2, full speed\n'
    pcm += '01-00: USB Audio : USB Audio : playback 1 : capture 1\n'
    const iface = join(root, 'sys', 'devices', 'pci0000:00', '0000:00:14.0', 'usb1', '1-2', '1-2:1.0')
    mkdirSync(join(iface, 'sound', 'card1'), { recursive: true })
    mkdirSync(join(sys, 'card1'), { recursive: true })
    symlinkSync(iface, join(sys, 'card1', 'device'))
  }
  writeFileSync(join(proc, 'cards'), cards)
  writeFileSync(join(proc, 'pcm'), pcm)
  return { root, roots: { proc, sys } }
}

describe('ALSA capture devices', () => {
  test('cards, capture PCMs, USB port in bus_info form, channels and rates', () => {
    const { root, roots } = alsaTree()
    try {
      const found = listCaptures(roots)
      expect(found.map((s) => s.id)).toEqual(['alsa:Loopback,0', 'alsa:Loopback,1', 'alsa:Device,0'])
      expect(found[2]).toMatchObject({ name: 'USB Audio Device', kind: 'alsa', usb_port: 'usb-0000:00:14.0-2', channels: 1, rates: [16000, 48000], card: 1, device: 0 })
      // A card that is not USB says nothing of its rates until it is opened.
      expect(found[0]).toMatchObject({ name: 'Loopback', usb_port: null, channels: 2, rates: null })
      expect(new AlsaBackend({ roots }).sourceTokens('alsa:Device,0', 48000, 1)).toEqual(['alsasrc', 'name=asrc', 'device=hw:CARD=Device,DEV=0', '!', 'audio/x-raw,rate=48000,channels=1'])
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })

  test('a USB port behind a hub, a continuous rate range, a card without capture', () => {
    expect(usbPort('/sys/devices/pci0000:00/0000:00:14.0/usb3/3-1/3-1.4/3-1.4:1.0')).toBe('usb-0000:00:14.0-1.4')
    expect(usbPort('/sys/devices/platform/soc/fe00b840.mailbox/bcm2835_audio')).toBeNull()
    expect(usbCapture('Capture:\n  Channels: 2\n  Rates: 8000 - 48000 (continuous)\n')).toEqual({ channels: 2, rates: [8000, 11025, 16000, 22050, 32000, 44100, 48000] })
    expect(usbCapture('Playback:\n  Channels: 2\n  Rates: 48000\n')).toBeNull()
  })

  test('a sound card plugged in or out is heard of', () => {
    const { root, roots } = alsaTree(false)
    try {
      const backend = new AlsaBackend({ roots })
      let changes = 0
      backend.onChange(() => changes++)
      expect(backend.list().length).toBe(2)
      writeFileSync(join(roots.proc, 'pcm'), '00-00: Loopback PCM : Loopback PCM : playback 8 : capture 8\n')
      backend.rescan()
      expect(changes).toBe(1)
      expect(backend.list().map((s) => s.id)).toEqual(['alsa:Loopback,0'])
      backend.rescan()
      expect(changes).toBe(1) // nothing changed: no news
      expect(backend.sourceTokens('alsa:Loopback,1', 48000, 2)).toBeNull()
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

describe('the audio API', () => {
  test('simulated sources: a camera microphone matched by its USB port, a hydrophone', async () => {
    const s = await startContractServer({ plugins: PLUGINS })
    try {
      const { status, body } = await s.call('GET', '/api/audio/sources')
      expect(status).toBe(200)
      const sim = (body as any[]).filter((x) => x.kind === 'simulated')
      expect(sim).toEqual([
        { id: 'sim:mic1', name: expect.any(String), kind: 'simulated', usb_port: EHD, channels: 1, rates: [16000, 48000], camera: EHD, used_by: [], mixer: null },
        { id: 'sim:hydrophone', name: expect.any(String), kind: 'simulated', usb_port: 'usb-0000:00:14.0-9', channels: 2, rates: [44100, 48000], camera: null, used_by: [], mixer: null },
      ])
      const streams = (await s.call('GET', '/api/audio/streams')).body as any[]
      // The camera's own microphone by default; the others have none.
      expect(streams.find((a) => a.bus_info === EHD)).toMatchObject({ source: 'sim:mic1', state: 'off', rate: 48000, channels: 1, gain_db: 0, muted: false, level: null })
      expect(streams.find((a) => a.bus_info === LEADER)).toMatchObject({ source: null, state: 'off' })
      const paths = ((await s.call('GET', '/openapi.json')).body as any).paths
      for (const path of ['/api/audio/sources', '/api/audio/streams', '/api/audio/attach', '/api/audio/set', '/api/audio/mixer', '/api/audio/sound_only', '/api/audio/sound_only/configure']) expect(paths[path]).toBeDefined()
    } finally {
      await s.stop()
    }
  })

  test('bad choices are refused with a sentence', async () => {
    const s = await startContractServer({ plugins: PLUGINS })
    try {
      let r = await s.call('POST', '/api/audio/attach', { bus_info: 'usb-nope', source: 'sim:mic1' })
      expect(r.status).toBe(404)
      r = await s.call('POST', '/api/audio/attach', { bus_info: LEADER, source: 'alsa:Nope,0' })
      expect(r.status).toBe(404)
      expect((r.body as any).detail).toContain('GET /api/audio/sources')
      r = await s.call('POST', '/api/audio/attach', { bus_info: EHD, source: 'sim:mic1', rate: 44100 })
      expect(r.status).toBe(409)
      expect((r.body as any).detail).toBe("The sound source 'sim:mic1' (Simulated camera microphone (440 Hz tone)) captures at 16000, 48000 Hz, not 44100 Hz")
      r = await s.call('POST', '/api/audio/attach', { bus_info: LEADER, source: 'sim:hydrophone' })
      expect(r.status).toBe(200)
      r = await s.call('POST', '/api/audio/attach', { bus_info: WEBCAM, source: 'sim:hydrophone' })
      expect(r.status).toBe(409)
      expect((r.body as any).detail).toContain(`in use by the stream of ${LEADER}`)
      r = await s.call('POST', '/api/audio/set', { bus_info: EHD, gain_db: 100 })
      expect(r.status).toBe(422)
      r = await s.call('POST', '/api/audio/attach', { bus_info: EHD })
      expect(r.status).toBe(422)
    } finally {
      await s.stop()
    }
  })

  test('source, rate, gain and mute are saved and survive a restart', async () => {
    const dataDir = tempDir()
    try {
      let s = await startContractServer({ plugins: PLUGINS, dataDir })
      expect((await s.call('POST', '/api/audio/attach', { bus_info: LEADER, source: 'sim:hydrophone', rate: 44100 })).body).toMatchObject({ source: 'sim:hydrophone', rate: 44100, channels: 2 })
      expect((await s.call('POST', '/api/audio/set', { bus_info: LEADER, gain_db: 6.5, muted: true })).body).toMatchObject({ gain_db: 6.5, muted: true })
      expect((await s.call('POST', '/api/audio/attach', { bus_info: EHD, source: null })).body).toMatchObject({ source: null })
      await s.stop()
      s = await startContractServer({ plugins: PLUGINS, dataDir })
      try {
        const streams = (await s.call('GET', '/api/audio/streams')).body as any[]
        expect(streams.find((a) => a.bus_info === LEADER)).toMatchObject({ source: 'sim:hydrophone', rate: 44100, gain_db: 6.5, muted: true })
        expect(streams.find((a) => a.bus_info === EHD)).toMatchObject({ source: null })
        const hydrophone = ((await s.call('GET', '/api/audio/sources')).body as any[]).find((x) => x.id === 'sim:hydrophone')
        expect(hydrophone.used_by).toEqual([LEADER])
        // Back to the camera's own microphone.
        expect((await s.call('POST', '/api/audio/attach', { bus_info: EHD, source: 'auto' })).body).toMatchObject({ source: 'sim:mic1' })
      } finally {
        await s.stop()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })
})

describe("a sound card's own capture mixer (amixer scontents, as alsa-utils 1.2.8 prints it)", () => {
  // A USB microphone: a capture volume and switch on one control.
  const USB_MIC = `Simple mixer control 'Mic',0
  Capabilities: cvolume cvolume-joined cswitch cswitch-joined
  Capture channels: Mono
  Limits: Capture 0 - 16
  Mono: Capture 12 [75%] [21.00dB] [on]
Simple mixer control 'Auto Gain Control',0
  Capabilities: pswitch pswitch-joined
  Playback channels: Mono
  Mono: Playback [off]
`
  // snd-dummy: playback volumes, and a capture switch per source (no capture volume).
  const DUMMY = `Simple mixer control 'Master',0
  Capabilities: pvolume cswitch cswitch-exclusive
  Playback channels: Front Left - Front Right
  Capture channels: Front Left - Front Right
  Limits: Playback -50 - 100
  Front Left: Playback 100 [100%] [0.00dB] Capture [on]
  Front Right: Playback 100 [100%] [0.00dB] Capture [on]
Simple mixer control 'Mic',0
  Capabilities: pvolume cswitch cswitch-exclusive
  Playback channels: Front Left - Front Right
  Capture channels: Front Left - Front Right
  Limits: Playback -50 - 100
  Front Left: Playback 100 [100%] [0.00dB] Capture [off]
  Front Right: Playback 100 [100%] [0.00dB] Capture [off]
`
  test('a USB microphone: its capture volume (steps, range, dB) and switch', async () => {
    const { captureMixerOf, parseScontents } = await import('../../drivers/alsa/mixer')
    expect(captureMixerOf(parseScontents(USB_MIC))).toEqual({ control: "'Mic',0", volume: { value: 12, min: 0, max: 16, db: 21 }, switchControl: "'Mic',0", capture: true })
  })
  test('snd-dummy: a capture switch only (Mic first), no capture volume', async () => {
    const { captureMixerOf, parseScontents } = await import('../../drivers/alsa/mixer')
    expect(captureMixerOf(parseScontents(DUMMY))).toEqual({ control: null, volume: null, switchControl: "'Mic',0", capture: false })
  })
  test('snd-aloop (no capture control): nothing', async () => {
    const { captureMixerOf, parseScontents } = await import('../../drivers/alsa/mixer')
    expect(captureMixerOf(parseScontents(''))).toEqual({ control: null, volume: null, switchControl: null, capture: null })
  })
  test('a simulated source has no mixer: listed as null, and setting one is refused with what to use instead', async () => {
    const s = await startContractServer({ plugins: PLUGINS })
    try {
      const sources = (await s.call('GET', '/api/audio/sources')).body as any[]
      expect(sources.find((x) => x.id === 'sim:hydrophone').mixer).toBeNull()
      const refused = await s.call('POST', '/api/audio/mixer', { source: 'sim:hydrophone', capture: false })
      expect(refused.status).toBe(409)
      expect((refused.body as any).detail).toContain('muted')
      expect((await s.call('POST', '/api/audio/mixer', { source: 'alsa:Nope,0', volume: 3 })).status).toBe(404)
    } finally {
      await s.stop()
    }
  })
})
