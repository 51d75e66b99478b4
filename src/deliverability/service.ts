import { and, eq } from 'drizzle-orm'
import { dedicatedIps, domains } from '../db/tables'
import type { DomainRecord } from '../db/tables/domains'
import type { Deps } from '../deps'
import { lookupPtr } from '../dedicated-ips/service'
import { sourcesFor } from '../dedicated-ips/warmup'
import { checkDomain, isSpf, walkSpf, SPF_LOOKUP_LIMIT, type DomainRow } from '../domains/checks'
import { parseTags } from '../domains/dkim'
import { dnsClient, type DnsClient } from '../domains/dns'
import { findDomain } from '../domains/service'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { DAY, iso } from '../lib/clock'
import { COUNTERS, rate, zeroCounts, type Counts } from '../metrics/counters'
import { sumRollups } from '../metrics/rollup'
import { floorTo, QUARTER } from '../metrics/time'
import { checkSubjects, defaultAddresses, listedDomains, recordListings } from './blocklists'

// ---- GET /deliverability/report --------------------------------------------

const WINDOWS = [1, 7, 30] as const
const TREND_DAYS = 30

const ratesOf = (c: Counts) => ({ sent: c.sent, delivered: c.delivered, bounced: c.bounced, complained: c.complained, bounce_rate: rate(c, 'bounce_rate'), complaint_rate: rate(c, 'complaint_rate') })
type Level = 'ok' | 'warning' | 'critical'
const levelOf = (value: number, threshold: number): Level => (value >= threshold ? 'critical' : value >= threshold / 2 ? 'warning' : 'ok')
const sumOf = (days: Counts[]) => days.reduce((acc, d) => (COUNTERS.forEach((k) => (acc[k] += d[k])), acc), zeroCounts())
/** A rate a fifth higher or lower than before counts as a move; smaller changes are noise. */
const direction = (now: number, before: number): 'rising' | 'falling' | 'steady' => (now > before * 1.2 && now - before > 0.0005 ? 'rising' : now < before / 1.2 ? 'falling' : 'steady')

const recordState = (records: DomainRecord[], pick: (r: DomainRecord) => boolean): DomainRecord['status'] | 'absent' => records.find(pick)?.status ?? 'absent'

/**
 * Bounce and complaint rates of the account's real (not simulator) mail over
 * today, 7 and 30 UTC days against the kill switch's thresholds, the daily
 * series and its direction, and each domain's authentication as the last check
 * found it.
 */
export async function getReport(deps: Deps, actor: Actor) {
  const now = deps.clock.now()
  const c = deps.config.controls
  const thresholds = { bounce_rate: c.killSwitchBouncePercent / 100, complaint_rate: c.killSwitchComplaintPercent / 100, min_sends: c.killSwitchMinSends }
  const end = floorTo(now, QUARTER) + QUARTER
  const first = floorTo(now, DAY) - (TREND_DAYS - 1) * DAY
  const slices = Array.from({ length: TREND_DAYS }, (_, i) => ({ from: first + i * DAY, to: Math.min(first + (i + 1) * DAY, end), key: i }))
  const rows = await sumRollups(deps.db.q, actor.accountId, slices, { simulator: false })
  const days = slices.map((s) => {
    const r = rows.find((x) => Number(x.key) === s.key)
    return Object.fromEntries(COUNTERS.map((k) => [k, Number(r?.[k] ?? 0)])) as Counts
  })
  const windows = WINDOWS.map((n) => {
    const counts = sumOf(days.slice(-n))
    const r = ratesOf(counts)
    const judged = counts.sent >= thresholds.min_sends
    return {
      days: n,
      since: iso(first + (TREND_DAYS - n) * DAY),
      ...r,
      judged,
      bounce_level: judged ? levelOf(r.bounce_rate, thresholds.bounce_rate) : 'ok',
      complaint_level: judged ? levelOf(r.complaint_rate, thresholds.complaint_rate) : 'ok',
    }
  })
  const last = ratesOf(sumOf(days.slice(-7)))
  const before = ratesOf(sumOf(days.slice(-14, -7)))

  const rowsOfDomains = await deps.db.q.select().from(domains).where(eq(domains.accountId, actor.accountId)).orderBy(domains.name)
  const [listed, sources] = await Promise.all([listedDomains(deps.db.q, rowsOfDomains.map((d) => d.name)), sourcesFor(deps.db.q, deps.config, rowsOfDomains)])
  return {
    object: 'deliverability_report' as const,
    generated_at: iso(now),
    thresholds,
    windows,
    trend: {
      bounce: direction(last.bounce_rate, before.bounce_rate),
      complaint: direction(last.complaint_rate, before.complaint_rate),
      daily: days.map((d, i) => ({ date: iso(first + i * DAY).slice(0, 10), ...ratesOf(d) })),
    },
    domains: rowsOfDomains.map((d) => ({
      id: d.id,
      name: d.name,
      status: d.status,
      dkim: recordState(d.records, (r) => r.record === 'DKIM' && r.required),
      spf: recordState(d.records, (r) => r.record === 'SPF' && r.type === 'TXT'),
      return_path_mx: recordState(d.records, (r) => r.record === 'SPF' && r.type === 'MX'),
      dmarc: recordState(d.records, (r) => r.record === 'DMARC'),
      blocklisted: listed.has(d.name),
      dedicated_ip: sources.get(d.id)?.ip ?? null,
    })),
  }
}

// ---- GET /deliverability/domains/{id} --------------------------------------

type Status = 'pass' | 'warning' | 'fail' | 'unknown'
interface Check {
  check: 'spf' | 'dkim' | 'dmarc' | 'return_path_mx' | 'receiving_mx' | 'ptr'
  status: Status
  name: string
  detail: string
  fix: string | null
  lookups?: number
  policy?: string | null
  addresses?: { ip: string; ptr: string | null; forward_confirmed: boolean }[]
}

const statusOf = (r: DomainRecord): Status => (r.status === 'verified' ? 'pass' : r.status === 'temporary_failure' ? 'unknown' : 'fail')
const publish = (r: DomainRecord) => `Publish a ${r.type} record at ${r.name}${r.priority !== undefined ? ` with priority ${r.priority}` : ''}: ${r.value}`

function fromRecord(check: Check['check'], r: DomainRecord, passed: string): Check {
  const status = statusOf(r)
  return { check, status, name: r.name, detail: status === 'pass' ? passed : (r.detail ?? 'Not found.'), fix: status === 'pass' ? null : status === 'unknown' ? 'Check again in a few minutes; DNS did not answer.' : publish(r) }
}

/** How many DNS lookups the SPF record at `name` needs, through its includes; null when there is no single SPF record. */
async function spfLookups(dns: DnsClient, name: string, target: string): Promise<number | null> {
  const l = await dns.txt(name)
  const spf = l.kind === 'found' ? l.values.filter(isSpf) : []
  if (spf.length !== 1) return null
  const st = { lookups: 0, seen: new Set([name]) }
  await walkSpf(dns, spf[0]!, target, st, 0)
  return st.lookups
}

async function dmarcCheck(dns: DnsClient, domain: string): Promise<Check> {
  const name = `_dmarc.${domain}`
  const l = await dns.txt(name)
  const advice = `Publish a TXT record at ${name}: "v=DMARC1; p=none; rua=mailto:dmarc@${domain}" to start, then move to p=quarantine or p=reject once reports show only your own mail.`
  if (l.kind === 'error') return { check: 'dmarc', status: 'unknown', name, detail: `DNS lookup failed: ${l.reason}.`, fix: 'Check again in a few minutes; DNS did not answer.', policy: null }
  const records = (l.kind === 'found' ? l.values : []).filter((v) => /^v=DMARC1(\s|;|$)/i.test(v.trim()))
  if (records.length !== 1) {
    return { check: 'dmarc', status: 'fail', name, detail: records.length ? `${records.length} DMARC records are published; receivers ignore them all.` : 'No DMARC record is published.', fix: records.length ? 'Keep exactly one v=DMARC1 record.' : advice, policy: null }
  }
  const policy = parseTags(records[0]!).get('p')?.toLowerCase() ?? null
  if (policy === 'quarantine' || policy === 'reject') return { check: 'dmarc', status: 'pass', name, detail: `DMARC policy p=${policy}.`, fix: null, policy }
  if (policy === 'none') {
    return { check: 'dmarc', status: 'warning', name, detail: 'DMARC policy p=none: receivers report but do not act on failing mail.', fix: 'Once the aggregate reports show only your own mail, move to p=quarantine, then p=reject.', policy }
  }
  return { check: 'dmarc', status: 'fail', name, detail: `The DMARC record has ${policy ? `an unknown policy p=${policy}` : 'no p= tag'}.`, fix: advice, policy }
}

/** Each address's PTR name and whether it resolves back to the address (forward-confirmed reverse DNS). */
async function ptrCheck(deps: Deps, dns: DnsClient, addresses: string[], domain: string): Promise<Check> {
  const name = addresses.join(', ') || 'no source address'
  if (!addresses.length) {
    return { check: 'ptr', status: 'unknown', name, detail: 'The host’s outbound address is not known.', fix: 'Set MAILROOM_OUTBOUND_IPS to the address(es) this host sends from, or assign a dedicated IP to the domain.', addresses: [] }
  }
  const found = await Promise.all(
    addresses.map(async (ip) => {
      const ptr = await lookupPtr(deps, ip)
      if (!ptr) return { ip, ptr, forward_confirmed: false }
      const forward = ip.includes(':') ? await dns.aaaa(ptr) : await dns.a(ptr)
      return { ip, ptr, forward_confirmed: forward.kind === 'found' && forward.values.includes(ip) }
    }),
  )
  const bad = found.filter((f) => !f.forward_confirmed)
  if (!bad.length) return { check: 'ptr', status: 'pass', name, detail: found.map((f) => `${f.ip} → ${f.ptr} → ${f.ip}`).join('; '), fix: null, addresses: found }
  const detail = bad.map((f) => (f.ptr ? `${f.ip} has the PTR ${f.ptr}, which does not resolve back to ${f.ip}` : `${f.ip} has no PTR record`)).join('; ')
  const fix = bad.map((f) => (f.ptr ? `Publish an ${f.ip.includes(':') ? 'AAAA' : 'A'} record for ${f.ptr} pointing to ${f.ip}` : `Ask the network's owner to set the PTR of ${f.ip} to a name that resolves back to it, such as ${deps.config.hostname}`)).join('; ')
  return { check: 'ptr', status: 'fail', name, detail: `${detail}. Receivers distrust mail from ${domain} sent from such addresses.`, fix: `${fix}.`, addresses: found }
}

const worst = (checks: Check[]): Status => (['fail', 'unknown', 'warning'] as const).find((s) => checks.some((c) => c.status === s)) ?? 'pass'

/**
 * Checks the domain's authentication live, now: DKIM (the selector's key matches
 * ours), SPF (authorises us, and its lookup count), the return-path MX, DMARC
 * (present and its policy), the receiving MX when receiving is on, and the PTR
 * of each address its mail leaves from. Writes nothing.
 */
export async function checkDomainLive(deps: Deps, actor: Actor, id: string) {
  const row: DomainRow = await findDomain(deps, actor, id)
  const now = deps.clock.now()
  const dns = dnsClient(deps.config.dnsServers)
  const outcome = await checkDomain(deps.config, row, now, dns)
  if (outcome.unreachable) throw new AppError('dns_unreachable', { message: `No DNS server gave an answer, so nothing was checked. ${outcome.unreachableReason ?? ''}`.trim() })
  const rec = (pick: (r: DomainRecord) => boolean) => outcome.records.find(pick)!
  const spf = rec((r) => r.record === 'SPF' && r.type === 'TXT')
  const spfResult = fromRecord('spf', spf, `The SPF record authorises ${deps.config.spfMechanism}.`)
  const lookups = await spfLookups(dns, spf.name, deps.config.spfMechanism.toLowerCase().replace(/^\+/, ''))
  if (lookups !== null) spfResult.lookups = Math.min(lookups, SPF_LOOKUP_LIMIT + 1)
  const source = (await sourcesFor(deps.db.q, deps.config, [row])).get(row.id)
  const checks: Check[] = [
    spfResult,
    fromRecord('dkim', rec((r) => r.record === 'DKIM' && r.required), `The DKIM record at selector ${row.dkimSelector} publishes this domain’s key.`),
    fromRecord('return_path_mx', rec((r) => r.record === 'SPF' && r.type === 'MX'), `The return-path MX points to ${deps.config.hostname}, so bounces reach us.`),
    await dmarcCheck(dns, row.name),
    ...(row.receivingEnabled ? [fromRecord('receiving_mx', rec((r) => r.record === 'Receiving'), `The MX of ${row.name} points to ${deps.config.hostname}.`)] : []),
    await ptrCheck(deps, dns, source ? [source.ip] : defaultAddresses(deps.config), row.name),
  ]
  return { object: 'deliverability_check' as const, domain_id: row.id, domain: row.name, checked_at: iso(now), status: worst(checks), checks }
}

// ---- GET /deliverability/blocklists ----------------------------------------

/**
 * The account's sending addresses (its dedicated IPs and the host's default
 * ones) and verified domains against the configured blocklists, now. What it
 * finds is stored, so a domain found delisted may send again at once.
 */
export async function checkBlocklists(deps: Deps, actor: Actor) {
  const now = deps.clock.now()
  const ips = await deps.db.q.select({ id: dedicatedIps.id, ip: dedicatedIps.ip }).from(dedicatedIps).where(eq(dedicatedIps.accountId, actor.accountId)).orderBy(dedicatedIps.ip)
  const defaults = defaultAddresses(deps.config).filter((ip) => !ips.some((r) => r.ip === ip))
  const verified = await deps.db.q
    .select({ id: domains.id, name: domains.name })
    .from(domains)
    .where(and(eq(domains.accountId, actor.accountId), eq(domains.status, 'verified')))
    .orderBy(domains.name)
  const dns = dnsClient(deps.config.dnsServers)
  const results = await checkSubjects(
    deps.config,
    [...[...ips.map((r) => r.ip), ...defaults].map((subject) => ({ kind: 'ip' as const, subject })), ...verified.map((d) => ({ kind: 'domain' as const, subject: d.name }))],
    dns,
  )
  if (dns.stats.asked > 0 && dns.stats.failed === dns.stats.asked) throw new AppError('dns_unreachable', { message: 'No DNS server answered any blocklist query, so nothing was checked.' })
  await deps.db.write((tx) => recordListings(tx, results, now))
  const listed = await listedDomains(deps.db.q, verified.map((d) => d.name))
  const find = (kind: 'ip' | 'domain', subject: string) => results.find((r) => r.kind === kind && r.subject === subject)!
  return {
    object: 'blocklist_report' as const,
    checked_at: iso(now),
    zones: { addresses: deps.config.deliverability.dnsblZones, domains: deps.config.deliverability.dblZones },
    addresses: [
      ...ips.map((r) => ({ ip: r.ip, source: 'dedicated' as const, dedicated_ip_id: r.id, status: find('ip', r.ip).status, listings: find('ip', r.ip).listings })),
      ...defaults.map((ip) => ({ ip, source: 'default' as const, dedicated_ip_id: null, status: find('ip', ip).status, listings: find('ip', ip).listings })),
    ],
    domains: verified.map((d) => ({ id: d.id, name: d.name, status: find('domain', d.name).status, blocked: listed.has(d.name), listings: find('domain', d.name).listings })),
  }
}
