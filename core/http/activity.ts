// Any request, even a refused one, means an API client is still there: the network rollback watches
// when one was last heard from. Paths that machines poll (a metrics scraper, which may run on the
// vehicle itself and would keep an address change alive with the tether cut) do not count.
import { Elysia } from 'elysia'
import { requestPath } from '../front'
import type { AppContext } from '../plugin'

export function clientActivity(activity: AppContext['activity'], backgroundPaths: readonly string[] = []) {
  const background = new Set(backgroundPaths)
  return new Elysia({ name: 'periscope:activity' }).onRequest(({ request }) => {
    if (background.size && background.has(requestPath(request))) return
    activity.lastRequestAt = Date.now()
  })
}
