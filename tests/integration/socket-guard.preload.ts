// Test-only, preloaded into the service (bun --preload) by socket-guard.test.ts: every UDP socket bound
// and every TCP socket connected or server listening in the process, ours or a library's (werift's), is
// checked one turn after it was bound (its maker has attached its listeners by then) for an 'error'
// listener, and written as one JSON line to $PERISCOPE_SOCKET_GUARD: {kind, ok, werift, stack}.
// A socket without one ends the whole process on its first error (issue 19: an ICMP port-unreachable).
import dgram from 'node:dgram'
import { appendFileSync } from 'node:fs'
import net from 'node:net'

const report = process.env.PERISCOPE_SOCKET_GUARD
if (!report) throw new Error('socket-guard.preload.ts needs PERISCOPE_SOCKET_GUARD (the report file)')
const checked = new WeakSet<object>()

function check(kind: string, socket: { listenerCount(event: string): number }): void {
  if (checked.has(socket)) return
  checked.add(socket)
  const stack = (new Error().stack ?? '').split('\n').slice(2, 9).map((l) => l.trim())
  setImmediate(() => appendFileSync(report!, JSON.stringify({ kind, ok: socket.listenerCount('error') > 0, werift: stack.some((l) => l.includes('werift')), stack }) + '\n'))
}

const wrap = <T extends object>(proto: T, method: keyof T & string, kind: string) => {
  const original = proto[method] as unknown as (...args: unknown[]) => unknown
  ;(proto as Record<string, unknown>)[method] = function (this: { listenerCount(event: string): number }, ...args: unknown[]) {
    check(kind, this)
    return original.apply(this, args)
  }
}
wrap(dgram.Socket.prototype, 'bind', 'udp')
wrap(dgram.Socket.prototype, 'send', 'udp') // a socket that sends unbound is bound by send
wrap(net.Socket.prototype, 'connect', 'tcp')
wrap(net.Server.prototype, 'listen', 'tcp server')
