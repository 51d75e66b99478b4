import ipaddr from 'ipaddr.js'
import { lookup, Resolver } from 'node:dns/promises'
import { isIP } from 'node:net'
import type { Config } from '../config'

/** Where a webhook may be sent, as decided for one request: the address to connect to, checked. */
export type Target =
  | { ok: true; url: URL; address: string }
  /** `dns`: the name could not be resolved for now (worth a retry); `refused`: the URL or its address is not allowed. */
  | { ok: false; kind: 'dns' | 'refused'; reason: string }

const NO_NAME = new Set(['ENOTFOUND', 'ENODATA', 'NOTFOUND', 'NODATA'])

/**
 * The SSRF rules of webhook URLs: https only, no credentials in the URL, and every
 * address the host resolves to must be public unicast (not loopback, private,
 * link-local, carrier-grade NAT, metadata or reserved ranges; IPv4-mapped IPv6 is
 * judged as the IPv4 it carries). The answer names the one address to connect to,
 * so a name that resolves differently a moment later (DNS rebinding) cannot move
 * the request elsewhere. `MAILROOM_ALLOW_PRIVATE_WEBHOOKS` lifts the scheme and
 * range rules for development and tests.
 */
export class WebhookGuard {
  private readonly resolver?: Resolver
  private readonly cache = new Map<string, { at: number; addresses: Promise<string[]> }>()

  constructor(
    private readonly config: Pick<Config, 'allowPrivateWebhooks' | 'dnsServers'>,
    private readonly cacheMs = 10_000,
    private readonly maxCached = 1000,
  ) {
    if (config.dnsServers.length) {
      this.resolver = new Resolver({ timeout: 3000, tries: 2 })
      this.resolver.setServers(config.dnsServers)
    }
  }

  /** The URL's own rules (scheme, credentials), without resolving it: why it is refused, or null. */
  urlProblem(raw: string): string | null {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return 'is not an absolute URL'
    }
    if (url.protocol !== 'https:' && !(url.protocol === 'http:' && this.config.allowPrivateWebhooks)) {
      return this.config.allowPrivateWebhooks ? 'must be an http:// or https:// URL' : 'must be an https:// URL'
    }
    if (url.username || url.password) return 'must not carry a user name or password'
    return null
  }

  /** Resolves the URL's host and checks every address it has. */
  async target(raw: string): Promise<Target> {
    const problem = this.urlProblem(raw)
    if (problem) return { ok: false, kind: 'refused', reason: `The URL ${problem}.` }
    const url = new URL(raw)
    const host = url.hostname.replace(/^\[|\]$/g, '')
    let addresses: string[]
    try {
      addresses = isIP(host) ? [host] : await this.resolve(host)
    } catch (e) {
      const code = (e as { code?: string }).code ?? (e as Error).message
      return { ok: false, kind: 'dns', reason: `The name ${host} could not be resolved (${code}).` }
    }
    if (!addresses.length) return { ok: false, kind: 'refused', reason: `The name ${host} has no address.` }
    if (!this.config.allowPrivateWebhooks) {
      for (const a of addresses) {
        const range = rangeOf(a)
        if (range !== 'unicast') return { ok: false, kind: 'refused', reason: `${host} resolves to ${a}, a ${range} address; webhooks go to public addresses only.` }
      }
    }
    return { ok: true, url, address: addresses[0]! }
  }

  private resolve(host: string): Promise<string[]> {
    const now = Date.now()
    const hit = this.cache.get(host)
    if (hit && now - hit.at < this.cacheMs) return hit.addresses
    const addresses = this.lookup(host)
    this.cache.delete(host)
    this.cache.set(host, { at: now, addresses })
    addresses.catch(() => this.cache.delete(host))
    if (this.cache.size > this.maxCached) this.cache.delete(this.cache.keys().next().value!)
    return addresses
  }

  /** Through MAILROOM_DNS_SERVERS when set, else the system's resolver (hosts file included), as a connection would. */
  private async lookup(host: string): Promise<string[]> {
    const soft = (e: unknown) => {
      if (NO_NAME.has((e as { code?: string }).code ?? '')) return [] as string[]
      throw e
    }
    if (!this.resolver) return lookup(host, { all: true, verbatim: true }).then((all) => all.map((a) => a.address), soft)
    const [v4, v6] = await Promise.all([this.resolver.resolve4(host).catch(soft), this.resolver.resolve6(host).catch(soft)])
    return [...v4, ...v6]
  }
}

/** ipaddr.js's range name; `unicast` is a public address. */
function rangeOf(address: string): string {
  try {
    return ipaddr.process(address).range()
  } catch {
    return 'unparseable'
  }
}
