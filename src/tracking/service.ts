import { and, eq, inArray, sql } from 'drizzle-orm'
import { recordChangeIn } from '../audit/record'
import { signalTopicAnswers } from '../automations/signals'
import { recorded, toContact, type Answer } from '../contacts/service'
import type { Executor, Tx } from '../db'
import { contacts, contactTopics, emailEvents, emails, suppressions, topics } from '../db/tables'
import { readUnsubscribeToken } from '../delivery/unsubscribe'
import type { EmailRow } from '../delivery/types'
import type { Deps } from '../deps'
import { recordEvent } from '../emails/events'
import { systemActor } from '../lib/actor'
import { iso } from '../lib/clock'
import { auditSystemSuppression } from '../suppressions/service'
import { subscribedByDefault, type TopicRow } from '../topics/service'
import { readClickToken, readOpenToken } from './links'
import type { PreferenceItem } from './pages'

/** Who fetched a tracking address, as Resend's event data names it. */
export interface Visit {
  userAgent: string | null
  ipAddress: string | null
}

async function emailOf(q: Executor, id: string): Promise<Pick<EmailRow, 'id' | 'accountId' | 'topicId' | 'broadcastId'> | null> {
  const [row] = await q.select({ id: emails.id, accountId: emails.accountId, topicId: emails.topicId, broadcastId: emails.broadcastId }).from(emails).where(eq(emails.id, id))
  return row ?? null
}

async function seenBefore(tx: Tx, emailId: string, type: 'opened' | 'clicked', recipient: string, link?: string) {
  const [row] = await tx
    .select({ id: emailEvents.id })
    .from(emailEvents)
    .where(
      and(
        eq(emailEvents.emailId, emailId),
        eq(emailEvents.type, type),
        eq(emailEvents.recipient, recipient),
        link === undefined ? undefined : sql`json_extract(${emailEvents.data}, '$.click.link') = ${link}`,
      ),
    )
    .limit(1)
  return !!row
}

/**
 * A click: the original URL when the token is genuine (null otherwise), and a
 * `clicked` event for the recipient. Every click is an event; the first per recipient
 * and link carries `unique: true`. The check and the write share the write lock, so
 * two clicks at once never both count as the first. `record: false` (HEAD, a link
 * scanner's probe) answers the URL and records nothing.
 */
export async function click(deps: Deps, token: string, visit: Visit, record = true): Promise<string | null> {
  const target = readClickToken(deps.secret, token)
  if (!target) return null
  if (!record) return target.url
  const email = await emailOf(deps.db.q, target.emailId)
  // A genuine token of an email since deleted still leads where the message pointed.
  if (!email) return target.url
  const at = iso(deps.clock.now())
  await deps.db.write(async (tx) => {
    const unique = !(await seenBefore(tx, email.id, 'clicked', target.recipient, target.url))
    await recordEvent(tx, deps.ids, {
      accountId: email.accountId,
      emailId: email.id,
      type: 'clicked',
      recipient: target.recipient,
      data: { click: { link: target.url, timestamp: at, userAgent: visit.userAgent, ipAddress: visit.ipAddress }, unique },
      at,
    })
  })
  return target.url
}

/** An open (the pixel was fetched): `opened` for the recipient, `unique: true` on the first. False when the token is not genuine. */
export async function open(deps: Deps, token: string, visit: Visit, record = true): Promise<boolean> {
  const target = readOpenToken(deps.secret, token)
  if (!target) return false
  if (!record) return true
  const email = await emailOf(deps.db.q, target.emailId)
  if (!email) return true
  const at = iso(deps.clock.now())
  await deps.db.write(async (tx) => {
    const unique = !(await seenBefore(tx, email.id, 'opened', target.recipient))
    await recordEvent(tx, deps.ids, {
      accountId: email.accountId,
      emailId: email.id,
      type: 'opened',
      recipient: target.recipient,
      data: { open: { timestamp: at, userAgent: visit.userAgent, ipAddress: visit.ipAddress }, unique },
      at,
    })
  })
  return true
}

/** What an unsubscribe token leads to: the email, the address, and the topic the mail went under (null: a broadcast's whole list). */
export interface Subscription {
  email: Pick<EmailRow, 'id' | 'accountId' | 'topicId' | 'broadcastId'>
  recipient: string
  topic: TopicRow | null
}

/**
 * Reads an unsubscribe token: null when it is malformed, forged or its email is gone;
 * `no_list` when the email went under no topic and from no broadcast (plain
 * transactional mail has nothing to unsubscribe from).
 */
export async function readSubscription(deps: Deps, token: string): Promise<Subscription | 'no_list' | null> {
  const t = readUnsubscribeToken(deps.secret, token)
  if (!t) return null
  const email = await emailOf(deps.db.q, t.emailId)
  if (!email) return null
  let topic: TopicRow | null = null
  if (email.topicId) {
    ;[topic = null] = await deps.db.q
      .select()
      .from(topics)
      .where(and(eq(topics.id, email.topicId), eq(topics.accountId, email.accountId)))
  }
  if (!topic && !email.broadcastId) return 'no_list'
  return { email, recipient: t.recipient.toLowerCase(), topic }
}

/** The address's contact, made (with no names and no properties) when there is none, so the answer is remembered. */
async function contactFor(tx: Tx, deps: Deps, accountId: string, address: string, now: string) {
  const [row] = await tx.select().from(contacts).where(and(eq(contacts.accountId, accountId), eq(contacts.email, address)))
  if (row) return row
  const made = { id: deps.ids.uuid(), accountId, email: address, firstName: null, lastName: null, unsubscribed: false, properties: {}, createdAt: now, updatedAt: now }
  await tx.insert(contacts).values(made)
  await recordChangeIn(tx, deps.ids, now, systemActor(accountId), { resource: 'contact', resourceId: made.id, action: 'created', before: null, after: toContact(made) })
  return made
}

/** Answers a recipient gave on our pages: the service records them, as the system actor. */
function auditAnswers(tx: Tx, deps: Deps, accountId: string, contactId: string, now: string, before: Answer[], after: Answer[]) {
  return recordChangeIn(tx, deps.ids, now, systemActor(accountId), { resource: 'contact', resourceId: contactId, action: 'topics_updated', before: { topics: recorded(before) }, after: { topics: recorded(after) } })
}

async function answer(tx: Tx, accountId: string, contactId: string, topicId: string, subscribed: boolean, now: string) {
  await signalTopicAnswers(tx, accountId, contactId, [{ topicId, subscribed }], now)
  await tx
    .insert(contactTopics)
    .values({ contactId, topicId, accountId, subscribed, updatedAt: now })
    .onConflictDoUpdate({ target: [contactTopics.contactId, contactTopics.topicId], set: { subscribed, updatedAt: now } })
}

/**
 * The one-click (RFC 8058) or confirmation-page unsubscribe, recorded at once. Under a
 * topic: the contact's answer for it becomes an absolute no. From a broadcast without a
 * topic: the contact is unsubscribed and the address suppressed (reason `unsubscribe`).
 * Either way an `unsubscribed` event goes on the email. A repeat changes nothing.
 */
export async function unsubscribe(deps: Deps, sub: Subscription, visit: Visit): Promise<void> {
  const { email, recipient, topic } = sub
  const now = iso(deps.clock.now())
  await deps.db.write(async (tx) => {
    const contact = await contactFor(tx, deps, email.accountId, recipient, now)
    let changed = false
    if (topic) {
      const [had] = await tx
        .select({ subscribed: contactTopics.subscribed })
        .from(contactTopics)
        .where(and(eq(contactTopics.contactId, contact.id), eq(contactTopics.topicId, topic.id)))
      if (had?.subscribed !== false) {
        await answer(tx, email.accountId, contact.id, topic.id, false, now)
        await auditAnswers(tx, deps, email.accountId, contact.id, now, had ? [{ topicId: topic.id, subscribed: had.subscribed }] : [], [{ topicId: topic.id, subscribed: false }])
        changed = true
      }
    } else {
      if (!contact.unsubscribed) {
        const patch = { unsubscribed: true, updatedAt: now }
        await tx.update(contacts).set(patch).where(eq(contacts.id, contact.id))
        await recordChangeIn(tx, deps.ids, now, systemActor(email.accountId), { resource: 'contact', resourceId: contact.id, action: 'updated', before: toContact(contact), after: toContact({ ...contact, ...patch }) })
        changed = true
      }
      const [suppressed] = await tx.select({ id: suppressions.id }).from(suppressions).where(and(eq(suppressions.accountId, email.accountId), eq(suppressions.email, recipient)))
      if (!suppressed) {
        const row = { id: deps.ids.uuid(), accountId: email.accountId, email: recipient, reason: 'unsubscribe' as const, sourceEmailId: email.id, detail: 'one-click unsubscribe', createdAt: now }
        await tx.insert(suppressions).values(row)
        await auditSystemSuppression(tx, deps.ids, now, row)
        changed = true
      }
    }
    if (!changed) return
    await recordEvent(tx, deps.ids, {
      accountId: email.accountId,
      emailId: email.id,
      type: 'unsubscribed',
      recipient,
      data: { unsubscribe: { topic_id: topic?.id ?? null, timestamp: now, userAgent: visit.userAgent, ipAddress: visit.ipAddress } },
      at: now,
    })
  })
}

/** The account's public topics with this address's answers (the topic default where it gave none). */
export async function preferences(deps: Deps, sub: Subscription): Promise<PreferenceItem[]> {
  const [contact] = await deps.db.q.select({ id: contacts.id }).from(contacts).where(and(eq(contacts.accountId, sub.email.accountId), eq(contacts.email, sub.recipient)))
  const rows = await deps.db.q
    .select({ id: topics.id, name: topics.name, description: topics.description, defaultSubscription: topics.defaultSubscription, answer: contactTopics.subscribed })
    .from(topics)
    .leftJoin(contactTopics, and(eq(contactTopics.topicId, topics.id), eq(contactTopics.contactId, contact?.id ?? '')))
    .where(and(eq(topics.accountId, sub.email.accountId), eq(topics.visibility, 'public')))
    .orderBy(topics.name)
  return rows.map((r) => ({ id: r.id, name: r.name, description: r.description ?? '', subscribed: r.answer ?? subscribedByDefault(r) }))
}

/**
 * The preference form: `shown` names the topics the page listed, `topic` the ones left
 * ticked. Only public topics of the account count. An answer is recorded where the
 * person changed what the page showed; a topic left as it was keeps what it had (a
 * default stays a default, an answer stays absolute). Turning off the email's own
 * topic is recorded on the email as `unsubscribed`.
 */
export async function savePreferences(deps: Deps, sub: Subscription, shown: string[], ticked: string[], visit: Visit): Promise<void> {
  const ids = [...new Set(shown.map((s) => s.toLowerCase()))].slice(0, 500)
  if (!ids.length) return
  const yes = new Set(ticked.map((s) => s.toLowerCase()))
  const now = iso(deps.clock.now())
  await deps.db.write(async (tx) => {
    const [existing] = await tx.select({ id: contacts.id }).from(contacts).where(and(eq(contacts.accountId, sub.email.accountId), eq(contacts.email, sub.recipient)))
    const current = await tx
      .select({ id: topics.id, defaultSubscription: topics.defaultSubscription, answer: contactTopics.subscribed })
      .from(topics)
      .leftJoin(contactTopics, and(eq(contactTopics.topicId, topics.id), eq(contactTopics.contactId, existing?.id ?? '')))
      .where(and(eq(topics.accountId, sub.email.accountId), eq(topics.visibility, 'public'), inArray(topics.id, ids)))
    const changes = current.filter((r) => (r.answer ?? subscribedByDefault(r)) !== yes.has(r.id)).map((r) => ({ topicId: r.id, subscribed: yes.has(r.id) }))
    if (!changes.length) return
    const contact = await contactFor(tx, deps, sub.email.accountId, sub.recipient, now)
    for (const c of changes) await answer(tx, sub.email.accountId, contact.id, c.topicId, c.subscribed, now)
    const changed = new Set(changes.map((c) => c.topicId))
    const before = current.filter((r) => changed.has(r.id) && r.answer !== null).map((r) => ({ topicId: r.id, subscribed: r.answer! }))
    await auditAnswers(tx, deps, sub.email.accountId, contact.id, now, before, changes)
    const own = changes.find((c) => c.topicId === sub.topic?.id && !c.subscribed)
    if (own) {
      await recordEvent(tx, deps.ids, {
        accountId: sub.email.accountId,
        emailId: sub.email.id,
        type: 'unsubscribed',
        recipient: sub.recipient,
        data: { unsubscribe: { topic_id: own.topicId, timestamp: now, userAgent: visit.userAgent, ipAddress: visit.ipAddress } },
        at: now,
      })
    }
  })
}
