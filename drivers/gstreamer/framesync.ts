// The frame-sync board: a USB serial board that triggers every camera of a leader/follower group at
// once. Which board (USB ids, baud rate, command line) is the vendor's declaration (plugins/dwe), read
// from the registry; none declared, none is looked for. While a group streams it is told the group's
// fps + frequency_offset; with no group, frequency and duty 0. The board comes and goes: it is looked for
// every few seconds and told the current command as soon as it appears.
import { closeSync, constants, existsSync, openSync, readdirSync, readFileSync, realpathSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Logger } from '../../core/log'
import type { FrameSyncBoard } from '../../core/types'

/** The tty of the first frame-sync board plugged in, from sysfs. */
export function findFrameSyncPort(board: FrameSyncBoard, sysTty = '/sys/class/tty'): string | null {
  if (!existsSync(sysTty)) return null
  for (const name of readdirSync(sysTty).sort()) {
    if (!/^tty(USB|ACM)\d+$/.test(name)) continue
    try {
      // Walk up from the tty's device to the USB device that carries idVendor/idProduct.
      for (let dir = realpathSync(join(sysTty, name, 'device')); dir !== '/' && dir.startsWith('/sys'); dir = dirname(dir)) {
        if (!existsSync(join(dir, 'idVendor'))) continue
        const vid = parseInt(readFileSync(join(dir, 'idVendor'), 'utf8'), 16)
        const pid = parseInt(readFileSync(join(dir, 'idProduct'), 'utf8'), 16)
        if (board.usb.some((b) => b.vid === vid && b.pid === pid)) return `/dev/${name}`
        break
      }
    } catch {
      // a tty that vanished while we looked
    }
  }
  return null
}

/** The board's command for a group streaming at `fps` (0: none streams, frequency and duty 0). */
export function frameSyncCommand(board: FrameSyncBoard, fps: number, frequencyOffset: number): string {
  const [frequency, duty] = fps > 0 ? [Math.round(fps + frequencyOffset), board.duty] : [0, 0]
  return board.command.replace('{frequency}', String(frequency)).replace('{duty}', String(duty))
}

export interface FrameSyncOptions {
  log: Logger
  /** The board a vendor declared (the registry's), read when it is looked for; none: nothing to drive. */
  board: () => FrameSyncBoard | undefined
  /** Where the board is plugged in now (default: the first tty with the board's USB ids). */
  findPort?: (board: FrameSyncBoard) => string | null
  frequencyOffset?: number
  pollMs?: number
}

export class FrameSync {
  private fps = 0
  private offset: number
  private port: string | null = null
  private timer: ReturnType<typeof setInterval> | null = null
  private readonly findPort: (board: FrameSyncBoard) => string | null

  constructor(private readonly options: FrameSyncOptions) {
    this.findPort = options.findPort ?? ((board) => findFrameSyncPort(board))
    this.offset = options.frequencyOffset ?? 0
  }

  start(): void {
    this.look()
    this.timer = setInterval(() => this.look(), this.options.pollMs ?? 3000)
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer)
    this.timer = null
    if (this.fps > 0) {
      this.fps = 0
      this.send()
    }
  }

  /** The fps of the group streaming now, 0 when none. */
  setFps(fps: number): void {
    if (fps === this.fps) return
    this.fps = fps
    this.send()
  }

  setFrequencyOffset(offset: number): void {
    this.offset = offset
    this.send()
  }

  private look(): void {
    const board = this.options.board()
    const port = board ? this.findPort(board) : null
    if (port === this.port) return
    this.port = port
    if (port) {
      this.options.log.info('frame-sync board found', { port })
      this.send()
    }
  }

  private send(): void {
    const board = this.options.board()
    if (!this.port || !board) return
    const command = frameSyncCommand(board, this.fps, this.offset)
    try {
      // 8N1 raw at the board's baud rate; stty is coreutils, so no native serial binding is needed.
      Bun.spawnSync(['stty', '-F', this.port, String(board.baud), 'raw', '-echo', 'cs8', '-cstopb', '-parenb'], { stdout: 'ignore', stderr: 'ignore' })
      const fd = openSync(this.port, constants.O_WRONLY | constants.O_NOCTTY | constants.O_NONBLOCK)
      try {
        writeSync(fd, command)
      } finally {
        closeSync(fd)
      }
      this.options.log.info('frame-sync command sent', { port: this.port, command: command.trim() })
    } catch (err) {
      this.options.log.warn('frame-sync board not writable', { port: this.port, err: (err as Error).message })
      this.port = null // look again on the next poll
    }
  }
}
