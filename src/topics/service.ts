import { and, eq, ne, sql } from 'drizzle-orm'
import type { Executor, Tx } from '../db'
import { recordChange } from '../audit/record'
import { pageOf } from '../db/paging'
import { contactTopics, contacts, topics } from '../db/tables'
import type { Deps } from '../deps'
import { AppError, notFound } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { listKey, type PageQuery } from '../lib/paging'
import type { CreateTopic, UpdateTopic } from './schema'

export type TopicRow = typeof topics.$inferSelect
export type SubscriptionValue = 'opt_in' | 'opt_out'


/** `opt_out` topics count a silent contact in; `opt_in` topics count them out. */
export const subscribedByDefault = (row: Pick<TopicRow, 'defaultSubscription'>) => row.defaultSubscription === 'opt_out'
export const subscriptionOf = (subscribed: boolean): SubscriptionValue => (subscribed ? 'opt_in' : 'opt_out')

/** The seed's topic object, with Resend's `default_subscription` beside the seed's `default_subscribed`. */
export function toTopic(row: TopicRow) {
  return {
    object: 'topic' as const,
    id: row.id,
    name: row.name,
    description: row.description ?? '',
    default_subscribed: subscribedByDefault(row),
    default_subscription: row.defaultSubscription,
    visibility: row.visibility,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

/**
 * The default from either spelling: Resend's `default_subscription` or the seed's
 * `default_subscribed`. Both may be sent when they agree.
 */
function defaultFrom(input: { default_subscription?: SubscriptionValue; default_subscribed?: boolean }): SubscriptionValue | undefined {
  const fromBool = input.default_subscribed === undefined ? undefined : input.default_subscribed ? 'opt_out' : 'opt_in'
  if (input.default_subscription !== undefined && fromBool !== undefined && input.default_subscription !== fromBool) {
    throw new AppError('invalid_parameter', {
      message: `\`default_subscription\` (${input.default_subscription}) and \`default_subscribed\` (${input.default_subscribed}) disagree; send one of them.`,
    })
  }
  return input.default_subscription ?? fromBool
}

/** Names are unique per account, compared case-insensitively; checked inside the write so two requests cannot both pass. */
async function assertNameFree(tx: Tx, accountId: string, name: string, exceptId?: string) {
  const [taken] = await tx
    .select({ id: topics.id, name: topics.name })
    .from(topics)
    .where(and(eq(topics.accountId, accountId), sql`lower(${topics.name}) = lower(${name})`, exceptId ? ne(topics.id, exceptId) : undefined))
    .limit(1)
  if (taken) throw new AppError('topic_name_taken', { message: `A topic named "${taken.name}" already exists in this account (${taken.id}).` })
}

export async function findTopic(deps: Deps, actor: Actor, id: string) {
  const [row] = await deps.db.q
    .select()
    .from(topics)
    .where(and(eq(topics.id, id.toLowerCase()), eq(topics.accountId, actor.accountId)))
  if (!row) throw notFound(`Topic ${id}`)
  return row
}

export async function createTopic(deps: Deps, actor: Actor, input: CreateTopic) {
  const defaultSubscription = defaultFrom(input)
  if (!defaultSubscription) {
    throw new AppError('missing_required_field', {
      message: 'Missing `default_subscription` field: send `opt_in` or `opt_out` (or `default_subscribed` as a boolean).',
      details: [{ field: 'default_subscription', message: 'required: `opt_in` or `opt_out`' }],
    })
  }
  const now = iso(deps.clock.now())
  const row: TopicRow = {
    id: deps.ids.uuid(),
    accountId: actor.accountId,
    name: input.name,
    description: input.description ?? null,
    defaultSubscription,
    visibility: input.visibility ?? 'private',
    createdAt: now,
    updatedAt: now,
  }
  await deps.db.write(async (tx) => {
    await assertNameFree(tx, actor.accountId, row.name)
    await tx.insert(topics).values(row)
  })
  const topic = toTopic(row)
  await recordChange(deps, actor, { resource: 'topic', resourceId: row.id, action: 'created', before: null, after: topic })
  return topic
}

export async function listTopics(deps: Deps, actor: Actor, q: PageQuery) {
  return pageOf(
    deps.secret,
    { list: listKey('topics'), query: q, id: topics.id },
    (ks) => deps.db.q.select().from(topics).where(and(eq(topics.accountId, actor.accountId), ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    toTopic,
  )
}

export async function getTopic(deps: Deps, actor: Actor, id: string) {
  return toTopic(await findTopic(deps, actor, id))
}

/**
 * Renames, re-describes, changes visibility or the default. A new default changes
 * only what silent contacts report: recorded answers are rows and stay as given.
 */
export async function updateTopic(deps: Deps, actor: Actor, id: string, input: UpdateTopic) {
  if (input.id !== undefined && input.id.toLowerCase() !== id.toLowerCase()) {
    throw new AppError('invalid_parameter', { message: `The body's \`id\` (${input.id}) differs from the topic in the path (${id}); a topic's id cannot change.` })
  }
  const row = await findTopic(deps, actor, id)
  const defaultSubscription = defaultFrom(input)
  const patch: Partial<TopicRow> = { updatedAt: iso(deps.clock.now()) }
  if (input.name !== undefined) patch.name = input.name
  if (input.description !== undefined) patch.description = input.description
  if (input.visibility !== undefined) patch.visibility = input.visibility
  if (defaultSubscription !== undefined) patch.defaultSubscription = defaultSubscription
  await deps.db.write(async (tx) => {
    if (patch.name !== undefined) await assertNameFree(tx, actor.accountId, patch.name, row.id)
    await tx.update(topics).set(patch).where(eq(topics.id, row.id))
  })
  const topic = toTopic({ ...row, ...patch })
  await recordChange(deps, actor, { resource: 'topic', resourceId: row.id, action: 'updated', before: toTopic(row), after: topic })
  return topic
}

/** Removes the topic and, in the same transaction, every answer any contact gave about it. */
export async function deleteTopic(deps: Deps, actor: Actor, id: string) {
  const row = await findTopic(deps, actor, id)
  await deps.db.write(async (tx) => {
    await tx.delete(contactTopics).where(and(eq(contactTopics.topicId, row.id), eq(contactTopics.accountId, actor.accountId)))
    await tx.delete(topics).where(eq(topics.id, row.id))
  })
  await recordChange(deps, actor, { resource: 'topic', resourceId: row.id, action: 'deleted', before: toTopic(row), after: null })
  return { object: 'topic' as const, id: row.id, deleted: true }
}

/**
 * Whether mail under a topic may go to an address: the contact's own answer when
 * there is one, else the topic default (an opt-in topic needs a yes). An address
 * that is no contact has said nothing, so the default decides for it too.
 */
export async function topicAllows(q: Executor, accountId: string, topicId: string, email: string): Promise<boolean> {
  const [row] = await q
    .select({ defaultSubscription: topics.defaultSubscription, answer: contactTopics.subscribed })
    .from(topics)
    .leftJoin(contacts, and(eq(contacts.accountId, accountId), eq(contacts.email, email.toLowerCase())))
    .leftJoin(contactTopics, and(eq(contactTopics.topicId, topics.id), eq(contactTopics.contactId, contacts.id)))
    .where(and(eq(topics.id, topicId), eq(topics.accountId, accountId)))
  if (!row) return true
  return row.answer ?? subscribedByDefault(row)
}
