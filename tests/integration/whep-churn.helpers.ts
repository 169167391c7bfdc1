// Viewer churn (issue 19), `rounds` rounds (tests/integration/whep-churn.test.ts: a few in every run;
// tests/soak/whep-churn.test.ts: 20, `npm run soak`): Chromium opens and closes WebRTC sessions of two
// H.264 cameras (one H264, one SOFTWARE_H264), each round one session per camera ended with DELETE and
// one whose RTCPeerConnection is just closed (left to the idle reaper). The service never exits, every
// session decodes, and once the reaper has ended the last one, the service's RSS, open fds, threads and
// child processes are back within 5 % of where they were after five warm-up rounds. RSS comes back
// because the service runs one full collection once readers stop leaving (media/memory.ts; without it RSS
// stayed 13–24 % up after 20 rounds, all of it garbage): both footprints are taken after that collection.
import { afterAll, beforeAll, expect, test } from 'bun:test'
import { readdirSync, readFileSync } from 'node:fs'
import type { Browser } from 'puppeteer-core'
import { until } from '../helpers'
import { launchBrowser, openPage, openSession, watch } from './browser'
import { freePort, requireGStreamer } from './gstreamer.helpers'
import { startService, type Service } from './service.helpers'

const IDLE_TIMEOUT_S = 3
const WARM_UP = 5
let service: Service
let browser: Browser

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
/** media/memory.ts's collections, from /metrics: how many ran, and whether one waits for quiet. */
async function collections(): Promise<{ ran: number; pending: boolean }> {
  const text = await (await fetch(service.url + '/metrics')).text()
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)`, 'm').exec(text)?.[1] ?? NaN)
  return { ran: value('periscope_memory_collections_total'), pending: value('periscope_memory_collection_pending') === 1 }
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

/** The churn test of `rounds` rounds after the warm-up, with its service and browser. */
export function whepChurn(rounds: number, timeoutMs: number): void {
  const ROUNDS = rounds
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
    // Every session ended (DELETE, or the idle reaper), then the collection that follows the last one
    // (`since`: how many had run before the rounds).
    const settled = async (since: number) => {
      await until('every session ended (DELETE, or the idle reaper)', sessions, (n) => n === 0, 60_000)
      await until('the collection once viewers stopped leaving', collections, (c) => c.ran > since && !c.pending, 30_000)
    }

    // Warm-up: the first sessions load werift's code and compile it.
    let since = (await collections()).ran
    for (let n = -WARM_UP; n < 0; n++) await round(n)
    await settled(since)
    const before = footprint(service.proc.pid)
    since = (await collections()).ran
    for (let n = 1; n <= ROUNDS; n++) {
      await round(n)
      expect(service.proc.exitCode).toBeNull()
      if (process.env.WHEP_CHURN_TRACE) console.log(`round ${n}: ${JSON.stringify(footprint(service.proc.pid))} heap ${/^nodejs_heap_size_used_bytes (\S+)/m.exec(await (await fetch(service.url + '/metrics')).text())?.[1]}`)
    }
    await settled(since)
    const after = await until('the footprint back within 5 %', async () => footprint(service.proc.pid), (f) => notAbove(f.fds, before.fds) && notAbove(f.threads, before.threads) && f.children === before.children && notAbove(f.rssKb, before.rssKb), 60_000).catch(() => footprint(service.proc.pid))
    console.log(`whep churn: before ${JSON.stringify(before)}, after ${JSON.stringify(after)}`)
    expect(service.proc.exitCode).toBeNull()
    expect({ fds: notAbove(after.fds, before.fds), threads: notAbove(after.threads, before.threads), children: after.children, rss: notAbove(after.rssKb, before.rssKb) }).toEqual({ fds: true, threads: true, children: before.children, rss: true })
    const health = (await service.call('GET', '/api/health')).body.plugins.whep
    console.log(`whep churn: sessions ended ${JSON.stringify(health.ended)}`)
    expect(health.ended.deleted).toBeGreaterThanOrEqual(2 * (ROUNDS + WARM_UP))
    await page.close()
  }, timeoutMs)
}
