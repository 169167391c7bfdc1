// Fan-out off the API's way (issue 19 item 2), measured before choosing: a stream's packets forwarded
// to N loopback readers (as the RTSP, recorder and transcoder feeders do) by three designs, each with
// and without HTTP load on the same process:
//   inline  — the old live tap: every reader called inside the socket's 'message' handler;
//   hub     — media/hub.ts without its relay: each reader's bounded queue drained in its own setImmediate turn;
//   relay   — media/hub.ts as the streamer opens it: the relay thread (media/relay.ts) receives and sends
//             to the loopback feeders, and relays to the hub on the main thread;
//   worker  — a bare worker thread forwarding UDP to UDP (the relay's lower bound).
// The sender (its own process) writes a 1 s GOP at 30 fps (a 200-packet key frame, then 10-packet
// frames, 1200-byte packets), each packet stamped with the time (timeOrigin + now(), sub-millisecond, the same clock in every process); the receiver (its own process)
// reads the stamp on arrival at each of the N ports: the forwarding delay, kernel hops included. The
// HTTP load is 32 connections looping a request whose handler takes ~2 ms of CPU (a big JSON answer),
// from a process of its own that times each request.
//   bun run bench/media-hub.bench.ts [--readers 8] [--seconds 10]
import { createSocket } from 'node:dgram'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'
import { loadavg } from 'node:os'
import { createLogger } from '../core/log'
import { LoopbackFeeder } from '../media/feeder'
import { MediaHub } from '../media/hub'
import { argOf, numberArg } from './lib'

const READERS = numberArg('readers', 8)
const SECONDS = numberArg('seconds', 10)
/** Wall-clock milliseconds with sub-millisecond precision, comparable across processes (hrtime is per process in Bun). */
const now = () => performance.timeOrigin + performance.now()

type Mode = 'inline' | 'hub' | 'relay' | 'worker'
const role = argOf('role', 'main')

/** The UDP-to-UDP forwarder of the worker design: binds, then forwards every packet to every target. */
function forwarder(targets: number[], onPort: (port: number) => void): void {
  const rx = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
  const tx = createSocket('udp4')
  tx.on('error', () => {})
  rx.on('error', () => {})
  rx.on('message', (packet) => {
    for (const port of targets) tx.send(packet, port, '127.0.0.1')
  })
  rx.bind(0, '127.0.0.1', () => onPort(rx.address().port))
}

if (!isMainThread) {
  forwarder(workerData.targets, (port) => parentPort!.postMessage(port))
} else if (role === 'service') {
  const mode = argOf('mode', 'hub') as Mode
  const targets = argOf('targets', '').split(',').map(Number)
  const log = createLogger('error')
  let port: number
  if (mode === 'worker') {
    const worker = new Worker(import.meta.path, { workerData: { targets } })
    port = await new Promise<number>((resolve) => worker.once('message', resolve))
  } else if (mode === 'hub' || mode === 'relay') {
    const hub = new MediaHub({ encoding: 'H264', width: 1920, height: 1080, fps: 30, members: ['cam'], log, relay: mode === 'relay' })
    port = (await hub.listen())[0]!
    const feeder = new LoopbackFeeder(log)
    for (const target of targets) feeder.feed(hub, 0, target, { name: 'bench' })
  } else {
    const rx = createSocket({ type: 'udp4', recvBufferSize: 4 << 20 })
    const tx = createSocket('udp4')
    const watchers = targets.map((target) => (packet: Uint8Array) => tx.send(packet, target, '127.0.0.1'))
    rx.on('message', (packet) => {
      for (const watch of watchers) watch(packet)
    })
    port = await new Promise<number>((resolve) => rx.bind(0, '127.0.0.1', () => resolve(rx.address().port)))
  }
  // An API answer that costs ~2 ms of CPU: a big JSON document, built and written each time.
  const devices = Array.from({ length: 1500 }, (_, i) => ({ bus_info: `usb-0000:00:14.0-${i}`, name: 'exploreHD', controls: Array.from({ length: 8 }, (_, c) => ({ id: c, value: i * c, name: `control ${c}` })) }))
  const server = Bun.serve({ port: 0, hostname: '127.0.0.1', fetch: () => new Response(JSON.stringify(devices), { headers: { 'content-type': 'application/json' } }) })
  console.log(JSON.stringify({ port, http: server.port }))
} else if (role === 'receiver') {
  const count = numberArg('count', READERS)
  const delays: number[] = []
  const ports: number[] = []
  for (let i = 0; i < count; i++) {
    const socket = createSocket({ type: 'udp4', recvBufferSize: 8 << 20 })
    socket.on('message', (packet) => {
      delays.push(now() - packet.readDoubleBE(packet.length - 8))
    })
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', () => resolve()))
    ports.push(socket.address().port)
  }
  console.log(JSON.stringify({ ports }))
  process.on('SIGTERM', () => {
    console.log(JSON.stringify({ delays: summary(delays), packets: delays.length }))
    process.exit(0)
  })
} else if (role === 'sender') {
  const port = numberArg('port', 0)
  const socket = createSocket('udp4')
  let seq = 0
  const packet = (key: boolean, marker: boolean) => {
    const p = Buffer.alloc(1200)
    p.set([0x80, (marker ? 0x80 : 0) | 96, (seq >> 8) & 0xff, seq & 0xff, 0, 0, 0, 0, 0, 0, 0, 7, key ? 0x67 : 0x41])
    seq = (seq + 1) & 0xffff
    p.writeDoubleBE(now(), p.length - 8)
    return p
  }
  let frame = 0
  const timer = setInterval(() => {
    const key = frame % 30 === 0
    const n = key ? 200 : 10
    for (let i = 0; i < n; i++) socket.send(packet(key && i === 0, i === n - 1), port, '127.0.0.1')
    frame++
  }, 1000 / 30)
  process.on('SIGTERM', () => {
    clearInterval(timer)
    process.exit(0)
  })
} else if (role === 'load') {
  const url = argOf('url', '')
  const until = Date.now() + numberArg('ms', 10_000)
  const times: number[] = []
  await Promise.all(Array.from({ length: 32 }, async () => {
    while (Date.now() < until) {
      const t0 = performance.now()
      await (await fetch(url)).arrayBuffer()
      times.push(performance.now() - t0)
    }
  }))
  console.log(JSON.stringify({ http: summary(times), requests: times.length }))
} else {
  console.log(`forwarding delay, sender → service → ${READERS} loopback readers (ms, send-time stamps), ${SECONDS} s per row; load average ${loadavg().map((l) => l.toFixed(2)).join(' ')}`)
  console.log('design   HTTP load   fwd p50   fwd p99   fwd max   packets (of sent×readers)   HTTP p50   HTTP p99   req/s')
  for (const mode of ['inline', 'hub', 'relay', 'worker'] as Mode[]) {
    for (const load of [false, true]) {
      const row = await run(mode, load)
      console.log(
        `${mode.padEnd(8)} ${(load ? '32 conns' : 'none').padEnd(11)} ${row.fwd.p50.toFixed(2).padStart(7)}   ${row.fwd.p99.toFixed(2).padStart(7)}   ${row.fwd.max.toFixed(1).padStart(7)}   ${String(row.packets).padStart(25)}   ${row.http ? row.http.p50.toFixed(1).padStart(8) : '       -'}   ${row.http ? row.http.p99.toFixed(1).padStart(8) : '       -'}   ${row.http ? Math.round(row.requests / SECONDS) : '-'}`,
      )
    }
  }
}

function summary(values: number[]): { p50: number; p99: number; max: number } {
  const sorted = values.slice().sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN
  return { p50: at(0.5), p99: at(0.99), max: sorted.at(-1) ?? NaN }
}

/** A child's stdout as JSON lines: the first one as soon as it comes, and the last one once the child ends. */
function jsonLines(proc: { stdout: ReadableStream<Uint8Array> }): { first: Promise<any>; last: Promise<any> } {
  let resolveFirst: (v: any) => void = () => {}
  let rejectFirst: (e: Error) => void = () => {}
  const first = new Promise<any>((resolve, reject) => ([resolveFirst, rejectFirst] = [resolve, reject]))
  const last = (async () => {
    const lines: string[] = []
    let text = ''
    const decoder = new TextDecoder()
    for await (const chunk of proc.stdout) {
      text += decoder.decode(chunk)
      let nl: number
      while ((nl = text.indexOf('\n')) >= 0) {
        lines.push(text.slice(0, nl))
        text = text.slice(nl + 1)
        if (lines.length === 1) resolveFirst(JSON.parse(lines[0]!))
      }
    }
    if (!lines.length) rejectFirst(new Error('the child wrote nothing'))
    return JSON.parse(lines.at(-1)!)
  })()
  return { first, last }
}

async function run(mode: Mode, load: boolean) {
  const self = import.meta.path
  const bun = process.execPath
  const receiver = Bun.spawn([bun, self, '--role', 'receiver', '--count', String(READERS)], { stdout: 'pipe', stderr: 'inherit' })
  const received = jsonLines(receiver)
  const { ports } = await received.first
  const service = Bun.spawn([bun, self, '--role', 'service', '--mode', mode, '--targets', ports.join(',')], { stdout: 'pipe', stderr: 'inherit' })
  const { port, http } = await jsonLines(service).first
  const sender = Bun.spawn([bun, self, '--role', 'sender', '--port', String(port)], { stdout: 'ignore', stderr: 'inherit' })
  const loader = load ? Bun.spawn([bun, self, '--role', 'load', '--url', `http://127.0.0.1:${http}/api/devices`, '--ms', String(SECONDS * 1000)], { stdout: 'pipe', stderr: 'inherit' }) : null
  const loadResult = loader ? jsonLines(loader).last : null
  await Bun.sleep(SECONDS * 1000)
  sender.kill('SIGTERM')
  await sender.exited
  await Bun.sleep(300) // the last packets arrive
  receiver.kill('SIGTERM')
  const result = await received.last
  const httpResult = loadResult ? await loadResult : null
  service.kill('SIGKILL')
  await Promise.all([receiver.exited, service.exited, loader?.exited])
  return { fwd: result.delays, packets: result.packets, http: httpResult?.http ?? null, requests: httpResult?.requests ?? 0 }
}
