import { and, eq, inArray } from 'drizzle-orm'
import type { Tx } from '../db'
import { emails, threadMessages, threads } from '../db/tables'
import type { Ids } from '../lib/ids'

/** `Re: Re: Fwd: Hello` → `Hello`: the subject a thread is known by. */
export const threadSubject = (subject: string) => subject.replace(/^(\s*(re|fwd?|aw|sv|wg)\s*(\[\d+\])?\s*:\s*)+/i, '').trim()

export interface Threading {
  messageId: string | null
  inReplyTo: string | null
  references: string[]
  subject: string
}

/**
 * The thread a message joins: the one that already holds a message it refers to
 * (In-Reply-To, References, or its own Message-ID seen before), inbound or outbound;
 * an outbound email it answers starts one; else a new thread.
 */
export async function resolveThread(tx: Tx, ids: Ids, accountId: string, m: Threading, at: string): Promise<string> {
  const refs = [...new Set([m.inReplyTo, ...m.references, m.messageId].filter((x): x is string => !!x))]
  if (refs.length) {
    const [known] = await tx
      .select({ threadId: threadMessages.threadId })
      .from(threadMessages)
      .where(and(eq(threadMessages.accountId, accountId), inArray(threadMessages.messageId, refs)))
      .limit(1)
    if (known) {
      await tx.update(threads).set({ lastMessageAt: at }).where(eq(threads.id, known.threadId))
      return known.threadId
    }
    const outbound = await tx
      .select({ id: emails.id, messageId: emails.messageId, subject: emails.subject, createdAt: emails.createdAt })
      .from(emails)
      .where(and(eq(emails.accountId, accountId), inArray(emails.messageId, refs)))
    if (outbound.length) {
      outbound.sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      const id = ids.uuid()
      await tx.insert(threads).values({ id, accountId, subject: threadSubject(outbound[0].subject), lastMessageAt: at, createdAt: outbound[0].createdAt })
      for (const o of outbound) {
        await tx.insert(threadMessages).values({ id: ids.uuid(), accountId, threadId: id, messageId: o.messageId, direction: 'outbound', emailId: o.id, createdAt: o.createdAt }).onConflictDoNothing()
      }
      return id
    }
  }
  const id = ids.uuid()
  await tx.insert(threads).values({ id, accountId, subject: threadSubject(m.subject), lastMessageAt: at, createdAt: at })
  return id
}

/** Puts a message into a thread by its Message-ID (without brackets). */
export async function addToThread(tx: Tx, ids: Ids, row: { accountId: string; threadId: string; messageId: string; direction: 'inbound' | 'outbound'; emailId: string; at: string }) {
  await tx
    .insert(threadMessages)
    .values({ id: ids.uuid(), accountId: row.accountId, threadId: row.threadId, messageId: row.messageId, direction: row.direction, emailId: row.emailId, createdAt: row.at })
    .onConflictDoNothing()
  await tx.update(threads).set({ lastMessageAt: row.at }).where(eq(threads.id, row.threadId))
}
