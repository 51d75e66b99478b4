import type { Config } from '../config'
import type { DomainRecord, domains } from '../db/tables/domains'
import { HOUR, iso } from '../lib/clock'
import { dkimRecordName, dkimRecordValue, parseTags } from './dkim'
import { dnsClient, type DnsClient, type Lookup } from './dns'

export type DomainRow = typeof domains.$inferSelect
export type DomainStatus = DomainRow['status']
export type RecordStatus = DomainRecord['status']

/** Hours from creation (or from the verify call that reopened it) during which an unverified domain is re-checked. */
export const CHECK_WINDOW_HOURS = 72
/** How often a domain that verified once is checked again. */
export const VERIFIED_RECHECK_HOURS = 6
/** RFC 7208 §4.6.4: at most 10 mechanisms and modifiers that query DNS. */
export const SPF_LOOKUP_LIMIT = 10

export const windowEndsAt = (row: Pick<DomainRow, 'checkWindowStartedAt' | 'createdAt'>) => Date.parse(row.checkWindowStartedAt ?? row.createdAt) + CHECK_WINDOW_HOURS * HOUR
export const returnPathHost = (row: Pick<DomainRow, 'customReturnPath' | 'name'>) => `${row.customReturnPath}.${row.name}`
export const trackingHost = (row: Pick<DomainRow, 'trackingSubdomain' | 'name'>) => (row.trackingSubdomain ? `${row.trackingSubdomain}.${row.name}` : null)
export const spfValue = (config: Pick<Config, 'spfMechanism'>) => `v=spf1 ${config.spfMechanism} ~all`
export const DMARC_ADVICE = 'v=DMARC1; p=none;'

const recordKey = (r: Pick<DomainRecord, 'record' | 'type' | 'name' | 'value'>) => `${r.record}|${r.type}|${r.name}|${r.value}`

/**
 * The records the domain must publish, from its row and this server's settings,
 * each keeping the status the last check gave it (`not_started` when new).
 */
export function buildRecords(row: DomainRow, config: Pick<Config, 'hostname' | 'spfMechanism'>): DomainRecord[] {
  const list: Omit<DomainRecord, 'status'>[] = [
    { record: 'DKIM', name: dkimRecordName(row.dkimSelector, row.name), type: 'TXT', value: dkimRecordValue(row.dkimPublicKey), ttl: 'Auto', required: true },
  ]
  if (row.dkimNextSelector && row.dkimNextPublicKey) {
    list.push({ record: 'DKIM', name: dkimRecordName(row.dkimNextSelector, row.name), type: 'TXT', value: dkimRecordValue(row.dkimNextPublicKey), ttl: 'Auto', required: false })
  }
  const rp = returnPathHost(row)
  list.push(
    { record: 'SPF', name: rp, type: 'MX', value: config.hostname, ttl: 'Auto', priority: 10, required: true },
    { record: 'SPF', name: rp, type: 'TXT', value: spfValue(config), ttl: 'Auto', required: true },
    { record: 'DMARC', name: `_dmarc.${row.name}`, type: 'TXT', value: DMARC_ADVICE, ttl: 'Auto', required: false },
  )
  if (row.receivingEnabled) list.push({ record: 'Receiving', name: row.name, type: 'MX', value: config.hostname, ttl: 'Auto', priority: 10, required: false })
  const th = trackingHost(row)
  if (th) list.push({ record: 'Tracking', name: th, type: 'CNAME', value: config.hostname, ttl: 'Auto', required: false })
  const before = new Map((row.records ?? []).map((r) => [recordKey(r), r]))
  return list.map((r) => {
    const old = before.get(recordKey(r))
    return { ...r, status: old?.status ?? 'not_started', ...(old?.detail ? { detail: old.detail } : {}) }
  })
}

/**
 * The domain's status from its records: `verified` when every required record
 * (DKIM, and the return-path MX and SPF) is; `partially_verified` when some are;
 * otherwise `failed` once the check window has closed, and inside it
 * `temporary_failure` if DNS could not answer, else `pending`.
 */
export function domainStatus(records: DomainRecord[], windowOpen: boolean): DomainStatus {
  const required = records.filter((r) => r.required)
  const verified = required.filter((r) => r.status === 'verified').length
  if (verified === required.length) return 'verified'
  if (verified > 0) return 'partially_verified'
  if (!windowOpen) return 'failed'
  return required.some((r) => r.status === 'temporary_failure') ? 'temporary_failure' : 'pending'
}

/** The tracking CNAME is published and verified, so tracked links and pixels may use it. */
export const trackingVerified = (row: Pick<DomainRow, 'records' | 'trackingSubdomain'>) =>
  !!row.trackingSubdomain && row.records.some((r) => r.record === 'Tracking' && r.status === 'verified')

export type CheckProblem = { code: 'spf_conflict' | 'spf_lookup_limit' | 'dkim_key_mismatch'; message: string }

interface RecordResult {
  status: RecordStatus
  detail?: string
  problem?: CheckProblem
}

export interface CheckOutcome {
  /** The records with what this check found. */
  records: DomainRecord[]
  status: DomainStatus
  /** Findings the verify call answers with their own error code. */
  problems: CheckProblem[]
  /** No DNS query got a definitive answer: the servers are unreachable or failing. */
  unreachable: boolean
  unreachableReason?: string
  /** A DKIM rotation completed: the new key verified and becomes current. */
  promoted: boolean
  /** The columns to write. */
  patch: Partial<DomainRow>
}

const short = (s: string, n = 80) => (s.length > n ? `${s.slice(0, n)}…` : s)
const quoteList = (values: string[]) => values.map((v) => `"${short(v)}"`).join(', ')
export const isSpf = (v: string) => /^v=spf1(\s|$)/i.test(v.trim())
const temporary = (l: { reason: string }): RecordResult => ({ status: 'temporary_failure', detail: `DNS lookup failed: ${l.reason}.` })
const absent = (l: Lookup<unknown>, name: string, what: string): string =>
  l.kind === 'nxdomain' ? `${name} does not exist (NXDOMAIN); publish the ${what}.` : `No ${what} found at ${name}.`

async function checkDkim(dns: DnsClient, rec: DomainRecord, publicKey: string): Promise<RecordResult> {
  const l = await dns.txt(rec.name)
  if (l.kind === 'error') return temporary(l)
  const values = l.kind === 'found' ? l.values : []
  const keys = values.map((v) => parseTags(v)).filter((t) => t.has('p'))
  if (keys.some((t) => t.get('p') === publicKey)) return { status: 'verified' }
  if (keys.length === 0) {
    return { status: 'failed', detail: values.length ? `The TXT record at ${rec.name} is not a DKIM key: ${quoteList(values)}.` : absent(l, rec.name, 'DKIM TXT record') }
  }
  const published = keys.map((t) => t.get('p')!)
  if (published.every((p) => p === '')) return { status: 'failed', detail: `The DKIM key at ${rec.name} is revoked (empty p=); publish the record as shown.` }
  const message = `The DKIM record at ${rec.name} publishes another key (p=${short(published.find(Boolean)!, 24)}); this domain's key is p=${short(publicKey, 24)}. Publish the value shown in the domain's records.`
  return { status: 'failed', detail: message, problem: { code: 'dkim_key_mismatch', message } }
}

async function checkMx(dns: DnsClient, rec: DomainRecord): Promise<RecordResult> {
  const l = await dns.mx(rec.name)
  if (l.kind === 'error') return temporary(l)
  const found = l.kind === 'found' ? l.values : []
  const want = rec.value.toLowerCase().replace(/\.$/, '')
  if (found.some((m) => m.exchange.replace(/\.$/, '') === want)) return { status: 'verified' }
  if (!found.length) return { status: 'failed', detail: absent(l, rec.name, `MX record (${rec.value}, priority ${rec.priority ?? 10})`) }
  return { status: 'failed', detail: `The MX records at ${rec.name} point to ${found.map((m) => `${m.exchange} (${m.priority})`).join(', ')}, not ${rec.value}.` }
}

async function checkCname(dns: DnsClient, rec: DomainRecord): Promise<RecordResult> {
  const l = await dns.cname(rec.name)
  if (l.kind === 'error') return temporary(l)
  const found = l.kind === 'found' ? l.values : []
  const want = rec.value.toLowerCase().replace(/\.$/, '')
  if (found.some((c) => c.replace(/\.$/, '') === want)) return { status: 'verified' }
  if (!found.length) return { status: 'failed', detail: absent(l, rec.name, `CNAME record pointing to ${rec.value}`) }
  return { status: 'failed', detail: `The CNAME at ${rec.name} points to ${found.join(', ')}, not ${rec.value}.` }
}

async function checkDmarc(dns: DnsClient, rec: DomainRecord): Promise<RecordResult> {
  const l = await dns.txt(rec.name)
  if (l.kind === 'error') return temporary(l)
  const values = l.kind === 'found' ? l.values : []
  if (values.some((v) => /^v=DMARC1(\s|;|$)/i.test(v.trim()))) return { status: 'verified' }
  return { status: 'failed', detail: values.length ? `No DMARC record at ${rec.name}; found ${quoteList(values)}.` : absent(l, rec.name, 'DMARC TXT record') }
}

const DNS_MECHANISMS = new Set(['include', 'a', 'mx', 'ptr', 'exists'])

/**
 * Walks an SPF record and the records it includes or redirects to: counts the
 * terms that query DNS (RFC 7208 §4.6.4) and says whether `target` is authorised
 * (with a `+` or no qualifier) anywhere in the tree.
 */
export async function walkSpf(dns: DnsClient, record: string, target: string, st: { lookups: number; seen: Set<string> }, depth: number): Promise<boolean> {
  let authorised = false
  const follow = async (domain: string) => {
    if (!domain || domain.includes('%') || st.seen.has(domain) || depth >= 10) return false
    st.seen.add(domain)
    const l = await dns.txt(domain)
    if (l.kind !== 'found') return false
    const spf = l.values.filter(isSpf)
    if (spf.length !== 1) return false
    return walkSpf(dns, spf[0]!, target, st, depth + 1)
  }
  for (const raw of record.trim().split(/\s+/).slice(1)) {
    if (st.lookups > SPF_LOOKUP_LIMIT) break
    const lower = raw.toLowerCase()
    if (lower.startsWith('redirect=')) {
      st.lookups++
      if (await follow(lower.slice('redirect='.length))) authorised = true
      continue
    }
    if (/^[a-z][a-z0-9_.-]*=/.test(lower)) continue // exp= and unknown modifiers
    const qualifier = /^[+?~-]/.test(lower) ? lower[0] : '+'
    const term = lower.replace(/^[+?~-]/, '')
    const mechanism = term.split(/[:/]/)[0]!
    if (DNS_MECHANISMS.has(mechanism)) st.lookups++
    if (qualifier === '+' && term === target) authorised = true
    if (mechanism === 'include' && (await follow(term.slice('include:'.length))) && qualifier === '+') authorised = true
  }
  return authorised
}

async function checkSpf(dns: DnsClient, rec: DomainRecord, config: Pick<Config, 'spfMechanism'>): Promise<RecordResult> {
  const l = await dns.txt(rec.name)
  if (l.kind === 'error') return temporary(l)
  const values = l.kind === 'found' ? l.values : []
  const spf = values.filter(isSpf)
  if (spf.length === 0) {
    return { status: 'failed', detail: values.length ? `No SPF record at ${rec.name}; found ${quoteList(values)}. Publish "${rec.value}".` : absent(l, rec.name, `SPF TXT record "${rec.value}"`) }
  }
  if (spf.length > 1) {
    const message = `${rec.name} publishes ${spf.length} SPF records (${quoteList(spf)}); receivers treat that as an error. Merge them into one record that includes ${config.spfMechanism}.`
    return { status: 'failed', detail: message, problem: { code: 'spf_conflict', message } }
  }
  const target = config.spfMechanism.toLowerCase().replace(/^\+/, '')
  const st = { lookups: 0, seen: new Set<string>([rec.name]) }
  const authorised = await walkSpf(dns, spf[0]!, target, st, 0)
  if (st.lookups > SPF_LOOKUP_LIMIT) {
    const message = `The SPF record at ${rec.name} needs more than ${SPF_LOOKUP_LIMIT} DNS lookups (include, a, mx, ptr, exists, redirect, counted through its includes); receivers fail it with a permerror. Flatten or remove includes.`
    return { status: 'failed', detail: message, problem: { code: 'spf_lookup_limit', message } }
  }
  if (authorised) return { status: 'verified' }
  return { status: 'failed', detail: `The SPF record at ${rec.name} ("${short(spf[0]!)}") does not authorise ${config.spfMechanism}; publish "${rec.value}".` }
}

/**
 * Checks every record of the domain against DNS now, through
 * MAILROOM_DNS_SERVERS (or the system's resolvers). Shared by
 * `POST /domains/{id}/verify` and the re-check job; it writes nothing.
 */
export async function checkDomain(config: Config, row: DomainRow, now: number, dns: DnsClient = dnsClient(config.dnsServers)): Promise<CheckOutcome> {
  const records = buildRecords(row, config)
  const results = await Promise.all(
    records.map((rec): Promise<RecordResult> => {
      if (rec.record === 'DKIM') {
        const key = rec.name === dkimRecordName(row.dkimSelector, row.name) ? row.dkimPublicKey : row.dkimNextPublicKey!
        return checkDkim(dns, rec, key)
      }
      if (rec.type === 'MX') return checkMx(dns, rec)
      if (rec.type === 'CNAME') return checkCname(dns, rec)
      if (rec.record === 'DMARC') return checkDmarc(dns, rec)
      return checkSpf(dns, rec, config)
    }),
  )
  let checked: DomainRecord[] = records.map((rec, i) => {
    const { status, detail } = results[i]!
    const { detail: _old, ...rest } = rec
    return { ...rest, status, ...(detail ? { detail } : {}) }
  })
  const problems = results.flatMap((r) => (r.problem ? [r.problem] : []))
  const unreachable = dns.stats.asked > 0 && dns.stats.failed === dns.stats.asked
  const unreachableReason = unreachable ? results.find((r) => r.status === 'temporary_failure')?.detail : undefined

  const patch: Partial<DomainRow> = { lastCheckedAt: iso(now), updatedAt: iso(now) }
  let promoted = false
  let next: DomainRow = row
  const nextName = row.dkimNextSelector ? dkimRecordName(row.dkimNextSelector, row.name) : null
  if (nextName && checked.some((r) => r.record === 'DKIM' && r.name === nextName && r.status === 'verified')) {
    // The new key is published: it signs from now on and the old record can go.
    promoted = true
    Object.assign(patch, {
      dkimSelector: row.dkimNextSelector!,
      dkimPrivateKey: row.dkimNextPrivateKey!,
      dkimPublicKey: row.dkimNextPublicKey!,
      dkimNextSelector: null,
      dkimNextPrivateKey: null,
      dkimNextPublicKey: null,
    })
    next = { ...row, ...patch, records: checked }
    checked = buildRecords(next, config)
  }
  const status = domainStatus(checked, now < windowEndsAt(row))
  patch.records = checked
  patch.status = status
  if (status === 'verified' && row.status !== 'verified') patch.verifiedAt = iso(now)
  return { records: checked, status, problems, unreachable, unreachableReason, promoted, patch }
}
