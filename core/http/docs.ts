// The API's documentation: /openapi.json and the Swagger UI at /docs, with its assets served from the
// swagger-ui-dist package, not a CDN (a vehicle at sea has no internet).
import { openapi } from '@elysiajs/openapi'
import { Elysia } from 'elysia'
import { dirname, join } from 'node:path'
import { HttpError } from '../errors'
import { componentSchemas, DECLARED_PARAMETERS } from '../openapi'
import { VERSION } from '../version'

const SWAGGER_DIR = dirname(require.resolve('swagger-ui-dist/package.json'))

export function apiDocs() {
  return new Elysia({ name: 'periscope:docs' })
    .onAfterHandle(({ path, response }) => (path === '/openapi.json' ? withDeclaredParameters(response) : undefined))
    .use(
      openapi({
        path: '/docs',
        specPath: '/openapi.json',
        provider: 'swagger-ui',
        openapiVersion: '3.1.0',
        // A route with a dot is documented like any other (GET /api/streams/{bus_info}/snapshot.jpg), and
        // so is an OPTIONS operation (WHEP's); the assets below are hidden by their own `detail.hide`.
        exclude: { staticFile: false, methods: [] },
        swagger: { version: '5', cdn: '/docs/assets/swagger-ui-bundle.js', theme: '/docs/assets/swagger-ui.css' } as never,
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
    .get('/docs/assets/:file', ({ params }) => {
      if (!/^swagger-ui(-bundle\.js|\.css)$/.test(params.file)) throw new HttpError(404, 'Not Found')
      return Bun.file(join(SWAGGER_DIR, params.file))
    }, { detail: { hide: true } })
}

/**
 * The generator lists only an operation's path parameters, as bare strings, in place of the
 * `parameters` docs() declared whenever the path has any; the query parameters docs() declared
 * (core/openapi.ts) are put back beside them.
 */
function withDeclaredParameters(document: unknown): unknown {
  const paths = (document as { paths?: Record<string, Record<string, Record<string | symbol, unknown>>> } | null)?.paths
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
