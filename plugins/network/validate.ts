// The rule of an IpConfiguration body that a schema cannot say (method manual needs an address), reported
// the way pydantic reports a failing validator (type value_error).
import { RequestValidationError, type PydanticError } from '../../core/errors'
import type { IpConfiguration } from '../../core/types'

const valueError = (loc: (string | number)[], why: string, input: unknown): PydanticError => ({
  type: 'value_error',
  loc,
  msg: `Value error, ${why}`,
  input,
  ctx: { error: why },
})

/**
 * Checks a schema-valid body (the schema already holds the methods, address syntax and prefix range)
 * and returns it in the driver's shape (no gateway = '').
 */
export function ipConfiguration(body: IpConfiguration): IpConfiguration {
  const errors: PydanticError[] = []
  if (body.method === 'manual' && body.ip_addresses.length === 0)
    errors.push(valueError(['body', 'ip_addresses'], "method 'manual' needs at least one address", body.ip_addresses))
  if (errors.length) throw new RequestValidationError(errors)
  return { ip_addresses: body.ip_addresses, gateway: body.gateway ?? '', method: body.method, dns: body.dns, never_default: body.never_default }
}
