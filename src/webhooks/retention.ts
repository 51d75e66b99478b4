import { and, inArray, lt, ne } from 'drizzle-orm'
import type { Database } from '../db'
import { webhookAttempts, webhookDeliveries } from '../db/tables'
import { DAY } from '../lib/clock'

/** How long the delivery log keeps an event that is done (delivered, or its schedule spent). */
export const WEBHOOK_LOG_DAYS = 30
const PER_TRANSACTION = 1000

/** The smallest UUIDv7 of a millisecond: ids below it were made before it, so the primary key finds old rows. */
function firstIdAt(ms: number) {
  const hex = Math.max(0, ms).toString(16).padStart(12, '0')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`
}

/** Deletes finished events older than the retention, with their attempts, a bounded batch per transaction; pending ones stay. */
export async function purgeWebhookLog(db: Database, now: number): Promise<number> {
  const before = firstIdAt(now - WEBHOOK_LOG_DAYS * DAY)
  let total = 0
  for (;;) {
    const n = await db.write(async (tx) => {
      const rows = await tx
        .select({ id: webhookDeliveries.id })
        .from(webhookDeliveries)
        .where(and(lt(webhookDeliveries.id, before), ne(webhookDeliveries.state, 'pending')))
        .limit(PER_TRANSACTION)
      const ids = rows.map((r) => r.id)
      if (ids.length) {
        await tx.delete(webhookAttempts).where(inArray(webhookAttempts.deliveryId, ids))
        await tx.delete(webhookDeliveries).where(inArray(webhookDeliveries.id, ids))
      }
      return ids.length
    })
    total += n
    if (n < PER_TRANSACTION) return total
  }
}
