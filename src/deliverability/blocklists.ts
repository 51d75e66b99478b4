import { and, eq, inArray } from 'drizzle-orm'
import type { Executor, Tx } from '../db'
import { listOf, prepared } from '../db/prepared'
import { blocklistListings, dedicatedIps, domains } from '../db/tables'
import type { RootDeps } from '../deps'
import { publicHostAddresses, reversedLabels } from '../dedicated-ips/address'
import type { DnsClient } from '../domains/dns'
import { dnsClient } from '../domains/dns'
import type { Config } from '../config'
import { iso } from '../lib/clock'
import { Slots } from '../lib/slots'

export type ListingKind = 'ip' | 'domain'
export type ListingStatus = 'listed' | 'clean' | 'unknown'
type ListingRow = typeof blocklistListings.$inferSelect

export interface Listing {
  zone: string
  status: ListingStatus
  /** The zone's 127.0.0.x answer when listed. */
  code: string | null
  reason: string | null
}

export interface SubjectResult {
  kind: ListingKind
  subject: string
  status: ListingStatus
  listings: Listing[]
}

/** Queries a round may have in the air at once. */
const PARALLEL = 16

/** Every listing answer is in 127/8; 127.255.255.x is a zone's error answer (e.g. a public resolver refused), not a listing. */
const isListing = (a: string) => a.startsWith('127.') && !a.startsWith('127.255.255.')

/** Asks one zone about one address or domain: an A answer in 127/8 lists it (with the TXT reason when there is one); NXDOMAIN is clean; no answer is unknown. */
async function ask(dns: DnsClient, kind: ListingKind, subject: string, zone: string): Promise<Listing> {
  const name = `${kind === 'ip' ? reversedLabels(subject) : subject}.${zone}`
  const l = await dns.a(name)
  if (l.kind === 'error') return { zone, status: 'unknown', code: null, reason: `no answer: ${l.reason}` }
  const answers = l.kind === 'found' ? l.values : []
  const listed = answers.filter(isListing)
  if (!listed.length) {
    return answers.length ? { zone, status: 'unknown', code: answers.join(', '), reason: `the zone answered ${answers.join(', ')}, which is an error code, not a listing` } : { zone, status: 'clean', code: null, reason: null }
  }
  const txt = await dns.txt(name)
  return { zone, status: 'listed', code: listed.join(', '), reason: txt.kind === 'found' && txt.values.length ? txt.values.join(' ') : null }
}

const overall = (ls: Listing[]): ListingStatus => (ls.some((l) => l.status === 'listed') ? 'listed' : ls.some((l) => l.status === 'unknown') ? 'unknown' : 'clean')

/** Every subject against every zone of its kind, through one DNS client. */
export async function checkSubjects(config: Config, subjects: { kind: ListingKind; subject: string }[], dns: DnsClient = dnsClient(config.dnsServers)): Promise<SubjectResult[]> {
  const slots = new Slots(PARALLEL)
  const zonesOf = (k: ListingKind) => (k === 'ip' ? config.deliverability.dnsblZones : config.deliverability.dblZones)
  return Promise.all(
    subjects.map(async (s) => {
      const listings = await Promise.all(
        zonesOf(s.kind).map(async (zone) => {
          await slots.take()
          try {
            return await ask(dns, s.kind, s.subject, zone)
          } finally {
            slots.give()
          }
        }),
      )
      return { ...s, status: overall(listings), listings }
    }),
  )
}

/**
 * Stores what a check found. An unknown answer keeps what the last definitive
 * one said, so a resolver hiccup neither blocks a domain nor lifts its block.
 */
export async function recordListings(tx: Tx, results: SubjectResult[], now: number) {
  const at = iso(now)
  for (const r of results) {
    const before = await tx
      .select()
      .from(blocklistListings)
      .where(and(eq(blocklistListings.kind, r.kind), eq(blocklistListings.subject, r.subject)))
    for (const l of r.listings) {
      const old = before.find((b) => b.zone === l.zone)
      if (l.status === 'unknown' && old) continue
      const row: ListingRow = {
        kind: r.kind,
        subject: r.subject,
        zone: l.zone,
        status: l.status,
        code: l.code,
        reason: l.reason,
        listedSince: l.status === 'listed' ? (old?.status === 'listed' ? old.listedSince : at) : null,
        checkedAt: at,
      }
      await tx
        .insert(blocklistListings)
        .values(row)
        .onConflictDoUpdate({ target: [blocklistListings.kind, blocklistListings.subject, blocklistListings.zone], set: row })
    }
  }
}

// Read for every send from a verified domain: prepared once.
const domainListings = prepared((q) =>
  q
    .select()
    .from(blocklistListings)
    .where(and(eq(blocklistListings.kind, 'domain'), eq(blocklistListings.status, 'listed'), inArray(blocklistListings.subject, listOf('names'))))
    .prepare(),
)

/** Domain names a domain blocklist lists as of the last check. */
export async function listedDomains(q: Executor, names: string[]): Promise<Map<string, ListingRow>> {
  if (!names.length) return new Map()
  const rows = await domainListings(q).all({ names: JSON.stringify(names) })
  return new Map(rows.map((r) => [r.subject, r]))
}

/** The host's default outbound addresses: MAILROOM_OUTBOUND_IPS, else its public interface addresses. */
export const defaultAddresses = (config: Config) => (config.deliverability.outboundIps.length ? config.deliverability.outboundIps : publicHostAddresses())

/**
 * The daily job: every dedicated IP, the default addresses and every verified
 * sending domain of every account, against the configured zones. A domain found
 * listed may not send (`sending_domain_blocked`) until a check finds it clean.
 */
export async function runBlocklistChecks(root: RootDeps) {
  const ips = await root.db.q.select({ ip: dedicatedIps.ip }).from(dedicatedIps)
  const names = await root.db.q.selectDistinct({ name: domains.name }).from(domains).where(eq(domains.status, 'verified'))
  const subjects = [
    ...[...new Set([...ips.map((r) => r.ip), ...defaultAddresses(root.config)])].map((subject) => ({ kind: 'ip' as const, subject })),
    ...names.map((r) => ({ kind: 'domain' as const, subject: r.name })),
  ]
  const results = await checkSubjects(root.config, subjects)
  await root.db.write((tx) => recordListings(tx, results, root.clock.now()))
  const listed = results.filter((r) => r.status === 'listed')
  for (const r of listed) root.log.info('blocklisted', { kind: r.kind, subject: r.subject, zones: r.listings.filter((l) => l.status === 'listed').map((l) => l.zone) })
  return { checked: results.length, listed: listed.length }
}
