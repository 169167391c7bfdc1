// A device worker whose "device" stalls: it speaks the real protocol (drivers/v4l2/protocol.ts) but a
// control set blocks the thread in a real system call (nanosleep through libc) for `value` ms — what a
// UVC control transfer to a wedged camera does. Its one control, "Stall", holds the last value set.
import { dlopen } from 'bun:ffi'
import type { Control } from '../../../core/types'
import type { Probe, SetAnswer, WorkerReply, WorkerRequest } from '../../../drivers/v4l2/protocol'
import { STALL_BUS, STALL_CONTROL, WEDGED_BUS } from './stall'

const libc = dlopen('libc.so.6', { usleep: { args: ['u32'], returns: 'i32' } })

let held = 0
const controls = (): Control[] => [
  { control_id: STALL_CONTROL, name: 'Stall (ms)', value: held, flags: { control_type: 'INTEGER', min_value: 0, max_value: 10_000, step: 1, default_value: 0 } },
]

declare const self: Worker
self.onmessage = (ev: MessageEvent<WorkerRequest>) => {
  const req = ev.data
  let result: unknown
  if (req.op === 'probe') {
    // A node named after the stall is a camera that stopped answering: its enumeration hangs for 3 s.
    if (req.nodes.some((n) => n.includes('wedged'))) libc.symbols.usleep(3_000_000)
    const bus_info = req.nodes.some((n) => n.includes('wedged')) ? WEDGED_BUS : STALL_BUS
    const cap = { driver: 'stall', card: 'Stalling camera', bus_info, version: 0, capabilities: 0x84000001, device_caps: 0x04000001 }
    const probe: Probe = { nodes: req.nodes.map((path) => ({ path, cap, identity: STALL_BUS, formats: null })), controls: { [bus_info]: { node: req.nodes[0]!, controls: controls() } }, failed: [] }
    result = probe
  } else if (req.op === 'setControl') {
    libc.symbols.usleep(Number(req.value) * 1000)
    held = Number(req.value)
    result = { value: held, controls: req.withControls ? controls() : null } satisfies SetAnswer
  } else if (req.op === 'controls') {
    result = controls()
  }
  self.postMessage({ id: req.id, ok: true, result } satisfies WorkerReply)
}
