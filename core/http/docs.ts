// The API's documentation: /openapi.json and the Swagger UI at /docs, with its assets served from the
// swagger-ui-dist package, not a CDN (a vehicle at sea has no internet).
import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import { dirname, join } from 'node:path'
import { frameAncestors } from './cors'
import { HttpError } from '../errors'
import { addFrontRefusals, componentSchemas, DECLARED_PARAMETERS } from '../openapi'
import { VERSION } from '../version'

const SWAGGER_DIR = dirname(require.resolve('swagger-ui-dist/package.json'))

export function apiDocs(corsOrigins: readonly string[] = []) {
  return new Elysia({ name: 'periscope:docs' })
    .onAfterHandle(({ path, response }) => (path === '/openapi.json' ? withDeclaredParameters(response) : undefined))
    .use(
      openapi({
        path: '/docs',
        provider: null, // the page is ours (below)
        specPath: '/openapi.json',
        openapiVersion: '3.1.0',
        // A route with a dot is documented like any other (GET /api/streams/{bus_info}/snapshot.jpg), and
        // so is an OPTIONS operation (WHEP's); the assets below are hidden by their own `detail.hide`.
        exclude: { staticFile: false, methods: [] },
        documentation: {
          info: { title: 'Periscope', version: VERSION, description: 'Camera and network management for robots: UVC cameras, RTP streams, recordings, wired network.' },
          tags: [
            { name: 'cameras', description: 'Devices, controls, streams, leader/follower groups' },
            { name: 'network', description: 'Wired network through NetworkManager' },
            { name: 'preferences', description: 'Stored preferences' },
            { name: 'recordings', description: 'Recordings on disk: list, rename, delete, download, zip' },
            { name: 'system', description: 'Health and events' },
          ],
          components: { schemas: componentSchemas() as never },
        },
      }),
    )
    .get(
      '/docs',
      ({ request }) => new Response(DOCS_PAGE, { headers: { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': docsPolicy(request, corsOrigins), 'x-content-type-options': 'nosniff' } }),
      { detail: { hide: true } },
    )
    .get('/docs/assets/swagger-init.js', () => new Response(DOCS_INIT, { headers: { 'content-type': 'text/javascript; charset=utf-8' } }), { detail: { hide: true } })
    .get('/docs/assets/:file', ({ params }) => {
      if (!/^swagger-ui(-bundle\.js|\.css)$/.test(params.file)) throw new HttpError(404, 'Not Found')
      return Bun.file(join(SWAGGER_DIR, params.file))
    }, { detail: { hide: true } })
}

/**
 * The Swagger UI page, ours rather than the generator's: its script is a file (no inline script), so
 * its Content-Security-Policy allows scripts from the service only; inline styles stay (Swagger UI
 * sets them). Framed only where the console may be (core/http/cors.ts).
 */
const DOCS_PAGE = `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8" />
  <meta name="viewport" content="width=device-width, initial-scale=1" />
  <title>Periscope API</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css" />
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/assets/swagger-init.js"></script>
</body>
</html>
`
const DOCS_INIT = `window.ui = SwaggerUIBundle({ dom_id: '#swagger-ui', url: 'openapi.json' })\n`

const docsPolicy = (request: Request, corsOrigins: readonly string[]) =>
  `default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; ${frameAncestors(request, corsOrigins)}`

/**
 * The generator lists only an operation's path parameters, as bare strings, in place of the
 * `parameters` docs() declared whenever the path has any; the query parameters docs() declared
 * (core/openapi.ts) are put back beside them.
 */
function withDeclaredParameters(document: unknown): unknown {
  const paths = (document as { paths?: Record<string, Record<string, Record<string | symbol, unknown>>> } | null)?.paths
  if (paths) addFrontRefusals(paths as never)
  for (const operations of Object.values(paths ?? {})) {
    for (const operation of Object.values(operations)) {
      const declared = operation[DECLARED_PARAMETERS] as { name: string; in: string }[] | undefined
      if (!declared) continue
      const listed = (operation.parameters ?? []) as { name: string; in: string }[]
      operation.parameters = [...declared, ...listed.filter((p) => !declared.some((d) => p.name === d.name && p.in === d.in))]
    }
  }
  return document
}
