// BlueOS: its helper calls GET /register_service on every port a service listens on and shows what the
// answer names (name, icon, …) in the sidebar, linking to this port. Installed as an extension
// (Dockerfile), Periscope appears there with no configuration; the console works under BlueOS's proxy
// prefix, which `works_in_relative_paths` tells it.
import { Elysia, t } from 'elysia'
import { docs } from '../../core/openapi'
import { definePlugin } from '../../core/plugin'
import { VERSION } from '../../core/version'
import { description } from '../../package.json'

const RegisterServiceModel = t.Object(
  {
    name: t.String({ description: 'The sidebar entry' }),
    description: t.String(),
    icon: t.String({ description: 'A Material Design Icons name, as BlueOS shows them' }),
    company: t.String(),
    version: t.String({ description: 'The API version (as /api/health)' }),
    webpage: t.String({ description: 'The page to open: the console at this port' }),
    api: t.String({ description: 'The API documentation (Swagger UI)' }),
    extras: t.Object(
      { cockpit: t.String({ description: "Cockpit's extras (widgets, actions, joystick suggestions): a path on this port" }) },
      { description: 'What other BlueOS programs read from this extension' },
    ),
    works_in_relative_paths: t.Boolean({
      description: "The pages work under BlueOS's proxy prefix (/extensionv2/<name>/): without it BlueOS disables the sidebar entry when reached through its web proxy",
    }),
  },
  { description: "What BlueOS's service scanner reads for its sidebar" },
)

const REGISTER_SERVICE = {
  name: 'Periscope',
  description,
  icon: 'mdi-camera',
  company: 'Periscope',
  version: VERSION,
  webpage: '/',
  api: '/docs',
  works_in_relative_paths: true,
  // plugins/cockpit serves it (Cockpit's src/libs/blueos.ts fetches it from this service's base URL).
  extras: { cockpit: '/cockpit_extras.json' },
}

/**
 * BlueOS's service scanner (core/services/helper) sends `User-Agent: python` from http.client and GETs
 * `/`, `/register_service`, the docs and then every path the OpenAPI document lists: a machine, not a
 * pilot, so none of it may keep a network change alive.
 */
export const BLUEOS_SCANNER_AGENT = 'python'

export default definePlugin({
  name: 'blueos',
  backgroundPaths: ['/register_service'],
  backgroundAgents: [BLUEOS_SCANNER_AGENT],
  setup() {
    return new Elysia({ name: 'periscope:blueos' }).get('/register_service', () => REGISTER_SERVICE, {
      ...docs({ tag: 'system', summary: "This service's entry in BlueOS's sidebar (BlueOS calls it on every open port)", ok: RegisterServiceModel }),
    })
  },
})
