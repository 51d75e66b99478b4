import { and, eq, inArray, sql } from 'drizzle-orm'
import type { Tx } from '../db'
import { listOf, prepared, rowInserter, setTo } from '../db/prepared'
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

// Every received message runs these: prepared once, not built by drizzle each time.
const threadHolding = prepared((q) =>
  q
    .select({ threadId: threadMessages.threadId })
    .from(threadMessages)
    .where(and(eq(threadMessages.accountId, sql.placeholder('accountId')), inArray(threadMessages.messageId, listOf('refs'))))
    .limit(1)
    .prepare(),
)
const sentAmong = prepared((q) =>
  q
    .select({ id: emails.id, messageId: emails.messageId, subject: emails.subject, createdAt: emails.createdAt })
    .from(emails)
    .where(and(eq(emails.accountId, sql.placeholder('accountId')), inArray(emails.messageId, listOf('refs'))))
    .prepare(),
)
const touchThread = prepared((q) =>
  q
    .update(threads)
    .set({ lastMessageAt: setTo('at') })
    .where(eq(threads.id, sql.placeholder('id')))
    .prepare(),
)
const insertThread = rowInserter(threads)
const insertThreadMessage = rowInserter(threadMessages, { target: [threadMessages.accountId, threadMessages.messageId, threadMessages.emailId] })

/**
 * The thread a message joins: the one that already holds a message it refers to
 * (In-Reply-To, References, or its own Message-ID seen before), inbound or outbound;
 * an outbound email it answers starts one; else a new thread.
 */
export async function resolveThread(tx: Tx, ids: Ids, accountId: string, m: Threading, at: string): Promise<string> {
  const refs = [...new Set([m.inReplyTo, ...m.references, m.messageId].filter((x): x is string => !!x))]
  if (refs.length) {
    const [known] = await threadHolding(tx).all({ accountId, refs: JSON.stringify(refs) })
    if (known) {
      await touchThread(tx).run({ id: known.threadId, at })
      return known.threadId
    }
    const outbound = await sentAmong(tx).all({ accountId, refs: JSON.stringify(refs) })
    if (outbound.length) {
      outbound.sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      const id = ids.uuid()
      await insertThread(tx, [{ id, accountId, subject: threadSubject(outbound[0].subject), lastMessageAt: at, createdAt: outbound[0].createdAt }])
      for (const o of outbound) {
        await insertThreadMessage(tx, [{ id: ids.uuid(), accountId, threadId: id, messageId: o.messageId, direction: 'outbound', emailId: o.id, createdAt: o.createdAt }])
      }
      return id
    }
  }
  const id = ids.uuid()
  await insertThread(tx, [{ id, accountId, subject: threadSubject(m.subject), lastMessageAt: at, createdAt: at }])
  return id
}

/** Puts a message into a thread by its Message-ID (without brackets). */
export async function addToThread(tx: Tx, ids: Ids, row: { accountId: string; threadId: string; messageId: string; direction: 'inbound' | 'outbound'; emailId: string; at: string }) {
  await insertThreadMessage(tx, [{ id: ids.uuid(), accountId: row.accountId, threadId: row.threadId, messageId: row.messageId, direction: row.direction, emailId: row.emailId, createdAt: row.at }])
  await touchThread(tx).run({ id: row.threadId, at: row.at })
}
