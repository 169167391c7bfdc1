// The service itself, not a stand-in server: the real process (core/main.ts: the front, the cameras
// plugin, the V4L2 plugin, its worker pool) keeps answering GET /api/health, and GET /api/devices, while
// one camera's control set is blocked for 3 s in its worker thread (stall-service.ts).
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { startStallService, type StallService } from './stall-service'

let service: StallService
beforeAll(async () => {
  service = await startStallService()
})
afterAll(() => service?.stop())

// Its own timeout: the block alone is 3 s of Bun's 5 s default, which left 2 s for the rest when two
// suites side by side share the 2 cores (it took 3.0 s there).
test('GET /api/health answers, again and again, while set_uvc_control is blocked for 3 s', async () => {
  const started = performance.now()
  let settled = false
  const set = service.stall(3000).finally(() => (settled = true))
  const latencies: number[] = []
  // The condition: several health answers arrive while the blocked request is still pending.
  while (latencies.length < 5) {
    const t = performance.now()
    const health = await fetch(`${service.base}/api/health`)
    expect(health.status).toBe(200)
    expect(((await health.json()) as { plugins: Record<string, { state: string }> }).plugins.v4l2!.state).toBe('ok')
    latencies.push(performance.now() - t)
    expect(settled).toBe(false)
  }
  const devices = await fetch(`${service.base}/api/devices`)
  expect(devices.status).toBe(200) // reads do not queue behind the blocked write either
  expect(settled).toBe(false)
  const answer = await set
  expect(answer.status).toBe(200)
  expect(await answer.json()).toEqual({ success: true, value: 3000 })
  expect(performance.now() - started).toBeGreaterThanOrEqual(2900) // the block was real
  console.log(`GET /api/health during a 3 s blocked set_uvc_control: ${latencies.length} answers before it ended, the slowest ${Math.max(...latencies).toFixed(1)} ms`)
}, 15_000)
