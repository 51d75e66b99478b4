import { and, desc, eq, inArray } from 'drizzle-orm'
import type { Executor, Tx } from '../db'
import { domains, trustAppeals, trustChanges } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { HOUR, iso } from '../lib/clock'
import type { Config } from '../config'
import { overThresholds } from './rates'
import type { AppealBody } from './schema'
import { accountRates, dailyCap, nextDay, ownRecipients, promotion, readStanding, sentToday, thresholdsOf, writeChange, type Standing, type StandingChange } from './standing'

type AppealRow = typeof trustAppeals.$inferSelect

const toAppeal = (r: AppealRow) => ({
  object: 'trust_appeal' as const,
  id: r.id,
  status: r.status,
  reason: r.reason,
  outcome: r.outcome,
  by: r.personEmail,
  created_at: r.createdAt,
  updated_at: r.updatedAt,
})

const round = (x: number) => Math.round(x * 100) / 100

/**
 * What is over the thresholds now for one account, over the window: the account
 * as a whole, and each of its sending domains by name.
 */
export async function judgeAccount(q: Executor, config: Config, accountId: string, now: number) {
  const { account, byDomain } = await accountRates(q, accountId, iso(now - config.trust.windowHours * HOUR), now)
  const t = thresholdsOf(config)
  const over = byDomain.map((r) => ({ domainId: r.domainId, reasons: overThresholds(r, t) })).filter((r) => r.reasons.length)
  const names = over.length ? await q.select({ id: domains.id, name: domains.name }).from(domains).where(inArray(domains.id, over.map((r) => r.domainId))) : []
  const byName = new Map(over.map((r) => [names.find((n) => n.id === r.domainId)?.name ?? r.domainId, r.reasons]))
  return { rates: account, account: account ? overThresholds(account, t) : [], domains: byName }
}

function reasonsOf(s: Standing, config: Config) {
  const out = [
    s.stored
      ? `At the ${s.level} level since ${s.levelSince}.`
      : 'No standing is recorded for this account: the operator’s own account (and any made before the trust system) is trusted.',
  ]
  const cap = dailyCap(config, s.level)
  if (cap !== null) out.push(`The ${s.level} level allows ${cap} emails a UTC day.`)
  if (s.level === 'sandbox') out.push('In the sandbox the account sends only to its members and addresses at its verified domains.')
  if (s.state !== 'active') out.push(`The account is ${s.state} since ${s.stateSince}: ${s.stateReason}.`)
  for (const d of s.pausedDomains) out.push(`Sending from ${d.domain} is paused since ${d.since}: ${d.reason}.`)
  return out
}

/** GET /trust/standing: the level, its limits, the reasons, the rates it is judged on and what raises it. */
export async function getStanding(deps: Deps, actor: Actor) {
  const now = deps.clock.now()
  const q = deps.db.q
  const t = deps.config.trust
  const s = await readStanding(q, actor.accountId)
  const own = s.level === 'sandbox' || s.state === 'review'
  const [used, allowed, judged, raise, history, [appeal]] = await Promise.all([
    sentToday(q, actor.accountId, now),
    own ? ownRecipients(q, actor.accountId) : null,
    judgeAccount(q, deps.config, actor.accountId, now),
    promotion(deps, actor.accountId, s, now),
    q.select().from(trustChanges).where(eq(trustChanges.accountId, actor.accountId)).orderBy(desc(trustChanges.createdAt), desc(trustChanges.id)).limit(20),
    q.select().from(trustAppeals).where(eq(trustAppeals.accountId, actor.accountId)).orderBy(desc(trustAppeals.createdAt), desc(trustAppeals.id)).limit(1),
  ])
  const cap = dailyCap(deps.config, s.level)
  const r = judged.rates ?? { sent: 0, bounced: 0, complained: 0 }
  const share = (x: number) => (r.sent ? round((100 * x) / r.sent) : 0)
  const stopped = s.state === 'suspended' || s.state === 'paused'
  return {
    object: 'trust_standing' as const,
    account_id: actor.accountId,
    level: s.level,
    level_since: s.levelSince,
    state: s.state,
    state_since: s.stateSince,
    reasons: reasonsOf(s, deps.config),
    limits: {
      daily_cap: cap,
      sent_today: used,
      remaining_today: cap === null ? null : Math.max(0, cap - used),
      resets_at: nextDay(now),
      recipients: stopped ? ('none' as const) : own ? ('own' as const) : ('any' as const),
      allowed_recipients: allowed,
      bulk_sends: !stopped && s.state !== 'review' && s.level !== 'sandbox',
      bulk_size: t.bulkSize,
      young_domain_hours: s.level === 'trusted' ? 0 : t.youngDomainHours,
    },
    paused_domains: s.pausedDomains,
    rates: {
      window_hours: t.windowHours,
      sent: r.sent,
      bounced: r.bounced,
      complained: r.complained,
      bounce_percent: share(r.bounced),
      complaint_percent: share(r.complained),
      thresholds: { bounce_percent: t.bouncePercent, complaint_percent: t.complaintPercent, min_sends: t.minSends },
    },
    next_level: raise.next,
    raises_it: raise.requirements,
    history: history.map((h) => ({ from: h.from, to: h.to, reason: h.reason, by: h.by, at: h.createdAt })),
    latest_appeal: appeal ? toAppeal(appeal) : null,
  }
}

/**
 * POST /trust/appeal, by a person. The automatic review re-reads the rates: a
 * pause lifts at once when they are back under the thresholds, and a level rises
 * when every requirement is met. Otherwise the appeal is kept for the operator
 * (`staff_review_required`), and a paused account goes under review: single
 * sends to its own members and domains resume, bulk sends wait.
 */
export async function appeal(deps: Deps, actor: Actor, input: AppealBody) {
  const now = deps.clock.now()
  const at = iso(now)
  const by = actor.person!.email
  const s = await readStanding(deps.db.q, actor.accountId)
  const row = { id: deps.ids.uuid(), accountId: actor.accountId, personEmail: by, reason: input.reason, createdAt: at, updatedAt: at }
  const change = (after: Partial<Standing>, reason: string): StandingChange => ({ accountId: actor.accountId, before: s, after: { ...s, ...after, stored: true }, reason, by })

  const decide = async (status: 'granted' | 'decided', outcome: string, c?: StandingChange) => {
    await deps.db.write(async (tx) => {
      await tx.insert(trustAppeals).values({ ...row, status, outcome })
      if (c) await writeChange(tx, deps, at, actor, c)
    })
    return { ...toAppeal({ ...row, status, outcome }), standing: await getStanding(deps, actor) }
  }
  const keep = (outcome: string, c?: StandingChange) =>
    new AppError('staff_review_required', {
      message: `${outcome} Appeal ${row.id} is kept for the operator’s review.`,
      extra: { appeal_id: row.id },
      keep: async (tx) => {
        await tx.insert(trustAppeals).values({ ...row, status: 'pending', outcome })
        if (c) await writeChange(tx, deps, at, actor, c)
      },
    })

  if (s.state === 'suspended') throw keep('A suspension is lifted only by the operator.')
  if (s.state === 'paused' || s.state === 'review' || s.pausedDomains.length) {
    const judged = await judgeAccount(deps.db.q, deps.config, actor.accountId, now)
    const still = [...judged.account, ...s.pausedDomains.flatMap((d) => (judged.domains.get(d.domain) ?? []).map((x) => `${d.domain}: ${x}`))]
    if (!still.length) {
      const outcome = 'The rates are back under the thresholds: the automatic review lifted the pause.'
      return decide('granted', outcome, change({ state: 'active', stateReason: null, stateSince: at, pausedDomains: [] }, `appeal ${row.id} granted: rates back under the thresholds`))
    }
    const found = `${still.join('; ')} in the last ${deps.config.trust.windowHours} hours`
    const review = s.state === 'review' ? undefined : change({ state: 'review', stateReason: `appeal ${row.id}: ${found}`, stateSince: at }, `appeal ${row.id}: ${found}; the operator reviews`)
    throw keep(`The rates are still over the thresholds (${found}); the account is under review: single sends to its members and verified domains go on, bulk sends wait.`, review)
  }
  const { next, requirements } = await promotion(deps, actor.accountId, s, now)
  if (!next) return decide('decided', 'Nothing to review: the account is trusted and nothing is paused.')
  const unmet = requirements.filter((r) => !r.met)
  if (!unmet.length) {
    return decide('granted', `Every requirement for ${next} is met: the automatic review raised the level.`, change({ level: next, levelSince: at }, `appeal ${row.id} granted: promoted to ${next}`))
  }
  throw keep(`The automatic review cannot raise the level to ${next} yet: ${unmet.map((r) => r.detail).join('; ')}.`)
}

/** Pending appeals of an account become decided when the operator changes its standing. */
export const settleAppeals = (tx: Tx, accountId: string, outcome: string, at: string) =>
  tx.update(trustAppeals).set({ status: 'decided', outcome, updatedAt: at }).where(and(eq(trustAppeals.accountId, accountId), eq(trustAppeals.status, 'pending')))
