// core/serial.ts: one at a time per key, in the order asked; a failure does not stop the next; keys apart run together.
import { expect, test } from 'bun:test'
import { KeyedSerial } from '../../core/serial'

test('work on one key runs one at a time in order, past a failure; another key does not wait', async () => {
  const serial = new KeyedSerial()
  const log: string[] = []
  const gate = Promise.withResolvers<void>()
  const first = serial.run('a', async () => {
    log.push('a1 start')
    await gate.promise
    log.push('a1 end')
    throw new Error('a1 failed')
  })
  const second = serial.run('a', async () => {
    log.push('a2')
    return 2
  })
  const other = await serial.run('b', async () => {
    log.push('b1')
    return 'b'
  })
  expect(other).toBe('b')
  expect(log).toEqual(['a1 start', 'b1']) // b ran while a1 waited; a2 did not
  gate.resolve()
  await expect(first).rejects.toThrow('a1 failed')
  expect(await second).toBe(2)
  expect(log).toEqual(['a1 start', 'b1', 'a1 end', 'a2'])
})
