import { and, eq } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import type { BillingSettings } from '../config'
import { pageOf } from '../db/paging'
import { accountUsage, billingAccounts, billingInvoices } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { DAY, iso } from '../lib/clock'
import { listKey, type PageQuery } from '../lib/paging'
import { requireRole } from '../team/roles'
import { forgetBillingRow, hasLiveSubscription, planInForce, termsOf, type BillingRow } from './ledger'
import { PLAN_IDS, PLANS, TRIAL, priceFor, termsOnSale } from './plans'
import { provider } from './provider'
import type { Checkout, Portal } from './schema'

type InvoiceRow = typeof billingInvoices.$inferSelect

/** Billing is on when the operator configured a payment provider; otherwise every billing route says so. */
export function requireBilling(deps: Deps): BillingSettings {
  if (!deps.config.billing) {
    throw new AppError('billing_not_configured', {
      message: 'Billing is not set up on this deployment: no plan limits apply beyond the operator’s quotas. The operator turns it on with MAILROOM_BILLING_SECRET_KEY and MAILROOM_BILLING_WEBHOOK_SECRET.',
    })
  }
  return deps.config.billing
}

/** Buying, the portal and the trial commit the account to money: owners and admins decide them. */
const requireBuyer = (actor: Actor) => requireRole(actor, 'admin', 'manage billing')

export async function loadBillingRow(deps: Deps, accountId: string): Promise<BillingRow | null> {
  const [row] = await deps.db.q.select().from(billingAccounts).where(eq(billingAccounts.accountId, accountId))
  return row ?? null
}

/** Creates or changes the account's billing row, and forgets the copy sends read from memory. */
export async function saveBillingRow(deps: Deps, s: BillingSettings, accountId: string, patch: Partial<BillingRow>) {
  const now = iso(deps.clock.now())
  await deps.db.write(async (tx) => {
    await tx
      .insert(billingAccounts)
      .values({ accountId, status: 'none', overageEnabled: false, createdAt: now, ...patch, updatedAt: now })
      .onConflictDoUpdate({ target: billingAccounts.accountId, set: { ...patch, updatedAt: now } })
    forgetBillingRow(s, accountId)
  })
}

const returnUrl = (deps: Deps) => `${deps.config.baseUrl}/console/billing`

function toPlan(s: BillingSettings, row: BillingRow | null, used: number, now: number) {
  const terms = termsOf(row, now)
  const paid = hasLiveSubscription(row) ? row!.plan : null
  const available = Boolean(paid && PLANS[paid].overageMax !== null)
  const enabled = Boolean(available && row?.overageEnabled)
  return {
    object: 'billing_plan' as const,
    plan: terms.plan,
    status: row?.status ?? 'none',
    term: row?.term ?? null,
    customer: Boolean(row?.customerId),
    current_period: row?.periodStart && row.periodEnd ? { start: row.periodStart, end: row.periodEnd } : null,
    trial: { used: Boolean(row?.trialStartedAt), started_at: row?.trialStartedAt ?? null, ends_at: row?.trialEndsAt ?? null },
    inclusion: terms.plan
      ? { emails: terms.inclusion, used: Math.min(used, terms.inclusion), remaining: Math.max(0, terms.inclusion - used), cycle_start: terms.cycle_start!, resets_at: terms.resets_at! }
      : null,
    limits: terms.plan ? { seats: PLANS[terms.plan].seats, domains: PLANS[terms.plan].domains } : null,
    overage: {
      available,
      enabled,
      cap: enabled ? terms.overage : null,
      used: Math.max(0, used - terms.inclusion),
    },
    plans: PLAN_IDS.map((id) => ({
      id,
      emails_per_month: PLANS[id].emailsPerMonth,
      seats: PLANS[id].seats,
      domains: PLANS[id].domains,
      overage: PLANS[id].overageMax !== null,
      overage_max_cap: PLANS[id].overageMax,
      terms: termsOnSale(s, id),
    })),
  }
}

/** GET /billing/plan: the plan in force, its inclusion used this cycle, the trial and the overage setting. */
export async function getPlan(deps: Deps, actor: Actor) {
  const s = requireBilling(deps)
  const now = deps.clock.now()
  const row = await loadBillingRow(deps, actor.accountId)
  const { period } = termsOf(row, now)
  const [usage] = period ? await deps.db.q.select({ sent: accountUsage.sent }).from(accountUsage).where(and(eq(accountUsage.accountId, actor.accountId), eq(accountUsage.period, period))) : []
  return toPlan(s, row, usage?.sent ?? 0, now)
}

/** POST /billing/trial: the Pro plan for 14 days, once per account, and never over a paid plan. */
export async function startTrial(deps: Deps, actor: Actor) {
  const s = requireBilling(deps)
  requireBuyer(actor)
  const now = deps.clock.now()
  const row = await loadBillingRow(deps, actor.accountId)
  if (row?.trialStartedAt) {
    throw new AppError('trial_already_used', { message: `This account’s ${TRIAL.days}-day trial started at ${row.trialStartedAt} and ${Date.parse(row.trialEndsAt!) > now ? 'runs' : 'ran'} until ${row.trialEndsAt}; buy a plan with POST /billing/checkout.` })
  }
  const inForce = planInForce(row, now)
  if (inForce) throw new AppError('plan_already_active', { message: `The ${inForce} plan is in force (${row!.status}); the trial is only for accounts without a plan.` })
  const start = iso(now)
  const end = iso(now + TRIAL.days * DAY)
  // A trial replaces nothing live: any subscription the row still names has ended.
  await saveBillingRow(deps, s, actor.accountId, { plan: TRIAL.plan, term: null, status: 'trialing', subscriptionId: null, subscriptionItemId: null, periodStart: start, periodEnd: end, trialStartedAt: start, trialEndsAt: end, overageEnabled: false, overageCap: null })
  const plan = await getPlan(deps, actor)
  await recordChange(deps, actor, { resource: 'billing', resourceId: actor.accountId, action: 'trial_started', before: null, after: { plan: plan.plan, status: plan.status, trial: plan.trial } })
  return plan
}

/** The account's customer at the provider, created (and kept) on first need. */
async function customerOf(deps: Deps, s: BillingSettings, actor: Actor, row: BillingRow | null) {
  if (row?.customerId) return row.customerId
  const { id } = await provider.createCustomer(s, actor.accountId, actor.person?.email)
  await saveBillingRow(deps, s, actor.accountId, { customerId: id })
  return id
}

/** POST /billing/checkout: a link where a person buys a plan; the plan starts when the provider's event reports the payment. */
export async function startCheckout(deps: Deps, actor: Actor, input: Checkout) {
  const s = requireBilling(deps)
  requireBuyer(actor)
  const { plan, term, price } = priceFor(s, input.plan, input.term ?? 'monthly')
  const row = await loadBillingRow(deps, actor.accountId)
  if (hasLiveSubscription(row)) {
    throw new AppError('subscription_active', { message: `The account’s ${row!.plan} subscription is ${row!.status}; change plans through the portal (POST /billing/portal with \`plan\`).` })
  }
  const customer = await customerOf(deps, s, actor, row)
  const session = await provider.createCheckoutSession(s, { customer, accountId: actor.accountId, price, plan, term, returnUrl: returnUrl(deps) })
  return { object: 'checkout_session' as const, id: session.id, url: session.url, plan, term }
}

/** An invoice named by a request: another account's is refused as such, not hidden. */
async function invoiceToPay(deps: Deps, actor: Actor, id: string): Promise<InvoiceRow> {
  const [inv] = await deps.db.q.select().from(billingInvoices).where(eq(billingInvoices.id, id.toLowerCase()))
  if (!inv) throw notFound(`Invoice ${id}`)
  if (inv.accountId !== actor.accountId) throw new AppError('charge_not_this_account', { message: `Invoice ${id} belongs to another account; pay only invoices listed by GET /billing/invoices.` })
  return inv
}

/** The plan change a portal request asks for, checked against the subscription it would change. */
function planChange(s: BillingSettings, row: BillingRow, input: Portal, now: number) {
  const target = priceFor(s, input.plan ?? row.plan ?? '', input.term ?? row.term ?? 'monthly')
  if (!hasLiveSubscription(row) || !row.subscriptionItemId) {
    const why = planInForce(row, now) === TRIAL.plan && row.status === 'trialing' ? 'the trial is not a subscription at the payment provider' : 'the account has no live subscription'
    throw new AppError('portal_change_unavailable', { message: `The plan cannot be changed in the portal: ${why}. Buy the plan with POST /billing/checkout.` })
  }
  if (target.plan === row.plan && target.term === row.term) throw new AppError('plan_already_active', { message: `The ${row.plan} plan (${row.term}) is already in force.` })
  return { subscription: row.subscriptionId!, item: row.subscriptionItemId, price: target.price }
}

/** The overage setting asked for: only on a paid plan that has overage, and within its largest cap. */
function overageSetting(row: BillingRow, overage: NonNullable<Portal['overage']>) {
  const paid = hasLiveSubscription(row) ? row.plan : null
  const max = paid ? PLANS[paid].overageMax : null
  if (!overage.enabled) return { overageEnabled: false, overageCap: null }
  if (!paid || max === null) {
    const what = paid ? `the ${paid} plan has no overage` : row.status === 'trialing' ? 'the trial has no overage' : 'no paid plan is in force'
    throw new AppError('overage_not_on_plan', { message: `Overage cannot be turned on: ${what}. Plans with overage: ${PLAN_IDS.filter((p) => PLANS[p].overageMax !== null).join(', ')}.` })
  }
  if (overage.cap != null && overage.cap > max) throw new AppError('invalid_parameter', { message: `\`overage.cap\` may be at most ${max} emails on the ${paid} plan; got ${overage.cap}.` })
  return { overageEnabled: true, overageCap: overage.cap ?? max }
}

/**
 * POST /billing/portal: a link to manage the subscription at the provider; with
 * `plan`/`term`, opened on confirming that change; with `invoice_id`, the
 * invoice's payment page. `overage` is set here, as part of managing the plan.
 */
export async function openPortal(deps: Deps, actor: Actor, input: Portal) {
  const s = requireBilling(deps)
  requireBuyer(actor)
  const now = deps.clock.now()
  const row = await loadBillingRow(deps, actor.accountId)
  if (!row?.customerId) throw new AppError('billing_customer_missing', { message: 'This account has no billing customer yet: buy a plan first (POST /billing/checkout).' })
  const changing = input.plan !== undefined || input.term !== undefined
  if (changing && input.invoice_id) throw new AppError('invalid_parameter', { message: 'Send either `invoice_id` (pay an invoice) or `plan`/`term` (change the plan), not both.' })
  const invoice = input.invoice_id ? await invoiceToPay(deps, actor, input.invoice_id) : null
  const change = changing ? planChange(s, row, input, now) : undefined
  let overage = { enabled: row.overageEnabled, cap: row.overageEnabled ? row.overageCap : null }
  if (input.overage) {
    const setting = overageSetting(row, input.overage)
    await saveBillingRow(deps, s, actor.accountId, setting)
    await recordChange(deps, actor, { resource: 'billing', resourceId: actor.accountId, action: 'overage_updated', before: { overage }, after: { overage: { enabled: setting.overageEnabled, cap: setting.overageCap } } })
    overage = { enabled: setting.overageEnabled, cap: setting.overageCap }
  }
  if (invoice?.hostedUrl) return { object: 'billing_portal_session' as const, id: null, url: invoice.hostedUrl, flow: 'pay_invoice' as const, overage }
  const session = await provider.createPortalSession(s, { customer: row.customerId, returnUrl: returnUrl(deps), change })
  return { object: 'billing_portal_session' as const, id: session.id, url: session.url, flow: change ? ('change_plan' as const) : ('manage' as const), overage }
}

export function toInvoice(row: InvoiceRow) {
  return {
    object: 'invoice' as const,
    id: row.id,
    provider_id: row.providerId,
    number: row.number,
    status: row.status,
    amount_due: row.amountDue,
    amount_paid: row.amountPaid,
    currency: row.currency,
    hosted_invoice_url: row.hostedUrl,
    invoice_pdf: row.pdfUrl,
    period_start: row.periodStart,
    period_end: row.periodEnd,
    created_at: row.issuedAt,
  }
}

/** GET /billing/invoices: the account's invoices as the provider's events reported them, newest first. */
export async function listInvoices(deps: Deps, actor: Actor, q: PageQuery) {
  requireBilling(deps)
  return pageOf(
    deps.secret,
    { list: listKey('billing_invoices'), query: q, id: billingInvoices.id },
    (ks) => deps.db.q.select().from(billingInvoices).where(and(eq(billingInvoices.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toInvoice,
  )
}
