// An SDP description of a UDP stream, for receivers that need one (VLC: open the .sdp file). One
// m= section per camera of the group, on the port rule's ports. Pure; nothing serves it yet.
import type { Endpoint, Stream } from '../../core/types'
import { memberEndpoints } from './pipeline'

export function sdp(stream: Stream, endpoint: Endpoint, members = 1, name = 'Periscope'): string {
  if (stream.stream_type !== 'UDP' || stream.encode_type === 'NONE') throw new Error('only a UDP stream has an SDP description')
  const fps = stream.interval.denominator / stream.interval.numerator
  const lines = ['v=0', `o=- 0 0 IN IP4 ${endpoint.host}`, `s=${name}`, `c=IN IP4 ${endpoint.host}`, 't=0 0']
  for (let i = 0; i < members; i++) {
    const port = memberEndpoints([endpoint], i)[0]!.port
    if (stream.encode_type === 'MJPG') lines.push(`m=video ${port} RTP/AVP 26`, 'a=rtpmap:26 JPEG/90000')
    else lines.push(`m=video ${port} RTP/AVP 96`, 'a=rtpmap:96 H264/90000', 'a=fmtp:96 packetization-mode=1')
    lines.push(`a=framerate:${Number(fps.toFixed(3))}`, 'a=recvonly')
  }
  return lines.join('\r\n') + '\r\n'
}
