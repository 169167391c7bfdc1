// The vehicle's telemetry into a recording child's text pad (pipeline.ts telemetryTextTokens): one UTF-8
// datagram per cue to its loopback port, stamped on arrival by the child with the clock its video frames
// are stamped with. Used by both kinds of recording: the recorder child (recorder.ts) and a RECORDING
// stream's own child (runner.ts).
import { createSocket, type Socket } from 'node:dgram'
import type { Logger } from '../../core/log'
import { formatTelemetryText, type TelemetrySource } from '../../core/telemetry'

/** What a recording with telemetry reads: the vehicle's state, and the camera's stream state shown with it. */
export interface RecordingTelemetry {
  source: TelemetrySource
  streamState(): string
}

/**
 * How often the text track gets a cue while nothing changes. matroskamux writes a frame only once
 * every pad, the text pad too, has a later buffer queued: this bounds how long video waits before it
 * reaches the disk (plus the 250 ms clusters: well within the second a kill -9 may lose).
 */
export const TEXT_INTERVAL_MS = 250

/** Sends the telemetry line now, every TEXT_INTERVAL_MS, and at once when the armed state or the mode changes. */
export class TelemetryFeed {
  private socket: Socket | null = createSocket('udp4')
  private timer: ReturnType<typeof setInterval>
  private unsubscribe: () => void

  constructor(private port: number, private readonly telemetry: RecordingTelemetry, log: Logger) {
    let warned = false
    // Loopback to a child of ours: refused while it starts or after it ended, logged once.
    this.socket!.on('error', (err) => {
      if (!warned) log.debug('telemetry feed: a send failed (the recording child is not listening)', { error: err.message })
      warned = true
    })
    this.send()
    this.timer = setInterval(() => this.send(), TEXT_INTERVAL_MS)
    this.unsubscribe = telemetry.source.onChange((change) => {
      if (change !== 'values') this.send()
    })
  }

  private send(): void {
    const text = formatTelemetryText({ vehicle: this.telemetry.source.current(), stream: this.telemetry.streamState(), utc: new Date() })
    this.socket?.send(Buffer.from(text, 'utf8'), this.port, '127.0.0.1')
  }

  /** From now on to `port` (a recording's next segment), starting with a cue at once: its muxer waits for one. */
  retarget(port: number): void {
    this.port = port
    this.send()
  }

  close(): void {
    clearInterval(this.timer)
    this.unsubscribe()
    try {
      this.socket?.close()
    } catch {}
    this.socket = null
  }
}
