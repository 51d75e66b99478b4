import { eq, sql } from 'drizzle-orm'
import type { Executor, Tx } from '../db'
import { prepared } from '../db/prepared'
import { accountUsage, billingAccounts } from '../db/tables'
import type { BillingSettings } from '../config'
import { TtlCache } from '../lib/ttl-cache'
import type { Deps } from '../deps'
import { iso } from '../lib/clock'
import { PLANS, type PlanId } from './plans'

export type BillingRow = typeof billingAccounts.$inferSelect

/** Provider statuses under which the subscription's plan is in force (past_due: the provider is still retrying the charge). */
const LIVE = new Set(['active', 'past_due', 'trialing'])

/** A subscription at the provider that is still live: changes go through the portal, not a new checkout. */
export const hasLiveSubscription = (row: BillingRow | null) => Boolean(row?.subscriptionId && LIVE.has(row.status))

/** The plan in force now: a live subscription's, or the trial's until it ends; null when none is. */
export function planInForce(row: BillingRow | null, now: number): PlanId | null {
  if (!row?.plan) return null
  if (hasLiveSubscription(row)) return row.plan
  if (row.status === 'trialing' && row.trialEndsAt && Date.parse(row.trialEndsAt) > now) return row.plan
  return null
}

const addMonths = (ms: number, k: number) => {
  const d = new Date(ms)
  d.setUTCMonth(d.getUTCMonth() + k)
  return d.getTime()
}

/**
 * The cycle whose inclusion `now` spends from: the trial's 14 days, or the month
 * of the subscription that contains `now`, counted from the period's start (a
 * yearly term includes its emails month by month, and a renewal the provider has
 * not yet reported keeps counting months).
 */
export function cycleOf(row: BillingRow, now: number): { start: number; end: number } {
  if (!row.subscriptionId && row.trialStartedAt) return { start: Date.parse(row.trialStartedAt), end: Date.parse(row.trialEndsAt!) }
  const anchor = Date.parse(row.periodStart ?? row.updatedAt)
  // A monthly period as the provider reported it is the cycle itself.
  const end = row.periodEnd ? Date.parse(row.periodEnd) : null
  if (end !== null && anchor <= now && now < end && end <= addMonths(anchor, 1)) return { start: anchor, end }
  let k = 0
  while (addMonths(anchor, k + 1) <= now) k++
  return { start: addMonths(anchor, k), end: addMonths(anchor, k + 1) }
}

/** What a send meets from the plan: none in force (`plan: null`), or its inclusion and overage for the cycle. */
export interface PlanTerms {
  plan: PlanId | null
  /** The account_usage period this cycle's real emails are counted under. */
  period: string
  inclusion: number
  /** Emails allowed beyond the inclusion; 0 without overage. */
  overage: number
  cycle_start: string | null
  resets_at: string | null
}

export function termsOf(row: BillingRow | null, now: number): PlanTerms {
  const plan = planInForce(row, now)
  if (!plan || !row) return { plan: null, period: '', inclusion: 0, overage: 0, cycle_start: null, resets_at: null }
  const { start, end } = cycleOf(row, now)
  // Overage is a paid plan's: a trial never runs past its inclusion.
  const overage = row.overageEnabled && hasLiveSubscription(row) && PLANS[plan].overageMax !== null ? (row.overageCap ?? PLANS[plan].overageMax!) : 0
  // Keyed by the subscription too: a plan bought the moment the trial began counts afresh.
  return { plan, period: `plan:${row.subscriptionId ?? 'trial'}:${iso(start)}`, inclusion: PLANS[plan].emailsPerMonth, overage, cycle_start: iso(start), resets_at: iso(end) }
}

/**
 * Accounts' billing rows in memory, so a send with billing on reads no more rows
 * than one with it off. Kept with the settings they belong to (one per app), at
 * most 10,000 accounts, each for 30 seconds: a change this instance makes forgets
 * the row at once, one made by another instance on the same database is seen
 * within that time.
 */
const caches = new WeakMap<BillingSettings, TtlCache<BillingRow | null>>()

const cacheOf = (s: BillingSettings) => {
  let c = caches.get(s)
  if (!c) caches.set(s, (c = new TtlCache<BillingRow | null>(30_000, 10_000)))
  return c
}

const rowOf = prepared((q) => q.select().from(billingAccounts).where(eq(billingAccounts.accountId, sql.placeholder('accountId'))).prepare())

export async function billingRow(exec: Executor, s: BillingSettings, accountId: string, now: number): Promise<BillingRow | null> {
  const cache = cacheOf(s)
  const hit = cache.get(accountId, now)
  if (hit !== undefined) return hit
  const [row = null] = await rowOf(exec).all({ accountId })
  cache.set(accountId, row, now)
  return row
}

export const forgetBillingRow = (s: BillingSettings, accountId: string) => cacheOf(s).drop(accountId)

/** The plan terms a send meets, or null when billing is off (then nothing is read). */
export async function readPlanTerms(exec: Executor, deps: Deps, accountId: string, now: number): Promise<PlanTerms | null> {
  const s = deps.config.billing
  return s ? termsOf(await billingRow(exec, s, accountId, now), now) : null
}

/** The plan's monthly inclusion, when billing is on and a plan is in force: no key budget may exceed it. */
export async function planInclusion(deps: Deps, accountId: string): Promise<number | undefined> {
  const terms = await readPlanTerms(deps.db.q, deps, accountId, deps.clock.now())
  return terms?.plan ? terms.inclusion : undefined
}

export type PlanCode = 'plan_required' | 'plan_limit_reached' | 'overage_cap_reached'

/** The refusal `real` more emails (not to simulator addresses) meet against the plan, if any. */
export function planRefusal(t: PlanTerms, used: number, real: number): { code: PlanCode; message: string } | null {
  if (real === 0) return null
  if (!t.plan) {
    return { code: 'plan_required', message: `No plan is in force on this account, so ${real} real email${real === 1 ? ' was' : 's were'} not sent; start the trial (POST /billing/trial) or buy a plan (POST /billing/checkout). Simulator addresses still work.` }
  }
  if (used + real <= t.inclusion) return null
  if (t.overage === 0) {
    return { code: 'plan_limit_reached', message: `The ${t.plan} plan includes ${t.inclusion} emails this cycle, ${used} are used and this send needs ${real}; the cycle resets at ${t.resets_at}.` }
  }
  if (used + real > t.inclusion + t.overage) {
    return {
      code: 'overage_cap_reached',
      message: `The ${t.plan} plan's ${t.inclusion} included emails and the overage cap of ${t.overage} are used (${used} sent this cycle); this send needs ${real}. The cycle resets at ${t.resets_at}.`,
    }
  }
  return null
}

const spendPlanUsage = prepared((q) =>
  q
    .insert(accountUsage)
    .values({ accountId: sql.placeholder('accountId'), period: sql.placeholder('period'), sent: sql.placeholder('n') })
    .onConflictDoUpdate({ target: [accountUsage.accountId, accountUsage.period], set: { sent: sql`${accountUsage.sent} + excluded.sent` } })
    .prepare(),
)

/** Counts real emails against the cycle's inclusion, in the send's transaction. */
export async function spendPlan(tx: Tx, accountId: string, t: PlanTerms | null, real: number) {
  if (t?.plan && real > 0) await spendPlanUsage(tx).run({ accountId, period: t.period, n: real })
}
