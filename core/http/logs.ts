// GET /api/logs: the recent log entries kept in memory (core/log.ts's LogRing), so a pilot or a UI sees
// why a stream failed without a shell on the vehicle. The warn and error ones are also pushed as `log`
// events on GET /api/events.
import { Elysia } from 'elysia'
import type { LogRing } from '../log'
import { docs } from '../openapi'
import { LOG_RING_CAPACITY, LogsModel, LogsQuery } from '../schemas'
import { typed } from '../validation'

const DEFAULT_LIMIT = 100

export function logs(ring: LogRing) {
  return new Elysia({ name: 'periscope:logs' }).get(
    '/api/logs',
    typed({ query: LogsQuery }, ({ query }) => ring.query({ since: query.since, level: query.level, limit: query.limit ?? DEFAULT_LIMIT })),
    {
      ...docs({
        tag: 'system',
        summary: 'Recent log entries (in memory), oldest first',
        description:
          `The service keeps its last ${LOG_RING_CAPACITY} entries at warn and above, and apart from them its last ${LOG_RING_CAPACITY} below, ` +
          'of what --log-level lets through (request lines are info). Without `since`: the newest `limit` entries. With `since` (a seq): the oldest `limit` after it, ' +
          'so paging with `next_since` skips none. Sequence numbers start at 1 in each service run: a `since` larger than `next_since` means the service restarted. ' +
          'Entries at warn and above are also sent as `log` events on /api/events.',
        query: LogsQuery,
        ok: LogsModel,
      }),
    },
  )
}
