import type { BillingSettings } from '../config'
import { AppError } from '../errors/app-error'

export type PlanId = 'starter' | 'pro' | 'scale'

export interface Plan {
  /** Emails included per monthly cycle (a yearly term counts month by month from its start). */
  emailsPerMonth: number
  seats: number
  domains: number
  /** The most emails beyond the inclusion an account may allow itself per cycle; null: no overage on this plan. */
  overageMax: number | null
}

/** The plans, as data: the one place their numbers live. */
export const PLANS: Record<PlanId, Plan> = {
  starter: { emailsPerMonth: 10_000, seats: 3, domains: 3, overageMax: null },
  pro: { emailsPerMonth: 50_000, seats: 10, domains: 10, overageMax: 100_000 },
  scale: { emailsPerMonth: 200_000, seats: 25, domains: 100, overageMax: 1_000_000 },
}

export const PLAN_IDS = Object.keys(PLANS) as PlanId[]

/** The trial: the Pro plan for 14 days, once per account. */
export const TRIAL = { plan: 'pro' as PlanId, days: 14 }

export const isPlanId = (v: string): v is PlanId => v in PLANS

export const termsOnSale = (s: BillingSettings, plan: PlanId) =>
  Object.keys(s.prices)
    .filter((k) => k.startsWith(`${plan}_`))
    .map((k) => k.slice(plan.length + 1))

/** The provider's price for a plan and term, refusing a tier that is not sold or a term that is not on sale. */
export function priceFor(s: BillingSettings, plan: string, term: string): { plan: PlanId; term: string; price: string } {
  if (!isPlanId(plan)) throw new AppError('plan_not_purchasable', { message: `"${plan}" cannot be bought; the purchasable tiers are ${PLAN_IDS.join(', ')}.` })
  const price = s.prices[`${plan}_${term}`]
  if (!price) {
    const terms = termsOnSale(s, plan)
    throw new AppError('term_not_on_sale', {
      message: `The ${plan} plan is not on sale ${term === '' ? 'without a term' : `by the "${term}" term`}; terms on sale are ${terms.length ? terms.join(', ') : 'none on this deployment'}.`,
    })
  }
  return { plan, term, price }
}

/** The plan and term a provider price stands for, or null for a price this deployment does not sell. */
export function planOfPrice(s: BillingSettings, price: string | undefined): { plan: PlanId; term: string } | null {
  const entry = Object.entries(s.prices).find(([, p]) => p === price)
  if (!entry) return null
  const [plan, term] = entry[0].split('_')
  return isPlanId(plan) ? { plan, term } : null
}
