// The frame-sync module: a USB serial board (3961:5000, legacy FTDI 0403:6001, 9600 baud) that
// triggers every camera of a leader/follower group at once. While a group streams it receives
// "<fps + frequency_offset>,30\n"; with no group, "0,0\n". The board comes and goes: it is looked
// for every few seconds and told the current command as soon as it appears.
import { closeSync, constants, existsSync, openSync, readdirSync, readFileSync, realpathSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import type { Logger } from '../../core/log'

const BOARDS = [
  { vid: '3961', pid: '5000' },
  { vid: '0403', pid: '6001' },
]

/** The tty of the first frame-sync board plugged in, from sysfs. */
export function findFrameSyncPort(sysTty = '/sys/class/tty'): string | null {
  if (!existsSync(sysTty)) return null
  for (const name of readdirSync(sysTty).sort()) {
    if (!/^tty(USB|ACM)\d+$/.test(name)) continue
    try {
      // Walk up from the tty's device to the USB device that carries idVendor/idProduct.
      for (let dir = realpathSync(join(sysTty, name, 'device')); dir !== '/' && dir.startsWith('/sys'); dir = dirname(dir)) {
        if (!existsSync(join(dir, 'idVendor'))) continue
        const vid = readFileSync(join(dir, 'idVendor'), 'utf8').trim()
        const pid = readFileSync(join(dir, 'idProduct'), 'utf8').trim()
        if (BOARDS.some((b) => b.vid === vid && b.pid === pid)) return `/dev/${name}`
        break
      }
    } catch {
      // a tty that vanished while we looked
    }
  }
  return null
}

export function frameSyncCommand(fps: number, frequencyOffset: number): string {
  return fps > 0 ? `${Math.round(fps + frequencyOffset)},30\n` : '0,0\n'
}

export interface FrameSyncOptions {
  log: Logger
  findPort?: () => string | null
  frequencyOffset?: number
  pollMs?: number
}

export class FrameSync {
  private fps = 0
  private offset: number
  private port: string | null = null
  private timer: ReturnType<typeof setInterval> | null = null
  private readonly findPort: () => string | null

  constructor(private readonly options: FrameSyncOptions) {
    this.findPort = options.findPort ?? (() => findFrameSyncPort())
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
    const port = this.findPort()
    if (port === this.port) return
    this.port = port
    if (port) {
      this.options.log.info('frame-sync board found', { port })
      this.send()
    }
  }

  private send(): void {
    if (!this.port) return
    const command = frameSyncCommand(this.fps, this.offset)
    try {
      // 9600 8N1 raw; stty is coreutils, so no native serial binding is needed.
      Bun.spawnSync(['stty', '-F', this.port, '9600', 'raw', '-echo', 'cs8', '-cstopb', '-parenb'], { stdout: 'ignore', stderr: 'ignore' })
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
