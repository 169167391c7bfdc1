// What a WHEP offer must be before werift sees it. werift opens a socket and does real work for every
// media section, so one offer with 2,000 video sections froze the service for 8 minutes (issue 25):
// offers are bounded in bytes and in media sections, and must carry what a secure session needs (a
// DTLS fingerprint, ICE credentials). Each refusal says why, and is counted by reason for /metrics.

/** The most bytes of an offer: a browser's offer with audio, video and a data channel is 3 to 8 kB. */
export const MAX_OFFER_BYTES = 32 * 1024
/**
 * The most media sections (m= lines) of an offer: video, audio and a data channel, and one more; the
 * sections besides the first H.264 video are answered inactive (no media, no socket of their own).
 */
export const MAX_MEDIA_SECTIONS = 4

/** Why an offer was refused: the label of periscope_whep_refused_offers_total. */
export type RefusalReason = 'too_large' | 'not_sdp' | 'too_many_sections' | 'bundle' | 'no_fingerprint' | 'no_ice_credentials' | 'unanswerable'
export const REFUSAL_REASONS: readonly RefusalReason[] = ['too_large', 'not_sdp', 'too_many_sections', 'bundle', 'no_fingerprint', 'no_ice_credentials', 'unanswerable']

export class OfferRefused extends Error {
  constructor(
    readonly reason: RefusalReason,
    readonly status: 400 | 413,
    message: string,
  ) {
    super(message)
  }
}

/**
 * Checks an offer's shape, cheaply, before werift reads it: throws OfferRefused with a sentence. A
 * sound-only stream's offer needs an audio section instead of a video one. An
 * attribute may sit at session level or in every media section (RFC 8866 §5), as browsers write them.
 */
export function checkOffer(offer: string, soundOnly = false): void {
  if (soundOnly && (!/^v=0\r?\n/.test(offer) || !/\r?\nm=audio /.test(offer))) {
    throw new OfferRefused('not_sdp', 400, 'The body is not an SDP offer with an audio section: it must start with "v=0" and contain an "m=audio" line (this stream is sound only: addTransceiver("audio", {direction: "recvonly"}))')
  }
  if (!soundOnly && (!/^v=0\r?\n/.test(offer) || !/\r?\nm=video /.test(offer))) {
    throw new OfferRefused('not_sdp', 400, 'The body is not an SDP offer with a video section: it must start with "v=0" and contain an "m=video" line (create it with RTCPeerConnection.createOffer() after addTransceiver("video", {direction: "recvonly"}))')
  }
  const lines = offer.split(/\r?\n/)
  const sections: string[][] = [[]]
  for (const line of lines) {
    if (line.startsWith('m=')) {
      if (sections.length > MAX_MEDIA_SECTIONS + 1) break // already too many: no need to read on
      sections.push([])
    }
    sections.at(-1)!.push(line)
  }
  const media = sections.slice(1)
  if (media.length > MAX_MEDIA_SECTIONS) {
    throw new OfferRefused('too_many_sections', 400, `The offer has more than ${MAX_MEDIA_SECTIONS} media sections (m= lines), the most a WHEP offer may have here: one H.264 video is watched, and audio, a data channel or one more section are answered inactive`)
  }
  const session = sections[0]!
  if (session.filter((l) => l.startsWith('a=group:BUNDLE')).length > 1) {
    throw new OfferRefused('bundle', 400, 'The offer has more than one BUNDLE group: offer at most one (as browsers do with bundlePolicy "balanced" or "max-bundle")')
  }
  const everywhere = (attribute: RegExp) => session.some((l) => attribute.test(l)) || media.every((section) => section.some((l) => attribute.test(l)))
  if (!everywhere(/^a=fingerprint:\S+ \S/)) {
    throw new OfferRefused('no_fingerprint', 400, 'The offer has no DTLS fingerprint (a=fingerprint): WebRTC media is always encrypted, and the fingerprint is what makes it so; send the offer as RTCPeerConnection.createOffer() makes it')
  }
  if (!everywhere(/^a=ice-ufrag:\S/) || !everywhere(/^a=ice-pwd:\S/)) {
    throw new OfferRefused('no_ice_credentials', 400, 'The offer has no ICE credentials (a=ice-ufrag and a=ice-pwd): without them no connectivity check can be answered; send the offer as RTCPeerConnection.createOffer() makes it')
  }
}

/**
 * The offer as werift should read it. A section offered RFC 8843 `bundle-only` (port 0 and
 * a=bundle-only: GStreamer's webrtcbin offers its audio so with bundle-policy max-bundle) belongs to the
 * BUNDLE group; werift takes port 0 as a rejected section and answered it inactive, so that player got
 * the video without the sound. Such a section is given port 9, as browsers offer a bundled one.
 */
export function acceptBundleOnly(offer: string): string {
  return offer
    .split(/(?=^m=)/m)
    .map((section) => (/^m=\S+ 0 /.test(section) && /^a=bundle-only\r?$/m.test(section) ? section.replace(/^(m=\S+) 0 /, '$1 9 ').replace(/^a=bundle-only\r?\n/m, '') : section))
    .join('')
}
