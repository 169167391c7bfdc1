// NetworkManager's ipv4 setting ⇄ the API's IpConfiguration. Pure functions.
import type { IpConfiguration } from '../../core/types'
import { IPV4_METHODS, IPV4_PATTERN } from '../../core/schemas'
import { Variant } from './bus'

// The methods and the address syntax are the API schema's (core/schemas.ts), so the document says them.
export { IPV4_METHODS }

const DOTTED = new RegExp(IPV4_PATTERN)

/** A dotted-quad IPv4 address without leading zeros (Python's ipaddress rejects "010.0.0.1" too). */
export const isIpv4 = (s: string): boolean => DOTTED.test(s)

// ipv4.dns is `au`: each address in network byte order, read as a host-order (little-endian) integer.
export const dnsToDotted = (n: number): string => [n & 255, (n >>> 8) & 255, (n >>> 16) & 255, n >>> 24].join('.')
export function dottedToDns(s: string): number {
  const [a, b, c, d] = s.split('.').map(Number) as [number, number, number, number]
  return (a | (b << 8) | (c << 16) | (d << 24)) >>> 0
}

type Section = Record<string, unknown>

/** The API's view of a profile's (unwrapped) ipv4 setting. address-data, never the deprecated addresses. */
export function ipv4FromSettings(ipv4: Section | undefined): IpConfiguration {
  const s = ipv4 ?? {}
  const addresses = (s['address-data'] as { address: string; prefix: number }[] | undefined) ?? []
  return {
    ip_addresses: addresses.map((a) => ({ address: a.address, prefix: Number(a.prefix) })),
    gateway: (s.gateway as string | undefined) ?? '',
    method: (s.method as IpConfiguration['method'] | undefined) ?? 'auto', // ipv4.method takes exactly the API's five (nm-settings-dbus(5))
    dns: ((s.dns as number[] | undefined) ?? []).map(dnsToDotted),
    never_default: (s['never-default'] as boolean | undefined) ?? false,
  }
}

/**
 * A new ipv4 section (of variants, as GetSettings returned it) with the API's fields replaced and every
 * other key (routes, route-metric, dhcp options, …) kept. The deprecated `addresses` goes, so NetworkManager
 * cannot read a stale copy beside address-data.
 */
export function ipv4Section(old: Record<string, unknown> | undefined, c: IpConfiguration): Record<string, unknown> {
  const out: Record<string, unknown> = { ...(old ?? {}) }
  for (const key of ['addresses', 'address-data', 'gateway', 'dns', 'method', 'never-default']) delete out[key]
  out.method = new Variant('s', c.method)
  out['address-data'] = new Variant(
    'aa{sv}',
    c.ip_addresses.map((a) => ({ address: new Variant('s', a.address), prefix: new Variant('u', a.prefix) })),
  )
  if (c.gateway) out.gateway = new Variant('s', c.gateway)
  out.dns = new Variant('au', c.dns.map(dottedToDns))
  out['never-default'] = new Variant('b', c.never_default)
  return out
}
