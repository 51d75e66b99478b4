import { and, asc, count, eq, isNull, sql } from 'drizzle-orm'
import { apiKeyBudgetUsage, apiKeys, domains } from '../db/tables'
import type { Deps } from '../deps'
import { readLedger, type Count } from '../emails/checks'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { periodBounds, type Period } from '../lib/periods'
import { sumRollups } from './rollup'

const PERIODS: Period[] = ['hourly', 'daily', 'weekly', 'monthly']

/**
 * GET /usage: emails spent today and this month against the account's quotas (the
 * monthly one is the plan's inclusion), each key's budget, domains and the default
 * rate window. The counts are the very rows the send checks read and add to
 * (readLedger, api_key_budget_usage), so a send is refused exactly when these say
 * nothing remains. Received mail is shown beside them; it spends no quota here.
 */
export async function getUsage(deps: Deps, actor: Actor) {
  const now = deps.clock.now()
  const ledger = await readLedger(deps.db.q, deps, actor, 0, now)
  const day = periodBounds('daily', now)
  const month = periodBounds('monthly', now)
  const [inDay, inMonth] = await Promise.all(
    [day, month].map((p) => sumRollups(deps.db.q, actor.accountId, [{ from: p.start, to: p.end, key: 0 }], {})),
  )
  const quota = (c: Count, bounds: { start: number; end: number }, received: number) => ({
    used: c.used,
    limit: c.limit,
    remaining: c.remaining,
    sent: c.used,
    received,
    period_started_at: iso(bounds.start),
    resets_at: iso(bounds.end),
  })

  // Each key's current period start, chosen by its period, as the send path computes it.
  const starts = Object.fromEntries(PERIODS.map((p) => [p, periodBounds(p, now)]))
  const periodStart = sql`case ${apiKeys.period} ${sql.join(PERIODS.map((p) => sql`when ${p} then ${iso(starts[p].start)}`), sql` `)} end`
  const keys = await deps.db.q
    .select({ key: apiKeys, used: apiKeyBudgetUsage.used })
    .from(apiKeys)
    .leftJoin(apiKeyBudgetUsage, and(eq(apiKeyBudgetUsage.keyId, apiKeys.id), eq(apiKeyBudgetUsage.periodStart, periodStart)))
    .where(and(eq(apiKeys.accountId, actor.accountId), isNull(apiKeys.revokedAt)))
    .orderBy(asc(apiKeys.id))
  const [{ n: domainCount }] = await deps.db.q.select({ n: count() }).from(domains).where(eq(domains.accountId, actor.accountId))

  return {
    object: 'usage' as const,
    emails: {
      daily: quota(ledger.daily, day, inDay[0]?.received ?? 0),
      monthly: quota(ledger.monthly, month, inMonth[0]?.received ?? 0),
    },
    domains: { used: domainCount, limit: deps.config.domainLimit ?? null },
    rate_limit: { limit: deps.config.rateLimitPerMinute, duration: '60s' },
    api_keys: keys.map(({ key: k, used }) => {
      const spent = used ?? 0
      return {
        id: k.id,
        name: k.name,
        permission: k.permission,
        budget_per_period: k.budgetPerPeriod,
        period: k.period,
        used: spent,
        remaining: k.budgetPerPeriod === null ? null : Math.max(0, k.budgetPerPeriod - spent),
        period_started_at: iso(starts[k.period].start),
        resets_at: iso(starts[k.period].end),
        rate_ceiling_per_minute: k.rateCeilingPerMinute,
        paused: k.pausedAt !== null,
      }
    }),
  }
}
