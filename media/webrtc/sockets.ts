// werift opens a UDP socket for each ICE host candidate and listens for no 'error' on it. Bun turns an
// ICMP port-unreachable (a viewer's browser closed its port while we were still sending) into an
// 'error' event on that socket, and an unheard 'error' ends the process: every stream and every viewer
// dropped because one viewer left (issue 19). So every socket of werift's UdpTransport (a class werift
// exports) gets a listener before it is bound, and its errors go to the session whose gathering opened
// it (found through AsyncLocalStorage, which follows werift's awaits), which ends itself and says why.
// The hook is UdpTransport's instance init(), private in werift's typings (the public static init()
// binds before returning, too late for a bind error): tests/integration/socket-guard.test.ts and
// tests/contract/whep-sockets.test.ts fail if werift renames it or opens a socket this does not reach.
import { AsyncLocalStorage } from 'node:async_hooks'
import { UdpTransport } from 'werift'

type OnError = (err: Error) => void

const gathering = new AsyncLocalStorage<OnError>()
/**
 * Errors of a socket opened outside any session's gathering (none are known): said, never fatal. One
 * for the process (the WHEP and Cockpit plugins each give one; a socket of no session is neither's).
 */
let orphan: OnError = () => {}
let installed = false

/** Once per process: every werift UDP socket gets its 'error' listener before it is bound. */
export function guardWeriftSockets(onOrphanError: OnError): void {
  orphan = onOrphanError
  if (installed) return
  installed = true
  const proto = UdpTransport.prototype as unknown as { init: (this: UdpTransport) => Promise<void> }
  if (typeof proto.init !== 'function') throw new Error("werift's UdpTransport has no init() any more: its sockets cannot be given an 'error' listener (media/webrtc/sockets.ts)")
  const init = proto.init
  proto.init = function (this: UdpTransport) {
    const owner = gathering.getStore()
    this.socket.on('error', (err: Error) => (owner ?? orphan)(err))
    return init.call(this)
  }
}

/** Runs `gather` (werift's setLocalDescription) so that errors of the sockets it opens go to `onError`. */
export const gatherFor = <T>(onError: OnError, gather: () => Promise<T>): Promise<T> => gathering.run(onError, gather)
