import { Resolver } from 'node:dns/promises'

export type Route =
  | { kind: 'hosts'; hosts: string[] }
  /** RFC 7505: the domain says it takes no mail. */
  | { kind: 'null' }
  /** Neither MX nor an address: nowhere to deliver. */
  | { kind: 'none' }
  /** The lookup failed; `ours` when our resolver could not be reached at all. */
  | { kind: 'error'; ours: boolean; message: string }

const NO_DATA = new Set(['ENOTFOUND', 'ENODATA', 'NOTFOUND', 'NODATA'])
const OURS = new Set(['ETIMEOUT', 'ECONNREFUSED', 'ENETUNREACH', 'ECANCELLED', 'EREFUSED'])

/**
 * MX lookups through the configured DNS servers (MAILROOM_DNS_SERVERS, else the
 * system's), falling back to the domain's own address (implicit MX, RFC 5321 §5.1).
 * Answers are kept for `cacheMs` in a bounded map.
 */
export class MxResolver {
  private readonly resolver: Resolver
  private cache = new Map<string, { at: number; value: Promise<Route> }>()
  private addrCache = new Map<string, { at: number; value: Promise<string[]> }>()

  constructor(servers: string[], private readonly cacheMs = 30_000, private readonly max = 10_000) {
    this.resolver = new Resolver({ timeout: 3000, tries: 2 })
    if (servers.length) this.resolver.setServers(servers)
  }

  route(domain: string): Promise<Route> {
    return this.cached(this.cache, domain, () => this.lookup(domain))
  }

  /** IPv4 addresses of a host, then IPv6; empty when it has none or the lookup fails. */
  addresses(host: string): Promise<string[]> {
    return this.cached(this.addrCache, host, () => this.resolveAddresses(host)).catch(() => [])
  }

  /** Like `addresses`, but a failed lookup (other than "no such record") throws. */
  private async resolveAddresses(host: string): Promise<string[]> {
    const soft = (e: unknown) => {
      if (NO_DATA.has((e as { code?: string }).code ?? '')) return [] as string[]
      throw e
    }
    const v4 = await this.resolver.resolve4(host).catch(soft)
    if (v4.length) return v4
    return this.resolver.resolve6(host).catch(soft)
  }

  private cached<T>(map: Map<string, { at: number; value: Promise<T> }>, key: string, make: () => Promise<T>): Promise<T> {
    const now = Date.now()
    const hit = map.get(key)
    if (hit && now - hit.at < this.cacheMs) return hit.value
    const value = make()
    map.delete(key)
    map.set(key, { at: now, value })
    // Failures are not remembered.
    value.then((v) => {
      if ((v as Route)?.kind === 'error') map.delete(key)
    }, () => map.delete(key))
    if (map.size > this.max) map.delete(map.keys().next().value!)
    return value
  }

  private async lookup(domain: string): Promise<Route> {
    try {
      const mx = await this.resolver.resolveMx(domain)
      if (mx.length === 1 && (mx[0].exchange === '' || mx[0].exchange === '.')) return { kind: 'null' }
      const hosts = mx
        .filter((m) => m.exchange && m.exchange !== '.')
        .sort((a, b) => a.priority - b.priority)
        .map((m) => m.exchange.replace(/\.$/, '').toLowerCase())
      if (hosts.length) return { kind: 'hosts', hosts }
    } catch (e) {
      const code = (e as { code?: string }).code ?? ''
      if (!NO_DATA.has(code)) return { kind: 'error', ours: OURS.has(code), message: code || (e as Error).message }
    }
    // No MX: the domain itself, if it has an address.
    try {
      const own = await this.resolveAddresses(domain)
      return own.length ? { kind: 'hosts', hosts: [domain] } : { kind: 'none' }
    } catch (e) {
      const code = (e as { code?: string }).code ?? ''
      return { kind: 'error', ours: OURS.has(code), message: code || (e as Error).message }
    }
  }
}
