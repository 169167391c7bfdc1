// The console's MJPEG reader (plugins/console/ui/multipart.ts): the parts of a multipart/x-mixed-replace
// answer as the service writes it (plugins/jpeg: boundary line, Content-Type, Content-Length, the JPEG,
// CRLF), whole and in order however the bytes are cut on their way; an answer that is no such stream
// is refused, not buffered without end.
import { expect, test } from 'bun:test'
import { MultipartParts } from '../../plugins/console/ui/multipart'

const encoder = new TextEncoder()
const jpeg = (n: number, size: number) => Uint8Array.from({ length: size }, (_, i) => (i === 0 ? 0xff : i === 1 ? 0xd8 : (n * 31 + i) & 0xff))
function stream(parts: Uint8Array[]): Uint8Array {
  const chunks = parts.flatMap((p) => [encoder.encode(`--periscope-frame\r\nContent-Type: image/jpeg\r\nContent-Length: ${p.length}\r\n\r\n`), p, encoder.encode('\r\n')])
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
  let at = 0
  for (const c of chunks) {
    out.set(c, at)
    at += c.length
  }
  return out
}

test('whole parts, in order, whatever the cuts: at every offset, byte by byte, all at once', () => {
  // A part whose bytes hold CRLF CRLF and the boundary's text: only the Content-Length says where it ends.
  const tricky = new Uint8Array([0xff, 0xd8, 13, 10, 13, 10, ...encoder.encode('--periscope-frame\r\nContent-Length: 1\r\n\r\n'), 0xff, 0xd9])
  const parts = [jpeg(1, 500), tricky, jpeg(2, 1), jpeg(3, 4000)]
  const bytes = stream(parts)
  const cuts = [[bytes.length], Array.from({ length: bytes.length }, () => 1), ...Array.from({ length: 200 }, (_, k) => [k + 1, bytes.length])]
  for (const cut of cuts) {
    const reader = new MultipartParts()
    const got: Uint8Array[] = []
    let at = 0
    for (const size of cut) {
      if (at >= bytes.length) break
      got.push(...reader.push(bytes.subarray(at, Math.min(bytes.length, at + size))).map((p) => p.jpeg))
      at += size
    }
    if (at < bytes.length) got.push(...reader.push(bytes.subarray(at)).map((p) => p.jpeg))
    expect(got.map((p) => Array.from(p)), `cut ${cut.slice(0, 3).join(',')}…`).toEqual(parts.map((p) => Array.from(p)))
  }
})

test('an answer that is no MJPEG stream: a part without Content-Length, or no part head within 4 KiB, is an error', () => {
  expect(() => new MultipartParts().push(encoder.encode('--x\r\nContent-Type: image/jpeg\r\n\r\n\xff\xd8'))).toThrow('without a Content-Length')
  const reader = new MultipartParts()
  expect(() => {
    for (let i = 0; i < 10; i++) reader.push(new Uint8Array(1024).fill(65))
  }).toThrow('no part head within 4096 bytes')
})

test("a part's timing headers (an MJPG camera's: X-Captured-At, X-Sent-At) are read with it; a part without them has none", () => {
  const head = encoder.encode('--periscope-frame\r\nContent-Type: image/jpeg\r\nContent-Length: 3\r\nX-Captured-At: 1764640000123.4\r\nX-Sent-At: 1764640000130.9\r\n\r\n')
  const timed = new Uint8Array([...head, 0xff, 0xd8, 7, 13, 10])
  const reader = new MultipartParts()
  const [a, b] = [...reader.push(timed), ...reader.push(stream([jpeg(1, 3)]))]
  expect(a).toMatchObject({ capturedAt: 1764640000123.4, sentAt: 1764640000130.9 })
  expect(Array.from(a!.jpeg)).toEqual([0xff, 0xd8, 7])
  expect(b).toMatchObject({ capturedAt: null, sentAt: null })
  expect(Array.from(b!.jpeg)).toEqual(Array.from(jpeg(1, 3)))
})
