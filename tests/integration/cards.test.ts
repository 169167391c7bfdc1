// The card helper (tests/cards.ts): removing a card is checked. A busy card is unmounted once it is free
// (umount retried until a deadline), and one still busy at the deadline fails naming the mount and the
// process holding it, instead of an EBUSY from deleting its directory; a file that leaves a card mounted
// fails the per-file leak check. Needs root (mount, losetup).
import { expect, test } from 'bun:test'
import { existsSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { failedTests } from '../../scripts/child-output'
import { loopCard, tmpfsCard } from '../cards'
import { BUN, stopProcess, tempDir } from '../helpers'
import { mountsUnder } from '../leaks'

test('a card held by a process: removal fails at its deadline naming the mount and the holder, and works once it is free', async () => {
  const card = tmpfsCard('1m')
  const holder = Bun.spawn(['sleep', '60'], { cwd: card.dir })
  try {
    const refused = await card.remove(500).then(() => null, (e: Error) => e.message)
    expect(refused).toContain(`the card ${card.dir} is still mounted after 0.5 s of umount`)
    expect(refused).toMatch(new RegExp(`held by: ${holder.pid} sleep 60 \\(holds ${card.dir}\\)`))
    expect(mountsUnder(card.dir)).toHaveLength(1) // not unmounted behind the test's back
  } finally {
    await stopProcess(holder)
  }
  await card.remove()
  expect(mountsUnder(card.dir)).toEqual([])
  expect(existsSync(join(card.dir, '..'))).toBe(false)
}, 30_000)

test('a busy card freed while removal retries is unmounted within the deadline', async () => {
  const card = tmpfsCard('1m')
  const holder = Bun.spawn(['sleep', '0.5'], { cwd: card.dir })
  await card.remove(10_000) // retried while the sleep holds it
  await holder.exited
  expect(mountsUnder(card.dir)).toEqual([])
}, 30_000)

test('a loop card: removal unmounts it and its loop device is detached', async () => {
  const card = loopCard(8)
  expect(mountsUnder(card.dir)).toMatchObject([{ path: card.dir, type: 'ext4' }])
  const image = join(card.dir, '..', 'card.img')
  expect(Bun.spawnSync(['losetup', '-j', image]).stdout.toString()).toContain(image)
  await card.remove()
  expect(mountsUnder(card.dir)).toEqual([])
  expect(existsSync(image)).toBe(false)
}, 30_000)

test('the per-file leak check fails a file that leaves a card mounted, naming the mount', () => {
  const dir = tempDir('periscope-leaky-')
  const cards = join(import.meta.dir, '..', 'cards.ts')
  writeFileSync(join(dir, 'leaky.test.ts'), `import { test } from 'bun:test'\nimport { tmpfsCard } from '${cards}'\ntest('mounts a card and forgets it', () => { console.log('CARD', tmpfsCard('1m').dir) })\n`)
  const r = Bun.spawnSync([BUN, 'test', '--preload', join(import.meta.dir, '..', 'per-file.preload.ts'), './leaky.test.ts'], { cwd: dir, env: { ...process.env, NO_COLOR: '1', PERISCOPE_LEAK_WAIT_MS: '500' } })
  const output = `${r.stdout.toString()}${r.stderr.toString()}`
  const card = /^CARD (\S+)$/m.exec(output)?.[1]
  expect(card).toBeDefined()
  try {
    expect(r.exitCode).toBe(1)
    expect(failedTests(output)).toMatchObject([{ file: 'leaky.test.ts', reason: expect.stringContaining('leak check: leaky.test.ts left behind') }])
    expect(output).toContain(`mount ${card} (tmpfs)`)
  } finally {
    if (mountsUnder(card!).length) Bun.spawnSync(['umount', card!])
    rmSync(join(card!, '..'), { recursive: true, force: true })
    rmSync(dir, { recursive: true, force: true })
  }
  expect(mountsUnder(card!)).toEqual([])
}, 60_000)
