// The console's assets, built by Bun's own bundler from ui/ into memory when the service starts (about
// 10–40 ms here: no build step to run or forget, nothing written to disk, works offline). Each asset is
// named by its content hash, so a browser may cache it for good, and kept gzipped beside the plain bytes,
// since the HTTP front does not compress.
import { join } from 'node:path'

export interface Asset {
  /** `app.<hash>.js`: the name the page asks for. */
  name: string
  type: string
  bytes: Uint8Array<ArrayBuffer>
  gzip: Uint8Array<ArrayBuffer>
}

export interface ConsoleBundle {
  /** The page at `/`, naming the hashed assets. */
  html: Asset
  assets: Map<string, Asset>
  buildMs: number
}

export const UI_DIR = join(import.meta.dir, 'ui')
/** Where the page fetches its assets from. */
export const ASSET_PREFIX = '/console/'

const asset = (name: string, type: string, bytes: Uint8Array<ArrayBuffer>): Asset => ({ name, type, bytes, gzip: Bun.gzipSync(bytes, { level: 9 }) })

export async function buildConsole(): Promise<ConsoleBundle> {
  const started = performance.now()
  const result = await Bun.build({
    entrypoints: [join(UI_DIR, 'app.tsx')],
    target: 'browser',
    minify: true,
    naming: { entry: '[name].[hash].[ext]', asset: '[name].[hash].[ext]', chunk: '[name].[hash].[ext]' },
    define: { 'process.env.NODE_ENV': '"production"' },
    throw: false,
  })
  if (!result.success) throw new Error(`the console's bundle failed to build: ${result.logs.map((l) => l.message).join('; ')}`)
  const assets = new Map<string, Asset>()
  for (const output of result.outputs) {
    const name = output.path.replace(/^\.\//, '')
    const type = name.endsWith('.css') ? 'text/css; charset=utf-8' : name.endsWith('.js') ? 'text/javascript; charset=utf-8' : output.type
    assets.set(name, asset(name, type, new Uint8Array(await output.arrayBuffer())))
  }
  const script = [...assets.keys()].find((n) => n.endsWith('.js'))
  const styles = [...assets.keys()].filter((n) => n.endsWith('.css'))
  if (!script) throw new Error("the console's bundle has no script")
  const html = asset('index.html', 'text/html; charset=utf-8', new TextEncoder().encode(page(ASSET_PREFIX + script, styles.map((s) => ASSET_PREFIX + s))))
  return { html, assets, buildMs: performance.now() - started }
}

function page(script: string, styles: string[]): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="dark light">
<title>Periscope</title>
<link rel="icon" href="data:,">
${styles.map((href) => `<link rel="stylesheet" href="${href}">`).join('\n')}
<script type="module" src="${script}"></script>
</head>
<body><noscript>The Periscope console needs JavaScript; the API is documented at <a href="/docs">/docs</a>.</noscript></body>
</html>
`
}
