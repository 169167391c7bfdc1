// The console's assets, built by Bun's own bundler from ui/ into memory when the service starts (about
// 10–40 ms here: no build step to run or forget, nothing written to disk, works offline). Each asset is
// named by its content hash, so a browser may cache it for good, and kept gzipped beside the plain bytes,
// since the HTTP front does not compress.
//
// The page names everything relatively (`console/app.<hash>.js`, never `/console/…`), so it works
// unchanged at `/` and behind a reverse proxy that serves it under a prefix it strips (BlueOS's
// `/extensionv2/periscope/`, nginx at a sub-path); the UI resolves its API URLs the same way (ui/api.ts).
import { createHash } from 'node:crypto'
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
  /** The page's one inline script (TRAILING_SLASH), as a CSP source: `'sha256-…'`. */
  inlineScriptHash: string
  assets: Map<string, Asset>
  buildMs: number
}

export const UI_DIR = join(import.meta.dir, 'ui')
/** Where the service serves the page's assets. */
export const ASSET_PREFIX = '/console/'
/** How the page names them: relative to the page, so under a proxy's prefix too. */
const ASSET_HREF = ASSET_PREFIX.slice(1)

/**
 * Run before anything else on the page: loaded as `…/periscope` (a proxy's prefix without its final
 * slash), every relative URL would resolve one directory too high (`…/console/app.js` beside the
 * prefix, not under it), so the page goes to `…/periscope/` first. At the service's own `/` the path
 * always ends in a slash: it does nothing.
 */
const TRAILING_SLASH = "if(!location.pathname.endsWith('/'))location.replace(location.pathname+'/'+location.search+location.hash)"


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
  const html = asset('index.html', 'text/html; charset=utf-8', new TextEncoder().encode(page(ASSET_HREF + script, styles.map((s) => ASSET_HREF + s))))
  const inlineScriptHash = `'sha256-${createHash('sha256').update(TRAILING_SLASH).digest('base64')}'`
  return { html, inlineScriptHash, assets, buildMs: performance.now() - started }
}

function page(script: string, styles: string[]): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="dark light">
<title>Periscope</title>
<script>${TRAILING_SLASH}</script>
<link rel="icon" href="data:,">
${styles.map((href) => `<link rel="stylesheet" href="${href}">`).join('\n')}
<script type="module" src="${script}"></script>
</head>
<body><noscript>The Periscope console needs JavaScript; the API is documented at <a href="docs">docs</a>.</noscript></body>
</html>
`
}
