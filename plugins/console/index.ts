// The pilot's web console: a single-page app at `/` (ui/, TypeScript and Preact, bundled by Bun's own
// bundler when the service starts) that talks only to the public /api, as any integrator does, and
// follows /api/events. Its page and assets are open to read like every GET: with --token set, the page
// itself asks for the token before its first change.
import { Elysia, t } from 'elysia'
import { HttpError, unavailable } from '../../core/errors'
import { frameAncestors } from '../../core/http/cors'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { ASSET_PREFIX, buildConsole, type Asset, type ConsoleBundle } from './bundle'

/**
 * Only the page's own scripts and styles (and its one inline script, by hash: bundle.ts); pictures also
 * from blob:/data:. Requests may also go to other http(s) origins: after an address change the network
 * page confirms it by reaching the vehicle at its new address (CORS), while the page itself was loaded
 * from the old one.
 */
const policy = (inlineScriptHash: string, ancestors: string) =>
  `default-src 'self'; script-src 'self' ${inlineScriptHash}; connect-src 'self' http: https:; img-src 'self' data: blob:; media-src 'self' blob:; object-src 'none'; base-uri 'none'; ${ancestors}`

function answer(request: Request, asset: Asset, cache: string, csp?: string): Response {
  const gzip = /\bgzip\b/.test(request.headers.get('accept-encoding') ?? '')
  const headers: Record<string, string> = { 'content-type': asset.type, 'cache-control': cache, vary: 'accept-encoding', 'x-content-type-options': 'nosniff' }
  if (gzip) headers['content-encoding'] = 'gzip'
  if (csp) headers['content-security-policy'] = csp
  const body = gzip ? asset.gzip : asset.bytes
  // Stated, so that a HEAD (answered by the front with headers only) says it too.
  headers['content-length'] = String(body.byteLength)
  return new Response(body, { headers })
}

export default definePlugin({
  name: 'console',
  setup({ lifecycle, log, config }) {
    let bundle: ConsoleBundle | null = null
    let failure: string | null = null
    const ready = (): ConsoleBundle => {
      if (!bundle) throw unavailable(failure ? `The web console could not be built: ${failure}` : 'The web console is not built yet: the service is starting')
      return bundle
    }

    lifecycle({
      async start() {
        try {
          bundle = await buildConsole()
          log.info('web console built', { ms: Math.round(bundle.buildMs), assets: [...bundle.assets.values()].map((a) => ({ name: a.name, bytes: a.bytes.byteLength, gzip: a.gzip.byteLength })) })
        } catch (e) {
          // The API serves on without its page.
          failure = (e as Error).message
          log.error('web console not built', { err: e })
        }
      },
      health: () => (failure ? { state: 'down', detail: failure } : { state: 'ok', ...(bundle ? { build_ms: Math.round(bundle.buildMs) } : {}) }),
    })

    return new Elysia({ name: 'periscope:console' })
      .get(
        '/',
        ({ request }) => {
          const { html, inlineScriptHash } = ready()
          // Framed only by the pages that may call the service (core/http/cors.ts).
          return answer(request, html, 'no-cache', policy(inlineScriptHash, frameAncestors(request, config.corsOrigins)))
        },
        {
          ...docs({ tag: 'system', summary: 'The web console (an HTML page; its scripts come from console/…, relative to it)', ok: { content: { 'text/html': { schema: t.String() } } }, errors: [503] }),
        },
      )
      .get(
        `${ASSET_PREFIX}:file`,
        ({ request, params }) => {
          const asset = ready().assets.get(params.file)
          if (!asset) throw new HttpError(404, `No console asset '${params.file}': reload the page (the service was updated)`)
          // Named by content hash: a name never changes meaning.
          return answer(request, asset, 'public, max-age=31536000, immutable')
        },
        {
          ...docs({
            tag: 'system',
            summary: "The web console's scripts and styles, named by content hash (gzipped when the client accepts it)",
            pathParams: ['file'],
            ok: { content: { 'text/javascript': { schema: t.String() }, 'text/css': { schema: t.String() } } },
            errors: [404, 503],
          }),
        },
      )
  },
})
