// The rules of an IpConfiguration body that a schema cannot say, reported the way pydantic reports a
// failing validator (type value_error), every error at once.
import type { Static } from 'elysia'
import { RequestValidationError, type PydanticError } from '../../core/errors'
import type { IpConfiguration as IpConfigurationSchema } from '../../core/schemas'
import type { IpConfiguration } from '../../core/types'
import { IPV4_METHODS, isIpv4 } from '../../drivers/networkmanager/ipv4'

type Body = Static<typeof IpConfigurationSchema>

const valueError = (loc: (string | number)[], why: string, input: unknown): PydanticError => ({
  type: 'value_error',
  loc,
  msg: `Value error, ${why}`,
  input,
  ctx: { error: why },
})

/** Checks a schema-valid body and returns it in the driver's shape (no gateway = ''). */
export function ipConfiguration(body: Body): IpConfiguration {
  const errors: PydanticError[] = []
  if (!(IPV4_METHODS as readonly string[]).includes(body.method))
    errors.push(valueError(['body', 'method'], `method must be one of ${IPV4_METHODS.join(', ')}`, body.method))
  body.ip_addresses.forEach((a, i) => {
    if (!isIpv4(a.address)) errors.push(valueError(['body', 'ip_addresses', i, 'address'], `'${a.address}' is not a valid IPv4 address`, a.address))
    if (a.prefix < 0 || a.prefix > 32) errors.push(valueError(['body', 'ip_addresses', i, 'prefix'], 'prefix must be from 0 to 32', a.prefix))
  })
  if (body.method === 'manual' && body.ip_addresses.length === 0)
    errors.push(valueError(['body', 'ip_addresses'], "method 'manual' needs at least one address", body.ip_addresses))
  if (body.gateway && !isIpv4(body.gateway)) errors.push(valueError(['body', 'gateway'], `'${body.gateway}' is not a valid IPv4 address`, body.gateway))
  body.dns.forEach((d, i) => {
    if (!isIpv4(d)) errors.push(valueError(['body', 'dns', i], `'${d}' is not a valid IPv4 address`, d))
  })
  if (errors.length) throw new RequestValidationError(errors)
  return { ip_addresses: body.ip_addresses, gateway: body.gateway ?? '', method: body.method, dns: body.dns, never_default: body.never_default }
}
