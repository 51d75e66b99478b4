import { parse } from 'tldts'
import type { Deps } from '../deps'
import { sentToday, sourcesFor, utcDay, warmupOf } from '../dedicated-ips/warmup'
import { dnsClient } from '../domains/dns'
import { errorFinding, type Finding } from '../emails/content'
import type { CheckResult, DomainRow } from '../emails/checks'
import { AppError } from '../errors/app-error'
import { checkSubjects, listedDomains } from './blocklists'

/**
 * What deliverability says about a send from a domain that may otherwise send:
 * refused while a domain blocklist lists it (the daily check, or
 * GET /deliverability/blocklists, found it), and refused when its dedicated IP
 * holds overflow and today's warm-up cap is already used.
 */
export async function sendingGate(deps: Deps, domain: DomainRow): Promise<{ findings: Finding[]; checks: CheckResult[] }> {
  const findings: Finding[] = []
  const checks: CheckResult[] = []
  const listing = (await listedDomains(deps.db.q, [domain.name])).get(domain.name)
  if (listing) {
    findings.push(
      errorFinding(
        'sending_domain_blocked',
        `${domain.name} is listed on the domain blocklist ${listing.zone} (${listing.reason ?? listing.code}) since ${listing.listedSince}; sending from it is blocked until a check finds it delisted (GET /deliverability/blocklists checks now).`,
        'from',
      ),
    )
  }
  const source = (await sourcesFor(deps.db.q, deps.config, [domain])).get(domain.id)
  if (source?.row && source.row.overflow === 'hold') {
    const now = deps.clock.now()
    const limit = warmupOf(source.row, now).limit
    const used = (await sentToday(deps.db.q, [source.row.id], now)).get(source.row.id) ?? 0
    if (limit !== null && used >= limit) {
      findings.push(
        errorFinding(
          'daily_limit_reached',
          `${domain.name} sends from the dedicated IP ${source.ip}, which has sent ${used} of its ${limit} warm-up messages for ${utcDay(now)} and holds overflow; send again after the UTC day change, or set its overflow to \`shared\` (PATCH /dedicated-ips/${source.row.id}).`,
        ),
      )
    }
    checks.push({ name: 'dedicated_ip_daily_limit', passed: limit === null || used < limit, detail: limit === null ? `${source.ip}: no cap` : `${source.ip}: ${used} of ${limit} today` })
  }
  return { findings, checks }
}

/**
 * Names no account may add as a sending domain: a public suffix itself (co.uk,
 * github.io: its owner is a registry, not one sender) and this host's own name
 * and its subdomains, whose mail and bounces are the service's own. The parent
 * domain stays open: an operator on mail.example.com may send from example.com.
 */
export function assertClaimable(deps: Pick<Deps, 'config'>, name: string) {
  const p = parse(name, { allowPrivateDomains: true })
  if (!p.domain) {
    throw new AppError('domain_not_claimable', { message: `${name} is a public suffix (like com or co.uk): names are registered under it, so it cannot be a sending domain. Add the domain you registered, such as example.${name}.` })
  }
  const host = deps.config.hostname
  if (name === host || name.endsWith(`.${host}`)) {
    throw new AppError('domain_not_claimable', { message: `${name} is this service’s own host name (${host}) or under it; its mail and bounces are the service’s. Add a domain of your own.` })
  }
}

/** Refuses a new sending domain that a configured domain blocklist lists now; a zone that does not answer lets it through (the daily check sees it again). */
export async function assertNotBlocklisted(deps: Pick<Deps, 'config'>, name: string) {
  if (!deps.config.deliverability.dblZones.length) return
  const [r] = await checkSubjects(deps.config as Deps['config'], [{ kind: 'domain', subject: name }], dnsClient(deps.config.dnsServers, { timeoutMs: 1000, tries: 1 }))
  const hit = r?.listings.find((l) => l.status === 'listed')
  if (hit) {
    throw new AppError('domain_blocklisted', { message: `${name} is listed on the domain blocklist ${hit.zone} (${hit.reason ?? hit.code}). Have it delisted there, then add it again.` })
  }
}
