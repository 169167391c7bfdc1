// A minimal RTSP client on a raw TCP connection, for tests that need what a client library hides: a
// client that stops reading its socket, or an RTP/UDP session whose packets the test counts itself.
import { expect } from 'bun:test'
import { connect, type Socket } from 'node:net'
import { waitFor } from './gstreamer.helpers'

/** One RTSP request at a time on a raw TCP connection; after PLAY the caller may stop reading. */
export class RawRtsp {
  private buffer = Buffer.alloc(0)
  private cseq = 0
  session = ''
  constructor(readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => void (this.buffer = Buffer.concat([this.buffer, chunk])))
    socket.on('error', () => {})
  }

  static open(port: number): Promise<RawRtsp> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(new RawRtsp(socket)))
      socket.once('error', reject)
    })
  }

  async request(method: string, url: string, headers: Record<string, string> = {}): Promise<{ status: string; headers: Record<string, string>; body: string }> {
    const head = [`${method} ${url} RTSP/1.0`, `CSeq: ${++this.cseq}`, ...(this.session ? [`Session: ${this.session}`] : []), ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)]
    this.socket.write(head.join('\r\n') + '\r\n\r\n')
    return await waitFor(`the answer to ${method}`, () => {
      const text = this.buffer.toString('latin1')
      const start = text.indexOf('RTSP/1.0 ')
      const end = text.indexOf('\r\n\r\n', start)
      if (start < 0 || end < 0) return undefined
      const [status, ...lines] = text.slice(start, end).split('\r\n')
      const answer = Object.fromEntries(lines.map((line) => [line.slice(0, line.indexOf(':')).trim().toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
      const length = Number(answer['content-length'] ?? 0)
      if (text.length < end + 4 + length) return undefined
      this.buffer = this.buffer.subarray(end + 4 + length)
      return { status: status!, headers: answer, body: text.slice(end + 4, end + 4 + length) }
    }, 15_000)
  }

  /** DESCRIBE, SETUP (the given transport) and PLAY of the first track at `url`. */
  async play(url: string, transport: string): Promise<void> {
    const described = await this.request('DESCRIBE', url, { Accept: 'application/sdp' })
    expect(described.status).toBe('RTSP/1.0 200 OK')
    const control = /a=control:(\S+)/.exec(described.body.split(/m=video/)[1] ?? '')?.[1] ?? ''
    const base = described.headers['content-base'] ?? `${url}/`
    const setup = await this.request('SETUP', control.startsWith('rtsp:') ? control : base + control, { Transport: transport })
    expect(setup.status).toBe('RTSP/1.0 200 OK')
    this.session = setup.headers.session!.split(';')[0]!
    expect((await this.request('PLAY', url, { Range: 'npt=0-' })).status).toBe('RTSP/1.0 200 OK')
  }
}

/** RTSP over TCP: ends the session politely (TEARDOWN), then the connection. */
export async function teardown(client: RawRtsp, url: string): Promise<void> {
  try {
    await client.request('TEARDOWN', url)
  } finally {
    client.socket.destroy()
  }
}
