// What the service's own OpenAPI document (/openapi.json) says about a field: its description, its
// allowed values. The pages show the service's rules from there instead of keeping a copy of them,
// so a rule changed on the server is shown as changed. Loaded once per page load, when first needed.
import { useEffect, useState } from 'preact/hooks'
import { get } from './api'

/** The few parts of an OpenAPI 3.1 document read here. */
interface Schema {
  description?: string
  enum?: unknown[]
  examples?: unknown[]
  maxLength?: number
  properties?: Record<string, Schema>
  anyOf?: Schema[]
}
interface ApiDoc {
  paths: Record<string, Record<string, { parameters?: { name: string; in: string; schema?: Schema }[] }>>
  components?: { schemas?: Record<string, Schema> }
}

let loading: Promise<ApiDoc> | null = null

function apiDoc(): Promise<ApiDoc> {
  loading ??= get<ApiDoc>('/openapi.json').catch((e) => {
    loading = null // a later use tries again
    throw e
  })
  return loading
}

/** A path parameter's schema: `parameter('/api/recordings/{old_name}/{new_name}', 'patch', 'new_name')`. */
export const parameter = (doc: ApiDoc, path: string, method: string, name: string): Schema | undefined =>
  doc.paths[path]?.[method]?.parameters?.find((p) => p.name === name && p.in === 'path')?.schema

/** A property of a named component schema: `property(doc, 'IpConfiguration', 'method')`. */
export const property = (doc: ApiDoc, component: string, name: string): Schema | undefined => doc.components?.schemas?.[component]?.properties?.[name]

/** `pick(doc)` once the document is loaded (null until then, or when it could not be). */
export function useApiDoc<T>(pick: (doc: ApiDoc) => T): T | null {
  const [value, setValue] = useState<T | null>(null)
  useEffect(() => {
    let live = true
    apiDoc().then(
      (doc) => live && setValue(() => pick(doc)),
      () => {}, // the page works without the rules: the service's 422 still names what is wrong
    )
    return () => void (live = false)
  }, [])
  return value
}
