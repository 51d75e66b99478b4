import { eq } from 'drizzle-orm'
import type { Tx } from '../db'
import { emailEvents, emails, type EmailEventType } from '../db/tables'
import type { Ids } from '../lib/ids'

export interface NewEvent {
  accountId: string
  emailId: string
  type: EmailEventType
  recipient?: string | null
  data?: Record<string, unknown>
  at: string
}

/**
 * Records one event and makes it the email's `last_event`, in the caller's
 * transaction, so the state change and its record can never disagree. Webhook
 * dispatch (a later outbox) hooks in here.
 */
export async function recordEvent(tx: Tx, ids: Ids, e: NewEvent) {
  await tx.insert(emailEvents).values({
    id: ids.uuid(),
    accountId: e.accountId,
    emailId: e.emailId,
    type: e.type,
    recipient: e.recipient ?? null,
    data: e.data ?? {},
    createdAt: e.at,
  })
  await tx.update(emails).set({ lastEvent: e.type, updatedAt: e.at }).where(eq(emails.id, e.emailId))
}
