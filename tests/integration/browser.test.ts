// The browser harness itself (tests/integration/browser.ts): Chromium shows a multipart/x-mixed-replace
// JPEG stream in an <img> at its size — what the MJPEG route's test needs — served here by a tiny
// loopback server with real JPEGs from GStreamer's jpegenc, so the harness is proven before the route.
import { afterAll, expect, test } from 'bun:test'
import { showImage, withPage } from './browser'
import { requireGStreamer } from './gstreamer.helpers'

const servers: { stop(force?: boolean): void }[] = []
afterAll(() => {
  for (const server of servers) server.stop(true)
})

test('Chromium shows a multipart/x-mixed-replace JPEG stream in an <img> at its size', async () => {
  requireGStreamer()
  const encode = Bun.spawnSync(['gst-launch-1.0', '-q', 'videotestsrc', 'num-buffers=1', '!', 'video/x-raw,width=320,height=240', '!', 'jpegenc', '!', 'fdsink', 'fd=1'])
  const jpeg = encode.stdout
  expect([jpeg[0], jpeg[1]]).toEqual([0xff, 0xd8])
  const boundary = 'frame'
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch(request) {
      if (new URL(request.url).pathname !== '/mjpeg') return new Response('<html><body></body></html>', { headers: { 'content-type': 'text/html' } })
      let timer: ReturnType<typeof setInterval>
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          const part = () => {
            controller.enqueue(new TextEncoder().encode(`--${boundary}\r\nContent-Type: image/jpeg\r\nContent-Length: ${jpeg.length}\r\n\r\n`))
            controller.enqueue(new Uint8Array(jpeg))
            controller.enqueue(new TextEncoder().encode('\r\n'))
          }
          part()
          timer = setInterval(part, 100)
        },
        cancel() {
          clearInterval(timer)
        },
      })
      return new Response(body, { headers: { 'content-type': `multipart/x-mixed-replace; boundary=${boundary}` } })
    },
  })
  servers.push(server)
  const size = await withPage(`http://127.0.0.1:${server.port}`, (page) => showImage(page, '/mjpeg'))
  expect(size).toEqual({ width: 320, height: 240 })
}, 60_000)
