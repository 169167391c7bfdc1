// The real V4L2 plugin over one stalling camera, for the real service process (core/main.ts --plugins
// cameras,./tests/kernel/host/stall-plugin.ts): everything is the service's own code — the front, the
// cameras plugin, the V4L2 backend, its worker pool and deadlines — except the device, a worker thread
// that blocks in a real system call for as long as it is told (stall-worker.ts).
import { mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { v4l2Plugin } from '../../../plugins/v4l2'

// A sysfs look-alike: one node whose parent device is a directory of the temp tree.
const root = mkdtempSync(join(tmpdir(), 'v4l2-stall-'))
mkdirSync(join(root, 'devices/stall0'), { recursive: true })
mkdirSync(join(root, 'class/video0'), { recursive: true })
symlinkSync(join(root, 'devices/stall0'), join(root, 'class/video0/device'))
process.on('exit', () => rmSync(root, { recursive: true, force: true }))

export default v4l2Plugin({ sysfsRoot: join(root, 'class'), devDir: root, workerUrl: new URL('./stall-worker.ts', import.meta.url), ioTimeoutMs: 10_000 })
