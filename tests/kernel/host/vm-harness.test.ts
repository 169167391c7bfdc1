// The VM harness tells a guest kernel that locked up (an emulator fault, booted once more) from one that
// only reported a short stall on a loaded host (left to recover): the console lines are the real ones
// of the lockup that made CI red, with two vCPUs under TCG.
import { expect, test } from 'bun:test'
import { lockedUp } from '../vm'

const LOCKED = `[   87.066720] rcu: INFO: rcu_preempt self-detected stall on CPU
[   87.066720] rcu: rcu_preempt kthread timer wakeup didn't happen for 5250 jiffies! g18161 f0x0 RCU_GP_WAIT_FQS(5) ->state=0x402
[  112.662410] watchdog: BUG: soft lockup - CPU#0 stuck for 44s! [bun:328]
[  140.668242] watchdog: BUG: soft lockup - CPU#0 stuck for 71s! [bun:328]`

test('a CPU stuck for a minute is a lockup; a shorter report, or an RCU stall alone, is not (yet)', () => {
  expect(lockedUp(LOCKED)).toBe(true)
  expect(lockedUp(LOCKED.split('\n').slice(0, 3).join('\n'))).toBe(false)
  expect(lockedUp('[    9.1] vivid: loaded')).toBe(false)
})
