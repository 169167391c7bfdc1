// The supervisor of the RTSP helper (server.py: GStreamer's RTSP server run by Debian's python3-gi):
// one child per service, spoken to in JSON lines, restarted with backoff 1, 2, 4 … 30 s when it dies,
// killed with the service (media/children.ts: the parent-death signal and the children registry's exit guard).
// When the helper's packages are missing it is not restarted: the plugin reports itself down. A helper
// whose main loop stops answering (no 'pong' to a 'ping' within --rtsp-helper-timeout) is killed and restarted
// like one that died: it would otherwise accept no client and add no mount while it looks alive.
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import type { Logger } from '../../core/log'
import { children, pumpLines, spawnChild } from '../../media/children'

/** Debian's python3 with its gi module (python3 on PATH may be another one, without gi). */
export const SYSTEM_PYTHON = '/usr/bin/python3'
const SERVER = join(import.meta.dir, 'server.py')
/** server.py's exit code when GstRtspServer cannot be imported. */
const MISSING = 3
const MAX_BACKOFF_MS = 30_000
/** Where server.py reads the token the clients must give (unset: no authentication). */
const TOKEN_ENV = 'PERISCOPE_RTSP_TOKEN'
/** The user name RTSP clients give with the token as password (server.py's RTSP_USER). */
export const RTSP_USER = 'periscope'
const STABLE_MS = 60_000
/** A ready helper is asked every 2 s (or a quarter of --rtsp-helper-timeout, when less), and killed when it has
 * not answered for --rtsp-helper-timeout. */
const PING_EVERY_MS = 2_000
/** Time for a stuck helper to write its threads' stacks before it is killed. */
const STACKS_GRACE_MS = 300
/** The end of the helper's stderr kept for the log of its exit: room for every thread's stack. */
const STDERR_KEPT = 16_000

export type HelperEvent =
  | { event: 'ready'; port: number }
  | { event: 'added'; path: string }
  | { event: 'media'; path: string; id: number; ports: number[] }
  | { event: 'media_gone'; path: string; id: number }
  | { event: 'removed'; path: string }
  | { event: 'viewers'; camera: string; count: number }
  | { event: 'refused'; why: 'viewers' | 'connections' | 'idle' }
  | { event: 'error'; message: string }
  | { event: 'wrong_token' }
  | { event: 'pong' }

export type HelperState = 'stopped' | 'starting' | 'ready' | 'backoff' | 'missing'

export class RtspHelper {
  private child: Subprocess<'pipe', 'pipe', 'pipe'> | null = null
  private wanted = false
  private failures = 0
  private readySince = 0
  private timer: ReturnType<typeof setTimeout> | null = null
  private pinger: ReturnType<typeof setInterval> | null = null
  /** When the helper last said anything (performance.now()). */
  private heardAt = 0
  state: HelperState = 'stopped'
  /** Why the helper is not ready (its last error), for health. */
  error: string | null = null
  restarts = 0

  constructor(
    private readonly port: number,
    private readonly host: string,
    /** Clients per camera; the helper refuses one more with 503. */
    private readonly maxViewers: number,
    /** Connections at once, seconds one may stay without a session, and seconds the helper may leave pings
     * unanswered (--rtsp-max-connections, --rtsp-idle-timeout, --rtsp-helper-timeout). */
    private readonly limits: { maxConnections: number; idleSeconds: number; silentSeconds: number },
    private readonly log: Logger,
    /** Each line the helper says; 'ready' after every (re)start, when all mounts must be added again. */
    private readonly onEvent: (event: HelperEvent) => void,
    /** With --token-scope all: every client must give it as the password (rtsp://periscope:<token>@host/path). */
    private readonly token: string | null = null,
  ) {}

  get pid(): number | null {
    return this.child?.pid ?? null
  }

  start(): void {
    this.wanted = true
    this.launch()
  }

  /** Sends one command; dropped while the helper is not ready (it gets every mount again on 'ready'). */
  send(command: Record<string, unknown>): void {
    if (this.state !== 'ready' || !this.child) return
    try {
      this.child.stdin.write(JSON.stringify(command) + '\n')
      this.child.stdin.flush()
    } catch {
      // it is dying: its exit restarts it
    }
  }

  async stop(): Promise<void> {
    this.wanted = false
    if (this.timer) clearTimeout(this.timer)
    this.timer = null
    this.stopPinging()
    const child = this.child
    this.child = null
    this.state = 'stopped'
    if (!child) return
    try {
      child.stdin.end() // server.py leaves when its stdin closes
    } catch {}
    const exited = await Promise.race([child.exited.then(() => true), Bun.sleep(2000).then(() => false)])
    if (!exited) {
      child.kill('SIGKILL')
      await child.exited
    }
    children.delete(child.pid)
  }

  private startPinging(child: Subprocess<'pipe', 'pipe', 'pipe'>): void {
    this.stopPinging()
    this.heardAt = performance.now()
    let tickAt = performance.now()
    const timeoutMs = this.limits.silentSeconds * 1000
    const everyMs = Math.min(PING_EVERY_MS, timeoutMs / 4)
    this.pinger = setInterval(() => {
      if (this.child !== child) return this.stopPinging()
      const now = performance.now()
      // This loop itself was held up: the helper's answers may be waiting unread, so it is not judged now.
      if (now - tickAt > 2 * everyMs) this.heardAt = now
      tickAt = now
      const silent = now - this.heardAt
      if (silent < timeoutMs) return this.send({ op: 'ping' })
      this.stopPinging()
      this.error = `it stopped answering (nothing for ${Math.round(silent / 1000)} s)`
      this.log.error('rtsp helper stopped answering: killed, to be restarted', { pid: child.pid, silent_ms: Math.round(silent) })
      // Its threads' stacks first (server.py's faulthandler, on stderr: logged with its exit), so the
      // cause of a stall can be read; then the kill, whose exit restarts it as any exit does.
      child.kill('SIGUSR1')
      setTimeout(() => child.kill('SIGKILL'), STACKS_GRACE_MS)
    }, everyMs)
    this.pinger.unref?.()
  }

  private stopPinging(): void {
    if (this.pinger) clearInterval(this.pinger)
    this.pinger = null
  }

  private launch(): void {
    this.timer = null
    if (!this.wanted) return
    let child: Subprocess<'pipe', 'pipe', 'pipe'>
    try {
      // The token by environment, never in argv (which any local user can read in ps).
      const env: Record<string, string | undefined> = { ...process.env }
      delete env[TOKEN_ENV]
      if (this.token) env[TOKEN_ENV] = this.token
      child = spawnChild([SYSTEM_PYTHON, SERVER, String(this.port), this.host, String(this.maxViewers), String(this.limits.maxConnections), String(this.limits.idleSeconds)], { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe', env })
    } catch (err) {
      this.state = 'missing'
      this.error = `cannot run ${SYSTEM_PYTHON}: ${(err as Error).message}; run scripts/setup/rtsp.sh`
      return
    }
    this.child = child
    this.state = 'starting'
    let stderr = ''
    void pumpLines(child.stdout as ReadableStream<Uint8Array>, (line) => {
      if (this.child !== child) return
      this.heardAt = performance.now()
      let event: HelperEvent
      try {
        event = JSON.parse(line) as HelperEvent
      } catch {
        return
      }
      if (event.event === 'pong') return
      if (event.event === 'ready') {
        this.state = 'ready'
        this.error = null
        this.readySince = Date.now()
        this.startPinging(child)
      } else if (event.event === 'error') {
        this.error = event.message
        this.log.warn('rtsp helper error', { message: event.message })
      }
      this.onEvent(event)
    })
    const stderrRead = pumpLines(child.stderr as ReadableStream<Uint8Array>, (line) => void (stderr = (stderr + '\n' + line).slice(-STDERR_KEPT)))
    void child.exited.then(async (code) => {
      await Promise.race([stderrRead, Bun.sleep(500)]) // its last words (a stuck helper's stacks) are in the log of its exit
      children.delete(child.pid)
      if (this.child !== child) return
      this.child = null
      this.stopPinging()
      if (!this.wanted) return
      if (code === MISSING) {
        this.state = 'missing'
        this.error = `GStreamer's RTSP server is not installed for ${SYSTEM_PYTHON} (python3-gi, gir1.2-gst-rtsp-server-1.0): run scripts/setup/rtsp.sh`
        this.log.error('rtsp helper cannot start', { reason: this.error })
        return
      }
      if (this.readySince && Date.now() - this.readySince > STABLE_MS) this.failures = 0
      this.failures++
      this.restarts++
      const delay = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (this.failures - 1))
      const why = this.error ?? (stderr.trim().split('\n').at(-1) || `exited with ${child.signalCode ?? `code ${code}`}`)
      this.error = `${why}; restarting in ${delay / 1000} s`
      this.state = 'backoff'
      this.log.warn('rtsp helper exited', { code, reason: why, stderr })
      this.timer = setTimeout(() => this.launch(), delay)
    })
  }
}
