import { and, count, eq, inArray } from 'drizzle-orm'
import { recordChange } from '../audit/record'
import { automationsUsing } from '../automations/usage'
import { findSegment, isStatic, type SegmentRow } from '../contacts/segments'
import type { Executor } from '../db'
import { dateRange } from '../db/date-range'
import { pageOf } from '../db/paging'
import { broadcasts, segmentContacts, segments, type BroadcastStatus } from '../db/tables'
import type { Deps } from '../deps'
import { AppError } from '../errors/app-error'
import type { Actor } from '../lib/actor'
import { iso } from '../lib/clock'
import { listKey } from '../lib/paging'
import { checkRules } from './rules'
import type { CreateAudience, CreateSegment, ListSegmentsQuery, UpdateSegment } from './schema'

export function toSegment(row: SegmentRow) {
  return {
    object: 'segment' as const,
    id: row.id,
    name: row.name,
    type: isStatic(row) ? ('static' as const) : ('rules' as const),
    match: row.match,
    rules: row.rules,
    created_at: row.createdAt,
    updated_at: row.updatedAt,
  }
}

/** Resend's audience: the same segment under its older name and shape. */
export const toAudience = (row: SegmentRow) => ({ object: 'audience' as const, id: row.id, name: row.name, created_at: row.createdAt })

/** Broadcasts that will still read their segment; sent and canceled ones only keep its id as history. */
const UNFINISHED: BroadcastStatus[] = ['draft', 'scheduled', 'queued', 'sending']

/**
 * What still uses a segment, as `broadcast <id>` and `automation <id>`: broadcasts
 * not yet sent or canceled, and automations whose current version (or a run still
 * going) names it.
 */
export async function segmentUsers(q: Executor, accountId: string, segmentId: string): Promise<string[]> {
  const sending = await q
    .select({ id: broadcasts.id })
    .from(broadcasts)
    .where(and(eq(broadcasts.accountId, accountId), eq(broadcasts.segmentId, segmentId), inArray(broadcasts.status, UNFINISHED)))
    .orderBy(broadcasts.id)
  return [...sending.map((b) => `broadcast ${b.id}`), ...(await automationsUsing(q, accountId, 'segment', segmentId))]
}

async function create(deps: Deps, actor: Actor, input: CreateSegment) {
  const rules = input.rules ?? []
  await checkRules(deps.db.q, actor.accountId, rules)
  const now = iso(deps.clock.now())
  const row: SegmentRow = { id: deps.ids.uuid(), accountId: actor.accountId, name: input.name, match: input.match ?? 'all', rules, createdAt: now, updatedAt: now }
  await deps.db.write((tx) => tx.insert(segments).values(row))
  const out = toSegment(row)
  await recordChange(deps, actor, { resource: 'segment', resourceId: row.id, action: 'created', before: null, after: out })
  return row
}

export const createSegment = async (deps: Deps, actor: Actor, input: CreateSegment) => toSegment(await create(deps, actor, input))
/** An audience is a static segment. */
export const createAudience = async (deps: Deps, actor: Actor, input: CreateAudience) => toAudience(await create(deps, actor, input))

/** Newest first, optionally only those created in a range. */
function list<T>(deps: Deps, actor: Actor, q: ListSegmentsQuery, map: (row: SegmentRow) => T) {
  const where = and(eq(segments.accountId, actor.accountId), ...dateRange(segments.createdAt, q))
  return pageOf(
    deps.secret,
    { list: listKey('segments', { since: q.since, until: q.until }), query: q, id: segments.id },
    (ks) => deps.db.q.select().from(segments).where(and(where, ks.where)).orderBy(ks.orderBy).limit(ks.limit),
    map,
  )
}

export const listSegments = (deps: Deps, actor: Actor, q: ListSegmentsQuery) => list(deps, actor, q, toSegment)
export const listAudiences = (deps: Deps, actor: Actor, q: ListSegmentsQuery) => list(deps, actor, q, toAudience)

export const getSegment = async (deps: Deps, actor: Actor, id: string) => toSegment(await findSegment(deps.db.q, actor.accountId, id))
export const getAudience = async (deps: Deps, actor: Actor, id: string) => toAudience(await findSegment(deps.db.q, actor.accountId, id, 'Audience'))

/**
 * Renames, or changes how members are chosen. A static segment takes rules only
 * while it has no members: they were chosen by hand, and rules would silently drop
 * them. Rules set to `[]` make a segment static, starting empty.
 */
export async function updateSegment(deps: Deps, actor: Actor, id: string, input: UpdateSegment) {
  const row = await findSegment(deps.db.q, actor.accountId, id)
  const next: SegmentRow = { ...row, name: input.name ?? row.name, match: input.match ?? row.match, rules: input.rules ?? row.rules, updatedAt: iso(deps.clock.now()) }
  await checkRules(deps.db.q, actor.accountId, next.rules)
  await deps.db.write(async (tx) => {
    if (isStatic(row) && !isStatic(next)) {
      const [{ n }] = await tx.select({ n: count() }).from(segmentContacts).where(eq(segmentContacts.segmentId, row.id))
      if (n > 0) {
        throw new AppError('invalid_parameter', {
          message: `Segment ${row.id} is static with ${n} member${n > 1 ? 's' : ''} added by hand; rules would replace them. Create a new segment with these rules, or remove the members first.`,
          details: [{ field: 'rules', message: 'a static segment with members cannot take rules' }],
        })
      }
    }
    await tx.update(segments).set({ name: next.name, match: next.match, rules: next.rules, updatedAt: next.updatedAt }).where(eq(segments.id, row.id))
  })
  const out = toSegment(next)
  await recordChange(deps, actor, { resource: 'segment', resourceId: row.id, action: 'updated', before: toSegment(row), after: out })
  return out
}

/**
 * Deletes the segment and its membership rows; contacts stay. A segment a broadcast
 * or an automation still uses is kept (409 `segment_in_use`), checked in the write
 * so nothing can start using it in between.
 */
async function remove(deps: Deps, actor: Actor, id: string, what: 'Segment' | 'Audience') {
  const row = await findSegment(deps.db.q, actor.accountId, id, what)
  await deps.db.write(async (tx) => {
    const users = await segmentUsers(tx, actor.accountId, row.id)
    if (users.length) {
      throw new AppError('segment_in_use', {
        message: `${what} ${row.id} cannot be deleted: ${users.join(', ')} ${users.length > 1 ? 'use' : 'uses'} it.`,
        extra: { used_by: users },
      })
    }
    await tx.delete(segmentContacts).where(eq(segmentContacts.segmentId, row.id))
    await tx.delete(segments).where(eq(segments.id, row.id))
  })
  await recordChange(deps, actor, { resource: 'segment', resourceId: row.id, action: 'deleted', before: toSegment(row), after: null })
  return row
}

export const deleteSegment = async (deps: Deps, actor: Actor, id: string) => ({ object: 'segment' as const, id: (await remove(deps, actor, id, 'Segment')).id, deleted: true })
export const deleteAudience = async (deps: Deps, actor: Actor, id: string) => ({ object: 'audience' as const, id: (await remove(deps, actor, id, 'Audience')).id, deleted: true })
