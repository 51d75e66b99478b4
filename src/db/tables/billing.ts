import { index, integer, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core'

/**
 * An account's standing with the payment provider, one row per account: its
 * customer, the subscription in force (or the trial), and the overage setting.
 * The plan in force is read from this row alone (src/billing/ledger.ts).
 */
export const billingAccounts = sqliteTable(
  'billing_accounts',
  {
    accountId: text('account_id').primaryKey(),
    customerId: text('customer_id'),
    subscriptionId: text('subscription_id'),
    /** The subscription's one item: a plan change through the portal names it. */
    subscriptionItemId: text('subscription_item_id'),
    plan: text('plan', { enum: ['starter', 'pro', 'scale'] }),
    term: text('term'),
    /** `none`, our own `trialing`, or the provider's subscription status (`active`, `past_due`, `canceled`, `incomplete`, `unpaid`, …). */
    status: text('status').notNull(),
    periodStart: text('period_start'),
    periodEnd: text('period_end'),
    trialStartedAt: text('trial_started_at'),
    trialEndsAt: text('trial_ends_at'),
    overageEnabled: integer('overage_enabled', { mode: 'boolean' }).notNull(),
    /** Emails beyond the inclusion the account allows itself per cycle. */
    overageCap: integer('overage_cap'),
    /** The provider's `created` (unix seconds) of the last subscription event applied: an older one arriving late changes nothing. */
    providerEventAt: integer('provider_event_at'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('billing_accounts_customer').on(t.customerId)],
)

/** Every provider event taken, by the provider's id: a replay finds its row and changes nothing. */
export const billingEvents = sqliteTable('billing_events', {
  id: text('id').primaryKey(),
  type: text('type').notNull(),
  accountId: text('account_id'),
  /** `applied`, or `ignored` (a kind we do not act on, or a customer we do not know). */
  outcome: text('outcome').notNull(),
  providerCreatedAt: text('provider_created_at').notNull(),
  receivedAt: text('received_at').notNull(),
})

/** Invoices as the provider's invoice events report them, amounts in the currency's smallest unit. */
export const billingInvoices = sqliteTable(
  'billing_invoices',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    providerId: text('provider_id').notNull(),
    number: text('number'),
    status: text('status').notNull(),
    amountDue: integer('amount_due').notNull(),
    amountPaid: integer('amount_paid').notNull(),
    currency: text('currency').notNull(),
    hostedUrl: text('hosted_url'),
    pdfUrl: text('pdf_url'),
    periodStart: text('period_start'),
    periodEnd: text('period_end'),
    issuedAt: text('issued_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [uniqueIndex('billing_invoices_provider').on(t.providerId), index('billing_invoices_account').on(t.accountId, t.id)],
)
