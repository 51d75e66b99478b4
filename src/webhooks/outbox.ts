import { and, eq, sql } from 'drizzle-orm'
import type { Tx } from '../db'
import { prepared, rowInserter } from '../db/prepared'
import { webhookDeliveries, webhookEndpoints } from '../db/tables'
import type { Ids } from '../lib/ids'
import { isWebhookEventKind } from './kinds'

export interface WebhookEventInput {
  /** e.g. 'email.delivered', 'contact.created', 'domain.updated', 'topic.deleted', 'suppression.added' */
  type: string
  /** The payload's `data` object, in Resend's shape. */
  data: Record<string, unknown>
  /** ISO time of the event: the payload's `created_at`. */
  at: string
  /** Events with one key are delivered in order per endpoint (the email id for email events, else the resource id). */
  orderKey?: string
}

/** The account's endpoints that take events: on the send path this is all an account without endpoints pays. */
const enabledEndpoints = prepared((q) =>
  q
    .select({ id: webhookEndpoints.id, events: webhookEndpoints.events })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.accountId, sql.placeholder('accountId')), eq(webhookEndpoints.disabled, false)))
    .prepare(),
)

const insertDeliveries = rowInserter(webhookDeliveries)

/** The body every attempt sends and signs: Resend's `{type, created_at, data}`. */
export const webhookPayload = (e: Pick<WebhookEventInput, 'type' | 'at' | 'data'>) => JSON.stringify({ type: e.type, created_at: e.at, data: e.data })

/** The account's enabled endpoints and the kinds each takes. */
export type Subscribers = Awaited<ReturnType<ReturnType<typeof enabledEndpoints>['all']>>
export const subscribersOf = (tx: Tx, accountId: string): Promise<Subscribers> => enabledEndpoints(tx).all({ accountId })

/**
 * Queues each event for every enabled endpoint of the account that subscribes to
 * its kind, in the caller's transaction: the event and its deliveries commit or
 * vanish together, and the dispatcher finds them due at once.
 */
export async function queueWebhookEvents(tx: Tx, ids: Ids, accountId: string, events: WebhookEventInput[]): Promise<void> {
  if (!events.length) return
  await queueFor(tx, ids, accountId, await subscribersOf(tx, accountId), events)
}

/** `queueWebhookEvents` for callers that read the subscribers already. */
export async function queueFor(tx: Tx, ids: Ids, accountId: string, endpoints: Subscribers, events: WebhookEventInput[]): Promise<void> {
  if (!endpoints.length) return
  const rows: (typeof webhookDeliveries.$inferInsert)[] = []
  for (const e of events) {
    if (!isWebhookEventKind(e.type)) throw new Error(`unknown webhook event kind: ${e.type}`)
    let payload: string | undefined
    for (const ep of endpoints) {
      if (!ep.events.includes(e.type)) continue
      payload ??= webhookPayload(e)
      rows.push(newDelivery(ids.uuid(), accountId, ep.id, e.type, payload, e.orderKey ?? null, e.at))
    }
  }
  await insertDeliveries(tx, rows)
}

/** A delivery due at `at`, not tried yet. */
export function newDelivery(id: string, accountId: string, endpointId: string, type: string, payload: string, orderKey: string | null, at: string) {
  return {
    id,
    accountId,
    endpointId,
    type,
    payload,
    orderKey,
    state: 'pending' as const,
    retries: 0,
    attempts: 0,
    nextAttemptAt: at,
    leaseOwner: null,
    leaseUntil: null,
    lastStatus: null,
    deliveredAt: null,
    createdAt: at,
    updatedAt: at,
  }
}
