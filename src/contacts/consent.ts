import { and, eq, inArray } from 'drizzle-orm'
import type { Executor } from '../db'
import { suppressions } from '../db/tables'
import { AppError } from '../errors/app-error'

/**
 * Addresses whose owner said no themselves, by unsubscribing or by a spam complaint.
 * Only they can take that back (POST /contacts/{id}/resubscribe asks them), so no
 * write may call such a contact subscribed.
 */
export async function optedOut(q: Executor, accountId: string, emails: string[]): Promise<Set<string>> {
  const out = new Set<string>()
  for (let i = 0; i < emails.length; i += 500) {
    const rows = await q
      .select({ email: suppressions.email })
      .from(suppressions)
      .where(and(eq(suppressions.accountId, accountId), inArray(suppressions.email, emails.slice(i, i + 500)), inArray(suppressions.reason, ['unsubscribe', 'complaint'])))
    for (const r of rows) out.add(r.email)
  }
  return out
}

export const resubscribeRequired = (email: string, what: string) =>
  new AppError('contact_resubscribe_required', {
    message: `${email} unsubscribed and must confirm before ${what}; ask them with POST /contacts/{id}/resubscribe.`,
  })
