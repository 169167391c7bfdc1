// Every child process of the media plane (gst-launch-1.0 pipelines, the RTSP server), spawned,
// supervised and stopped one way: the kernel's parent-death signal (setpriv --pdeathsig KILL) takes a
// child along on a kill -9 of the service, the registry below kills what a crash skipped stopping,
// output is read line by line, and a stop is a signal then SIGKILL after a timeout.
import type { Subprocess } from 'bun'

/** Every child alive, by pid, so none outlives the service. */
export const children = new Set<number>()

let guarded = false
/** Kills every registered child when the process exits (idempotent). */
export function guardChildren(): void {
  if (guarded) return
  guarded = true
  process.on('exit', () => {
    for (const pid of children) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
  })
}

/** `setpriv --pdeathsig KILL` when setpriv exists: prepended to a child's command line. */
export function parentDeathPrefix(): string[] {
  const setpriv = Bun.which('setpriv')
  return setpriv ? [setpriv, '--pdeathsig', 'KILL'] : []
}

type Io = 'pipe' | 'ignore'
/**
 * Spawns a supervised child: parent-death signal, registered until it exits. Throws as Bun.spawn does
 * (a missing program).
 */
export function spawnChild<I extends Io, O extends Io, E extends Io>(
  command: string[],
  io: { stdin: I; stdout: O; stderr: E; env?: Record<string, string | undefined> },
  prefix: string[] = parentDeathPrefix(),
): Subprocess<I, O, E> {
  guardChildren()
  const child = Bun.spawn([...prefix, ...command], io)
  children.add(child.pid)
  void child.exited.then(() => children.delete(child.pid))
  return child
}

/**
 * Ends a child: `signal` first (SIGINT makes gst-launch -e send EOS, so a muxer closes its file), then
 * SIGKILL after `timeoutMs`. Resolves once it is gone and out of the registry.
 */
export async function endChild(child: Subprocess, signal: 'SIGINT' | 'SIGTERM', timeoutMs: number): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    child.kill(signal)
    const timedOut = await Promise.race([child.exited.then(() => false), Bun.sleep(timeoutMs).then(() => true)])
    if (timedOut) {
      child.kill('SIGKILL')
      await child.exited
    }
  }
  children.delete(child.pid)
}

/** Calls `onLine` for each line of a child's output, until it ends. */
export async function pumpLines(stream: ReadableStream<Uint8Array>, onLine: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder()
  let rest = ''
  try {
    for await (const chunk of stream) {
      const lines = (rest + decoder.decode(chunk, { stream: true })).split('\n')
      rest = lines.pop()!
      for (const line of lines) onLine(line)
    }
  } catch {
    // the child is gone
  }
  if (rest) onLine(rest)
}
