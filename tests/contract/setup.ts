// The contract tier's instance: simulated cameras with the foundation's plugins, no hardware.
import { Elysia } from 'elysia'
import { loadPlugin } from '../../core/loader'
import { definePlugin } from '../../core/plugin'
import type { Streamer } from '../../core/types'
import type { MediaHub } from '../../media/hub'
import { rtpPacket } from '../../media/rtp'
import { CID } from '../../drivers/mock/cameras'
import type { Config, LogLevel } from '../../core/config'
import { startTestServer, until, type TestServer } from '../helpers'
import { operationOf, responseSchema, schemaProblems, type OpenApiDoc } from './openapi-schema'

export const CONTRACT_PLUGINS = ['mock', 'cameras', 'preferences', 'dwe']

export const EHD = 'usb-0000:00:14.0-1' // exploreHD, serial EHD0001
export const LEADER = 'usb-0000:00:14.0-2' // stellarHD leader
export const FOLLOWER = 'usb-0000:00:14.0-3' // stellarHD follower
export const WEBCAM = 'usb-0000:00:14.0-4' // Logitech, no serial

export const BRIGHTNESS = CID.BRIGHTNESS
export const AUTO_WB = CID.AUTO_WHITE_BALANCE
export const WB_TEMPERATURE = CID.WHITE_BALANCE_TEMPERATURE
export const POWER_LINE = CID.POWER_LINE_FREQUENCY
export const EXPOSURE_AUTO = CID.EXPOSURE_AUTO
export const EXPOSURE_ABSOLUTE = CID.EXPOSURE_ABSOLUTE
export const PRIVACY = CID.PRIVACY

export async function startContractServer(options: { config?: Partial<Config>; dataDir?: string; plugins?: string[]; logLevel?: LogLevel } = {}): Promise<TestServer> {
  const plugins = await Promise.all((options.plugins ?? CONTRACT_PLUGINS).map(loadPlugin))
  const s = await startTestServer({ plugins, dataDir: options.dataDir, logLevel: options.logLevel, config: { simulate: 'default', ...options.config } })
  return checkingAnswers(s)
}

/**
 * Every JSON answer `call` gets is checked against the schema its route documents for its status in the
 * app's own /openapi.json (an `integer` must be a whole number): a mismatch fails the call, naming it.
 */
function checkingAnswers(s: TestServer): TestServer {
  let doc: Promise<OpenApiDoc> | null = null
  const call = s.call
  s.call = async (method, path, body, headers) => {
    const answer = await call(method, path, body, headers)
    if (!answer.headers.get('content-type')?.startsWith('application/json') || typeof answer.body === 'string') return answer
    doc ??= s.app.app.handle(new Request('http://127.0.0.1/openapi.json')).then((r) => r.json() as Promise<OpenApiDoc>)
    const document = await doc
    const found = operationOf(document, method, path)
    const schema = found && responseSchema(found.op, answer.status)
    const problems = schema ? schemaProblems(document, schema, answer.body) : []
    if (problems.length) throw new Error(`${method} ${path} → ${answer.status}: the answer does not match its schema in /openapi.json (${found!.template}): ${problems.slice(0, 5).join('; ')}`)
    return answer
  }
  return s
}

export async function device(s: TestServer, bus_info: string): Promise<any> {
  const { body } = await s.call('GET', '/api/devices')
  return (body as any[]).find((d) => d.bus_info === bus_info)
}

export const controlOf = (dev: any, id: number) => dev.controls.find((c: any) => c.control_id === id)

/**
 * A streamer plugin whose one camera (`bus_info`, EHD by default) runs on a real hub: the contract tier has
 * no GStreamer, and the viewers (WHEP, Cockpit's signalling) read that hub as they read a real stream's.
 */
export function standInStreamer(hub: MediaHub, bus_info = EHD) {
  const streamer = {
    name: 'stand-in',
    start: async () => {},
    stop: async () => {},
    status: () => ({ state: 'running', error: null, restarts: 0 }),
    frameDrops: () => 0,
    activeRecordings: () => [],
    live: (bus: string) => (bus === bus_info ? { hub, member: 0 } : null),
    startRecording: async () => null,
    stopRecording: async () => null,
    recording: () => ({ active: false, file: null, started: null, bytes: 0, error: null }),
    stopAll: async () => {},
  } as unknown as Streamer
  return definePlugin({
    name: 'stand-in-streamer',
    setup({ registry }) {
      registry.provide('streamer', streamer, 'stand-in-streamer')
      return new Elysia({ name: 'periscope:stand-in-streamer' })
    },
  })
}

/**
 * Feeds member 0 of a hub one-packet H.264 frames of `payload` bytes at `rate` a second (changeable), a key
 * frame (an SPS) every `keyEvery`: from a clock, so a late timer catches up and the rate over a second
 * stays the one asked for. stop() ends it.
 */
export class Feeder {
  private seq = 0
  private sent = 0
  private since = performance.now()
  private base = 0
  private timer: ReturnType<typeof setInterval>
  firstAt = -1

  constructor(
    private readonly hub: MediaHub,
    private rate: number,
    private readonly keyEvery = 10,
    private readonly payload = 1000,
  ) {
    this.timer = setInterval(() => this.feed(), 5)
  }

  setRate(rate: number): void {
    this.feed()
    this.base = this.sent
    this.since = performance.now()
    this.rate = rate
  }

  /** The next packet's sequence number jumps by `n`: n packets lost on the way. */
  lose(n: number): void {
    this.seq += n
  }

  private feed(): void {
    const due = this.base + Math.floor(((performance.now() - this.since) * this.rate) / 1000)
    while (this.sent < due) {
      const payload = new Uint8Array(this.payload)
      payload[0] = this.sent % this.keyEvery === 0 ? 0x67 : 0x41 // SPS (a key frame starts) or a non-IDR slice
      this.hub.receive(0, rtpPacket(96, this.seq++ & 0xffff, Math.round((this.sent * 90_000) / this.hub.fps), 0x1234, payload, true))
      if (this.firstAt < 0) this.firstAt = performance.now()
      this.sent++
    }
  }

  stop(): void {
    clearInterval(this.timer)
  }
}

/** A signalling (WebSocket) client that keeps every message it gets and how it closed. */
export async function connect(url: string, headers: Record<string, string> = {}) {
  const ws = new WebSocket(url, { headers } as never)
  const messages: any[] = []
  let closed: { code: number; reason: string } | null = null
  ws.onmessage = (e) => messages.push(JSON.parse(String(e.data)))
  ws.onclose = (e) => (closed = { code: e.code, reason: e.reason })
  await new Promise<void>((resolve, reject) => {
    ws.onopen = () => resolve()
    ws.onerror = () => reject(new Error(`could not connect to ${url}`))
  })
  return {
    ws,
    messages,
    closed: () => closed,
    send: (m: unknown) => ws.send(typeof m === 'string' ? m : JSON.stringify(m)),
    /** Waits for the nth message (1-based) and returns it. */
    nth: (n: number) => until(`message ${n}`, async () => messages.length, (l) => l >= n, 15_000).then(() => messages[n - 1]),
  }
}

/** A `question` of Cockpit's signalling protocol (mavlink-camera-manager's). */
export const question = (type: string, content?: unknown) => ({ type: 'question', content: content === undefined ? { type } : { type, content } })
