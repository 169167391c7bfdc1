// Boots Debian's kernel in QEMU (TCG, -cpu max: Bun needs AVX2; one vCPU: with two, the guest kernel
// sometimes locked up on a loaded host, a CPU's timer never firing) with the host's root shared read-only
// over 9p under a tmpfs overlay, and a second, writable 9p share through which the guest's results come
// out. The guest runs one shell script and powers off; every wait is bounded and qemu is killed by pid.
import { spawn, spawnSync } from 'node:child_process'
import { chmodSync, copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'

export const REPO = resolve(import.meta.dir, '../..')
export const CACHE = join(REPO, 'tests/kernel/.cache')
const KROOT = join(CACHE, 'root')

/** insmod order for the 9p root and the overlay (FIELD-NOTES §4). */
const BOOT_MODULES = [
  'virtio_ring', 'virtio', 'virtio_pci_legacy_dev', 'virtio_pci_modern_dev', 'virtio_pci',
  '9pnet', '9pnet_virtio', 'netfs', 'fscache', '9p', 'overlay',
]

export class VmError extends Error {}
/** The guest never reached its script, or its kernel locked up under the emulator: not a test that failed. */
class VmHangError extends VmError {}
/**
 * A guest CPU stuck in the kernel for a minute (seen under TCG with 2 vCPUs on a loaded host: it never came back).
 * Shorter reports can be a starved host thread that recovers, so they are left alone.
 */
export const lockedUp = (consoleText: string) => [...consoleText.matchAll(/soft lockup - CPU#\d+ stuck for (\d+)s/g)].some((m) => Number(m[1]) >= 60)
/** Boot takes ~10 s here, ~20 s with another suite on the cores. */
const BOOT_TIMEOUT_MS = 120_000

export function kernelVersion(): string {
  const dir = join(KROOT, 'lib/modules')
  if (!existsSync(dir)) throw new VmError(`no guest kernel under ${dir}: run scripts/setup/kernel.sh`)
  const v = readdirSync(dir)[0]
  if (!v || !existsSync(join(KROOT, 'boot', `vmlinuz-${v}`))) throw new VmError(`no vmlinuz-${v}: run scripts/setup/kernel.sh`)
  return v
}

function findModule(version: string, name: string): string {
  const out = spawnSync('find', [join(KROOT, 'lib/modules', version, 'kernel'), '-name', `${name}.ko`], { encoding: 'utf8' })
  const path = out.stdout.trim().split('\n')[0]
  if (!path) throw new VmError(`module ${name}.ko missing from the unpacked kernel`)
  return path
}

const INIT = `#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mkdir -p /proc /sys /dev /lower /rw /newroot
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in ${BOOT_MODULES.join(' ')}; do insmod /modules/$m.ko || echo "init: insmod $m failed"; done
fail() { echo "PERISCOPE-VM-FAIL: $*"; echo o > /proc/sysrq-trigger; sleep 5; }
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /lower || fail "9p root"
mount -t tmpfs -o size=512m tmpfs /rw && mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot || fail "overlay"
mkdir -p /newroot/mnt/results
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results /newroot/mnt/results || fail "results share"
umount /proc /sys; umount /dev
exec switch_root /newroot /bin/sh /mnt/results/guest.sh
`

/** Builds the initramfs once per kernel version and init script (cached). */
export function initramfs(version: string): string {
  const tag = Bun.hash(INIT + BOOT_MODULES.join()).toString(16)
  const out = join(CACHE, `initramfs-${version}-${tag}.cpio.gz`)
  if (existsSync(out)) return out
  const dir = join(CACHE, 'initramfs')
  rmSync(dir, { recursive: true, force: true })
  for (const d of ['bin', 'modules']) mkdirSync(join(dir, d), { recursive: true })
  if (!existsSync('/bin/busybox')) throw new VmError('/bin/busybox missing: run scripts/setup/kernel.sh (busybox-static)')
  copyFileSync('/bin/busybox', join(dir, 'bin/busybox'))
  chmodSync(join(dir, 'bin/busybox'), 0o755)
  for (const m of BOOT_MODULES) copyFileSync(findModule(version, m), join(dir, 'modules', `${m}.ko`))
  writeFileSync(join(dir, 'init'), INIT, { mode: 0o755 })
  const r = spawnSync('sh', ['-c', `cd '${dir}' && find . | cpio -o -H newc --quiet | gzip -1 > '${out}.tmp' && mv '${out}.tmp' '${out}'`])
  if (r.status !== 0) throw new VmError(`building the initramfs failed: ${r.stderr}`)
  return out
}

export interface VmRun {
  /** Exit status the guest script recorded, or null when it never wrote one. */
  rc: number | null
  console: string
  resultsDir: string
  seconds: number
}

/**
 * Runs `script` (bash, as root, cwd = the repo) inside a fresh VM. The guest prelude mounts the pseudo
 * filesystems, links the guest kernel's modules and loads vivid; the script's output goes to
 * <results>/out.log and its status to <results>/rc.
 */
type VmOptions = { timeoutMs: number; vividArgs?: string; memMb?: number; onOutput?: (text: string) => void }

export async function runInVm(script: string, opts: VmOptions): Promise<VmRun> {
  try {
    return await bootAndRun(script, opts)
  } catch (e) {
    if (!(e instanceof VmHangError)) throw e
    // A guest that hangs under TCG says nothing about the code under test: one more boot, and say so.
    console.log(`${e.message}\nbooting the VM once more`)
    return await bootAndRun(script, opts)
  }
}

async function bootAndRun(script: string, opts: VmOptions): Promise<VmRun> {
  const version = kernelVersion()
  const initrd = initramfs(version)
  const resultsDir = join(CACHE, 'results')
  rmSync(resultsDir, { recursive: true, force: true })
  mkdirSync(resultsDir, { recursive: true })
  const guest = `#!/bin/sh
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TMPDIR=/tmp
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs tmpfs /dev/shm
# No tmpfs over /tmp: the overlay's upper layer is already tmpfs, and the repo (a CI clone) may live in /tmp.
mount -t tmpfs tmpfs /run
ip link set lo up 2>/dev/null || busybox ip link set lo up
R=/mnt/results
rm -rf /lib/modules/${version}; mkdir -p /lib/modules; ln -s ${KROOT}/lib/modules/${version} /lib/modules/${version}
echo booted > $R/booted
if modprobe vivid ${opts.vividArgs ?? 'n_devs=2'} > $R/modprobe.log 2>&1; then
  cd ${REPO}
  cat > /tmp/script.sh <<'PERISCOPE_EOF'
${script}
PERISCOPE_EOF
  bash /tmp/script.sh > $R/out.log 2>&1
  echo $? > $R/rc.tmp; mv $R/rc.tmp $R/rc
else
  echo "modprobe vivid failed" >> $R/out.log; echo 97 > $R/rc
fi
sync
echo o > /proc/sysrq-trigger
sleep 10
`
  writeFileSync(join(resultsDir, 'guest.sh'), guest, { mode: 0o755 })
  const consoleLog = join(resultsDir, 'console.log')
  const args = [
    '-nodefaults', '-display', 'none', '-no-reboot', '-accel', 'tcg', '-cpu', 'max', '-smp', '1', '-m', String(opts.memMb ?? 2048),
    '-kernel', join(KROOT, 'boot', `vmlinuz-${version}`), '-initrd', initrd,
    '-append', 'console=ttyS0 quiet loglevel=4 panic=-1 rdinit=/init',
    '-serial', `file:${consoleLog}`, '-monitor', 'none', '-nic', 'none',
    '-virtfs', 'local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap',
    '-virtfs', `local,path=${resultsDir},mount_tag=results,security_model=none`,
  ]
  const started = Date.now()
  const qemu = spawn('qemu-system-x86_64', args, { stdio: ['ignore', 'ignore', 'pipe'] })
  let stderr = ''
  qemu.stderr!.on('data', (d) => (stderr += d))
  const exited = new Promise<number | null>((res) => {
    qemu.on('exit', (code) => res(code))
    qemu.on('error', (e) => {
      stderr += String(e)
      res(-1)
    })
  })
  let timer: Timer | undefined
  const timedOut = new Promise<'timeout'>((res) => (timer = setTimeout(() => res('timeout'), opts.timeoutMs)))
  const read = (f: string) => (existsSync(join(resultsDir, f)) ? Bun.file(join(resultsDir, f)).text() : Promise.resolve(''))
  // The guest's output is passed on as it grows, so a run that never ends still shows how far it got.
  let shown = 0
  const passOn = async () => {
    const text = await read('out.log')
    if (text.length > shown) opts.onOutput?.(text.slice(shown))
    shown = Math.max(shown, text.length)
  }
  let booted = false
  let hung: (why: 'boot hung' | 'locked up') => void = () => {}
  const hangs = new Promise<'boot hung' | 'locked up'>((res) => (hung = res))
  const poll = setInterval(async () => {
    await passOn()
    booted ||= existsSync(join(resultsDir, 'booted'))
    if (!booted && Date.now() - started > BOOT_TIMEOUT_MS) hung('boot hung')
    if (lockedUp(await read('console.log'))) hung('locked up')
  }, 1000)
  try {
    const result = await Promise.race([exited, timedOut, hangs])
    clearInterval(poll)
    await passOn()
    const consoleText = await read('console.log')
    if (result === 'boot hung') throw new VmHangError(`the VM did not boot within ${BOOT_TIMEOUT_MS / 1000} s\n--- console ---\n${consoleText.slice(-4000)}`)
    if (result === 'locked up') throw new VmHangError(`the guest kernel locked up (an emulator fault, not a test's)\n--- console ---\n${consoleText.slice(-4000)}`)
    if (result === 'timeout') {
      const out = await read('out.log')
      throw new VmError(
        `the VM did not finish within ${opts.timeoutMs / 1000} s${(await read('booted')) ? '' : ' (it never booted)'}` +
          `\n--- the guest's last output ---\n${out.slice(-2000)}\n--- console ---\n${consoleText.slice(-4000)}`,
      )
    }
    if (!(await read('booted'))) throw new VmError(`the VM did not boot (qemu exit ${result}): ${stderr.trim()}\n--- console ---\n${consoleText.slice(-4000)}`)
    const rcText = (await read('rc')).trim()
    return { rc: rcText ? Number(rcText) : null, console: consoleText, resultsDir, seconds: (Date.now() - started) / 1000 }
  } finally {
    clearTimeout(timer)
    clearInterval(poll)
    if (qemu.exitCode === null && qemu.pid) {
      process.kill(qemu.pid, 'SIGKILL')
      await exited
    }
  }
}

export const fileSize = (p: string) => (existsSync(p) ? statSync(p).size : 0)
