// libc through bun:ffi: open, close, ioctl and errno. Every call here blocks its thread, so the backend
// only calls these from worker threads (drivers/v4l2/worker.ts), never from the HTTP event loop.
import { dlopen, read } from 'bun:ffi'
import { DeviceError } from '../../core/types'

const libc = dlopen('libc.so.6', {
  open: { args: ['ptr', 'i32'], returns: 'i32' },
  close: { args: ['i32'], returns: 'i32' },
  // ioctl is variadic in C; the third argument is passed like a fixed pointer argument on x86-64 and arm64.
  ioctl: { args: ['i32', 'u64', 'ptr'], returns: 'i32' },
  __errno_location: { args: [], returns: 'ptr' },
})

const O_RDWR = 2
const O_NONBLOCK = 0o4000
const O_CLOEXEC = 0o2000000

const ERRNO_NAMES: Record<number, string> = {
  1: 'EPERM', 2: 'ENOENT', 4: 'EINTR', 5: 'EIO', 6: 'ENXIO', 11: 'EAGAIN', 12: 'ENOMEM', 13: 'EACCES', 16: 'EBUSY',
  19: 'ENODEV', 22: 'EINVAL', 25: 'ENOTTY', 28: 'ENOSPC', 32: 'EPIPE', 34: 'ERANGE', 61: 'ENODATA', 71: 'EPROTO',
  75: 'EOVERFLOW', 95: 'EOPNOTSUPP', 110: 'ETIMEDOUT',
}
export const errnoName = (n: number) => ERRNO_NAMES[n] ?? `errno ${n}`

const errno = () => read.i32(libc.symbols.__errno_location()!, 0)

/** Thrown for a failed system call; `code` is the errno name. */
export class SysError extends DeviceError {
  constructor(
    readonly errno: number,
    readonly call: string,
  ) {
    super(errnoName(errno), `${call} failed: ${errnoName(errno)}`)
  }
}

export function openDevice(path: string): number {
  const fd = libc.symbols.open(Buffer.from(path + '\0'), O_RDWR | O_NONBLOCK | O_CLOEXEC)
  if (fd < 0) throw new SysError(errno(), `open ${path}`)
  return fd
}

export function closeDevice(fd: number): void {
  libc.symbols.close(fd)
}

/** ioctl(fd, request, buf); returns 0 or throws SysError. EINTR is retried. */
export function ioctl(fd: number, request: number, buf: Uint8Array, name: string): void {
  for (;;) {
    if (libc.symbols.ioctl(fd, request, buf) === 0) return
    const e = errno()
    if (e !== 4) throw new SysError(e, name)
  }
}

/** ioctl that reports an errno instead of throwing: for enumerations that end with EINVAL. */
export function tryIoctl(fd: number, request: number, buf: Uint8Array): number {
  for (;;) {
    if (libc.symbols.ioctl(fd, request, buf) === 0) return 0
    const e = errno()
    if (e !== 4) return e
  }
}
