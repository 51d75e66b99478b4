import { and, desc, eq, inArray, ne, sql, type SQL } from 'drizzle-orm'
import type { Executor, Tx } from '../db'
import { recordChange } from '../audit/record'
import { signalContactCreated, signalTopicAnswers } from '../automations/signals'
import { checkProperties } from '../contact-properties/service'
import { dateRange } from '../db/date-range'
import { pageOf } from '../db/paging'
import { contactResubscribes, contacts, contactTopics, segmentContacts, topics } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { listKey, type PageQuery } from '../lib/paging'
import { filterOf } from '../segments/rules'
import { subscribedByDefault, subscriptionOf, type SubscriptionValue } from '../topics/service'
import { optedOut, resubscribeRequired } from './consent'
import type { CreateContact, ListContactsQuery, TopicAnswerInput, UpdateContact, UpdateContactTopics } from './schema'
import { addMemberships, findSegment, segmentIds } from './segments'

export type ContactRow = typeof contacts.$inferSelect
type Properties = ContactRow['properties']

/** One answer as stored: absolute, never inferred. */
export interface Answer {
  topicId: string
  subscribed: boolean
}

export function toContact(row: ContactRow) {
  return {
    object: 'contact' as const,
    id: row.id,
    email: row.email,
    first_name: row.firstName,
    last_name: row.lastName,
    unsubscribed: row.unsubscribed,
    properties: row.properties,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

export const normalEmail = (email: string) => email.trim().toLowerCase()

/** A path `{id}` is an address when it holds `@`, else a contact id. */
export async function findContact(deps: Deps, actor: Actor, ref: string) {
  const match = ref.includes('@') ? eq(contacts.email, normalEmail(ref)) : eq(contacts.id, ref.toLowerCase())
  const [row] = await deps.db.q
    .select()
    .from(contacts)
    .where(and(eq(contacts.accountId, actor.accountId), match))
  if (!row) throw notFound(`Contact ${ref}`)
  return row
}

async function assertEmailFree(tx: Tx, accountId: string, email: string, exceptId?: string) {
  const [taken] = await tx
    .select({ id: contacts.id })
    .from(contacts)
    .where(and(eq(contacts.accountId, accountId), eq(contacts.email, email), exceptId ? ne(contacts.id, exceptId) : undefined))
    .limit(1)
  if (taken) {
    throw new AppError('contact_already_exists', { message: `A contact with the address ${email} already exists (${taken.id}).`, extra: { contact_id: taken.id } })
  }
}

/**
 * Reads answers in either spelling (`topic_id`/`id`, `subscribed`/`subscription`).
 * The same topic twice is fine when the answers agree and refused when they do not.
 */
export function readAnswers(items: TopicAnswerInput[], field = 'topics'): Answer[] {
  const byTopic = new Map<string, boolean>()
  items.forEach((item, i) => {
    const at = `${field}[${i}]`
    if (item.topic_id !== undefined && item.id !== undefined && item.topic_id.toLowerCase() !== item.id.toLowerCase()) {
      throw new AppError('invalid_parameter', { message: `\`${at}.topic_id\` and \`${at}.id\` name different topics; send one of them.` })
    }
    const topicId = (item.topic_id ?? item.id)?.toLowerCase()
    if (!topicId) {
      throw new AppError('missing_required_field', { message: `Missing \`${at}.topic_id\` field.`, details: [{ field: `${at}.topic_id`, message: 'required: the topic id' }] })
    }
    const fromSubscription = item.subscription === undefined ? undefined : item.subscription === 'opt_in'
    if (item.subscribed !== undefined && fromSubscription !== undefined && item.subscribed !== fromSubscription) {
      throw new AppError('invalid_parameter', { message: `\`${at}.subscribed\` and \`${at}.subscription\` disagree; send one of them.` })
    }
    const subscribed = item.subscribed ?? fromSubscription
    if (subscribed === undefined) {
      throw new AppError('missing_required_field', {
        message: `Missing \`${at}.subscribed\` field: send \`subscribed\` (boolean) or \`subscription\` (\`opt_in\` or \`opt_out\`).`,
        details: [{ field: `${at}.subscribed`, message: 'required: true or false' }],
      })
    }
    const earlier = byTopic.get(topicId)
    if (earlier !== undefined && earlier !== subscribed) {
      throw new AppError('invalid_parameter', { message: `Topic ${topicId} is answered twice with different answers in \`${field}\`.` })
    }
    byTopic.set(topicId, subscribed)
  })
  return [...byTopic].map(([topicId, subscribed]) => ({ topicId, subscribed }))
}

/** Every named topic must be one of the account's; the first unknown one answers 404 naming it. */
export async function assertTopicsExist(tx: Tx, accountId: string, answers: Answer[]) {
  if (!answers.length) return
  const ids = answers.map((a) => a.topicId)
  const found = await tx
    .select({ id: topics.id })
    .from(topics)
    .where(and(eq(topics.accountId, accountId), inArray(topics.id, ids)))
  const known = new Set(found.map((r) => r.id))
  const missing = ids.find((id) => !known.has(id))
  if (missing) throw notFound(`Topic ${missing}`)
}

export async function recordAnswers(tx: Tx, accountId: string, contactId: string, answers: Answer[], now: string) {
  if (!answers.length) return
  await signalTopicAnswers(tx, accountId, contactId, answers, now)
  await tx
    .insert(contactTopics)
    .values(answers.map((a) => ({ contactId, topicId: a.topicId, accountId, subscribed: a.subscribed, updatedAt: now })))
    .onConflictDoUpdate({
      target: [contactTopics.contactId, contactTopics.topicId],
      set: { subscribed: sql`excluded.subscribed`, updatedAt: sql`excluded.updated_at` },
    })
}

export const recorded = (answers: Answer[]) =>
  answers.map((a) => ({ id: a.topicId, topic_id: a.topicId, subscribed: a.subscribed, subscription: subscriptionOf(a.subscribed) }))

/**
 * What a create stores beyond the names: property values checked against their
 * definitions (a null is no value), the segments to join (`audience_id` is one more),
 * and the flag: an address whose owner opted out stays unsubscribed.
 */
async function createFields(deps: Deps, actor: Actor, email: string, input: CreateContact) {
  await checkProperties(deps.db.q, actor.accountId, input.properties)
  const segments = await segmentIds(deps.db.q, actor.accountId, [...(input.segments ?? []), ...(input.audience_id ? [input.audience_id] : [])])
  const out = (await optedOut(deps.db.q, actor.accountId, [email])).has(email)
  if (out && input.unsubscribed === false) throw resubscribeRequired(email, 'being recorded as subscribed')
  const properties = Object.fromEntries(Object.entries(input.properties ?? {}).filter(([, v]) => v !== null))
  return { unsubscribed: input.unsubscribed ?? out, properties, segments }
}

export async function createContact(deps: Deps, actor: Actor, input: CreateContact) {
  if (input.email === undefined) {
    throw new AppError('missing_required_field', { message: 'Missing `email` field.', details: [{ field: 'email', message: 'required: the contact’s e-mail address' }] })
  }
  const answers = readAnswers(input.topics ?? [])
  const email = normalEmail(input.email)
  const { unsubscribed, properties, segments } = await createFields(deps, actor, email, input)
  const now = iso(deps.clock.now())
  const row: ContactRow = {
    id: deps.ids.uuid(),
    accountId: actor.accountId,
    email,
    firstName: input.first_name ?? null,
    lastName: input.last_name ?? null,
    unsubscribed,
    properties,
    createdAt: now,
    updatedAt: now,
  }
  await deps.db.write(async (tx) => {
    await assertEmailFree(tx, actor.accountId, row.email)
    await assertTopicsExist(tx, actor.accountId, answers)
    await tx.insert(contacts).values(row)
    await signalContactCreated(tx, actor.accountId, row.id, now)
    await recordAnswers(tx, actor.accountId, row.id, answers, now)
    await addMemberships(tx, actor.accountId, row.id, segments, now)
  })
  const contact = toContact(row)
  await recordChange(deps, actor, { resource: 'contact', resourceId: row.id, action: 'created', before: null, after: contact })
  return contact
}

export async function getContact(deps: Deps, actor: Actor, ref: string) {
  return toContact(await findContact(deps, actor, ref))
}

/** Properties are merged: given keys are set, a null value removes its key, others stay. */
function mergeProperties(stored: Properties, change: Properties): Properties {
  const out: Properties = { ...stored }
  for (const [k, v] of Object.entries(change)) {
    if (v === null) delete out[k]
    else out[k] = v
  }
  return out
}

/** Property values must fit their definitions, and only the contact can lift an unsubscribe they made themselves. */
async function checkUpdate(deps: Deps, actor: Actor, row: ContactRow, input: UpdateContact) {
  await checkProperties(deps.db.q, actor.accountId, input.properties)
  if (input.unsubscribed === false && row.unsubscribed && (await optedOut(deps.db.q, actor.accountId, [row.email])).has(row.email)) {
    throw resubscribeRequired(row.email, 'being recorded as subscribed again')
  }
}

export async function updateContact(deps: Deps, actor: Actor, ref: string, input: UpdateContact) {
  const row = await findContact(deps, actor, ref)
  await checkUpdate(deps, actor, row, input)
  const patch: Partial<ContactRow> = { updatedAt: iso(deps.clock.now()) }
  if (input.email !== undefined) patch.email = normalEmail(input.email)
  if (input.first_name !== undefined) patch.firstName = input.first_name
  if (input.last_name !== undefined) patch.lastName = input.last_name
  if (input.unsubscribed !== undefined) patch.unsubscribed = input.unsubscribed
  if (input.properties !== undefined) patch.properties = mergeProperties(row.properties, input.properties)
  await deps.db.write(async (tx) => {
    if (patch.email !== undefined && patch.email !== row.email) await assertEmailFree(tx, actor.accountId, patch.email, row.id)
    await tx.update(contacts).set(patch).where(eq(contacts.id, row.id))
  })
  const contact = toContact({ ...row, ...patch })
  await recordChange(deps, actor, { resource: 'contact', resourceId: row.id, action: 'updated', before: toContact(row), after: contact })
  return contact
}

/** Removes the contact, its topic answers, segment memberships and resubscribe requests in one transaction. */
export async function deleteContact(deps: Deps, actor: Actor, ref: string) {
  const row = await findContact(deps, actor, ref)
  await deps.db.write(async (tx) => {
    await tx.delete(contactTopics).where(and(eq(contactTopics.contactId, row.id), eq(contactTopics.accountId, actor.accountId)))
    await tx.delete(segmentContacts).where(eq(segmentContacts.contactId, row.id))
    await tx.delete(contactResubscribes).where(eq(contactResubscribes.contactId, row.id))
    await tx.delete(contacts).where(eq(contacts.id, row.id))
  })
  await recordChange(deps, actor, { resource: 'contact', resourceId: row.id, action: 'deleted', before: toContact(row), after: null })
  return { object: 'contact' as const, id: row.id, contact: ref, deleted: true }
}

/** The account's topics with what this contact said about each; a silent contact reports the default. */
function topicsWithAnswers(q: Executor, accountId: string, contactId: string, where: SQL | undefined, orderBy: SQL, limit?: number) {
  const query = q
    .select({
      id: topics.id,
      name: topics.name,
      description: topics.description,
      defaultSubscription: topics.defaultSubscription,
      answer: contactTopics.subscribed,
    })
    .from(topics)
    .leftJoin(contactTopics, and(eq(contactTopics.topicId, topics.id), eq(contactTopics.contactId, contactId)))
    .where(and(eq(topics.accountId, accountId), where))
    .orderBy(orderBy)
  return limit === undefined ? query : query.limit(limit)
}

type TopicAnswerRow = { id: string; name: string; description: string | null; defaultSubscription: SubscriptionValue; answer: boolean | null }

function toContactTopic(r: TopicAnswerRow) {
  const isDefault = r.answer === null
  const subscribed = isDefault ? subscribedByDefault(r) : r.answer!
  return {
    object: 'contact_topic' as const,
    id: r.id,
    topic_id: r.id,
    name: r.name,
    description: r.description ?? '',
    subscribed,
    subscription: subscriptionOf(subscribed),
    is_default: isDefault,
  }
}

export async function listContactTopics(deps: Deps, actor: Actor, ref: string, q: PageQuery) {
  const contact = await findContact(deps, actor, ref)
  return pageOf(
    deps.secret,
    { list: listKey('contact_topics', { contact: contact.id }), query: q, id: topics.id },
    (ks) => topicsWithAnswers(deps.db.q, actor.accountId, contact.id, ks.where, ks.orderBy, ks.limit),
    toContactTopic,
  )
}

/**
 * Records absolute answers for the named topics and nothing else: topics left out
 * keep whatever they had. Replies with the contact's whole topic list.
 */
export async function updateContactTopics(deps: Deps, actor: Actor, ref: string, body: UpdateContactTopics) {
  const items = body.topics
  if (items === undefined) {
    throw new AppError('missing_required_field', {
      message: 'Missing `topics` field: send `{topics: [{topic_id, subscribed}]}` or a bare array of answers.',
      details: [{ field: 'topics', message: 'required: an array of answers' }],
    })
  }
  const answers = readAnswers(items)
  const contact = await findContact(deps, actor, ref)
  const had = await deps.db.q
    .select({ topicId: contactTopics.topicId, subscribed: contactTopics.subscribed })
    .from(contactTopics)
    .where(and(eq(contactTopics.contactId, contact.id), inArray(contactTopics.topicId, answers.map((a) => a.topicId))))
  await deps.db.write(async (tx) => {
    await assertTopicsExist(tx, actor.accountId, answers)
    await recordAnswers(tx, actor.accountId, contact.id, answers, iso(deps.clock.now()))
  })
  await recordChange(deps, actor, { resource: 'contact', resourceId: contact.id, action: 'topics_updated', before: { topics: recorded(had) }, after: { topics: recorded(answers) } })
  const rows = await topicsWithAnswers(deps.db.q, actor.accountId, contact.id, undefined, desc(topics.id))
  return {
    object: 'list' as const,
    data: rows.map(toContactTopic),
    has_more: false,
    next_cursor: null,
    contact_id: contact.id,
    topics: recorded(answers),
  }
}

/**
 * Newest first. Filters narrow: a segment's members, one address, the flag, a created
 * range; the cursor is bound to the filters it was issued under.
 */
export async function listContacts(deps: Deps, actor: Actor, q: ListContactsQuery) {
  if (q.segment_id !== undefined && q.audience_id !== undefined && q.segment_id.toLowerCase() !== q.audience_id.toLowerCase()) {
    throw new AppError('invalid_parameter', { message: '`segment_id` and `audience_id` name different segments; send one of them.' })
  }
  const segmentRef = q.segment_id ?? q.audience_id
  const segment = segmentRef === undefined ? undefined : await findSegment(deps.db.q, actor.accountId, segmentRef)
  const filters = { segment: segment?.id, email: q.email && normalEmail(q.email), unsubscribed: q.unsubscribed, since: q.since, until: q.until }
  const where = and(
    eq(contacts.accountId, actor.accountId),
    filters.email ? eq(contacts.email, filters.email) : undefined,
    filters.unsubscribed ? eq(contacts.unsubscribed, filters.unsubscribed === 'true') : undefined,
    segment ? await filterOf(deps.db.q, segment, new Date(deps.clock.now())) : undefined,
    ...dateRange(contacts.createdAt, q),
  )
  return pageOf(
    deps.secret,
    { list: listKey('contacts', filters), query: q, id: contacts.id },
    (ks) => deps.db.q.select().from(contacts).where(and(where, ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toContact,
  )
}
