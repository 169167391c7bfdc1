// Messages between the backend (main thread) and a device worker.
import type { Control, ControlValue, FormatSize } from '../../core/types'
import type { Capability } from './device'

type Body =
  /** known: node → identity of the nodes whose (non-empty) formats the backend holds; fresh: re-read everything (after a hot-plug event). */
  | { op: 'probe'; nodes: string[]; known: Record<string, string>; fresh: boolean }
  | { op: 'controls'; path: string }
  /** withControls: answer the node's controls too, read in the same open (SetAnswer). */
  | { op: 'setControl'; path: string; control: number; value: ControlValue; withControls: boolean }
  | { op: 'activeFormat'; path: string }
  | { op: 'xuQuery'; path: string; unit: number; selector: number; query: number; data: Uint8Array }

export type WorkerRequest = Body & { id: number }
export type WorkerOp = Body['op']
export type WorkerBody = Body

/** A set's answer: the value the driver holds, and (when asked) every control of the node read right after. */
export interface SetAnswer { value: ControlValue; controls: Control[] | null }

export type WorkerReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; code: string; message: string }

export interface ProbedNode {
  path: string
  cap: Capability
  /** bus_info, card, driver and version: a node answering as another device gets its formats re-read. */
  identity: string
  formats: Record<string, FormatSize[]> | null | 'unchanged'
}
export type Formats = Exclude<ProbedNode['formats'], 'unchanged'>
export interface Probe {
  nodes: ProbedNode[]
  controls: Record<string, { node: string; controls: Control[] }>
  /** Nodes skipped because they failed (a permission, an I/O error), with the errno name. */
  failed: { path: string; code: string; message: string }[]
}
