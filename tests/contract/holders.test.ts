// holdersOf reads /proc as fuser does: a process that holds a file open is named with its pid; the
// service itself and the pids it excludes (its own children) are not; a closed file has no holder.
import { expect, test } from 'bun:test'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describeHolders, holdersOf } from '../../drivers/gstreamer/holders'

test('names the process holding a node, skips excluded pids, and finds none once it is gone', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'holders-'))
  const node = join(dir, 'video0')
  writeFileSync(node, '')
  // sleep inherits fd 3 on the node from the shell it replaces.
  const holder = Bun.spawn(['bash', '-c', `exec 3<"${node}"; exec sleep 60`])
  try {
    const found = await (async () => {
      for (let i = 0; i < 200; i++) {
        const h = holdersOf(node)
        if (h.some((x) => x.pid === holder.pid && x.name === 'sleep')) return h
        await Bun.sleep(25)
      }
      return holdersOf(node)
    })()
    expect(found).toEqual([{ pid: holder.pid, name: 'sleep' }])
    expect(describeHolders(found)).toBe(`sleep (pid ${holder.pid})`)
    expect(holdersOf(node, new Set([holder.pid]))).toEqual([])
    expect(holdersOf(join(dir, 'other'))).toEqual([])
  } finally {
    holder.kill(9)
    await holder.exited
    rmSync(dir, { recursive: true, force: true })
  }
  expect(holdersOf(node)).toEqual([])
  expect(describeHolders([{ pid: 1, name: 'a' }, { pid: 2, name: 'b' }, { pid: 3, name: 'c' }])).toBe('a (pid 1), b (pid 2) and c (pid 3)')
})
