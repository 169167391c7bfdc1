// The main thread's side of the device workers: one worker per physical device, requests answered by
// id, every request bounded by a timeout. A worker that misses a deadline is wedged in a system call:
// it is abandoned (terminated, its queue failed with ETIMEDOUT) and the next request gets a fresh one.
import { DeviceError } from '../../core/types'
import type { WorkerBody, WorkerReply } from './protocol'

export const DEFAULT_WORKER_URL = new URL('./worker.ts', import.meta.url)

/** Healthy workers of vanished devices, kept warm for the next device (a re-plug enumerates at once). */
const idle = new Map<string, Worker[]>()
const MAX_IDLE = 4

interface Pending { resolve: (v: unknown) => void; reject: (e: Error) => void; timer: Timer }

export class DeviceWorker {
  private worker: Worker | null = null
  private pending = new Map<number, Pending>()
  private nextId = 1

  constructor(
    readonly key: string,
    private url: URL = DEFAULT_WORKER_URL,
  ) {}

  private spawn(): Worker {
    const w = idle.get(this.url.href)?.pop() ?? new Worker(this.url)
    w.onmessage = (ev: MessageEvent<WorkerReply>) => {
      const r = ev.data
      const p = this.pending.get(r.id)
      if (!p) return // answered after its deadline
      this.pending.delete(r.id)
      clearTimeout(p.timer)
      if (r.ok) p.resolve(r.result)
      else p.reject(new DeviceError(r.code, r.message))
    }
    w.onerror = (ev) => this.abandon(new DeviceError('EIO', `the device worker failed: ${ev.message}`))
    // A wedged worker must not keep the process alive at shutdown.
    w.unref()
    return w
  }

  request<T>(body: WorkerBody, timeoutMs: number, what: string): Promise<T> {
    this.worker ??= this.spawn()
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => this.abandon(new DeviceError('ETIMEDOUT', `${what}: the device did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      )
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, timer })
      this.worker!.postMessage({ ...body, id })
    })
  }

  /** Fails everything queued on the current worker and drops it. */
  private abandon(err: DeviceError) {
    const w = this.worker
    this.worker = null
    for (const p of this.pending.values()) {
      clearTimeout(p.timer)
      p.reject(err)
    }
    this.pending.clear()
    w?.terminate()
  }

  /** The device is gone: an idle worker goes back to the warm pool, a busy one is abandoned. */
  close(keepWarm = true) {
    const w = this.worker
    if (w && keepWarm && this.pending.size === 0) {
      this.worker = null
      const list = idle.get(this.url.href) ?? []
      idle.set(this.url.href, list)
      if (list.length < MAX_IDLE) return void list.push(w)
      w.terminate()
      return
    }
    this.abandon(new DeviceError('ENODEV', `device ${this.key} was closed`))
  }
}
