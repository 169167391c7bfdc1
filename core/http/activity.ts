// Any request, even a refused one, means an API client is still there: the network rollback watches
// when one was last heard from.
import { Elysia } from 'elysia'
import type { AppContext } from '../plugin'

export function clientActivity(activity: AppContext['activity']) {
  return new Elysia({ name: 'periscope:activity' }).onRequest(() => {
    activity.lastRequestAt = Date.now()
  })
}
