// Who the vehicle is, by name and address: what the Host check (421) and the origin check (403) take
// as the vehicle's own. Read again at most every few seconds, since the network page changes addresses.
import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { hostname, networkInterfaces } from 'node:os'
import { Elysia } from 'elysia'
import type { Refusals } from './refusals'
import type { EarlyAnswer } from './request-log'

const FRESH_MS = 5000
/**
 * An address the machine had within this long still counts as its own: after an address change the
 * console, loaded from the old address, confirms the new one by calling it (Origin: the old address).
 */
const REMEMBER_MS = 60 * 60_000
const lastHad = new Map<string, number>()

let cached: { at: number; names: Set<string>; addresses: Set<string> } | null = null

function own(): { names: Set<string>; addresses: Set<string> } {
  if (cached && Date.now() - cached.at < FRESH_MS) return cached
  const names = new Set<string>(['localhost'])
  const add = (name: string) => {
    const n = name.trim().toLowerCase()
    if (!n) return
    names.add(n)
    if (!n.endsWith('.local')) names.add(`${n.split('.')[0]}.local`)
  }
  add(hostname())
  try {
    add(readFileSync('/etc/hostname', 'utf8'))
  } catch {}
  const now = Date.now()
  for (const list of Object.values(networkInterfaces())) for (const a of list ?? []) lastHad.set(a.address.toLowerCase().replace(/%.*$/, ''), now)
  for (const [address, at] of lastHad) if (now - at > REMEMBER_MS) lastHad.delete(address)
  cached = { at: now, names, addresses: new Set(lastHad.keys()) }
  return cached
}

/** A Host header's (or an origin's) host name, lower case, an IPv6 address without its brackets; null when it is not one. */
export function hostnameOf(authority: string): string | null {
  if (!URL.canParse(`http://${authority}/`)) return null
  const url = new URL(`http://${authority}/`)
  // 'user@rov' parses with a user; 'a/b' gains a path: neither is a Host.
  const given = authority.toLowerCase()
  if (url.username || url.password || (url.host !== given && `${url.host}:80` !== given)) return null
  return url.hostname.replace(/^\[|\]$/g, '')
}

const matches = (name: string, patterns: readonly string[]) => patterns.some((p) => p === '*' || p.toLowerCase() === name || (p.startsWith('*.') && name.endsWith(p.slice(1).toLowerCase())))

/**
 * Whether a Host name is served (DNS rebinding: a page whose name was pointed at the vehicle sends its
 * own name): an IP literal, localhost, the machine's names, an mDNS `.local` name or a configured one.
 */
export function servedHost(name: string, allowed: readonly string[]): boolean {
  return isIP(name) !== 0 || name === 'localhost' || name.endsWith('.localhost') || name.endsWith('.local') || own().names.has(name) || matches(name, allowed)
}

/** The vehicle's own names and IPv4 addresses (CSP sources take no IPv6 literal). */
export function vehicleHostList(): string[] {
  const { names, addresses } = own()
  return [...names, ...[...addresses].filter((a) => !a.includes(':'))]
}

/** Whether a host name is the vehicle's own: one of its addresses or names (localhost included). */
export function vehicleHost(name: string): boolean {
  const { names, addresses } = own()
  return addresses.has(name) || names.has(name) || name.endsWith('.localhost')
}

/**
 * Why a request's Host is not served, or null when it is: two Host headers (Bun joins them with a
 * comma) or one that is no host name: 400 (RFC 9112 §3.2); a name that is not served: 421. No Host at
 * all (HTTP/1.0) passes. One rule for the routes (hostCheck) and the doors they never see (./doors.ts).
 */
export function hostRefusal(host: string | null, allowed: readonly string[]): { status: 400 | 421; detail: string } | null {
  if (!host) return null
  if (host.includes(',')) return { status: 400, detail: 'The request has more than one Host header (RFC 9112 allows exactly one)' }
  const name = hostnameOf(host)
  if (name === null) return { status: 400, detail: 'The Host header is not a host name' }
  if (!servedHost(name, allowed)) return { status: 421, detail: `This service does not answer to the name '${name}': use its address, its own name or a .local name, or add the name with --allowed-hosts` }
  return null
}

/** The Host check, first of all (hostRefusal). */
export function hostCheck(allowed: readonly string[], refusals: Refusals, answered: EarlyAnswer = () => {}) {
  return new Elysia({ name: 'periscope:host-check' }).onRequest(({ request, set }) => {
    const refused = hostRefusal(request.headers.get('host'), allowed)
    if (!refused) return
    refusals.hosts++
    set.status = refused.status
    answered(request, refused.status)
    return { detail: refused.detail }
  })
}
