// Any request, even a refused one, means an API client is still there: the network rollback watches
// when one was last heard from. Machines do not count: paths that machines poll (a metrics scraper,
// which may run on the vehicle itself and would keep an address change alive with the tether cut) and
// crawlers known by their User-Agent (BlueOS's service scanner GETs every documented path).
import { Elysia } from 'elysia'
import { requestPath } from '../front'
import type { AppContext } from '../plugin'

export function clientActivity(activity: AppContext['activity'], backgroundPaths: readonly string[] = [], backgroundAgents: readonly string[] = []) {
  const paths = new Set(backgroundPaths)
  const agents = new Set(backgroundAgents)
  return new Elysia({ name: 'periscope:activity' }).onRequest(({ request }) => {
    if (paths.size && paths.has(requestPath(request))) return
    if (agents.size && agents.has(request.headers.get('user-agent') ?? '')) return
    activity.lastRequestAt = Date.now()
  })
}
