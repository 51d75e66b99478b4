import { sql } from 'drizzle-orm'
import { index, integer, sqliteTable, text } from 'drizzle-orm/sqlite-core'

/** Where an account's events go: a URL, the kinds it takes, and the secret its deliveries are signed with. */
export const webhookEndpoints = sqliteTable(
  'webhook_endpoints',
  {
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    url: text('url').notNull(),
    events: text('events', { mode: 'json' }).$type<string[]>().notNull(),
    disabled: integer('disabled', { mode: 'boolean' }).notNull(),
    /** Why it is disabled: `manual` (by the account) or `failing` (by the dispatcher, after 5 days of failures). */
    disabledReason: text('disabled_reason', { enum: ['manual', 'failing'] }),
    /** Also sign under the `svix-*` header names, for receivers written for Resend. */
    webhookCompat: integer('webhook_compat', { mode: 'boolean' }).notNull(),
    /** `whsec_` and base64: the key deliveries are signed with. */
    secret: text('secret').notNull(),
    /** The secret before the last rotation, which signs beside the new one until `previous_secret_expires_at`. */
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: text('previous_secret_expires_at'),
    /** The first failed attempt since the last success: five days of failures disable the endpoint. */
    failingSince: text('failing_since'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [index('webhook_endpoints_account').on(t.accountId, t.id)],
)

/**
 * The webhook outbox and delivery log: one row per event and endpoint, written in
 * the transaction of the change that caused the event. The dispatcher claims due
 * rows with a lease; a row stays as the log of its attempts once it is done.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    /** The event id of the API and the `webhook-id` of every attempt, so receivers can drop repeats. */
    id: text('id').primaryKey(),
    accountId: text('account_id').notNull(),
    endpointId: text('endpoint_id').notNull(),
    type: text('type').notNull(),
    /** The exact body sent (and signed) on every attempt. */
    payload: text('payload').notNull(),
    /** Rows with one key go to an endpoint one after the other, in id order. */
    orderKey: text('order_key'),
    state: text('state', { enum: ['pending', 'delivered', 'failed'] }).notNull(),
    /** Attempts since the event was queued or last replayed: the position in the retry schedule. */
    retries: integer('retries').notNull(),
    /** Every attempt ever made. */
    attempts: integer('attempts').notNull(),
    nextAttemptAt: text('next_attempt_at').notNull(),
    leaseOwner: text('lease_owner'),
    leaseUntil: text('lease_until'),
    lastStatus: integer('last_status'),
    deliveredAt: text('delivered_at'),
    createdAt: text('created_at').notNull(),
    updatedAt: text('updated_at').notNull(),
  },
  (t) => [
    index('webhook_deliveries_due').on(t.endpointId, t.nextAttemptAt, t.id).where(sql`state = 'pending'`),
    index('webhook_deliveries_order').on(t.endpointId, t.orderKey, t.id).where(sql`state = 'pending'`),
    index('webhook_deliveries_endpoint').on(t.endpointId, t.id),
  ],
)

/** One HTTP attempt of a delivery, as the receiver answered it. */
export const webhookAttempts = sqliteTable(
  'webhook_attempts',
  {
    id: text('id').primaryKey(),
    deliveryId: text('delivery_id').notNull(),
    endpointId: text('endpoint_id').notNull(),
    startedAt: text('started_at').notNull(),
    durationMs: integer('duration_ms').notNull(),
    /** The HTTP status; null when no answer came (refused, timed out, address not allowed). */
    status: integer('status'),
    /** The start of the response body, or why there was none. */
    response: text('response').notNull(),
    outcome: text('outcome', { enum: ['succeeded', 'failed'] }).notNull(),
  },
  (t) => [index('webhook_attempts_delivery').on(t.deliveryId, t.id), index('webhook_attempts_endpoint').on(t.endpointId)],
)
