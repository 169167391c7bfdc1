// What the V4L2 driver leans on that only an arm64 process can show, run by the aarch64 Bun under
// qemu-user (npm run test:arm64): the struct layouts as aarch64 code compiled against the kernel's
// headers sees them, read through bun:ffi; libc's ioctl(i32, u64, ptr) resolved in the aarch64 libc and
// passing its arguments; errno from a device worker thread. qemu-user translates no V4L2 ioctl (it answers
// ENOSYS), so a real device is out of reach here: the kernel tier drives vivid on x86-64.
import { afterAll, expect, test } from 'bun:test'
import { dlopen, read } from 'bun:ffi'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { IOCTLS } from '../../drivers/v4l2/abi'
import { closeDevice, ioctl, openDevice } from '../../drivers/v4l2/libc'
import { DeviceWorker } from '../../drivers/v4l2/pool'
import { BUN } from '../helpers'
import { ABI_TABLE, LAYOUT_ENTRIES, layoutProgram, namedValues } from '../kernel/host/layout'

const ROOT = join(import.meta.dir, '..', '..')
const EM_AARCH64 = 183
const FIONREAD = 0x541b // asm-generic, as on x86-64
const ENOSYS = 38

const dir = mkdtempSync(join(tmpdir(), 'periscope-arm64-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** e_machine of an ELF file. */
const elfMachine = (path: string) => readFileSync(path).readUInt16LE(18)

test('this process is arm64, and so is a Bun the tests start', () => {
  expect(process.arch).toBe('arm64')
  expect(elfMachine(process.execPath)).toBe(EM_AARCH64)
  const child = spawnSync(BUN, ['-e', 'console.log(process.arch, Bun.version)'], { encoding: 'utf8', timeout: 60_000 })
  expect({ status: child.status, out: child.stdout.trim() }).toEqual({ status: 0, out: `arm64 ${Bun.version}` })
}, 90_000)

test('struct sizes, field offsets, ioctl numbers and constants as aarch64 code sees them equal abi.ts (an aarch64 shared object read through bun:ffi)', () => {
  writeFileSync(join(dir, 'layout.c'), layoutProgram({ accessor: true }))
  const so = join(dir, 'layout.so')
  const cc = spawnSync('aarch64-linux-gnu-gcc', ['-shared', '-fPIC', '-O0', '-o', so, join(dir, 'layout.c')], { encoding: 'utf8' })
  if (cc.error) throw new Error('aarch64-linux-gnu-gcc is missing: scripts/setup/arm64.sh installs gcc-aarch64-linux-gnu')
  expect({ status: cc.status, stderr: cc.stderr }).toEqual({ status: 0, stderr: '' })
  expect(elfMachine(so)).toBe(EM_AARCH64)
  const lib = dlopen(so, { periscope_layout: { args: [], returns: 'ptr' } })
  try {
    const values = lib.symbols.periscope_layout()!
    const theirs = namedValues(LAYOUT_ENTRIES.map((_, i) => Number(read.u64(values, i * 8))))
    expect(theirs).toEqual(ABI_TABLE)
  } finally {
    lib.close()
  }
  expect(Object.keys(ABI_TABLE).length).toBeGreaterThan(90)
})

test('libc.ts binds the aarch64 libc: ioctl(i32, u64, ptr) passes fd, request and pointer; errno is read back', () => {
  // drivers/v4l2/libc.ts dlopen()ed libc.so.6 when imported; the one mapped is the aarch64 build.
  const libcPath = readFileSync('/proc/self/maps', 'utf8').split('\n').map((l) => l.split(/\s+/)[5]).find((p) => p && /\/libc\.so\.6$/.test(p))
  expect(libcPath).toBeString()
  expect(elfMachine(libcPath!)).toBe(EM_AARCH64)

  // FIONREAD, which qemu-user hands to the kernel: the byte count comes back through the pointer.
  const fifo = join(dir, 'fifo')
  expect(spawnSync('mkfifo', [fifo]).status).toBe(0)
  const fd = openDevice(fifo) // O_RDWR: a FIFO opened both ways needs no peer
  try {
    expect(writeSync(fd, Buffer.from('seven!!'))).toBe(7)
    const count = new Uint8Array(4)
    ioctl(fd, FIONREAD, count, 'FIONREAD')
    expect(new DataView(count.buffer).getInt32(0, true)).toBe(7)
  } finally {
    closeDevice(fd)
  }
  expect(() => openDevice(join(dir, 'missing'))).toThrow(expect.objectContaining({ code: 'ENOENT' }))
})

test('every V4L2 request number reaches the aarch64 ioctl system call as abi.ts computes it', () => {
  // qemu-user does not translate V4L2 ioctls: it logs each one's request (QEMU_LOG=unimp) as the aarch64
  // libc put it in the system call, and answers ENOSYS (a real kernel: ENOTTY on /dev/null).
  const script = `
    const { tryIoctl, openDevice } = await import(${JSON.stringify(join(ROOT, 'drivers/v4l2/libc.ts'))})
    const requests = ${JSON.stringify(Object.values(IOCTLS))}
    const fd = openDevice('/dev/null')
    console.log(JSON.stringify(requests.map((r) => tryIoctl(fd, r, new Uint8Array(256)))))`
  const child = spawnSync(BUN, ['-e', script], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, QEMU_LOG: 'unimp' } })
  expect(child.status).toBe(0)
  expect(JSON.parse(child.stdout)).toEqual(Object.values(IOCTLS).map(() => ENOSYS))
  const logged = [...child.stderr.matchAll(/^Unsupported ioctl: cmd=0x([0-9a-f]+)$/gm)].map((m) => Number(BigInt.asUintN(32, BigInt(`0x${m[1]}`))))
  expect(logged).toEqual(Object.values(IOCTLS))
}, 90_000)

test('a device worker thread (drivers/v4l2/pool.ts) calls libc on arm64 and reports its own errno', async () => {
  const worker = new DeviceWorker('arm64-test')
  try {
    await expect(worker.request({ op: 'controls', path: join(dir, 'no-such-video') }, 60_000, 'controls')).rejects.toMatchObject({ code: 'ENOENT' })
    // A FIFO is no V4L2 node: the first ioctl fails, with the errno qemu-user gives it.
    const fifo = join(dir, 'worker-fifo')
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0)
    await expect(worker.request({ op: 'activeFormat', path: fifo }, 60_000, 'activeFormat')).rejects.toMatchObject({ code: `errno ${ENOSYS}` })
  } finally {
    worker.close(false)
  }
}, 90_000)
