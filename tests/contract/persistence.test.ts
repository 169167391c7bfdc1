// Settings survive a restart, a re-plug on another port, a swap of two identical cameras, and kill -9.
import { Elysia } from 'elysia'
import { describe, expect, test } from 'bun:test'
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadPlugin } from '../../core/loader'
import { definePlugin } from '../../core/plugin'
import { SettingsStore } from '../../core/store'
import { DeviceError, type CameraBackend } from '../../core/types'
import { BUN, freeTcpPort, startTestServer, tempDir } from '../helpers'
import { BRIGHTNESS, controlOf, device, EHD, FOLLOWER, LEADER, startContractServer } from './setup'

const H264_720 = { width: 1280, height: 720, interval: { numerator: 1, denominator: 25 } }

describe('persistence', () => {
  test('nickname, control, stream and follower survive a restart', async () => {
    const dataDir = tempDir()
    try {
      let s = await startContractServer({ dataDir })
      expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'Bow' })).status).toBe(200)
      expect((await s.call('POST', '/api/devices/set_uvc_control', { bus_info: EHD, control_id: BRIGHTNESS, value: 20 })).status).toBe(200)
      const conf = { bus_info: EHD, stream_type: 'RECORDING', encode_type: 'H264', stream_format: H264_720, enabled: false, endpoints: [{ host: '127.0.0.3', port: 6000 }] }
      expect((await s.call('POST', '/api/devices/configure_stream', conf)).status).toBe(200)
      expect((await s.call('POST', '/api/devices/add_follower', { leader_bus_info: LEADER, follower_bus_info: FOLLOWER })).status).toBe(200)
      await s.stop()

      s = await startContractServer({ dataDir })
      try {
        const ehd = await device(s, EHD)
        expect(ehd.nickname).toBe('Bow')
        // Restored to the (simulated) hardware, which starts at its default after a power cycle.
        expect(controlOf(ehd, BRIGHTNESS).value).toBe(20)
        expect(ehd.stream).toMatchObject({ stream_type: 'RECORDING', width: 1280, height: 720, endpoints: [{ host: '127.0.0.3', port: 6000 }] })
        expect((await device(s, LEADER)).followers).toEqual([FOLLOWER])
        expect((await device(s, FOLLOWER)).is_managed).toBe(true)
      } finally {
        await s.stop()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  test('a boolean saved as true/false (before values were numbers everywhere) is restored as a number', async () => {
    // A backend as strict as V4L2's (it refuses anything but a number for a BOOLEAN), answering numbers.
    const BUS = 'usb-strict-1'
    const AUTO = 0x0098090c
    let held = 1
    const received: unknown[] = []
    const control = () => ({ control_id: AUTO, name: 'White Balance, Automatic', value: held, flags: { control_type: 'BOOLEAN' as const, min_value: 0, max_value: 1, step: 1, default_value: 1 } })
    const backend: CameraBackend = {
      name: 'strict',
      list: async () => [{ bus_info: BUS, name: 'Strict camera', vid: 1, pid: 2, manufacturer: null, serial: 'S1', device_paths: ['/dev/s0'], cameras: [], controls: [control()] }],
      controls: async () => [control()],
      setControl: async (_bus, _id, value) => {
        received.push(value)
        if (typeof value !== 'number') throw new DeviceError('EINVAL', `a number, not ${JSON.stringify(value)}`)
        return (held = value)
      },
      videoSource: () => ({ kind: 'v4l2', device: '/dev/s0' }),
      onChange: () => () => {},
    }
    const plugins = [definePlugin({ name: 'strict', setup: ({ registry }) => (registry.addCameraBackend(backend, 'strict'), new Elysia({ name: 'periscope:strict' })) }), await loadPlugin('cameras')]
    const dataDir = tempDir()
    try {
      let s = await startTestServer({ plugins, dataDir })
      expect((await s.call('POST', '/api/devices/set_uvc_control', { bus_info: BUS, control_id: AUTO, value: 0 })).status).toBe(200)
      await s.stop()
      // What an earlier version wrote for a V4L2 boolean control.
      const store = SettingsStore.open(dataDir)
      try {
        const [saved] = store.list<{ controls: Record<string, unknown> }>('devices')
        expect(saved!.value.controls[String(AUTO)]).toBe(0)
        store.set('devices', saved!.key, { ...saved!.value, controls: { [String(AUTO)]: false } })
      } finally {
        store.close()
      }
      held = 1 // powered on again at its default
      received.length = 0
      s = await startTestServer({ plugins, dataDir })
      try {
        expect(received).toEqual([0])
        expect(((await s.call('GET', '/api/devices')).body as any[])[0].controls[0].value).toBe(0)
      } finally {
        await s.stop()
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true })
    }
  })

  test('a camera re-plugged on another port keeps its settings (identity is the serial)', async () => {
    const s = await startContractServer()
    try {
      await s.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'Stern' })
      await s.call('POST', '/api/devices/set_uvc_control', { bus_info: EHD, control_id: BRIGHTNESS, value: -30 })
      expect((await s.call('POST', '/api/mock/unplug', { bus_info: EHD })).status).toBe(200)
      expect(await device(s, EHD)).toBeUndefined()
      const moved = 'usb-0000:00:14.0-9'
      expect((await s.call('POST', '/api/mock/plug', { bus_info: EHD, new_bus_info: moved })).status).toBe(200)
      await waitFor(async () => (await device(s, moved)) !== undefined)
      const d = await device(s, moved)
      expect(d.nickname).toBe('Stern')
      expect(controlOf(d, BRIGHTNESS).value).toBe(-30)
    } finally {
      await s.stop()
    }
  })

  test('restore applies an auto mode before the control it governs, whatever their ids', async () => {
    const s = await startContractServer()
    const [FOCUS_ABSOLUTE, FOCUS_AUTO] = [0x009a090a, 0x009a090c]
    try {
      const set = (control_id: number, value: number) => s.call('POST', '/api/devices/set_uvc_control', { bus_info: EHD, control_id, value })
      expect((await set(FOCUS_AUTO, 0)).status).toBe(200)
      expect((await set(FOCUS_ABSOLUTE, 120)).status).toBe(200)
      await s.call('POST', '/api/mock/unplug', { bus_info: EHD })
      await s.call('POST', '/api/mock/plug', { bus_info: EHD })
      await waitFor(async () => (await device(s, EHD)) !== undefined)
      const d = await device(s, EHD)
      expect(controlOf(d, FOCUS_AUTO).value).toBe(0)
      expect(controlOf(d, FOCUS_ABSOLUTE)).toMatchObject({ value: 120, flags: { control_type: 'INTEGER' } })
      expect(controlOf(d, FOCUS_ABSOLUTE).flags.inactive).toBeUndefined()
    } finally {
      await s.stop()
    }
  })

  test('two identical cameras swapped between ports keep their own settings', async () => {
    const s = await startContractServer({ config: { simulate: 'fleet' } })
    try {
      const [a, b] = ['usb-0000:00:14.0-1', 'usb-0000:00:14.0-2']
      await s.call('POST', '/api/devices/set_nickname', { bus_info: a, nickname: 'left' })
      await s.call('POST', '/api/devices/set_nickname', { bus_info: b, nickname: 'right' })
      const serialA = (await device(s, a)).string3
      await s.call('POST', '/api/mock/unplug', { bus_info: a })
      await s.call('POST', '/api/mock/unplug', { bus_info: b })
      await s.call('POST', '/api/mock/plug', { bus_info: a, new_bus_info: 'usb-tmp' })
      await s.call('POST', '/api/mock/plug', { bus_info: b, new_bus_info: a })
      await waitFor(async () => (await device(s, a)) !== undefined && (await device(s, 'usb-tmp')) !== undefined)
      expect((await device(s, a)).nickname).toBe('right')
      expect((await device(s, 'usb-tmp')).nickname).toBe('left')
      expect((await device(s, 'usb-tmp')).string3).toBe(serialA)
    } finally {
      await s.stop()
    }
  })

  test('kill -9 during a burst of writes: the store opens and holds the last committed state', async () => {
    const dataDir = tempDir()
    const port = freeTcpPort()
    const child = Bun.spawn([BUN, 'run', 'core/main.ts', '--port', String(port), '--host', '127.0.0.1', '--data-dir', dataDir, '--simulate', 'single', '--plugins', 'cameras,dwe', '--log-level', 'error'], {
      cwd: join(import.meta.dir, '..', '..'),
      stdout: 'ignore',
      stderr: 'inherit',
    })
    try {
      const url = `http://127.0.0.1:${port}`
      await waitFor(async () => (await fetch(`${url}/api/health`).catch(() => null))?.ok === true, 15000)
      let acknowledged = -1
      let sent = -1
      let burstEnded = false
      const burst = (async () => {
        for (let i = 0; i < 100000; i++) {
          sent = i
          const r = await fetch(`${url}/api/devices/set_nickname`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ bus_info: EHD, nickname: `n${i}` }) }).catch(() => null)
          if (!r?.ok) return
          acknowledged = i
        }
      })().finally(() => (burstEnded = true))
      // Kill once the burst is well under way (a condition, not a sleep: under emulation requests are slower).
      await waitFor(async () => acknowledged >= 20 || burstEnded, 15000)
      child.kill(9)
      await child.exited
      await burst
      expect(acknowledged).toBeGreaterThan(5)
      const store = SettingsStore.open(dataDir)
      try {
        const saved = store.list<{ nickname: string }>('devices')
        expect(saved.length).toBe(1)
        const n = Number(saved[0]!.value.nickname.slice(1))
        // Every acknowledged write is there; at most the one in flight went further.
        expect(n).toBeGreaterThanOrEqual(acknowledged)
        expect(n).toBeLessThanOrEqual(sent)
      } finally {
        store.close()
      }
    } finally {
      child.kill(9)
      rmSync(dataDir, { recursive: true, force: true })
    }
  }, 40_000)
})

describe('a damaged settings database', () => {
  for (const [what, damage] of [
    ['not a database at all', (bytes: Buffer) => bytes.fill(0x5a, 0, 100)],
    ['a damaged page', (bytes: Buffer) => bytes.fill(0x5a, 4096, 8192)],
  ] as const) {
    test(`${what}: the service starts from defaults, keeps the file aside and says so`, async () => {
      const dataDir = tempDir()
      try {
        const first = await startContractServer({ dataDir })
        expect((await first.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'bow' })).status).toBe(200)
        await first.stop()
        const file = join(dataDir, 'periscope.sqlite')
        const bytes = readFileSync(file)
        damage(bytes)
        writeFileSync(file, bytes)

        const s = await startContractServer({ dataDir })
        try {
          const health = (await s.call('GET', '/api/health')).body
          expect(health.status).toBe('degraded')
          expect(health.settings.detail).toContain('damaged')
          const kept = readdirSync(dataDir).filter((f) => f.startsWith('periscope.sqlite.damaged-'))
          expect(kept).toHaveLength(1)
          expect(readFileSync(join(dataDir, kept[0]!)).equals(bytes)).toBe(true) // kept byte for byte
          expect(health.settings.detail).toContain(kept[0]!)
          expect(s.logs).toContainEqual(expect.objectContaining({ level: 'error', msg: 'settings database set aside' }))
          expect((await device(s, EHD)).nickname).not.toBe('bow') // defaults
          expect((await s.call('POST', '/api/devices/set_nickname', { bus_info: EHD, nickname: 'stern' })).status).toBe(200)
        } finally {
          await s.stop()
        }
        const again = await startContractServer({ dataDir })
        try {
          expect((await device(again, EHD)).nickname).toBe('stern') // the new database keeps what was saved
          expect((await again.call('GET', '/api/health')).body.settings).toEqual({ state: 'ok' })
        } finally {
          await again.stop()
        }
      } finally {
        rmSync(dataDir, { recursive: true, force: true })
      }
    })
  }
})

async function waitFor(predicate: () => Promise<boolean>, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await predicate()) return
    await Bun.sleep(20)
  }
  throw new Error(`condition not met within ${timeoutMs} ms`)
}
