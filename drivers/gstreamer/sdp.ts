// An SDP description of a UDP stream, for receivers that need one (VLC: open the .sdp file). One
// m= section per camera of the group, on the port rule's ports, and one for the stream's sound when it
// carries one (Opus, drivers/gstreamer/audio.ts). Pure; plugins/gstreamer serves it.
import type { Endpoint, Stream } from '../../core/types'
import { AUDIO_PT } from './audio'
import { memberEndpoints } from './pipeline'

/** The sound's m= section: Opus at the endpoint's port + `portOffset` (audioPortOffset), `channels` 1 or 2. */
export interface SdpAudio {
  portOffset: number
  channels: number
}

export function sdp(stream: Stream, endpoint: Endpoint, members = 1, name = 'Periscope', audio?: SdpAudio): string {
  if (stream.stream_type !== 'UDP' || stream.encode_type === 'NONE') throw new Error('only a UDP stream has an SDP description')
  const fps = stream.interval.denominator / stream.interval.numerator
  const lines = ['v=0', `o=- 0 0 IN IP4 ${endpoint.host}`, `s=${name}`, `c=IN IP4 ${endpoint.host}`, 't=0 0']
  for (let i = 0; i < members; i++) {
    const port = memberEndpoints([endpoint], i)[0]!.port
    if (stream.encode_type === 'MJPG') lines.push(`m=video ${port} RTP/AVP 26`, 'a=rtpmap:26 JPEG/90000')
    else lines.push(`m=video ${port} RTP/AVP 96`, 'a=rtpmap:96 H264/90000', 'a=fmtp:96 packetization-mode=1')
    lines.push(`a=framerate:${Number(fps.toFixed(3))}`, 'a=recvonly')
  }
  if (audio) {
    // RFC 7587: Opus is always opus/48000/2 in SDP; sprop-stereo says whether the sender sends stereo.
    lines.push(`m=audio ${endpoint.port + audio.portOffset} RTP/AVP ${AUDIO_PT}`, `a=rtpmap:${AUDIO_PT} opus/48000/2`, `a=fmtp:${AUDIO_PT} sprop-stereo=${audio.channels > 1 ? 1 : 0}`, 'a=recvonly')
  }
  return lines.join('\r\n') + '\r\n'
}

/** A sound-only stream's description (plugins/audio/sound-only.ts): its one Opus section, at the endpoint's own port. */
export function sdpSoundOnly(endpoint: Endpoint, channels: number, name: string): string {
  const lines = ['v=0', `o=- 0 0 IN IP4 ${endpoint.host}`, `s=${name}`, `c=IN IP4 ${endpoint.host}`, 't=0 0']
  lines.push(`m=audio ${endpoint.port} RTP/AVP ${AUDIO_PT}`, `a=rtpmap:${AUDIO_PT} opus/48000/2`, `a=fmtp:${AUDIO_PT} sprop-stereo=${channels > 1 ? 1 : 0}`, 'a=recvonly')
  return lines.join('\r\n') + '\r\n'
}
