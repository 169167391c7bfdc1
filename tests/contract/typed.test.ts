// typed(): a handler's `body`/`query` carry the static types of the schemas docs() validates them with
// (checked by tsc over this file), and that claim holds at run time: a handler naming a schema that its
// route did not validate the request with fails loudly before it runs, never reads unvalidated input.
import { describe, expect, test } from 'bun:test'
import { Elysia, t } from 'elysia'
import { docs } from '../../core/openapi'
import { typed } from '../../core/validation'

const Body = t.Object({ bus_info: t.String(), count: t.Integer({ default: 1 }) })
const Query = t.Object({ n: t.Integer() })
const Other = t.Object({ bus_info: t.String() })

const post = (app: { handle(request: Request): Promise<Response> }, path: string, body: unknown) =>
  app.handle(new Request(`http://localhost${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }))

describe('typed()', () => {
  test('the handler sees the validated, coerced body and query, typed by their schemas', async () => {
    let seen: unknown
    const app = new Elysia().post(
      '/t',
      typed({ body: Body, query: Query }, ({ body, query }) => {
        const busInfo: string = body.bus_info
        const count: number = body.count
        const n: number = query.n
        // @ts-expect-error the schema has no such field
        void body.nope
        // @ts-expect-error the query holds only the schema's keys
        void query.other
        seen = { busInfo, count, n, countType: typeof count, nType: typeof n }
        return { ok: true }
      }),
      { ...docs({ tag: 'test', summary: 'typed', body: Body, query: Query }) },
    )
    const r = await post(app, '/t?n=7', { bus_info: 'usb-1' })
    expect(r.status).toBe(200)
    // pydantic's lax mode: the query's "7" is the integer 7; the missing count takes its default.
    expect(seen).toEqual({ busInfo: 'usb-1', count: 1, n: 7, countType: 'number', nType: 'number' })
  })

  test('a handler naming a body schema its docs() did not validate fails before it runs', async () => {
    let ran = false
    const app = new Elysia().post(
      '/t',
      typed({ body: Other }, () => {
        ran = true
        return { ok: true }
      }),
      { ...docs({ tag: 'test', summary: 'mismatched', body: Body }) },
    )
    const r = await post(app, '/t', { bus_info: 'usb-1' })
    expect(r.status).toBe(500)
    expect(await r.text()).toContain('typed(): the handler of /t names a body schema that its docs() did not validate')
    expect(ran).toBe(false)
  })

  test('a handler claiming a query its route never validates fails before it runs', async () => {
    let ran = false
    const app = new Elysia().post(
      '/t',
      typed({ body: Body, query: Query }, () => {
        ran = true
        return { ok: true }
      }),
      { ...docs({ tag: 'test', summary: 'body only', body: Body }) },
    )
    const r = await post(app, '/t?n=7', { bus_info: 'usb-1' })
    expect(r.status).toBe(500)
    expect(await r.text()).toContain('names a query schema')
    expect(ran).toBe(false)
  })
})
