import { sql } from 'drizzle-orm'
import type { Tx } from '../db'
import { prepared, rowInserter } from '../db/prepared'
import { emailEvents, emails, type EmailEventType } from '../db/tables'
import type { Ids } from '../lib/ids'
import { rollUp } from '../metrics/rollup'
import { queueEmailWebhooks } from '../webhooks/email-events'

export interface NewEvent {
  accountId: string
  emailId: string
  type: EmailEventType
  recipient?: string | null
  data?: Record<string, unknown>
  at: string
}

const insertEvents = rowInserter(emailEvents)
/** Each email's `last_event` and `updated_at` from a JSON array of [emailId, type, at]: one statement for a batch. */
const setLastEvents = prepared((q) =>
  q
    .update(emails)
    .set({ lastEvent: sql`j.value ->> 1`, updatedAt: sql`j.value ->> 2` })
    .from(sql`json_each(${sql.placeholder('rows')}) j`)
    .where(sql`${emails.id} = j.value ->> 0`)
    .prepare(),
)

/**
 * Records events, in order, and makes each email's last one its `last_event`, in
 * the caller's transaction, so the state change and its record can never disagree.
 * Their webhook events are queued here too, in the same transaction.
 */
export async function recordEvents(tx: Tx, ids: Ids, events: NewEvent[]) {
  await rollUp(tx, events)
  await insertOnly(tx, ids, events)
  // Only an email's last event of the list decides its `last_event`.
  const last = new Map(events.map((e) => [e.emailId, e]))
  if (last.size) await setLastEvents(tx).run({ rows: JSON.stringify([...last.values()].map((e) => [e.emailId, e.type, e.at])) })
}

export const recordEvent = (tx: Tx, ids: Ids, e: NewEvent) => recordEvents(tx, ids, [e])

/** Emails' first events, written with the email rows that already name them as `last_event`. */
export const recordFirstEvents = (tx: Tx, ids: Ids, events: NewEvent[]) => insertOnly(tx, ids, events)

async function insertOnly(tx: Tx, ids: Ids, events: NewEvent[]) {
  const rows = events.map((e) => ({ id: ids.uuid(), accountId: e.accountId, emailId: e.emailId, type: e.type, recipient: e.recipient ?? null, data: e.data ?? {}, createdAt: e.at }))
  await insertEvents(tx, rows)
  await queueEmailWebhooks(tx, ids, events)
}
