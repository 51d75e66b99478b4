import { createHmac } from 'node:crypto'
import { eq } from 'drizzle-orm'
import { recordChangeIn } from '../audit/record'
import type { BillingSettings } from '../config'
import type { Tx } from '../db'
import { billingAccounts, billingEvents, billingInvoices } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import { systemActor } from '../lib/actor'
import { iso } from '../lib/clock'
import { safeEqual } from '../lib/crypto'
import { forgetBillingRow, hasLiveSubscription, type BillingRow } from './ledger'
import { isPlanId, planOfPrice } from './plans'
import type { ProviderEvent } from './schema'
import { requireBilling } from './service'

/** How far the signed timestamp may be from our clock, as Stripe's own libraries allow. */
const TOLERANCE_SECONDS = 300

/**
 * Stripe's scheme: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=…]`, each v1 an
 * HMAC-SHA256 of `<t>.<exact body>` under the endpoint's signing secret. Any one
 * v1 may match (the provider signs with old and new secrets while one rolls).
 */
export function verifySignature(secret: string, header: string | null, raw: string, now: number) {
  const parts = (header ?? '').split(',').map((p) => p.trim().split('=') as [string, string?])
  const t = parts.find(([k]) => k === 't')?.[1]
  const signatures = parts.filter(([k, v]) => k === 'v1' && v).map(([, v]) => v!)
  const refuse = (why: string) => new AppError('payment_signature_invalid', { message: `The Stripe-Signature header failed verification: ${why}.` })
  if (!t || !/^\d{1,12}$/.test(t) || !signatures.length) throw refuse('it needs t=<timestamp> and v1=<signature>')
  const expected = createHmac('sha256', secret).update(`${t}.${raw}`).digest('hex')
  if (!signatures.some((v) => safeEqual(v, expected))) throw refuse('no v1 signature matches this body under the configured signing secret')
  if (Math.abs(now / 1000 - Number(t)) > TOLERANCE_SECONDS) throw refuse(`its timestamp is more than ${TOLERANCE_SECONDS / 60} minutes from this server’s clock`)
}

type Obj = Record<string, unknown>
const str = (o: Obj, k: string) => (typeof o[k] === 'string' ? (o[k] as string) : null)
const num = (o: Obj, k: string) => (typeof o[k] === 'number' ? (o[k] as number) : null)
const when = (o: Obj, k: string) => {
  const n = num(o, k)
  return n === null ? null : iso(n * 1000)
}
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {})

async function rowByCustomer(tx: Tx, customer: string | null): Promise<BillingRow | null> {
  if (!customer) return null
  const [row] = await tx.select().from(billingAccounts).where(eq(billingAccounts.customerId, customer))
  return row ?? null
}

const planView = (r: BillingRow) => ({ plan: r.plan, term: r.term, status: r.status, subscription_id: r.subscriptionId, period_start: r.periodStart, period_end: r.periodEnd })

/** Changes an account's row from a provider event, audited as the system's change. */
async function change(tx: Tx, deps: Deps, s: BillingSettings, row: BillingRow, patch: Partial<BillingRow>, action: string) {
  const at = iso(deps.clock.now())
  await tx.update(billingAccounts).set({ ...patch, updatedAt: at }).where(eq(billingAccounts.accountId, row.accountId))
  forgetBillingRow(s, row.accountId)
  await recordChangeIn(tx, deps.ids, at, systemActor(row.accountId), { resource: 'billing', resourceId: row.accountId, action, before: planView(row), after: planView({ ...row, ...patch }) })
}

type Outcome = { outcome: 'applied' | 'ignored'; accountId: string | null }

/**
 * A completed checkout: the subscription it made becomes the account's (the trial,
 * if any, ends). The session names our account (`client_reference_id`) and a
 * customer; when that customer is another account's, nothing is applied.
 */
async function checkoutCompleted(tx: Tx, deps: Deps, s: BillingSettings, e: ProviderEvent, o: Obj): Promise<Outcome> {
  const row = await rowByCustomer(tx, str(o, 'customer'))
  if (!row) return { outcome: 'ignored', accountId: null }
  const named = str(o, 'client_reference_id')
  if (named && named !== row.accountId) {
    throw new AppError('charge_not_this_account', { message: `Checkout session ${str(o, 'id')} names account ${named} but its customer ${row.customerId} belongs to another account; nothing was applied.` })
  }
  const subscription = str(o, 'subscription')
  // The subscription's own event may have come first; then it already holds the exact state.
  if (!subscription || row.subscriptionId === subscription) return { outcome: 'ignored', accountId: row.accountId }
  const meta = obj(o.metadata)
  const plan = str(meta, 'plan')
  await change(
    tx,
    deps,
    s,
    row,
    { subscriptionId: subscription, status: 'active', plan: plan && isPlanId(plan) ? plan : row.plan, term: str(meta, 'term') ?? row.term, periodStart: iso(e.created * 1000), periodEnd: null },
    'subscription_started',
  )
  return { outcome: 'applied', accountId: row.accountId }
}

/**
 * A subscription created, updated or deleted. Events may arrive out of order: one
 * older than the last applied changes nothing, and neither does news of another
 * subscription while this account's current one is live.
 */
async function subscriptionChanged(tx: Tx, deps: Deps, s: BillingSettings, e: ProviderEvent, o: Obj): Promise<Outcome> {
  const row = await rowByCustomer(tx, str(o, 'customer'))
  const id = str(o, 'id')
  if (!row || !id) return { outcome: 'ignored', accountId: null }
  const stale = row.providerEventAt !== null && e.created < row.providerEventAt
  const other = row.subscriptionId !== null && row.subscriptionId !== id && hasLiveSubscription(row)
  if (stale || other) return { outcome: 'ignored', accountId: row.accountId }
  const deleted = e.type === 'customer.subscription.deleted'
  const item = obj((obj(o.items).data as unknown[] | undefined)?.[0])
  const sold = planOfPrice(s, str(obj(item.price), 'id') ?? undefined)
  // Newer API versions keep the period on the item rather than the subscription.
  const periodStart = when(o, 'current_period_start') ?? when(item, 'current_period_start')
  const periodEnd = when(o, 'current_period_end') ?? when(item, 'current_period_end')
  await change(
    tx,
    deps,
    s,
    row,
    {
      subscriptionId: id,
      subscriptionItemId: str(item, 'id') ?? row.subscriptionItemId,
      status: deleted ? 'canceled' : (str(o, 'status') ?? row.status),
      plan: sold?.plan ?? row.plan,
      term: sold?.term ?? row.term,
      periodStart: periodStart ?? row.periodStart,
      periodEnd: periodEnd ?? row.periodEnd,
      providerEventAt: e.created,
    },
    deleted ? 'subscription_ended' : 'subscription_updated',
  )
  return { outcome: 'applied', accountId: row.accountId }
}

/** An invoice paid or failed: kept (or brought up to date) for GET /billing/invoices. */
async function invoiceChanged(tx: Tx, deps: Deps, o: Obj): Promise<Outcome> {
  const row = await rowByCustomer(tx, str(o, 'customer'))
  const providerId = str(o, 'id')
  if (!row || !providerId) return { outcome: 'ignored', accountId: null }
  const at = iso(deps.clock.now())
  const values = {
    number: str(o, 'number'),
    status: str(o, 'status') ?? 'open',
    amountDue: num(o, 'amount_due') ?? 0,
    amountPaid: num(o, 'amount_paid') ?? 0,
    currency: str(o, 'currency') ?? 'usd',
    hostedUrl: str(o, 'hosted_invoice_url'),
    pdfUrl: str(o, 'invoice_pdf'),
    periodStart: when(o, 'period_start'),
    periodEnd: when(o, 'period_end'),
    updatedAt: at,
  }
  await tx
    .insert(billingInvoices)
    .values({ id: deps.ids.uuid(), accountId: row.accountId, providerId, issuedAt: when(o, 'created') ?? at, ...values })
    .onConflictDoUpdate({ target: billingInvoices.providerId, set: values })
  return { outcome: 'applied', accountId: row.accountId }
}

function apply(tx: Tx, deps: Deps, s: BillingSettings, e: ProviderEvent): Promise<Outcome> {
  const o = e.data.object as Obj
  switch (e.type) {
    case 'checkout.session.completed':
      return checkoutCompleted(tx, deps, s, e, o)
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted':
      return subscriptionChanged(tx, deps, s, e, o)
    case 'invoice.paid':
    case 'invoice.payment_failed':
      return invoiceChanged(tx, deps, o)
    default:
      return Promise.resolve({ outcome: 'ignored', accountId: null })
  }
}

/**
 * POST /billing/webhook: verifies the provider's signature over the exact body,
 * then applies the event once. Its id is written in the same transaction as its
 * effect, so a replay (or a second delivery racing the first) finds it and
 * changes nothing.
 */
export async function receiveEvent(deps: Deps, signature: string | null, raw: string, e: ProviderEvent) {
  const s = requireBilling(deps)
  verifySignature(s.webhookSecret, signature, raw, deps.clock.now())
  return deps.db.write(async (tx) => {
    const taken = await tx
      .insert(billingEvents)
      .values({ id: e.id, type: e.type, accountId: null, outcome: 'ignored', providerCreatedAt: iso(e.created * 1000), receivedAt: iso(deps.clock.now()) })
      .onConflictDoNothing()
      .returning({ id: billingEvents.id })
    if (!taken.length) return { received: true as const, id: e.id, outcome: 'replayed' as const }
    const { outcome, accountId } = await apply(tx, deps, s, e)
    await tx.update(billingEvents).set({ outcome, accountId }).where(eq(billingEvents.id, e.id))
    return { received: true as const, id: e.id, outcome }
  })
}
