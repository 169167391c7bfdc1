// One worker thread per physical device: every blocking ioctl of that device runs here, one at a time,
// so a camera that stalls a control transfer stalls only its own queue, never the HTTP event loop.
import { DeviceError } from '../../core/types'
import type { ControlValue } from './device'
import * as dev from './device'
import { closeDevice, openDevice } from './libc'
import type { Probe, ProbedNode, WorkerReply, WorkerRequest } from './protocol'
import { C } from './abi'

function withFd<T>(path: string, f: (fd: number) => T): T {
  const fd = openDevice(path)
  try {
    return f(fd)
  } finally {
    closeDevice(fd)
  }
}

/**
 * What does not change while a device stays plugged in: its formats (UVC descriptors) and menus, per
 * node. Thousands of ioctls on a camera with many formats; kept until the backend asks for a fresh
 * probe (every hot-plug rescan does) or the node now answers as another device.
 */
const stable = new Map<string, { identity: string; formats: ProbedNode['formats']; menus: dev.MenuCache }>()

function stableOf(path: string, cap: dev.Capability) {
  const identity = `${cap.bus_info}|${cap.card}|${cap.driver}|${cap.version}`
  let s = stable.get(path)
  if (!s || s.identity !== identity) stable.set(path, (s = { identity, formats: undefined as never, menus: new Map() }))
  return s
}

function probeNode(path: string): ProbedNode {
  return withFd(path, (fd) => {
    const cap = dev.queryCap(fd)
    const s = stableOf(path, cap)
    if (s.formats === undefined) {
      const formats = cap.device_caps & C.V4L2_CAP_VIDEO_CAPTURE ? dev.enumFormats(fd) : {}
      s.formats = Object.keys(formats).length ? formats : null
    }
    return { path, cap, formats: s.formats }
  })
}

/** Every node's capabilities and formats, and each device's controls. */
function probe(paths: string[], fresh: boolean): Probe {
  if (fresh) stable.clear()
  const nodes: ProbedNode[] = []
  for (const path of paths) {
    try {
      nodes.push(probeNode(path))
    } catch (e) {
      // A node that vanished mid-probe (unplug) is skipped; anything else is the device's failure.
      if (!(e instanceof DeviceError && (e.code === 'ENODEV' || e.code === 'ENOENT' || e.code === 'ENXIO'))) throw e
    }
  }
  // Per bus_info (one sysfs parent may hold several devices: vivid's instances), the controls of its
  // first /dev/videoN capture node, else of another node with formats, else of its first node.
  const controls: Probe['controls'] = {}
  for (const bus of new Set(nodes.map((n) => n.cap.bus_info))) {
    const own = nodes.filter((n) => n.cap.bus_info === bus)
    const node = (own.find((n) => n.formats && /\/video\d+$/.test(n.path)) ?? own.find((n) => n.formats) ?? own[0]!).path
    const menus = stable.get(node)?.menus
    controls[bus] = { node, controls: withFd(node, (fd) => dev.enumControls(fd, menus)) }
  }
  return { nodes, controls }
}

function handle(req: WorkerRequest): unknown {
  switch (req.op) {
    case 'probe':
      return probe(req.nodes, req.fresh)
    case 'setControl':
      return withFd(req.path, (fd) => dev.setControl(fd, req.control, req.value as ControlValue))
    case 'controls':
      return withFd(req.path, (fd) => dev.enumControls(fd))
    case 'activeFormat':
      return withFd(req.path, (fd) => dev.activeFormat(fd))
    case 'xuQuery':
      return withFd(req.path, (fd) => dev.xuQuery(fd, { unit: req.unit, selector: req.selector, query: req.query, data: req.data }))
  }
}

declare const self: Worker
self.onmessage = (ev: MessageEvent<WorkerRequest>) => {
  const req = ev.data
  let reply: WorkerReply
  try {
    reply = { id: req.id, ok: true, result: handle(req) }
  } catch (e) {
    const code = e instanceof DeviceError ? e.code : 'EIO'
    reply = { id: req.id, ok: false, code, message: (e as Error).message }
  }
  self.postMessage(reply)
}
