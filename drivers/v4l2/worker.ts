// One worker thread per physical device: every blocking ioctl of that device runs here, one at a time,
// so a camera that stalls a control transfer stalls only its own queue, never the HTTP event loop.
import { fstatSync } from 'node:fs'
import { DeviceError } from '../../core/types'
import * as dev from './device'
import { closeDevice, openDevice } from './libc'
import type { Probe, ProbedNode, SetAnswer, WorkerReply, WorkerRequest } from './protocol'
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
 * Menus per node: fixed while a device stays plugged in, and QUERYMENU is one ioctl per item (a UVC
 * camera's is a USB transfer). A re-plug creates a new device node (devtmpfs: a new inode), so each
 * node's menus are kept with the node's dev/inode/rdev and dropped when the node on that path is
 * another one: a camera plugged in where another was never gets the old one's menus. A fresh probe
 * (after every hot-plug event) drops them all, for a /dev that is not devtmpfs.
 */
const menuCache = new Map<string, { node: string; menus: dev.MenuCache }>()
function menusOf(path: string, fd: number): dev.MenuCache {
  const st = fstatSync(fd)
  const node = `${st.dev}:${st.ino}:${st.rdev}`
  let held = menuCache.get(path)
  if (held?.node !== node) menuCache.set(path, (held = { node, menus: new Map() }))
  return held.menus
}

/**
 * Formats do not change while a device stays plugged in (UVC descriptors), and a camera with many of
 * them costs thousands of ioctls and a large message. The backend keeps them and names the ones it
 * has (by node identity); those are answered 'unchanged'.
 */
function probeNode(path: string, known: string | undefined): ProbedNode {
  return withFd(path, (fd) => {
    const cap = dev.queryCap(fd)
    const identity = `${cap.bus_info}|${cap.card}|${cap.driver}|${cap.version}`
    if (known === identity) return { path, cap, identity, formats: 'unchanged' }
    const formats = cap.device_caps & C.V4L2_CAP_VIDEO_CAPTURE ? dev.enumFormats(fd) : {}
    return { path, cap, identity, formats: Object.keys(formats).length ? formats : null }
  })
}

/** Every node's capabilities and formats, and each device's controls. */
function probe(paths: string[], known: Record<string, string>, fresh: boolean): Probe {
  if (fresh) menuCache.clear()
  const nodes: ProbedNode[] = []
  const failed: Probe['failed'] = []
  for (const path of paths) {
    try {
      nodes.push(probeNode(path, fresh ? undefined : known[path]))
    } catch (e) {
      // A node that vanished mid-probe (unplug) is skipped quietly; one we may not open (permissions)
      // or that fails is skipped and reported, so the device's other nodes still show.
      const code = e instanceof DeviceError ? e.code : 'EIO'
      if (code !== 'ENODEV' && code !== 'ENOENT' && code !== 'ENXIO') failed.push({ path, code, message: (e as Error).message })
    }
  }
  if (nodes.length === 0 && failed.length) throw new DeviceError(failed[0]!.code, failed[0]!.message)
  // Per bus_info (one sysfs parent may hold several devices: vivid's instances), the controls of its
  // first /dev/videoN capture node, else of another node with formats, else of its first node.
  const controls: Probe['controls'] = {}
  for (const bus of new Set(nodes.map((n) => n.cap.bus_info))) {
    const own = nodes.filter((n) => n.cap.bus_info === bus)
    const { path: node } = own.find((n) => n.formats && /\/video\d+$/.test(n.path)) ?? own.find((n) => n.formats) ?? own[0]!
    try {
      controls[bus] = { node, controls: withFd(node, (fd) => dev.enumControls(fd, menusOf(node, fd))) }
    } catch (e) {
      const code = e instanceof DeviceError ? e.code : 'EIO'
      failed.push({ path: node, code, message: `reading controls: ${(e as Error).message}` })
      controls[bus] = { node, controls: [] }
    }
  }
  return { nodes, controls, failed }
}

function handle(req: WorkerRequest): unknown {
  switch (req.op) {
    case 'probe':
      return probe(req.nodes, req.known, req.fresh)
    case 'setControl':
      // One open for the set and the re-read: setting one control can change others' flags and values.
      return withFd(req.path, (fd): SetAnswer => {
        const value = dev.setControl(fd, req.control, req.value)
        return { value, controls: req.withControls ? dev.enumControls(fd, menusOf(req.path, fd)) : null }
      })
    case 'controls':
      return withFd(req.path, (fd) => dev.enumControls(fd, menusOf(req.path, fd)))
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
