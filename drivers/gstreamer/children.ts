// Every gst-launch-1.0 child alive, by pid, so none outlives the service: the exit guard kills what a
// crash skipped stopping, and setpriv's parent-death signal covers a kill -9 of the service itself.
export const children = new Set<number>()

let guarded = false
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
