import { and, eq, inArray, sql } from 'drizzle-orm'
import { rateLimitOf } from '../api-keys/service'
import type { Executor, Tx } from '../db'
import { listOf, prepared } from '../db/prepared'
import { accountUsage, apiKeyBudgetUsage, apiKeys, domains, suppressions, topics } from '../db/tables'
import type { Deps } from '../deps'
import { trackingVerified } from '../domains/service'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { UUID_RE } from '../lib/ids'
import { periodBounds } from '../lib/periods'
import type { BucketState } from '../lib/token-bucket'
import { holdForApproval, mayHold } from '../agent-actions/hold'
import { planRefusal, readPlanTerms, spendPlan, type PlanTerms } from '../billing/ledger'
import type { AgentActionKind } from '../db/tables'
import { AppError } from '../errors/app-error'
import { findLoop, type Message } from '../trust/loop-guard'
import { onboardingChecks } from '../trust/onboarding'
import { isOnboarding } from '../trust/sender'
import { standingFindings } from '../trust/standing'
import { sendingGate } from '../deliverability/gate'
import { errorFinding, recipientListed, warning, type Finding } from './content'
import type { Draft } from './draft'

export type DomainRow = typeof domains.$inferSelect
type KeyRow = typeof apiKeys.$inferSelect
/** What the ledger and the key's controls read of the key row. */
type LedgerKey = Pick<KeyRow, 'id' | 'period' | 'budgetPerPeriod' | 'rateCeilingPerMinute' | 'loopGuard'>

/** A check a send passed (or, in preflight, failed), kept with the email for /explain. */
export interface CheckResult {
  name: string
  passed: boolean
  detail?: string
}

// Every send runs these: prepared once (see db/prepared.ts).
const sendingDomain = prepared((q) =>
  q
    .select()
    .from(domains)
    .where(and(eq(domains.accountId, sql.placeholder('accountId')), eq(domains.name, sql.placeholder('name'))))
    .limit(1)
    .prepare(),
)
/** The recipients on the suppression list, as one row (a JSON array of `[email, reason]`): a one-row read costs less than a list. */
const suppressedAmong = prepared((q) =>
  q
    .select({ list: sql<string>`json_group_array(json_array(${suppressions.email}, ${suppressions.reason}))` })
    .from(suppressions)
    .where(and(eq(suppressions.accountId, sql.placeholder('accountId')), inArray(suppressions.email, listOf('emails'))))
    .prepare(),
)
/** The usage row of one account period, or null. */
const sentIn = (period: string) =>
  sql<number | null>`(select ${accountUsage.sent} from ${accountUsage} where ${accountUsage.accountId} = ${sql.placeholder('accountId')} and ${accountUsage.period} = ${sql.placeholder(period)})`
/**
 * Everything the ledger counts, in one statement: the key row (none for a
 * session), the key's use in its own budget period (whichever of the four the
 * key has), and the account's day, month and plan cycle.
 */
const ledgerRow = prepared((q) =>
  q
    .select({
      // Only the columns a send reads: the whole row would cost its conversion (and its JSON scopes) on every send.
      key: { id: apiKeys.id, period: apiKeys.period, budgetPerPeriod: apiKeys.budgetPerPeriod, rateCeilingPerMinute: apiKeys.rateCeilingPerMinute, loopGuard: apiKeys.loopGuard },
      budgetUsed: sql<number | null>`(select ${apiKeyBudgetUsage.used} from ${apiKeyBudgetUsage} where ${apiKeyBudgetUsage.keyId} = ${apiKeys.id} and ${apiKeyBudgetUsage.periodStart} = case ${apiKeys.period} when 'hourly' then ${sql.placeholder('hourly')} when 'daily' then ${sql.placeholder('daily')} when 'weekly' then ${sql.placeholder('weekly')} else ${sql.placeholder('monthly')} end)`,
      day: sentIn('day'),
      month: sentIn('month'),
      plan: sentIn('plan'),
    })
    .from(sql`(select 1)`)
    .leftJoin(apiKeys, eq(apiKeys.id, sql.placeholder('keyId')))
    .prepare(),
)
const PERIODS = ['hourly', 'daily', 'weekly', 'monthly'] as const
const spendBudget = prepared((q) =>
  q
    .insert(apiKeyBudgetUsage)
    .values({ keyId: sql.placeholder('keyId'), periodStart: sql.placeholder('periodStart'), used: sql.placeholder('n') })
    .onConflictDoUpdate({ target: [apiKeyBudgetUsage.keyId, apiKeyBudgetUsage.periodStart], set: { used: sql`${apiKeyBudgetUsage.used} + ${sql.placeholder('n')}` } })
    .prepare(),
)
/** The day's and the month's counts in one statement. */
const spendQuotas = prepared((q) =>
  q
    .insert(accountUsage)
    .values([
      { accountId: sql.placeholder('accountId'), period: sql.placeholder('day'), sent: sql.placeholder('n') },
      { accountId: sql.placeholder('accountId'), period: sql.placeholder('month'), sent: sql.placeholder('n') },
    ])
    .onConflictDoUpdate({ target: [accountUsage.accountId, accountUsage.period], set: { sent: sql`${accountUsage.sent} + excluded.sent` } })
    .prepare(),
)

/** Recipients on the deployment's blocklist (config only: lint runs it too). */
export function recipientFindings(deps: Pick<Deps, 'config'>, draft: Draft): Finding[] {
  const out: Finding[] = []
  for (const r of draft.recipients) {
    const entry = recipientListed(deps.config, r.address)
    if (entry) out.push(errorFinding('recipient_blocklisted', `The recipient ${r.address} is on the recipient blocklist (${entry}).`, r.kind))
  }
  return out
}

export interface AccountCheck {
  findings: Finding[]
  checks: CheckResult[]
  /** The sending domain row matching the from domain, when the account has one. */
  domain: DomainRow | null
}

/** A domain may send when it is verified and its sending capability is on. */
export const canSend = (d: DomainRow) => d.status === 'verified' && d.sendingEnabled

/** The account's sending domain of one name, and its deliverability gate's verdict when it may send. */
interface DomainFacts {
  domain: DomainRow | null
  gate: { findings: Finding[]; checks: CheckResult[] } | null
}

/** Domain facts by name, read once for all the emails of a batch (they mostly share a from domain). */
export type DomainCache = Map<string, Promise<DomainFacts>>

function domainFacts(deps: Deps, actor: Actor, name: string, cache?: DomainCache): Promise<DomainFacts> {
  const known = cache?.get(name)
  if (known) return known
  const read = (async () => {
    const domain = (await sendingDomain(deps.db.q).get({ accountId: actor.accountId, name })) ?? null
    return { domain, gate: domain && canSend(domain) ? await sendingGate(deps, domain) : null }
  })()
  cache?.set(name, read)
  return read
}

/**
 * What a send checks against the account, in order: the key's domain scope, the
 * from domain (a verified sending domain of the account, unless every recipient
 * is a simulator address), the topic, the recipient blocklist and the
 * suppression list.
 */
export async function accountChecks(deps: Deps, actor: Actor, draft: Draft, domains?: DomainCache): Promise<AccountCheck> {
  const findings: Finding[] = []
  const checks: CheckResult[] = []
  let domain: DomainRow | null = null
  const fromDomain = draft.from?.domain
  if (fromDomain) {
    if (actor.domainScope && actor.domainScope.toLowerCase() !== fromDomain) {
      findings.push(errorFinding('domain_scope_violation', `This API key may send only from ${actor.domainScope}; \`from\` is at ${fromDomain}.`, 'from'))
      checks.push({ name: 'domain_scope', passed: false, detail: `key scoped to ${actor.domainScope}` })
    } else {
      checks.push({ name: 'domain_scope', passed: true, detail: actor.domainScope ? `key scoped to ${actor.domainScope}` : 'key has no domain scope' })
    }
    const onboarding = isOnboarding(deps.config, draft.from) ? await onboardingChecks(deps, actor, draft) : null
    const facts = onboarding ? null : await domainFacts(deps, actor, fromDomain, domains)
    domain = onboarding ? onboarding.domain : facts!.domain
    if (onboarding) {
      findings.push(...onboarding.findings)
      checks.push(...onboarding.checks)
    } else if (domain && canSend(domain)) {
      checks.push({ name: 'sending_domain', passed: true, detail: `${domain.name} is verified and may send` })
      findings.push(...facts!.gate!.findings)
      checks.push(...facts!.gate!.checks)
      if ((draft.clickTracking ?? domain.clickTracking) && !trackingVerified(domain)) {
        findings.push(
          warning(
            'tracking_subdomain_unverified',
            `Click tracking needs the tracking subdomain of ${domain.name} to verify; links are sent as written.`,
            draft.clickTracking ? 'click_tracking' : undefined,
          ),
        )
      }
    } else if (draft.simulator) {
      checks.push({ name: 'sending_domain', passed: true, detail: 'every recipient is a simulator address: no verified domain needed' })
    } else if (domain && domain.status === 'verified') {
      findings.push(errorFinding('domain_sending_disabled', `Sending is disabled on ${domain.name}; enable it with PATCH /domains/${domain.id}.`, 'from'))
      checks.push({ name: 'sending_domain', passed: false, detail: `${domain.name} has sending disabled` })
    } else {
      const why = domain ? `its status is ${domain.status}` : 'it is not a domain of this account'
      findings.push(errorFinding('domain_not_verified', `The ${fromDomain} domain is not verified for sending: ${why}. Add and verify it at /domains, or send to simulator addresses only.`, 'from'))
      checks.push({ name: 'sending_domain', passed: false, detail: why })
    }
  }

  // The standing's refusals come first: a suspended or paused account hears that before anything about one message.
  findings.unshift(...(await standingFindings(deps, actor, draft)))

  if (draft.topicId !== null) {
    const [topic] = UUID_RE.test(draft.topicId)
      ? await deps.db.q
          .select({ id: topics.id })
          .from(topics)
          .where(and(eq(topics.accountId, actor.accountId), eq(topics.id, draft.topicId.toLowerCase())))
      : []
    if (!topic) findings.push(errorFinding('invalid_parameter', `\`topic_id\` ${draft.topicId} is not a topic of this account.`, 'topic_id'))
    else checks.push({ name: 'topic', passed: true, detail: topic.id })
  }

  const listed = recipientFindings(deps, draft)
  findings.push(...listed)
  checks.push({ name: 'recipient_blocklist', passed: listed.length === 0 })

  const addresses = draft.recipients.map((r) => r.address)
  const found = addresses.length ? await suppressedAmong(deps.db.q).get({ accountId: actor.accountId, emails: JSON.stringify(addresses) }) : undefined
  const suppressed = found ? (JSON.parse(found.list) as [string, string][]).map(([email, reason]) => ({ email, reason })) : []
  for (const s of suppressed) {
    const r = draft.recipients.find((x) => x.address === s.email)!
    findings.push(errorFinding('suppressed_recipient', `The recipient ${s.email} is on this account's suppression list (${s.reason}).`, r.kind))
  }
  checks.push({ name: 'suppression', passed: suppressed.length === 0, ...(suppressed.length ? { detail: suppressed.map((s) => s.email).join(', ') } : {}) })
  return { findings, checks, domain }
}

export interface Count {
  limit: number | null
  used: number
  remaining: number | null
}

/** What spending `n` emails meets: the key's budget and the account's quotas, read in `exec`. */
export interface Ledger {
  n: number
  key: LedgerKey | null
  budget: (Count & { period: string; period_start: string; resets_at: string }) | null
  daily: Count & { period: string }
  monthly: Count & { period: string }
  /** Of `n`, the emails to real addresses: only they need a plan and spend its inclusion. */
  real: number
  /** The plan's inclusion for the cycle, with billing on; null with it off. */
  plan: (PlanTerms & { used: number }) | null
}

const count = (limit: number | null | undefined, used: number): Count => ({ limit: limit ?? null, used, remaining: limit === undefined || limit === null ? null : Math.max(0, limit - used) })

export const dayKey = (now: number) => `day:${iso(now).slice(0, 10)}`
export const monthKey = (now: number) => `month:${iso(now).slice(0, 7)}`

export async function readLedger(exec: Executor, deps: Deps, actor: Actor, n: number, now: number, real = n): Promise<Ledger> {
  const plan = await readPlanTerms(exec, deps, actor.accountId, now)
  // With billing off the plan's period matches no row.
  const periods = [dayKey(now), monthKey(now), plan?.period ?? '']
  const starts = Object.fromEntries(PERIODS.map((p) => [p, iso(periodBounds(p, now).start)]))
  const row = (await ledgerRow(exec).get({ keyId: actor.keyId, accountId: actor.accountId, ...starts, day: periods[0], month: periods[1], plan: periods[2] }))!
  const key = row.key
  let budget: Ledger['budget'] = null
  if (key) {
    const { start, end } = periodBounds(key.period, now)
    budget = { ...count(key.budgetPerPeriod, row.budgetUsed ?? 0), period: key.period, period_start: iso(start), resets_at: iso(end) }
  }
  return {
    n,
    key,
    budget,
    daily: { ...count(deps.config.dailyQuota, row.day ?? 0), period: periods[0] },
    monthly: { ...count(deps.config.monthlyQuota, row.month ?? 0), period: periods[1] },
    real,
    plan: plan && { ...plan, used: plan.plan ? (row.plan ?? 0) : 0 },
  }
}

/** The key budget and account quotas against `n` more emails. */
export function ledgerFindings(l: Ledger): Finding[] {
  const out: Finding[] = []
  const b = l.budget
  if (b && b.limit !== null && b.used + l.n > b.limit) {
    out.push(
      errorFinding(
        'agent_budget_exceeded',
        `This API key has used ${b.used} of its ${b.limit} emails for the ${b.period} period, which resets at ${b.resets_at}; this send needs ${l.n}.`,
      ),
    )
  }
  if (l.daily.limit !== null && l.daily.used + l.n > l.daily.limit) {
    out.push(errorFinding('daily_quota_exceeded', `The account has sent ${l.daily.used} of its ${l.daily.limit} emails today (UTC); this send needs ${l.n}. The quota resets at the UTC day change.`))
  }
  if (l.monthly.limit !== null && l.monthly.used + l.n > l.monthly.limit) {
    out.push(errorFinding('monthly_quota_exceeded', `The account has sent ${l.monthly.used} of its ${l.monthly.limit} emails this month; this send needs ${l.n}. The quota resets at the month change.`))
  }
  const refusal = l.plan && planRefusal(l.plan, l.plan.used, l.real)
  if (refusal) out.push(errorFinding(refusal.code, refusal.message))
  return out
}

export function ledgerChecks(l: Ledger): CheckResult[] {
  const b = l.budget
  return [
    { name: 'key_budget', passed: !(b && b.limit !== null && b.used + l.n > b.limit), detail: b && b.limit !== null ? `${b.used + l.n} of ${b.limit} (${b.period})` : 'no budget set' },
    { name: 'daily_quota', passed: !(l.daily.limit !== null && l.daily.used + l.n > l.daily.limit), detail: l.daily.limit !== null ? `${l.daily.used + l.n} of ${l.daily.limit}` : 'unlimited' },
    { name: 'monthly_quota', passed: !(l.monthly.limit !== null && l.monthly.used + l.n > l.monthly.limit), detail: l.monthly.limit !== null ? `${l.monthly.used + l.n} of ${l.monthly.limit}` : 'unlimited' },
    ...(l.plan
      ? [{ name: 'plan', passed: !planRefusal(l.plan, l.plan.used, l.real), detail: l.plan.plan ? `${l.plan.used + l.real} of ${l.plan.inclusion} (${l.plan.plan}, overage ${l.plan.overage})` : 'no plan in force' }]
      : []),
  ]
}

/** Adds `n` to the key's period and the account's day and month, in the send's transaction. */
export async function spend(tx: Tx, actor: Actor, l: Ledger) {
  if (l.key && l.budget) await spendBudget(tx).run({ keyId: l.key.id, periodStart: l.budget.period_start, n: l.n })
  await spendQuotas(tx).run({ accountId: actor.accountId, day: l.daily.period, month: l.monthly.period, n: l.n })
  await spendPlan(tx, actor.accountId, l.plan, l.real)
}

/**
 * Each recipient is one email against the key's rate window; the request itself
 * already spent one, so a send of `n` spends `n - 1` more. Nothing is spent when
 * the window cannot cover it.
 */
export function takeRate(deps: Deps, l: Ledger, now: number): BucketState | null {
  if (!l.key) return null
  const limit = rateLimitOf(deps, l.key)
  return deps.buckets.take(`key:${l.key.id}`, limit, now, Math.max(0, l.n - 1))
}

export function peekRate(deps: Deps, l: Ledger, now: number): BucketState | null {
  if (!l.key) return null
  return deps.buckets.peek(`key:${l.key.id}`, rateLimitOf(deps, l.key), now)
}

export const rateCode = (l: Ledger) => (l.key?.rateCeilingPerMinute !== null && l.key?.rateCeilingPerMinute !== undefined ? 'rate_ceiling_exceeded' : 'rate_limit_exceeded')

/** How a send came to be, for the controls that may hold it for a person. */
export interface SendContext {
  /** What an approval replays: the kind and the exact service input. */
  replay: { kind: AgentActionKind; request: Record<string, unknown> }
  /** A batch: above the approval threshold it waits for a person. */
  batch?: boolean
  /** The inbound message this send answers is an automatic reply (the header that says so). */
  answersAutoReply?: string | null
}

/**
 * A key's own controls, read from the key row the ledger already holds, so they
 * cost no query: a batch above the approval threshold, and the loop guard
 * (`warn` reports, `hold` asks a person, `block` refuses). A call that carries
 * out an approved action is not held again.
 */
export async function keyControls(deps: Deps, actor: Actor, l: Ledger, messages: Message[], now: number, ctx?: SendContext): Promise<{ warnings: Finding[]; remember?: () => void }> {
  const key = l.key
  if (!key || !ctx || !mayHold(actor)) return { warnings: [] }
  const threshold = deps.config.controls.approvalThreshold
  if (ctx.batch && threshold > 0 && l.n > threshold) {
    await holdForApproval(deps, actor, {
      ...ctx.replay,
      reason: 'batch_threshold',
      detail: `This batch reaches ${l.n} recipients, above the ${threshold} a key may send at once without a person’s approval.`,
    })
  }
  if (key.loopGuard === 'off') return { warnings: [] }
  const { loop, remember } = findLoop(deps, key.id, messages, now, ctx.answersAutoReply ?? null)
  if (loop && key.loopGuard === 'block') throw new AppError('loop_detected', { message: `${loop} This key’s loop guard blocks such sends.` })
  if (loop && key.loopGuard === 'hold') await holdForApproval(deps, actor, { ...ctx.replay, reason: 'loop_guard', detail: loop })
  return { warnings: loop ? [warning('loop_detected', `${loop} Sent anyway: this key’s loop guard only warns.`)] : [], remember }
}
