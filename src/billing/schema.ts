import { t, type Static } from 'elysia'
import { Paging, Timestamp, Uuid } from '../http/schemas'
import { UUID_PATTERN } from '../lib/ids'

const PlanName = t.Union([t.Literal('starter'), t.Literal('pro'), t.Literal('scale')])

// Plan and term are free text on purpose: an unknown tier is `plan_not_purchasable`, a term not sold `term_not_on_sale`, not a bare validation error.
const PlanField = t.String({ minLength: 1, maxLength: 40, description: 'starter, pro or scale' })
const TermField = t.String({ minLength: 1, maxLength: 40, description: 'a term on sale: monthly or yearly unless the deployment sells fewer' })

export const PlanOffer = t.Object({
  id: PlanName,
  emails_per_month: t.Integer(),
  seats: t.Integer(),
  domains: t.Integer(),
  overage: t.Boolean({ description: 'whether emails beyond the inclusion may be allowed (never on starter)' }),
  overage_max_cap: t.Nullable(t.Integer()),
  terms: t.Array(t.String(), { description: 'terms on sale for this plan' }),
})

export const BillingPlan = t.Object({
  object: t.Literal('billing_plan'),
  plan: t.Nullable(PlanName, { description: 'the plan in force; null when none is (real sends get `plan_required`)' }),
  status: t.String({ description: '`none`, `trialing` (our 14-day trial) or the provider’s subscription status: `active`, `past_due`, `canceled`, …' }),
  term: t.Nullable(t.String()),
  customer: t.Boolean({ description: 'whether the account has a billing customer (the portal needs one)' }),
  current_period: t.Nullable(t.Object({ start: Timestamp, end: Timestamp })),
  trial: t.Object({ used: t.Boolean(), started_at: t.Nullable(Timestamp), ends_at: t.Nullable(Timestamp) }),
  inclusion: t.Nullable(
    t.Object(
      { emails: t.Integer(), used: t.Integer(), remaining: t.Integer(), cycle_start: Timestamp, resets_at: Timestamp },
      { description: 'real (non-simulator) emails of the current monthly cycle' },
    ),
  ),
  limits: t.Nullable(t.Object({ seats: t.Integer(), domains: t.Integer() })),
  overage: t.Object({ available: t.Boolean(), enabled: t.Boolean(), cap: t.Nullable(t.Integer()), used: t.Integer() }),
  plans: t.Array(PlanOffer),
})

export const Checkout = t.Object({
  plan: PlanField,
  term: t.Optional(TermField),
})
export type Checkout = Static<typeof Checkout>

export const CheckoutSession = t.Object({
  object: t.Literal('checkout_session'),
  id: t.String({ description: 'the provider’s checkout session id' }),
  url: t.String({ description: 'where the person pays; the plan starts when the provider reports the payment' }),
  plan: PlanName,
  term: t.String(),
})

export const Portal = t.Object({
  plan: t.Optional(PlanField),
  term: t.Optional(TermField),
  invoice_id: t.Optional(t.String({ pattern: UUID_PATTERN, description: "an invoice’s id (GET /billing/invoices) to pay: the reply’s url is its payment page" })),
  overage: t.Optional(
    t.Object(
      {
        enabled: t.Boolean(),
        cap: t.Optional(t.Nullable(t.Integer({ minimum: 0, description: 'emails beyond the inclusion per cycle; omitted or null: the plan’s largest cap' }))),
      },
      { description: 'allow emails beyond the inclusion (not on starter), up to a cap' },
    ),
  ),
})
export type Portal = Static<typeof Portal>

export const PortalSession = t.Object({
  object: t.Literal('billing_portal_session'),
  id: t.Nullable(t.String({ description: 'the provider’s portal session id; null for an invoice’s payment page' })),
  url: t.String(),
  flow: t.Union([t.Literal('manage'), t.Literal('change_plan'), t.Literal('pay_invoice')]),
  overage: t.Object({ enabled: t.Boolean(), cap: t.Nullable(t.Integer()) }),
})

export const Invoice = t.Object({
  object: t.Literal('invoice'),
  id: Uuid,
  provider_id: t.String(),
  number: t.Nullable(t.String()),
  status: t.String({ description: 'as the provider reports it: `paid`, `open`, …' }),
  amount_due: t.Integer({ description: 'in the currency’s smallest unit, as the provider gives it' }),
  amount_paid: t.Integer(),
  currency: t.String(),
  hosted_invoice_url: t.Nullable(t.String()),
  invoice_pdf: t.Nullable(t.String()),
  period_start: t.Nullable(Timestamp),
  period_end: t.Nullable(Timestamp),
  created_at: Timestamp,
})
export const InvoiceList = t.Object({ object: t.Literal('list'), data: t.Array(Invoice), has_more: t.Boolean(), next_cursor: t.Nullable(t.String()) })
export const ListInvoicesQuery = Paging

/** A provider event, as much of it as routing needs; the rest of `data.object` is read by kind, and the provider's other fields pass. */
export const ProviderEvent = t.Object(
  {
    id: t.String({ minLength: 1, maxLength: 255 }),
    type: t.String({ minLength: 1, maxLength: 255 }),
    created: t.Integer({ description: 'unix seconds' }),
    data: t.Object({ object: t.Record(t.String(), t.Unknown()) }, { additionalProperties: true }),
  },
  { additionalProperties: true },
)
export type ProviderEvent = Static<typeof ProviderEvent>

export const WebhookReceipt = t.Object({
  received: t.Literal(true),
  id: t.String(),
  outcome: t.Union([t.Literal('applied'), t.Literal('ignored'), t.Literal('replayed')]),
})
