// The offer a WebRTC viewer makes when the service offers (Cockpit's signalling, media/webrtc/session.ts
// offer()): the camera's H.264 section first (Cockpit's one recvonly video transceiver takes the first
// video section), then, only while the stream carries sound, a sendonly Opus section, both tracks in one
// media stream (Cockpit's widget plays the track event's first stream). Chromium answers and plays it in
// tests/integration/cockpit.test.ts.
import { expect, test } from 'bun:test'
import { createLogger } from '../../core/log'
import { MediaHub } from '../../media/hub'
import { WebRtcViewer } from '../../media/webrtc/session'

const BUS = 'usb-cam-1'

async function offerOf(sound: boolean): Promise<string[]> {
  const hub = new MediaHub({ encoding: 'H264', width: 640, height: 480, fps: 30, members: [BUS], log: createLogger('error'), sound })
  const viewer = new WebRtcViewer({ id: 'x', reader: 'cockpit', label: 'cockpit-test', bus_info: BUS, hub, member: 0, listenHost: '127.0.0.1', peer: '127.0.0.1', onEnd: () => {} })
  try {
    // Its media sections, each as its lines.
    return (await viewer.offer()).split(/\r\n(?=m=)/).slice(1)
  } finally {
    await viewer.close('stopped')
    hub.close()
  }
}

test('a stream with sound: the H.264 video section, then a sendonly Opus section, in one media stream', async () => {
  const sections = await offerOf(true)
  expect(sections.map((s) => s.split(' ')[0])).toEqual(['m=video', 'm=audio'])
  const [video, audio] = sections as [string, string]
  expect(video).toMatch(/a=rtpmap:\d+ H264\/90000/)
  expect(audio).toMatch(/a=rtpmap:\d+ opus\/48000\/2/)
  for (const section of sections) expect(section).toContain('a=sendonly')
  const stream = (section: string) => /^a=msid:(\S+) /m.exec(section)?.[1]
  expect(stream(video)).toBeString()
  expect(stream(audio)).toBe(stream(video)!)
})

test('a stream without sound: the video section only', async () => {
  const sections = await offerOf(false)
  expect(sections.map((s) => s.split(' ')[0])).toEqual(['m=video'])
  expect(sections[0]).toMatch(/^a=msid:\S+ /m)
})
