// The kernel tier (npm run test:kernel): host-side tests (ABI layout against the kernel headers, worker
// deadlines, the DWE extension-unit protocol), then the V4L2 tests inside a QEMU VM with vivid, whose
// results come out through the VM's writable 9p share. Exits non-zero on any failure or when the VM
// cannot boot.
import { spawnSync } from 'node:child_process'
import { partFailure, selectVmTests, sumCounts } from './select'
import { REPO, runInVm, VmError } from './vm'

const bun = process.execPath
// The VM runs in ~75 s on an idle machine; TCG slows several-fold when another suite shares the 2 cores.
const VM_TIMEOUT_MS = Number(process.env.PERISCOPE_VM_TIMEOUT_MS ?? 900_000)
/** How long the tier waits for another suite's VM to finish (its own VM's run under load: ~10 minutes). */
const VM_LOCK_WAIT_S = 900
/** One test file that hangs is killed, and the files after it still run. */
const FILE_TIMEOUT_S = 300
const failures: string[] = []
const totals = { pass: 0, fail: 0 }
const add = (counts: { pass: number; fail: number }) => {
  totals.pass += counts.pass
  totals.fail += counts.fail
}

console.log('kernel tier: host tests (tests/kernel/host)')
const host = spawnSync(bun, ['test', 'tests/kernel/host'], { cwd: REPO, encoding: 'utf8', timeout: 180_000 })
const hostOut = `${host.stdout ?? ''}${host.stderr ?? ''}`
console.log(hostOut.replace(/^/gm, '  [host] '))
const hostCounts = sumCounts(hostOut)
add(hostCounts)
const hostFailure = partFailure('host tests', host.status, hostCounts)
if (hostFailure) failures.push(hostFailure)

// Refused before booting: a filter that names nothing, or a file that does not exist.
let vmFiles: string[] = []
try {
  vmFiles = selectVmTests(process.env.PERISCOPE_VM_TESTS)
} catch (e) {
  failures.push((e as Error).message)
}

/**
 * The VM, one at a time on this machine: two suites' VMs at once (two clones' `npm test`) share 2 cores
 * under TCG, and the time-bound tests inside them fail (an RTSP read waited 240 s for a tone in both). A
 * machine-wide lock (flock, as scripts/setup/apt.sh's), held by a child that lets go when its stdin
 * closes: at our end, or when this process dies. Resolves with its release once held.
 */
async function vmLock(): Promise<() => void> {
  const path = '/run/lock/periscope-kernel-vm.lock'
  const started = performance.now()
  const holder = Bun.spawn(['flock', '-w', String(VM_LOCK_WAIT_S), path, 'sh', '-c', 'echo held; cat > /dev/null'], { stdin: 'pipe', stdout: 'pipe', stderr: 'ignore' })
  const reader = (holder.stdout as ReadableStream<Uint8Array>).getReader()
  const first = await reader.read()
  if (first.done) throw new Error(`another suite's VM held ${path} for more than ${VM_LOCK_WAIT_S} s`)
  const waited = (performance.now() - started) / 1000
  if (waited > 1) console.log(`kernel tier: waited ${waited.toFixed(0)} s for another suite's VM (${path})`)
  return () => {
    holder.stdin.end()
    reader.cancel().catch(() => {})
  }
}

if (vmFiles.length) {
  console.log('\nkernel tier: booting the VM (QEMU TCG, Debian kernel, vivid n_devs=2) for tests/kernel/vm')
  let release: (() => void) | null = null
  try {
    release = await vmLock()
    // One bun process per file (PERISCOPE_VM_TESTS=stream,rtsp runs only those).
    const files = vmFiles.map((f) => `tests/kernel/vm/${f}.test.ts`)
    const runFile = (f: string) =>
      `timeout -k 5 ${FILE_TIMEOUT_S} ./node_modules/.bin/bun test --timeout 60000 ${f}; s=$?\n` +
      // In bun test's own form (a file header, a "(fail)" line): the runner names the killed file.
      `if [ $s -eq 124 ] || [ $s -eq 137 ]; then printf '\\n${f}:\\n(fail) (killed, exit %s: it ran past ${FILE_TIMEOUT_S} s, or something killed it)\\n' $s; fi\n[ $s -eq 0 ] || rc=1`
    const script = `rc=0\n${files.map(runFile).join('\n')}\nexit $rc`
    let out = ''
    let printed = 0
    const printLines = (flush: boolean) => {
      const end = flush ? out.length : out.lastIndexOf('\n') + 1
      if (end > printed) console.log(out.slice(printed, end).replace(/\n$/, '').replace(/^/gm, '  [vm] '))
      printed = Math.max(printed, end)
    }
    const run = await runInVm(script, {
      timeoutMs: VM_TIMEOUT_MS,
      onOutput: (text) => {
        out += text
        printLines(false)
      },
    }).finally(() => printLines(true))
    const vmCounts = sumCounts(out)
    add(vmCounts)
    console.log(`VM finished in ${run.seconds.toFixed(1)} s`)
    if (run.rc === null) failures.push('the VM tests wrote no result (crashed?)')
    else {
      const vmFailure = partFailure('VM tests', run.rc, vmCounts)
      if (vmFailure) failures.push(vmFailure)
    }
  } catch (e) {
    failures.push(e instanceof VmError ? `VM: ${e.message}` : `VM harness: ${(e as Error).stack}`)
  } finally {
    release?.()
  }
}

console.log(`\n ${totals.pass} pass\n ${Math.max(totals.fail, failures.length ? 1 : 0)} fail`)
if (failures.length) {
  // Under this file's name in bun test's form, so the runner's summary names where each failure is.
  console.log(`\ntests/kernel/run.ts:\n${failures.map((f) => `(fail) ${f.split('\n')[0]}`).join('\n')}`)
  console.error(`\nKERNEL TIER FAILED:\n- ${failures.join('\n- ')}`)
  process.exit(1)
}
console.log('\nkernel tier: all passed')
