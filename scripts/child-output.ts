// What the test runners (scripts/test.ts, tests/arm64/run.ts) do with a child's output: show it as it
// comes and keep it, then read bun test's closing counts from it.

/** Echoes a child's stdout and stderr as they arrive; resolves with all of it once the child has exited. */
export async function echoAndCollect(child: { stdout: ReadableStream<Uint8Array>; stderr: ReadableStream<Uint8Array>; exited: Promise<number> }): Promise<string> {
  let output = ''
  const pump = async (stream: ReadableStream<Uint8Array>, sink: NodeJS.WriteStream) => {
    const decoder = new TextDecoder()
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>) {
      const text = decoder.decode(chunk, { stream: true })
      output += text
      sink.write(text)
    }
  }
  await Promise.all([pump(child.stdout, process.stdout), pump(child.stderr, process.stderr), child.exited])
  return output
}

/** bun test's last "N pass" and "N fail" lines (or a tier's "N passed"), or null when it printed none. */
export function testCounts(output: string): { passed: number; failed: number } | null {
  const pass = [...output.matchAll(/^\s*(\d+) pass(?:ed)?\s*$/gm)].at(-1)
  const fail = [...output.matchAll(/^\s*(\d+) fail(?:ed)?\s*$/gm)].at(-1)
  return pass ? { passed: Number(pass[1]), failed: Number(fail?.[1] ?? 0) } : null
}

/**
 * The names of the tests bun test reported failed (its "(fail) name [12.3ms]" lines, also behind the
 * kernel VM's "[vm]" prefix), each once, in order: the run's summary repeats them, so the end of a long
 * CI log says which tests failed.
 */
export function failedTests(output: string): string[] {
  const names = [...output.matchAll(/^\s*(?:\[\w+\]\s*)?\(fail\)\s+(.*?)(?:\s+\[[\d.]+m?s\])?\s*$/gm)].map((m) => m[1]!)
  return [...new Set(names)]
}
