// The RTSP helper (plugins/rtsp/server.py) writes every thread's Python stack to stderr on SIGUSR1 and
// goes on serving: the supervisor (plugins/rtsp/helper.ts) sends it to a helper that stopped answering,
// just before it kills it, so the log of that exit says where its threads were stuck.
import { afterAll, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import { join } from 'node:path'
import { SYSTEM_PYTHON } from '../../plugins/rtsp/helper'
import { freeTcpPort, requireRtspClients, waitFor } from './gstreamer.helpers'

const SERVER = join(import.meta.dir, '../../plugins/rtsp/server.py')
let helper: Subprocess<'pipe', 'pipe', 'pipe'> | null = null

afterAll(async () => {
  helper?.stdin.end() // stdin closing ends the helper
  if (helper && (await Promise.race([helper.exited.then(() => true), Bun.sleep(5000).then(() => false)])) === false) {
    helper.kill('SIGKILL')
    await helper.exited
  }
})

/** Every line a stream gives, as it comes. */
function collect(stream: ReadableStream<Uint8Array>, into: string[]): void {
  void (async () => {
    let rest = ''
    for await (const chunk of stream) {
      rest += new TextDecoder().decode(chunk)
      for (let nl = rest.indexOf('\n'); nl >= 0; nl = rest.indexOf('\n')) {
        into.push(rest.slice(0, nl))
        rest = rest.slice(nl + 1)
      }
    }
  })()
}

test("SIGUSR1: the helper's threads' stacks on stderr, and it still answers", async () => {
  requireRtspClients()
  const out: string[] = []
  const err: string[] = []
  helper = Bun.spawn([SYSTEM_PYTHON, SERVER, String(freeTcpPort()), '127.0.0.1', '8', '64', '10'], { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe' })
  collect(helper.stdout, out)
  collect(helper.stderr, err)
  await waitFor('the helper ready', () => out.some((l) => l.includes('"ready"')), 15_000)
  helper.kill('SIGUSR1')
  await waitFor('the stacks on stderr', () => err.some((l) => /File ".*server\.py", line \d+ in main/.test(l)), 10_000)
  expect(err.some((l) => /^(Current thread|Thread) 0x/.test(l))).toBe(true)
  helper.stdin.write(JSON.stringify({ op: 'ping' }) + '\n')
  helper.stdin.flush()
  await waitFor('a pong after the stacks', () => out.some((l) => l.includes('"pong"')), 10_000)
  expect(helper.exitCode).toBeNull()
}, 30_000)
