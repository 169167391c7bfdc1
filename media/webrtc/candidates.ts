// Which remote ICE candidates a viewer may give us. The service sends STUN connectivity checks to
// every remote candidate it is given, so a page that could name any address would aim the vehicle's
// packets at hosts and ports of its choosing. A viewer can honestly be where its signalling came
// from: a candidate is kept only when its address is the signalling peer's own address (the HTTP
// request's or the WebSocket's), or any loopback address when that peer is loopback (a browser on the
// vehicle itself). Everything else (another interface of the browser's machine, an mDNS `.local`
// name, whose lookup would multicast, a relay) is dropped: the browser's own checks still reach our
// host candidates, and ICE learns its real address from them (a peer-reflexive candidate), so a
// viewer behind a proxy or on another interface still connects. One rule for WHEP's offers and
// Cockpit's answers and trickled candidates (session.ts applies it).

const isLoopback = (address: string) => address.startsWith('127.') || address === '::1'

/** An address as compared: lower case, no brackets, no zone, IPv4-mapped IPv6 as IPv4. */
function plain(address: string): string {
  const a = address.toLowerCase().replace(/^\[|\]$/g, '').replace(/%.*$/, '')
  return a.startsWith('::ffff:') && a.includes('.') ? a.slice(7) : a
}

/** The address of an ICE candidate ('candidate:<foundation> <component> <transport> <priority> <address> <port> typ …'); null when it has none. */
export function candidateAddress(candidate: string): string | null {
  const fields = candidate.replace(/^a=/, '').trim().split(/\s+/)
  return fields.length >= 8 && fields[0]!.startsWith('candidate:') ? fields[4]! : null
}

/** Whether a remote candidate is one the signalling peer at `peer` can honestly be (see above); an unknown peer has none. */
export function peerCandidate(candidate: string, peer: string | undefined): boolean {
  const address = candidateAddress(candidate)
  if (address === null || peer === undefined) return false
  const from = plain(peer)
  const at = plain(address)
  return at === from || (isLoopback(from) && isLoopback(at))
}

/**
 * An SDP (an offer or an answer) with only the candidates `peerCandidate` keeps; `dropped` hears each
 * other one's address. When any was dropped, its `a=end-of-candidates` goes too: werift gives up at
 * once when the candidates are said to be complete and none is left, instead of waiting for the
 * viewer's own checks to show where it is (the idle timeout still ends a session that never connects).
 */
export function peerCandidatesOnly(sdp: string, peer: string | undefined, dropped: (address: string) => void): string {
  const lines = sdp.split(/(?<=\n)/)
  let any = false
  const kept = lines.filter((line) => {
    if (!line.startsWith('a=candidate:')) return true
    const candidate = line.trimEnd()
    if (peerCandidate(candidate, peer)) return true
    any = true
    dropped(candidateAddress(candidate) ?? '?')
    return false
  })
  return (any ? kept.filter((line) => line.trimEnd() !== 'a=end-of-candidates') : kept).join('')
}
