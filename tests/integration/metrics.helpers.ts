// Shared by the /metrics tests: Prometheus's own checker (`promtool check metrics`, Debian's prometheus
// package: scripts/setup/metrics.sh), and a scrape read by the strict parser of tests/helpers.ts.
import { parseMetrics } from '../helpers'

/** promtool's path; fails (never skips) when it is missing, naming the setup script. */
export function requirePromtool(): string {
  const promtool = Bun.which('promtool')
  if (!promtool) throw new Error('promtool is missing: run scripts/setup/metrics.sh (Debian package prometheus)')
  return promtool
}

/** promtool's verdict on the text: it parses it and lints names, types, units and help. */
export async function promtoolCheck(text: string): Promise<{ code: number; output: string }> {
  const proc = Bun.spawn([requirePromtool(), 'check', 'metrics'], { stdin: new Blob([text]), stdout: 'pipe', stderr: 'pipe' })
  const [out, err, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited])
  return { code, output: (out + err).trim() }
}

/** GET <origin>/metrics: the text as served (for promtool) and parsed. Throws on anything but a 200. */
export async function scrape(origin: string): Promise<{ text: string; m: ReturnType<typeof parseMetrics> }> {
  const res = await fetch(`${origin}/metrics`)
  const text = await res.text()
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 200)}`)
  return { text, m: parseMetrics(text) }
}
