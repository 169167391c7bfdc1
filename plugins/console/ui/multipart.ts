// The parts of an MJPEG answer (`multipart/x-mixed-replace`) as its bytes arrive, so the page knows when
// each picture came (an <img> of the stream tells it nothing after the first): each part is a head
// (its boundary line and headers, with the Content-Length the service always sends) and that many bytes.

/** A part's head longer than this is not one: the answer is not the stream it should be. */
const MAX_HEAD = 4096
const END_OF_HEAD = [13, 10, 13, 10]

/** One part: its JPEG, and when the vehicle says the frame was made and the part left (ms since the epoch; null where it does not say). */
export interface Part {
  jpeg: Uint8Array<ArrayBuffer>
  capturedAt: number | null
  sentAt: number | null
}

const headerNumber = (head: string, name: string): number | null => {
  const value = new RegExp(`(?:^|\r\n)${name}:\\s*([0-9.]+)`, 'i').exec(head)?.[1]
  return value === undefined ? null : Number(value)
}

export class MultipartParts {
  private buffer = new Uint8Array(0)

  /** The whole parts `chunk` completes, in order; throws on an answer that is no MJPEG stream. */
  push(chunk: Uint8Array): Part[] {
    const joined = new Uint8Array(this.buffer.length + chunk.length)
    joined.set(this.buffer)
    joined.set(chunk, this.buffer.length)
    const parts: Part[] = []
    let at = 0
    for (;;) {
      const headEnd = indexOf(joined, END_OF_HEAD, at, Math.min(joined.length, at + MAX_HEAD))
      if (headEnd < 0) {
        if (joined.length - at > MAX_HEAD) throw new Error(`no part head within ${MAX_HEAD} bytes`)
        break
      }
      const head = new TextDecoder().decode(joined.subarray(at, headEnd))
      const length = /(?:^|\r\n)content-length:\s*(\d+)/i.exec(head)?.[1]
      if (length === undefined) throw new Error('a part without a Content-Length')
      const start = headEnd + END_OF_HEAD.length
      const end = start + Number(length)
      if (end > joined.length) break
      parts.push({ jpeg: joined.slice(start, end), capturedAt: headerNumber(head, 'x-captured-at'), sentAt: headerNumber(head, 'x-sent-at') })
      at = end
    }
    this.buffer = joined.slice(at)
    return parts
  }
}

function indexOf(bytes: Uint8Array, pattern: number[], from: number, to: number): number {
  outer: for (let i = from; i + pattern.length <= to; i++) {
    for (let k = 0; k < pattern.length; k++) if (bytes[i + k] !== pattern[k]) continue outer
    return i
  }
  return -1
}
