import { promises as dns } from 'node:dns'
import { authenticate } from 'mailauth'
import type { InboundAuth } from '../db/tables'
import { dnsClient, type Lookup } from '../domains/dns'

export interface AuthInput {
  ip: string
  helo: string | null
  /** MAIL FROM; empty for a null sender. */
  sender: string | null
  /** Our host name, the authserv-id of Authentication-Results. */
  mta: string
  /** DNS servers as ip[:port]; empty means the system's. */
  dnsServers: string[]
  timeoutMs?: number
}

type Resolve = (name: string, type: string) => Promise<unknown>

const addressResolvers = new Map<string, dns.Resolver>()

/** One node:dns resolver per server list, made once: every inbound message is checked through it. */
function addressResolver(servers: string[]): dns.Resolver {
  const key = servers.join(',')
  let found = addressResolvers.get(key)
  if (!found) {
    addressResolvers.set(key, (found = new dns.Resolver({ timeout: 2000, tries: 1 })))
    if (servers.length) found.setServers(servers)
  }
  return found
}

/**
 * TXT lookups in flight: messages that ask the same name at the same moment (a burst
 * from one sender's domain) share one query, as a caching resolver's clients do.
 * Nothing is kept once the answer is in, so no answer outlives its moment.
 */
const inFlight = new Map<string, Promise<Lookup<string>>>()
function shared(key: string, ask: () => Promise<Lookup<string>>): Promise<Lookup<string>> {
  let found = inFlight.get(key)
  if (!found) inFlight.set(key, (found = ask().finally(() => inFlight.delete(key))))
  return found
}

/**
 * The resolver one message's checks ask: node:dns for addresses and MX; TXT through
 * our own client, because Bun's node:dns splits a long TXT record (a DKIM key) into
 * separate entries. The TXT client is the message's own: it skips a server that
 * timed out for the rest of the checks it is made for, and a server that missed one
 * answer must not be skipped for every message after.
 */
function resolverFor(servers: string[]): Resolve {
  const r = addressResolver(servers)
  const txtClient = dnsClient(servers, { timeoutMs: 2000, tries: 1 })
  return async (name, type) => {
    if (type !== 'TXT') return r.resolve(name, type as 'A')
    const found = await shared(`${servers.join(',')} ${name.toLowerCase()}`, () => txtClient.txt(name))
    if (found.kind === 'error') throw Object.assign(new Error(found.reason), { code: 'ETIMEOUT' })
    if (found.kind === 'nxdomain') throw Object.assign(new Error(`${name} does not exist`), { code: 'ENOTFOUND' })
    if (!found.values.length) throw Object.assign(new Error(`${name} has no TXT record`), { code: 'ENODATA' })
    return found.values.map((v) => [v])
  }
}

const none = (error: string): InboundAuth => ({ spf: null, dkim: [], dmarc: null, header: null, error })

/**
 * SPF (for the connecting address and MAIL FROM), DKIM and DMARC as mailauth finds
 * them. Never throws: a DNS outage or a slow answer is recorded as the result.
 */
export async function authenticateMessage(raw: Buffer, input: AuthInput): Promise<InboundAuth> {
  const work = (async () => {
    const res = (await authenticate(raw, {
      ip: input.ip,
      helo: input.helo ?? undefined,
      sender: input.sender ?? '',
      mta: input.mta,
      resolver: resolverFor(input.dnsServers) as never,
      disableArc: true,
      disableBimi: true,
    })) as any
    const spf = res.spf ? { result: String(res.spf.status?.result ?? 'none'), domain: res.spf.domain ?? null } : null
    const dkim = ((res.dkim?.results ?? []) as any[]).map((d) => ({ result: String(d.status?.result ?? 'none'), domain: d.signingDomain ?? null, selector: d.selector ?? null }))
    const dmarc = res.dmarc ? { result: String(res.dmarc.status?.result ?? 'none'), domain: res.dmarc.domain ?? null, policy: res.dmarc.policy ?? null } : null
    const unfolded = typeof res.headers === 'string' ? res.headers.replace(/\r?\n[ \t]+/g, ' ') : ''
    const header = unfolded.split(/\r?\n/).find((l: string) => /^Authentication-Results:/i.test(l))?.replace(/^Authentication-Results:\s*/i, '').trim() ?? null
    return { spf, dkim, dmarc, header } satisfies InboundAuth
  })()
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<InboundAuth>((resolve) => {
    timer = setTimeout(() => resolve(none(`authentication checks did not finish within ${input.timeoutMs ?? 15_000} ms`)), input.timeoutMs ?? 15_000)
  })
  try {
    return await Promise.race([work.catch((e) => none((e as Error).message)), timeout])
  } finally {
    clearTimeout(timer)
  }
}
