import { and, eq, sql } from 'drizzle-orm'
import { recordChangeIn } from '../audit/record'
import type { Executor, Tx } from '../db'
import { prepared } from '../db/prepared'
import { accountUsage, domains, emails, memberships, people, trustChanges, trustStandings, type PausedDomain, type TrustLevel, type TrustState } from '../db/tables'
import type { Deps } from '../deps'
import { errorFinding, firstError, type Finding } from '../emails/content'
import { isSimulatorAddress as isSimulator } from '../emails/simulator'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { DAY, HOUR, iso } from '../lib/clock'
import type { Ids } from '../lib/ids'
import { TtlCache } from '../lib/ttl-cache'
import type { Config } from '../config'
import { overThresholds, sendRates, type Rates } from './rates'
import { isOnboarding } from './sender'

export interface Standing {
  level: TrustLevel
  state: TrustState
  stateReason: string | null
  stateSince: string | null
  pausedDomains: PausedDomain[]
  /** Null for an account without a row (trusted from the start). */
  levelSince: string | null
  stored: boolean
}

/** An account without a standing row: the operator's own, or one made before the trust system. */
const TRUSTED: Standing = { level: 'trusted', state: 'active', stateReason: null, stateSince: null, pausedDomains: [], levelSince: null, stored: false }

/** Nothing limits this account's sends: the hot path stops here. */
const unlimited = (s: Standing) => s.level === 'trusted' && s.state === 'active' && !s.pausedDomains.length

const byAccount = prepared((q) => q.select().from(trustStandings).where(eq(trustStandings.accountId, sql.placeholder('accountId'))).prepare())

/**
 * Standings read lately, per process's dependencies, so a send by a trusted
 * account costs no query: 10,000 accounts at most, another instance's change
 * seen within 30 seconds, this instance's own at once.
 */
const caches = new WeakMap<object, TtlCache<Standing>>()
const cacheOf = (deps: Pick<Deps, 'buckets'>) => {
  let c = caches.get(deps.buckets)
  if (!c) caches.set(deps.buckets, (c = new TtlCache<Standing>(30_000, 10_000)))
  return c
}

const fromRow = (row: typeof trustStandings.$inferSelect): Standing => ({
  level: row.level,
  state: row.state,
  stateReason: row.stateReason,
  stateSince: row.stateSince,
  pausedDomains: row.pausedDomains,
  levelSince: row.levelSince,
  stored: true,
})

/** The standing as stored now, past the cache (for changes). */
export async function readStanding(q: Executor, accountId: string): Promise<Standing> {
  const [row] = await byAccount(q).all({ accountId })
  return row ? fromRow(row) : TRUSTED
}

/** The standing, from the cache when it is fresh. */
export async function standingOf(deps: Deps, accountId: string): Promise<Standing> {
  const now = deps.clock.now()
  const cache = cacheOf(deps)
  const hit = cache.get(accountId, now)
  if (hit) return hit
  const s = await readStanding(deps.db.q, accountId)
  cache.set(accountId, s, now)
  return s
}

/** How a standing reads in its history: the level, or the state over it, and each paused domain. */
export const labelOf = (s: Standing) => [s.state === 'active' ? s.level : s.state, ...s.pausedDomains.map((d) => `paused:${d.domain}`)].join(', ')

export interface StandingChange {
  accountId: string
  before: Standing
  after: Standing
  reason: string
  /** `system`, `operator` or a person's address. */
  by: string
}

/** The standing as GET /trust/standing names its parts, for the audit trail. */
const auditShape = (s: Standing) => ({ level: s.level, state: s.state, state_reason: s.stateReason, paused_domains: s.pausedDomains, level_since: s.levelSince })

/** Writes a change of standing in `tx`: the row, its history entry and the audit entry; this process's cache forgets the account. */
export async function writeChange(tx: Tx, deps: Pick<Deps, 'ids' | 'buckets'>, at: string, actor: Actor, c: StandingChange) {
  const a = c.after
  const row = {
    accountId: c.accountId,
    level: a.level,
    state: a.state,
    stateReason: a.stateReason,
    stateSince: a.stateSince,
    pausedDomains: a.pausedDomains,
    levelSince: a.levelSince ?? at,
    createdAt: at,
    updatedAt: at,
  }
  const { createdAt: _, ...update } = row
  await tx.insert(trustStandings).values(row).onConflictDoUpdate({ target: trustStandings.accountId, set: update })
  await tx.insert(trustChanges).values({ id: deps.ids.uuid(), accountId: c.accountId, from: labelOf(c.before), to: labelOf(a), reason: c.reason, by: c.by, createdAt: at })
  await recordChangeIn(tx, deps.ids as Ids, at, actor, { resource: 'trust_standing', resourceId: c.accountId, action: 'changed', before: auditShape(c.before), after: auditShape({ ...a, levelSince: row.levelSince }) })
  cacheOf(deps).drop(c.accountId)
}

/** An account made by open sign-up starts at the operator's start level. */
export async function startStanding(tx: Tx, deps: Deps, accountId: string) {
  const level = deps.config.trust.startLevel
  if (level === 'trusted') return
  const at = iso(deps.clock.now())
  const after: Standing = { ...TRUSTED, level, levelSince: at, stored: true }
  await writeChange(tx, deps, at, { accountId, kind: 'system', keyId: null, permission: 'full_access', domainScope: null }, { accountId, before: TRUSTED, after, reason: 'new account from open sign-up', by: 'system' })
}

/** Emails a UTC day the level allows; null for no ladder cap. */
export function dailyCap(config: Config, level: TrustLevel): number | null {
  const t = config.trust
  return { sandbox: t.sandboxDailyCap, new: t.newDailyCap, established: t.establishedDailyCap, trusted: null }[level]
}

export const NEXT_LEVEL: Record<TrustLevel, TrustLevel | null> = { sandbox: 'new', new: 'established', established: 'trusted', trusted: null }

export const thresholdsOf = (config: Config) => ({ minSends: config.trust.minSends, bouncePercent: config.trust.bouncePercent, complaintPercent: config.trust.complaintPercent })

/** Who a sandboxed account, or one under review, may write to: its members and addresses at its verified domains. */
export async function ownRecipients(q: Executor, accountId: string) {
  const [members, own] = await Promise.all([
    q.select({ email: people.email }).from(memberships).innerJoin(people, eq(people.id, memberships.personId)).where(eq(memberships.accountId, accountId)),
    q.select({ name: domains.name }).from(domains).where(and(eq(domains.accountId, accountId), eq(domains.status, 'verified'))),
  ])
  return { members: members.map((m) => m.email.toLowerCase()), domains: own.map((d) => d.name.toLowerCase()) }
}

interface Message {
  from: { domain: string; address: string } | null
  recipients: { address: string; domain: string; kind: string }[]
  simulator: boolean
}

/**
 * What the standing refuses about one message: suspension (every send), then,
 * for real recipients only, a paused account or from domain, and the recipients
 * a sandboxed account or one under review may not reach.
 */
export async function standingFindings(deps: Deps, actor: Actor, m: Message): Promise<Finding[]> {
  const s = await standingOf(deps, actor.accountId)
  if (unlimited(s)) return []
  if (s.state === 'suspended') return [errorFinding('account_suspended', `This account is suspended: ${s.stateReason ?? 'by the operator'}. Only the operator can lift a suspension.`)]
  if (m.simulator) return []
  if (s.state === 'paused') {
    return [errorFinding('sending_paused_everywhere', `Sending is paused for the whole account since ${s.stateSince}: ${s.stateReason}. GET /trust/standing explains it; a person may appeal with POST /trust/appeal.`)]
  }
  const paused = m.from && s.pausedDomains.find((d) => d.domain === m.from!.domain)
  if (paused) {
    return [errorFinding('trust_paused', `Sending from ${paused.domain} is paused since ${paused.since}: ${paused.reason}. Other domains of the account go on; a person may appeal with POST /trust/appeal.`, 'from')]
  }
  // The onboarding sender's own rule (members only) is the stricter one, and says so better.
  if ((s.state !== 'review' && s.level !== 'sandbox') || isOnboarding(deps.config, m.from)) return []
  const own = await ownRecipients(deps.db.q, actor.accountId)
  const outside = m.recipients.filter((r) => !own.members.includes(r.address) && !own.domains.includes(r.domain) && !isSimulator(r.address))
  if (!outside.length) return []
  const allowed = `its ${own.members.length} members and addresses at its verified domains (${own.domains.join(', ') || 'none yet'})`
  const r = outside[0]
  if (s.state === 'review') {
    return [errorFinding('review_sandbox_recipient_only', `While the account is under review it may send only to ${allowed}; ${r.address} is neither. GET /trust/standing lists them.`, r.kind)]
  }
  return [errorFinding('account_sandboxed', `This account is in the sandbox and may send only to ${allowed}; ${r.address} is neither. GET /trust/standing says what lifts the sandbox.`, r.kind)]
}

/** The account's sends of this UTC day, from the day counter the quotas keep. */
export async function sentToday(q: Executor, accountId: string, now: number) {
  const [row] = await q
    .select({ sent: accountUsage.sent })
    .from(accountUsage)
    .where(and(eq(accountUsage.accountId, accountId), eq(accountUsage.period, `day:${iso(now).slice(0, 10)}`)))
  return row?.sent ?? 0
}

/** The next UTC midnight, when the day caps reset. */
export const nextDay = (now: number) => iso(Math.floor(now / DAY) * DAY + DAY)

export interface Volume {
  /** Real (not simulator) recipients of the send. */
  real: number
  /** A bulk send: a broadcast, or a batch above the bulk size. */
  bulk: boolean
  /** The sending domains of the real messages. */
  domains: { name: string; verifiedAt: string | null }[]
  /** Today's sends so far, already read by the caller (the send's ledger), or null to read them here. */
  sentToday: number | null
}

/**
 * What the standing refuses about a send as a whole, after its messages passed:
 * suspension and pauses (broadcasts check them here), bulk sends under review
 * or from a young domain, and the ladder's daily cap.
 */
export async function volumeGate(deps: Deps, actor: Actor, v: Volume, now: number, broadcast = false) {
  const s = await standingOf(deps, actor.accountId)
  if (unlimited(s) || !v.real) return
  if (broadcast) {
    const err = firstError(await standingFindings(deps, actor, { from: v.domains[0] ? { domain: v.domains[0].name, address: '' } : null, recipients: [], simulator: false }))
    if (err) throw err
    if (s.level === 'sandbox' && s.state !== 'review') {
      throw new AppError('account_sandboxed', { message: 'A broadcast reaches a whole audience; an account in the sandbox may send only to its members and its verified domains. GET /trust/standing says what lifts the sandbox.' })
    }
  }
  if (v.bulk && s.state === 'review') {
    throw new AppError('staff_review_required', { message: `The account is under review (${s.stateReason}); bulk sends wait for the operator’s decision. Single sends to the account’s own members and domains go on.` })
  }
  const hold = deps.config.trust.youngDomainHours * HOUR
  const young = v.bulk && s.level !== 'trusted' && v.domains.find((d) => d.verifiedAt && Date.parse(d.verifiedAt) + hold > now)
  if (young) {
    const clears = iso(Date.parse(young.verifiedAt!) + hold)
    throw new AppError('young_domain_held', {
      message: `${young.name} was verified at ${young.verifiedAt}; bulk sends from a domain verified less than ${deps.config.trust.youngDomainHours} hours ago are held until ${clears}. Single sends go now.`,
    })
  }
  const cap = dailyCap(deps.config, s.level)
  if (cap === null) return
  const used = v.sentToday ?? (await sentToday(deps.db.q, actor.accountId, now))
  if (used + v.real > cap) {
    throw new AppError('trust_throttled', {
      message: `At the ${s.level} trust level the account may send ${cap} emails a day; ${used} went today and this send needs ${v.real}. The cap resets at ${nextDay(now)}; GET /trust/standing says what raises the level.`,
    })
  }
}

/** The rates the standing is judged on: the account's and each of its domains', over the window or since a time. */
export async function accountRates(q: Executor, accountId: string, since: string, now: number) {
  const own = eq(emails.accountId, accountId)
  const [account = null] = await sendRates(q, since, now, 'account', own)
  const byDomain = await sendRates(q, since, now, 'domain', own)
  return { account, byDomain: byDomain.map((r) => ({ ...r, domainId: r.id.slice(accountId.length + 1) })) }
}

export interface Requirement {
  name: string
  met: boolean
  detail: string
}

/** What raises the level: days at it, a verified domain (from the sandbox) or delivered sends, and rates since it began under the thresholds. */
export async function promotion(deps: Pick<Deps, 'config' | 'db'>, accountId: string, s: Standing, now: number) {
  const next = NEXT_LEVEL[s.level]
  if (!next) return { next: null, requirements: [] as Requirement[] }
  const t = deps.config.trust
  const since = s.levelSince ?? iso(now)
  const days = (now - Date.parse(since)) / DAY
  const reqs: Requirement[] = [{ name: 'days_at_level', met: days >= t.promoteDays, detail: `${Math.floor(days)} of ${t.promoteDays} days at ${s.level} (since ${since})` }]
  const { account } = await accountRates(deps.db.q, accountId, since, now)
  const rates: Rates = account ?? { id: accountId, sent: 0, delivered: 0, bounced: 0, invalid: 0, complained: 0 }
  if (s.level === 'sandbox') {
    const { domains: own } = await ownRecipients(deps.db.q, accountId)
    reqs.push({ name: 'verified_domain', met: own.length > 0, detail: own.length ? `verified: ${own.join(', ')}` : 'no verified sending domain yet' })
  } else {
    reqs.push({ name: 'delivered_sends', met: rates.delivered >= t.promoteSends, detail: `${rates.delivered} of ${t.promoteSends} real sends delivered at ${s.level}` })
  }
  const over = overThresholds(rates, { ...thresholdsOf(deps.config), minSends: 1 })
  reqs.push({ name: 'rates', met: !over.length, detail: over.length ? over.join('; ') : `bounces under ${t.bouncePercent}% and complaints under ${t.complaintPercent}% of ${rates.sent} real sends` })
  reqs.push({ name: 'state', met: s.state === 'active', detail: s.state === 'active' ? 'not paused, under review or suspended' : `the account is ${s.state}` })
  return { next, requirements: reqs }
}
