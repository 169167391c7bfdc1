// Debian's nginx (scripts/setup/nginx.sh) as a reverse proxy in front of the service, serving it under a
// path prefix that it strips, as BlueOS shows an extension's page (http://blueos.local/extensionv2/<name>/
// → the service's `/`). Our own process: a temporary config, `daemon off` and no master process, on a
// free loopback port; stopped by its pid. The location block is the one the README's console section
// documents (proxyLocation).
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Subprocess } from 'bun'
import { freeTcpPort, tempDir, until } from '../helpers'

export const NGINX = '/usr/sbin/nginx'

/** Fails (never skips) when nginx is missing, naming the setup script. */
export function requireNginx(): void {
  if (!existsSync(NGINX)) throw new Error(`${NGINX} is missing: run scripts/setup/nginx.sh (apt-get install nginx)`)
}

/**
 * The location block that serves the service at `prefix` (ending in `/`): the trailing slash of
 * proxy_pass strips the prefix; no buffering, so the event stream (/api/events) and MJPEG pass as they
 * come; HTTP/1.1 and long reads, so neither is cut after nginx's default 60 s of quiet.
 */
export function proxyLocation(prefix: string, upstream: string): string {
  return `location ${prefix} {
    proxy_pass ${upstream}/;
    proxy_http_version 1.1;
    proxy_set_header Connection "";
    proxy_buffering off;
    proxy_read_timeout 1h;
  }`
}

export interface ReverseProxy {
  /** http://<host>:<port>: the proxy's origin. */
  origin: string
  /** Where the page is: the origin and the prefix (ending in `/`). */
  pageUrl: string
  /** The requests nginx answered so far, as its access log has them: "METHOD /path STATUS". */
  answered(): string[]
  stop(): Promise<void>
}

/**
 * nginx on 127.0.0.1 serving `upstream` (http://127.0.0.1:<port>) under `prefix`. `host`: how the page
 * names the proxy (default 127.0.0.1; `localhost` makes the page's host differ from the service's own).
 * `more`: further server-level lines (another location, for a test of its own).
 */
export async function startReverseProxy(options: { upstream: string; prefix: string; host?: string; more?: string }): Promise<ReverseProxy> {
  requireNginx()
  const dir = tempDir('periscope-nginx-')
  const port = freeTcpPort()
  for (const sub of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, sub))
  const accessLog = join(dir, 'access.log')
  // A file, not the test's output: the pages' own 404s (a JSON page's favicon) are not news.
  const errorLog = join(dir, 'error.log')
  writeFileSync(
    join(dir, 'nginx.conf'),
    `daemon off;
master_process off;
worker_processes 1;
pid ${join(dir, 'nginx.pid')};
error_log ${errorLog} warn;
events { worker_connections 256; }
http {
  log_format proxylog '$request_method $request_uri $status';
  access_log ${accessLog} proxylog;
  client_body_temp_path ${join(dir, 'body')};
  proxy_temp_path ${join(dir, 'proxy')};
  fastcgi_temp_path ${join(dir, 'fastcgi')};
  uwsgi_temp_path ${join(dir, 'uwsgi')};
  scgi_temp_path ${join(dir, 'scgi')};
  server {
    listen 127.0.0.1:${port};
    ${proxyLocation(options.prefix, options.upstream)}
    ${options.more ?? ''}
  }
}
`,
  )
  let proc: Subprocess | undefined
  const stop = async () => {
    if (proc && proc.exitCode === null && proc.signalCode === null) {
      proc.kill('SIGTERM')
      const done = await Promise.race([proc.exited.then(() => true), Bun.sleep(5000).then(() => false)])
      if (!done) {
        proc.kill('SIGKILL')
        await proc.exited
      }
    }
    rmSync(dir, { recursive: true, force: true })
  }
  const origin = `http://${options.host ?? '127.0.0.1'}:${port}`
  try {
    // -p and -e: its prefix and its first error log in the temp directory too (not /var/log/nginx).
    proc = Bun.spawn([NGINX, '-p', dir, '-e', errorLog, '-c', join(dir, 'nginx.conf')], { stdout: 'ignore', stderr: 'inherit', stdin: 'ignore' })
    await until(
      'nginx to answer',
      () => fetch(`http://127.0.0.1:${port}${options.prefix}api/health`).then((r) => r.status, () => (proc!.exitCode !== null ? -1 : 0)),
      (status) => status === 200 || status === -1,
      15_000,
    )
    if (proc.exitCode !== null) throw new Error(`nginx exited with ${proc.exitCode} before answering: ${existsSync(errorLog) ? readFileSync(errorLog, 'utf8').trim() : ''}`)
  } catch (e) {
    await stop()
    throw e
  }
  return {
    origin,
    pageUrl: `${origin}${options.prefix}`,
    answered: () => (existsSync(accessLog) ? readFileSync(accessLog, 'utf8').split('\n').filter(Boolean) : []),
    stop,
  }
}
