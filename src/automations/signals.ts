import { and, eq, inArray, lt } from 'drizzle-orm'
import type { Database, Tx } from '../db'
import { automationSignals, contactTopics } from '../db/tables'
import { DAY, iso } from '../lib/clock'
import { MAX_WAIT_MS, SYSTEM_EVENTS } from './graph'

export interface SignalInput {
  accountId: string
  contactId: string
  name: string
  payload: Record<string, unknown>
  occurrenceId?: string | null
  at: string
}

/**
 * Records that something happened to a contact, in the caller's transaction: the
 * automation worker starts runs from it and wakes the runs waiting for it, so it
 * exists exactly when the change that caused it does.
 */
export async function queueSignal(tx: Tx, s: SignalInput) {
  await tx.insert(automationSignals).values({ accountId: s.accountId, contactId: s.contactId, name: s.name, payload: s.payload, occurrenceId: s.occurrenceId ?? null, createdAt: s.at })
}

export const signalContactCreated = (tx: Tx, accountId: string, contactId: string, at: string) =>
  queueSignal(tx, { accountId, contactId, name: SYSTEM_EVENTS.contactCreated, payload: { contact_id: contactId }, at })

/**
 * One `mailroom:topic.answered` signal for each answer that changes what the
 * contact had recorded (a first answer included). Call it before the answers are
 * written: it reads the ones they replace.
 */
export async function signalTopicAnswers(tx: Tx, accountId: string, contactId: string, answers: { topicId: string; subscribed: boolean }[], at: string) {
  if (!answers.length) return
  const had = await tx
    .select({ topicId: contactTopics.topicId, subscribed: contactTopics.subscribed })
    .from(contactTopics)
    .where(and(eq(contactTopics.contactId, contactId), inArray(contactTopics.topicId, answers.map((a) => a.topicId))))
  const before = new Map(had.map((r) => [r.topicId, r.subscribed]))
  for (const a of answers) {
    if (before.get(a.topicId) === a.subscribed) continue
    await queueSignal(tx, { accountId, contactId, name: SYSTEM_EVENTS.topicAnswered, payload: { topic_id: a.topicId, subscribed: a.subscribed }, at })
  }
}

/**
 * Forgets processed signals no wait can still need: a wait reads the signals
 * recorded since it began, and no wait lasts longer than 30 days.
 */
export function purgeSignals(db: Database, now: number) {
  const before = iso(now - MAX_WAIT_MS - DAY)
  return db.write((tx) => tx.delete(automationSignals).where(lt(automationSignals.processedAt, before)))
}
