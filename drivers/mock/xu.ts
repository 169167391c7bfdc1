// A simulated UVC extension unit, built from a vendor's declaration (core/xu.ts) as firmware would hold
// it: a register of bytes per declared control, at its declared default after power-up. It knows the
// two ways a unit addresses its controls (a selector each, or a command transfer that picks one), never a
// vendor's command bytes, sizes or values: those all come from the declaration it is given.
import { DeviceError, type XuQuery } from '../../core/types'
import { encodeValue, UVC_GET_CUR, UVC_SET_CUR, type ExtensionUnit } from '../../core/xu'

export class SimulatedExtensionUnit {
  private registers = new Map<number, Uint8Array>()
  /** Command addressing: the register the last command transfer picked. */
  private picked: number | null = null

  constructor(readonly declaration: ExtensionUnit) {
    for (const c of declaration.controls) this.registers.set(c.register, encodeValue(declaration, c, c.flags.default_value))
  }

  /** Whether a transfer is addressed to this unit. */
  answers(q: XuQuery): boolean {
    const { unit, addressing } = this.declaration
    if (q.unit !== unit) return false
    return addressing.kind === 'command' ? q.selector === addressing.selector : this.registers.has(q.selector)
  }

  transfer(q: XuQuery): Uint8Array {
    const { size, addressing } = this.declaration
    if (q.query === UVC_SET_CUR && q.data.length !== size) throw new DeviceError('EINVAL', `extension unit transfers are ${size} bytes`)
    if (q.query !== UVC_SET_CUR && q.query !== UVC_GET_CUR) throw new DeviceError('EINVAL', `query 0x${q.query.toString(16)} is not supported`)
    if (addressing.kind === 'selector') return this.access(q.selector, q)
    if (this.picked === null) {
      if (q.query === UVC_GET_CUR) throw new DeviceError('EPROTO', 'GET_CUR without a command transfer first')
      const register = q.data[addressing.prefix.length]!
      if (addressing.prefix.some((b, i) => q.data[i] !== b) || !this.registers.has(register)) throw new DeviceError('EPROTO', 'unknown extension unit command')
      this.picked = register
      return q.data
    }
    const register = this.picked
    this.picked = null
    return this.access(register, q)
  }

  private access(register: number, q: XuQuery): Uint8Array {
    if (q.query === UVC_SET_CUR) {
      this.registers.set(register, new Uint8Array(q.data))
      return q.data
    }
    return new Uint8Array(this.registers.get(register)!)
  }
}
